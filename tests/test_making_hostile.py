"""A hostile-input corpus for the making half: ``data sft``, ``data synth``, ``train sft``,
``train export``, ``data generate``, ``score --out``, the library API and plugin loading.

Cases are grouped in classes (configs, readers, writes, export, api, plugins, small).  A CLI
case runs the real CLI in process (typer's runner); an API case calls the library; a plugin case
runs ``toollab`` in a subprocess with a fake distribution on ``PYTHONPATH``.  Each case states
its expectation: a clear error (exit 2 and an ``error:`` line, or for the API a
:class:`toollab.errors.ToolLabError` naming the argument), or a legitimate success.  Each is
bounded by an alarm (a hang), and after each the corpus checks that nothing was clobbered or
half-written: device nodes are still device nodes, user files keep their bytes, no ``*.tmp`` is
left, nothing was written outside the corpus' folder.

``python tests/test_making_hostile.py`` prints the per-class table in BENCHMARKS.md ("The
making half").  Device nodes are copies made with ``mknod`` inside the corpus' folder (the
system's ``/dev/null`` is never offered to a verb that might replace it); where ``mknod`` is
not allowed those cases are skipped.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from making_cases import CLASSES, UNGUARDED, Case, config_cases, file_hash, reader_cases
from making_cases_more import api_cases, export_cases, plugin_cases, small_cases, write_cases
from test_inputs_hostile import EITHER, ERROR, OK, _write

from toollab.cli.main import app
from toollab.data.samples import sample_path
from toollab.errors import ToolLabError

# -- building ------------------------------------------------------------------------------------


UNG = [a for u in UNGUARDED for a in ("--unguarded", u)]
TINY_LORA = [
    "--max-steps",
    "1",
    "--batch-size",
    "1",
    "--max-length",
    "64",
    "--threads",
    "1",
    "--eval-steps",
    "0",
    "--lora-r",
    "2",
    "--lora-targets",
    "q_proj",
    "--quiet",
]
#: the check after every case: no temporary file left, /dev/null and /dev/full intact
LEFTOVERS = "writes: nothing left behind, no device replaced"
Setup = Callable[[Path], tuple[Path, Path, Path]]


def _setup(root: Path) -> tuple[Path, Path, Path]:
    """(an SFT example file, an eval run folder, a finished one-step LoRA run)."""
    bfcl = str(sample_path("bfcl")[0])
    base = root / "setup"
    sft, run_dir, lora = base / "sft" / "train.jsonl", base / "eval_run", base / "lora_run"
    for args in (
        ["data", "sft", "--env", "weather", "--n", "4", "--out", str(sft), *UNG],
        ["eval", "-m", "fake:", "-d", bfcl, "-f", "bfcl", "-n", "2", "--out", str(run_dir)],
        ["train", "sft", "--output-dir", str(lora), "--data", str(sft), *TINY_LORA],
    ):
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, r.output
    return sft, run_dir, lora


def _stub_setup(root: Path) -> tuple[Path, Path, Path]:
    """Files shaped like :func:`_setup`'s, made in no time: enough to name the cases."""
    base = root / "setup"
    sft = _write(base / "train.jsonl", b'{"text": "x", "spans": []}\n')
    run_dir = base / "eval_run"
    _write(run_dir / "predictions.jsonl", b"{}\n")
    lora = base / "lora_run"
    for rel in ("run.json", "adapter/adapter_config.json", "adapter/adapter_model.safetensors"):
        _write(lora / rel, b"{}")
    return sft, run_dir, lora


def build_corpus(root: Path, setup: Setup = _setup) -> list[Case]:
    sft, run_dir, lora = setup(root)
    cases: list[Case] = []
    cases += config_cases(root)
    cases += reader_cases(root, sft)
    cases += write_cases(root, run_dir)
    cases += export_cases(root, lora)
    cases += api_cases(root)
    cases += plugin_cases(root)
    cases += small_cases(root)
    return cases


