"""Kill ``toollab eval`` with SIGKILL mid-run, run the same command again: nothing is lost or
duplicated and the results equal those of an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from toollab.eval.store import PREDICTIONS, RESULTS, read_predictions

N = 60


def _cmd(shared_data: Path, out: Path, latency: float) -> list[str]:
    """The same command every time (a resumed run must be started exactly as the first)."""
    return [
        sys.executable,
        "-m",
        "toollab.cli.main",
        "eval",
        "--model",
        f"oracle:?latency={latency}",
        "--data",
        str(shared_data / "seal-tools"),
        "--format",
        "seal-tools",
        "-o",
        "splits=test_out_domain",
        "--limit",
        str(N),
        "--concurrency",
        "2",
        "--out",
        str(out),
        "--json",
    ]


def _count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def test_sigkill_then_resume_equals_an_uninterrupted_run(shared_data: Path, tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "120"}
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        _cmd(shared_data, killed, 0.05),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while _count_lines(killed / PREDICTIONS) < 15:
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    done = _count_lines(killed / PREDICTIONS)
    assert 15 <= done < N and not (killed / RESULTS).exists()

    resumed = subprocess.run(
        _cmd(shared_data, killed, 0.05), capture_output=True, text=True, env=env, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["session"]["resumed"] is True
    assert report["session"]["previous_predictions"] >= done - 1  # a partial line is redone

    straight = tmp_path / "straight"
    whole = subprocess.run(
        _cmd(shared_data, straight, 0.05), capture_output=True, text=True, env=env, timeout=120
    )
    assert whole.returncode == 0, whole.stderr

    a = read_predictions(killed / PREDICTIONS)  # strict: no partial line is left
    b = read_predictions(straight / PREDICTIONS)
    assert len(a) == N and len({(p.id, p.repeat) for p in a}) == N
    assert {(p.id, p.repeat) for p in a} == {(p.id, p.repeat) for p in b}
    raw_b = {p.id: (p.raw, p.parsed) for p in b}
    assert all(raw_b[p.id] == (p.raw, p.parsed) for p in a)
    ra = json.loads((killed / RESULTS).read_text())
    rb = json.loads((straight / RESULTS).read_text())
    for key in ("metrics", "breakdown", "errors", "counts"):
        assert ra[key] == rb[key], key
