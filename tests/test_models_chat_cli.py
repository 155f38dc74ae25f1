"""``toollab chat`` driven through stdin with the scripted fake model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app

TOOLS_PY = '''
from toollab.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first number
        b: second number
    """
    return a + b
'''


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "mytools.py"
    path.write_text(TOOLS_PY)
    return path


def _script(tmp_path: Path, outputs: list[object]) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(outputs))
    return path


def test_chat_shows_calls_results_and_answer(tmp_path: Path, tools_file: Path) -> None:
    script = _script(tmp_path, ['{"name": "add", "arguments": {"a": 2, "b": 3}}', "The sum is 5."])
    result = CliRunner().invoke(
        app,
        ["chat", "--model", f"fake:{script}", "--tools", str(tools_file), "--template", "json"],
        input="what is 2 + 3?\n/exit\n",
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "add(a=2, b=3)" in out
    assert "5" in out.split("add(a=2, b=3)", 1)[1]
    assert "The sum is 5." in out


def test_chat_reset_and_model_errors(tmp_path: Path) -> None:
    script = _script(tmp_path, ["hello there", {"error": "server down"}])
    result = CliRunner().invoke(
        app, ["chat", "--model", f"fake:{script}"], input="hi\n/reset\nagain\n"
    )
    assert result.exit_code == 0, result.output
    assert "hello there" in result.output
    assert "conversation cleared" in result.output
    assert "server down" in result.output


def test_chat_bad_model_string_exits_2() -> None:
    result = CliRunner().invoke(app, ["chat", "--model", "lamacpp:/x.gguf"], input="")
    assert result.exit_code == 2
    assert "did you mean 'llamacpp'" in result.output
