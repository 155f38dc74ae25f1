"""``toollab tools validate``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from toollab.cli.main import app

GOOD = {
    "name": "search",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
}


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_clean_file(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    code, out, err = _run("tools", "validate", str(path))
    assert code == 0 and out == ""
    assert "1 valid tool" in err and "ok" in err
    code, out, _ = _run("tools", "validate", str(path), "--json")
    assert code == 0
    assert json.loads(out) == {
        "path": str(path),
        "tools": 1,
        "problems": [],
        "errors": 0,
        "warnings": 0,
        "strict": False,
        "ok": True,
    }


def test_every_problem_is_reported_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    lines = [
        json.dumps(GOOD),
        '{"name": "x",',
        json.dumps({"description": "nameless"}),
        json.dumps(
            {"name": "s", "parameters": {"type": "object", "properties": {"a": {"type": 5}}}}
        ),
        json.dumps(GOOD),
    ]
    path.write_text("\n".join(lines) + "\n")
    code, out, err = _run("tools", "validate", str(path))
    assert code == 2 and out == ""
    assert f"{path}:2: malformed JSON" in err
    assert f"{path}:3: tool has no name" in err
    assert f"{path}:4: tool 's': invalid JSON Schema at parameters.properties.a.type" in err
    assert f"{path}:5: tool 'search': duplicate tool name 'search' (line 1 and line 5)" in err

    code, out, _ = _run("tools", "validate", str(path), "--json")
    assert code == 2
    report = json.loads(out)
    assert report["ok"] is False and report["tools"] == 1 and report["path"] == str(path)
    assert [(p["line"], p["tool"]) for p in report["problems"]] == [
        (2, None),
        (3, None),
        (4, "s"),
        (5, "search"),
    ]
    assert report["problems"][1]["problem"] == "tool has no name"


def test_missing_file_and_unknown_format(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    code, out, err = _run("tools", "validate", str(missing))
    assert code == 2 and f"{missing}: no such file" in err
    code, out, _ = _run("tools", "validate", str(missing), "--json")
    assert code == 2 and json.loads(out)["problems"] == [
        {"line": None, "tool": None, "problem": "no such file", "severity": "error"}
    ]
    path = tmp_path / "tools.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    code, out, err = _run("tools", "validate", str(path), "--format", "yaml")
    assert code == 2 and out == ""
    assert "unknown format 'yaml'" in err
    before = sorted(p.name for p in tmp_path.iterdir())
    _run("tools", "validate", str(path), "--format", "seal-tools")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # validate never writes


def test_seal_tools_file_is_clean(shared_data: Path) -> None:
    code, out, _ = _run(
        "tools",
        "validate",
        str(shared_data / "seal-tools" / "tool.jsonl"),
        "--json",
        "--strict",
    )
    assert code == 0
    report = json.loads(out)
    assert (report["tools"], report["problems"]) == (4076, [])  # no unknown type name either


SEAL_TYPO = {
    "api_name": "lookup",
    "api_description": "Look a word up.",
    "parameters": {
        "word": {"type": "strng", "description": "The word"},
        "limit": {"type": "int", "description": "How many"},
    },
    "required": ["word"],
    "responses": {"meaning": {"type": "str", "description": "Meaning"}},
}


def test_unknown_type_names_are_warnings_and_errors_under_strict(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(SEAL_TYPO) + "\n")
    expected = (
        f"{path}:2: tool 'lookup': parameters.properties.word: unknown type name 'strng' "
        "(did you mean 'string'?)"
    )
    code, out, err = _run("tools", "validate", str(path))
    assert code == 0 and out == ""
    assert f"warning: {expected}" in err.replace("\n", "")
    assert "2 valid tools, ok (1 warning)" in err

    code, out, err = _run("tools", "validate", str(path), "--strict")
    assert code == 2 and f"error: {expected}" in err.replace("\n", "")

    code, out, _ = _run("tools", "validate", str(path), "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True
    assert (report["errors"], report["warnings"]) == (0, 1)
    (problem,) = report["problems"]
    assert (problem["line"], problem["tool"], problem["severity"]) == (2, "lookup", "warning")
    code, out, _ = _run("tools", "validate", str(path), "--json", "--strict")
    assert code == 2 and json.loads(out)["ok"] is False


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    path.write_text("\n")
    code, out, err = _run("tools", "validate", str(path))
    assert code == 2 and f"{path}: the file holds no tools" in err
    code, out, _ = _run("tools", "validate", str(path), "--json")
    assert code == 2 and json.loads(out)["problems"][0]["problem"] == "the file holds no tools"


def test_help() -> None:
    code, out, _ = _run("tools", "validate", "--help")
    assert code == 0 and "--json" in out and "--format" in out
