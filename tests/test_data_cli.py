"""``toollab data inspect``: JSON output, human output, exit codes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
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


def test_data_notes_print_as_one_line_on_stderr() -> None:
    """Seal-Tools data without the upstream api_lists: every command that reads it says so."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "toollab.cli.main",
            "data",
            "inspect",
            "--sample",
            "seal-tools",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)
    (note,) = stats["notes"]
    assert note.startswith("Seal-Tools: 5 of 5 instances offer only the tools their gold calls use")
    assert proc.stderr.splitlines() == [f"note: {note}"]  # not Python's warning format


def _typo_dataset(tmp_path: Path) -> Path:
    tools = [
        {
            "api_name": "lookup",
            "api_description": "Look a word up.",
            "field": "Language",
            "parameters": {"word": {"type": "strng", "description": "The word"}},
            "required": ["word"],
            "responses": {"meaning": {"type": "sting", "description": "Meaning"}},
        }
    ]
    (tmp_path / "tool.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools))
    rec = {"id": "t-easy-0", "query": "q", "calling": [{"api": "lookup", "parameters": {}}]}
    (tmp_path / "test_x.jsonl").write_text(json.dumps(rec) + "\n")
    return tmp_path


def test_inspect_flags_unknown_type_names(tmp_path: Path) -> None:
    folder = _typo_dataset(tmp_path)
    r = runner.invoke(app, ["data", "inspect", str(folder), "-f", "seal-tools", "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["unknown_types"] == {
        "count": 2,
        "names": {"sting": 1, "strng": 1},
        "places": [
            "tool 'lookup': parameters.properties.word: 'strng'",
            "tool 'lookup': returns.properties.meaning: 'sting'",
        ],
    }
    r = runner.invoke(app, ["data", "inspect", str(folder), "-f", "seal-tools"])
    assert r.exit_code == 0
    text = " ".join(r.stderr.split())
    assert "warning: 2 unknown type name(s)" in text
    assert "tool 'lookup': parameters.properties.word: 'strng'" in text


def test_real_data_has_no_unknown_type_names(shared_data: Path) -> None:
    for fmt in ("seal-tools", "bfcl", "deer", "tooleyes"):
        r = runner.invoke(app, ["data", "inspect", str(shared_data / fmt), "-f", fmt, "--json"])
        assert r.exit_code == 0, r.stderr
        assert json.loads(r.stdout)["unknown_types"]["count"] == 0, fmt


def test_progress_bar_only_on_a_terminal_and_never_on_stdout(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rich.console import Console

    from toollab.cli import common

    assert common.progress().disable  # captured stderr is no terminal
    assert list(common.track(range(3), 3, "work")) == [0, 1, 2]
    assert capsys.readouterr() == ("", "")
    screen = io.StringIO()
    monkeypatch.setattr(common, "console", Console(file=screen, force_terminal=True, width=60))
    bar = common.progress()
    assert not bar.disable
    assert list(common.track(range(3), 3, "work")) == [0, 1, 2]
    assert "work" in screen.getvalue() and "3/3" in screen.getvalue()
    assert capsys.readouterr().out == ""
