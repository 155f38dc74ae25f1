"""``toollab chat`` driven through stdin with the scripted fake model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab.cli.chat_cmd import ChatSession
from toollab.cli.main import app
from toollab.errors import BackendError
from toollab.models import GenerateOptions
from toollab.models.fake import FakeModel
from toollab.templates import get_template
from toollab.tools import Executor, ToolPool

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


def test_model_error_after_a_tool_round_drops_the_whole_turn(tools_file: Path) -> None:
    """The history never keeps a call without its result nor a message without an answer."""
    pool = ToolPool.load(tools_file)
    model = FakeModel(
        outputs=[
            '{"name": "add", "arguments": {"a": 2, "b": 3}}',
            BackendError("server down"),
            "Hello again.",
        ]
    )
    tpl = get_template("json")
    session = ChatSession(model, tpl, list(pool.tools), Executor(pool), GenerateOptions())
    before = list(session.messages)
    assert session.turn("what is 2 + 3?") is None
    # the model saw the call and its result before failing ...
    assert [m["role"] for m in model.requests[1].messages] == [
        "system",
        "user",
        "assistant",
        "tool",
    ]
    # ... and the failed turn left nothing behind
    assert session.messages == before
    assert session.turn("hi") == "Hello again."
    assert [m["role"] for m in model.requests[2].messages] == ["system", "user"]
    assert model.requests[2].messages[-1]["content"] == "hi"
    roles = [m["role"] for m in session.messages]
    assert roles == ["system", "user", "assistant"]


def test_constrained_needs_tools_and_backend_support(tools_file: Path) -> None:
    pool = ToolPool.load(tools_file)
    tpl = get_template("json")
    opts = GenerateOptions()
    fake = FakeModel(outputs=["x"])
    assert not ChatSession(fake, tpl, list(pool.tools), None, opts, constrained=True).constrained

    class ConstrainedFake(FakeModel):
        supports_constraints = True

    model = ConstrainedFake(
        outputs=[
            '{"name": "add", "arguments": {"a": 2, "b": 3}}',
            '{"decision": "no_call", "answer": "It is 5."}',
        ]
    )
    assert not ChatSession(model, tpl, [], None, opts, constrained=True).constrained
    session = ChatSession(model, tpl, list(pool.tools), Executor(pool), opts, constrained=True)
    assert session.constrained
    assert session.turn("what is 2 + 3?") == "It is 5."
    first, second = (r.options.json_schema or {} for r in model.requests)
    assert first["properties"]["name"] == {"const": "add"}  # the first answer must call
    assert "decision" in json.dumps(second)  # later ones may answer
    assert all(r.options.native_tools is False for r in model.requests)
    # the history holds each step as the conversation protocol writes it (what the training
    # conversations hold), whatever shape the first step was decoded in
    assert session.messages[2] == {
        "role": "assistant",
        "content": '{"decision": "call", "call": {"name": "add", "arguments": {"a": 2, "b": 3}}}',
    }
    assert session.messages[3]["role"] == "tool" and session.messages[3]["content"] == "5"
    assert session.messages[4] == {
        "role": "assistant",
        "content": '{"decision": "no_call", "answer": "It is 5."}',
    }


def test_at_the_step_limit_a_final_step_answers_with_no_call_allowed(tools_file: Path) -> None:
    """Every step a call up to ``max_steps``: one more step, whose grammar is the protocol's
    answer branch alone, ends the message with an answer; unconstrained, the turn stops."""
    from toollab.agents.conversation import FINAL, STEP_LIMIT, TurnRunner

    pool = ToolPool.load(tools_file)
    tpl = get_template("json")

    class ConstrainedFake(FakeModel):
        supports_constraints = True

    call = '{"name": "add", "arguments": {"a": 2, "b": 3}}'
    model = ConstrainedFake(outputs=[call, '{"decision": "no_call", "answer": "It is 5."}'])
    session = ChatSession(
        model,
        tpl,
        list(pool.tools),
        Executor(pool),
        GenerateOptions(),
        constrained=True,
        max_steps=1,
    )
    assert session.turn("what is 2 + 3?") == "It is 5."
    final = model.requests[-1].options.json_schema or {}
    assert final["properties"]["decision"] == {"const": "no_call"}
    assert '"call"' not in json.dumps(final) and "anyOf" not in final
    assert session.messages[-1] == {
        "role": "assistant",
        "content": '{"decision": "no_call", "answer": "It is 5."}',
    }

    async def execute(calls: list[object]) -> list[object]:
        return [5 for _ in calls]

    def runner(model: FakeModel, constrained: bool) -> TurnRunner:
        return TurnRunner(
            model,
            tpl,
            list(pool.tools),
            execute,
            GenerateOptions(),
            max_steps=2,
            constrained=constrained,
        )

    from toollab.models.base import run_sync

    looping = ConstrainedFake(outputs=[call], repeat=True)  # a call even at the final step
    out = run_sync(runner(looping, True).run_turn([], "2 + 3?"))
    assert out.ended_by == STEP_LIMIT and out.answer is None and len(out.steps) == 3
    plain = FakeModel(outputs=[call], repeat=True)
    out = run_sync(runner(plain, False).run_turn([], "2 + 3?"))
    assert out.ended_by == STEP_LIMIT and len(out.steps) == 2  # no grammar: no final step
    answering = ConstrainedFake(outputs=[call, call, '{"decision": "no_call", "answer": "5"}'])
    out = run_sync(runner(answering, True).run_turn([], "2 + 3?"))
    assert out.ended_by == FINAL and out.answer == "5" and len(out.steps) == 3


@pytest.mark.slow
def test_bundled_model_calls_tools_when_constrained(tools_file: Path) -> None:
    """Piped input, the real bundled model: constrained (the default) it calls ``add``."""
    pytest.importorskip("llama_cpp")
    env = {"COLUMNS": "200"}
    args = ["chat", "--tools", str(tools_file), "--max-tokens", "48", "--max-steps", "2"]
    result = CliRunner().invoke(app, args, input="What is 2 + 3?\n/exit\n", env=env)
    assert result.exit_code == 0, result.output
    assert "bundled:smollm2-135m" in result.output and "· constrained" in result.output
    assert "call add(a=2, b=3)" in result.output
    assert "→ 5" in result.output
    plain = CliRunner().invoke(
        app, [*args, "--no-constrained"], input="What is 2 + 3?\n/exit\n", env=env
    )
    assert plain.exit_code == 0, plain.output
    assert "· unconstrained" in plain.output