def case_id(case: Case) -> str:
    return f"{case.group}: {case.name}"


def case_ids() -> list[str]:
    """The corpus' case names (built on stub files in a throwaway folder, at collection)."""
    with tempfile.TemporaryDirectory() as tmp:
        return [case_id(c) for c in build_corpus(Path(tmp), _stub_setup)] + [LEFTOVERS]


# -- running ---------------------------------------------------------------------------------------


@dataclass
class Outcome:
    case: Case
    code: int | None
    output: str
    exception: BaseException | None
    seconds: float
    damage: list[str] = field(default_factory=list)

    @property
    def hang(self) -> bool:
        return isinstance(self.exception, _Hang)

    def problems(self) -> list[str]:
        out: list[str] = []
        exc, case = self.exception, self.case
        if self.hang:
            out.append(f"hang: no answer within {case.limit} s")
        elif exc is not None and not isinstance(exc, SystemExit | ToolLabError):
            out.append(f"uncaught {type(exc).__name__}: {str(exc)[:200]}")
        if "Traceback (most recent call last)" in self.output:
            out.append("a traceback was printed")
        want = {ERROR: (2,), OK: (0,), EITHER: (0, 2)}[case.expect]
        if not self.hang and self.code not in want:
            out.append(f"exit {self.code}, expected {' or '.join(map(str, want))}")
        if self.code == 2 and case.kind != "api":
            low = self.output.lower()
            if "error" not in low and "invalid" not in low:
                out.append("exit 2 without an error message")
        if case.names and (self.code == 2 or (self.code == 0 and case.expect == OK)):
            text = self.output.lower()
            if not any(n.lower() in text for n in case.names):
                out.append(f"the output does not name {case.names[0]!r}")
        if self.code != 0:
            out.extend(f"{p} was left behind" for p in case.absent if p.exists())
        out.extend(self.damage)
        return out


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Hang("no answer in time")


