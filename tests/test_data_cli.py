"""``toollab data inspect``: JSON output, human output, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from toollab.cli.main import app

runner = CliRunner()


def test_inspect_json_has_the_counts(shared_data: Path) -> None:
    r = runner.invoke(
        app,
        ["data", "inspect", str(shared_data / "seal-tools"), "--format", "seal-tools", "--json"],
    )
    assert r.exit_code == 0, r.stderr
    stats = json.loads(r.stdout)
    assert stats["instances"] == 1354 and stats["tools"] == 4076 and stats["nested"] == 57
    assert stats["calls_per_instance"]["3"] == 394 + 410
    assert r.stdout.count("\n") == 1


def test_inspect_options(shared_data: Path) -> None:
    r = runner.invoke(
        app,
        [
            "data",
            "inspect",
            str(shared_data / "bfcl"),
            "-f",
            "bfcl",
            "-o",
            "categories=irrelevance",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["by_decision"] == {"NoCall": 240}


def test_inspect_sample_human_output() -> None:
    r = runner.invoke(app, ["data", "inspect", "--sample", "seal-tools", "--show", "1"])
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""
    assert "calls per instance" in r.stderr and "test_sample-easy-0" in r.stderr


def test_inspect_errors(tmp_path: Path) -> None:
    r = runner.invoke(app, ["data", "inspect", str(tmp_path), "--format", "seal-tool"])
    assert r.exit_code == 2 and "did you mean 'seal-tools'" in r.stderr
    missing = tmp_path / "nowhere"
    r = runner.invoke(app, ["data", "inspect", str(missing), "--format", "bfcl"])
    assert r.exit_code == 2 and str(missing) in r.stderr
    bad = tmp_path / "test_x.jsonl"
    (tmp_path / "tool.jsonl").write_text('{"api_name": "a", "parameters": {}}\n')
    bad.write_text('{"id": "x", "query": "q", "calling": []}\n{"id": "y", "query": \n')
    r = runner.invoke(app, ["data", "inspect", str(bad), "--format", "seal-tools", "--json"])
    assert r.exit_code == 2 and f"{bad}:2" in r.stderr and "invalid JSON" in r.stderr
    assert r.stdout == ""
    r = runner.invoke(app, ["data", "inspect", str(tmp_path)])
    assert r.exit_code == 2 and "--format is required" in r.stderr
    r = runner.invoke(app, ["data", "inspect", "--sample", "seal-tools", "-o", "nokey"])
    assert r.exit_code == 2 and "KEY=VALUE" in r.stderr


def test_formats_json() -> None:
    r = runner.invoke(app, ["data", "formats", "--json"])
    assert r.exit_code == 0
    out = json.loads(r.stdout)
    assert {f["format"] for f in out["formats"]} >= {"seal-tools", "bfcl", "deer", "tooleyes"}


def test_console_script_stdout_is_one_json_object() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "toollab.cli.main", "data", "inspect", "--sample", "bfcl", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["instances"] == 4