def _free_fifo(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


def _invoke(case: Case) -> tuple[int | None, str, BaseException | None]:
    if case.kind == "cli":
        r = CliRunner().invoke(app, case.args)
        return r.exit_code, r.output, r.exception
    if case.kind == "api":
        assert case.call is not None
        try:
            case.call()
        except ToolLabError as exc:
            return 2, f"{type(exc).__name__}: {exc}", exc
        except Exception as exc:
            return 1, f"{type(exc).__name__}: {exc}", exc
        return 0, "", None
    env = {**os.environ, **(case.env or {})}
    try:
        p = subprocess.run(
            case.args, capture_output=True, text=True, env=env, timeout=case.limit, errors="replace"
        )
    except subprocess.TimeoutExpired:
        raise _Hang("no answer in time") from None
    return p.returncode, p.stdout + p.stderr, None


def _entries(path: Path) -> set[str]:
    return set(os.listdir(path)) if path.is_dir() else set()


def run_case(case: Case, outer: Path) -> Outcome:
    before = {p: file_hash(p) for p in case.unchanged}
    outer_before = _entries(outer)
    box_before = _entries(case.sandbox) if case.sandbox else set()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(case.limit)
    t0 = time.perf_counter()
    code: int | None = None
    output, exc = "", None
    try:
        code, output, exc = _invoke(case)
    except _Hang as hang:
        exc = hang
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        for f in case.fifos:
            _free_fifo(f)
    seconds = time.perf_counter() - t0
    damage = [f"{p} was changed" for p in case.unchanged if file_hash(p) != before[p]]
    damage += [
        f"{p} is no longer a device" for p in case.devices if not stat.S_ISCHR(os.lstat(p).st_mode)
    ]
    damage += [f"{outer / n} was written outside" for n in _entries(outer) - outer_before]
    if case.sandbox is not None:
        damage += [
            f"{case.sandbox / n} was written outside log_dir"
            for n in _entries(case.sandbox) - box_before
        ]
    damage += [f"{p} was left behind" for p in case.clean if p.exists() and any(p.iterdir())]
    return Outcome(case, code, output, exc, seconds, damage)


def run_corpus(root: Path, progress: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every case, run in ``root/work``; ``root`` itself must stay as it is (but for work/)."""
    work = root / "work"
    work.mkdir()
    outcomes = []
    for case in build_corpus(work):
        outcome = run_case(case, root)
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome)
    # the last check: no temporary file anywhere, the system's device nodes intact
    damage = [f"{p} was left behind" for p in sorted(work.rglob("*.tmp*"))[:20]]
    damage += [
        f"{real} is no longer a device"
        for real in ("/dev/null", "/dev/full")
        if os.path.exists(real) and not stat.S_ISCHR(os.lstat(real).st_mode)
    ]
    outcomes.append(
        Outcome(Case("writes", LEFTOVERS.partition(": ")[2], expect=OK), 0, "", None, 0.0, damage)
    )
    return outcomes


def summary(outcomes: list[Outcome]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for group in CLASSES:
        mine = [o for o in outcomes if o.case.group == group]
        table[group] = {
            "cases": len(mine),
            "clear_errors": sum(1 for o in mine if o.code == 2 and not o.problems()),
            "successes": sum(1 for o in mine if o.code == 0 and not o.problems()),
            "tracebacks": sum(
                1 for o in mine if any("uncaught" in p or "traceback" in p for p in o.problems())
            ),
            "hangs": sum(1 for o in mine if o.hang),
            "clobbered": sum(
                1 for o in mine if o.damage or any("left behind" in p for p in o.problems())
            ),
            "failing": sum(1 for o in mine if o.problems()),
            "seconds": round(sum(o.seconds for o in mine), 1),
        }
    table["total"] = {k: round(sum(row[k] for row in table.values()), 1) for k in table["configs"]}
    return table


def _table(s: dict[str, dict[str, float]]) -> str:
    cols = [
        "cases",
        "clear_errors",
        "successes",
        "tracebacks",
        "hangs",
        "clobbered",
        "failing",
        "seconds",
    ]
    lines = ["| class | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for group, row in s.items():
        lines.append(f"| {group} | " + " | ".join(f"{row[c]:g}" for c in cols) + " |")
    return "\n".join(lines)


# -- pytest ----------------------------------------------------------------------------------------

_RESULTS: dict[str, Outcome] = {}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every case, run once for the module (the one torch load and tiny LoRA run shared)."""
    pytest.importorskip("peft")
    if not _RESULTS:
        outcomes = run_corpus(tmp_path_factory.mktemp("making"))
        _RESULTS.update((case_id(o.case), o) for o in outcomes)
    return _RESULTS


@pytest.mark.slow
@pytest.mark.timeout(900, method="thread")
@pytest.mark.parametrize("name", case_ids())
def test_making_case(corpus: dict[str, Outcome], name: str) -> None:
    o = corpus[name]
    problems = o.problems()
    assert not problems, f"{name}: {'; '.join(problems)}\n    {o.output.strip()[-600:]}"


def test_case_names_are_unique() -> None:
    names = case_ids()
    assert len(names) == len(set(names)) and len(names) > 500


if __name__ == "__main__":  # the figures for BENCHMARKS.md
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:

        def show(o: Outcome) -> None:
            status = "FAIL" if o.problems() else "ok  "
            detail = "; ".join(o.problems())
            tail = o.output.strip().replace("\n", " ")[-300:]
            print(
                f"{status} [{o.case.group}] {o.case.name} ({o.seconds:.1f} s) {detail}"
                + (f" :: {tail}" if o.problems() else ""),
                flush=True,
            )

        results = run_corpus(Path(tmp), show)
        print(_table(summary(results)))
        print(f"wall time {time.perf_counter() - t0:.0f} s")
        sys.stdout.flush()
        os._exit(1 if any(o.problems() for o in results) else 0)
