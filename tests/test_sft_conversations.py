"""Whole conversations as training data: real results, answers carrying them, follow-ups that
never repeat an answered call, one checked span per step, and prompts byte for byte what
``toollab chat`` and the llama.cpp backend render."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toollab.agents.conversation import CONVERSATION_POLICY, call_key, observation_text
from toollab.cli.chat_cmd import ChatSession
from toollab.cli.main import app
from toollab.envs import get_env
from toollab.errors import UsageError
from toollab.models import GenerateOptions
from toollab.models.fake import FakeModel
from toollab.models.policy import parse_constrained
from toollab.parsing import ParseStatus
from toollab.sft import SFTConfig, export_sft, parse_source
from toollab.sft.episodes import (
    CALL,
    FOLLOW_UP,
    NO_CALL,
    NO_SEARCH,
    EpisodeConfig,
    answer_from,
    build_conversations,
)
from toollab.templates import get_template
from toollab.tools import Executor

MARKER = "<|im_end|>"
ENVS = ["weather", "finance", "workspace"]


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("conv") / "examples.jsonl"
    cfg = SFTConfig(
        sources=[parse_source(f"env:{e},n=12") for e in ENVS],
        out=out,
        conversations=True,
        unguarded=["bfcl", "seal-tools", "deer"],
        seed=1,
    )
    result = export_sft(cfg)
    return result.path, result.figures


def test_every_step_is_a_checked_span(exported: tuple[Path, dict[str, Any]]) -> None:
    path, fig = exported
    recs = read(path)
    assert len(recs) == fig["records"] == fig["conversation"]["conversations"]
    assert len(recs) + sum(fig["rejected"].values()) == 36
    assert len(recs) >= 33 and set(fig["rejected"]) <= {"over the token budget"}
    assert all(n <= 2048 for n in [fig["tokens"]["max"]])
    several = 0
    for rec in recs:
        assistants = [m["content"] for m in rec["messages"] if m["role"] == "assistant"]
        assert len(rec["spans"]) == len(assistants) >= 2  # a call and the answer at least
        several += len(rec["spans"]) > 2
        for (start, end), content in zip(rec["spans"], assistants, strict=True):
            assert rec["text"][start:end] == content + MARKER
            assert rec["text"][:start].endswith("<|im_start|>assistant\n")
            parsed = parse_constrained(content, CONVERSATION_POLICY)
            assert not parsed.is_error
        msgs = rec["messages"]
        for i, m in enumerate(msgs):  # every call is followed by its result, every answer not
            if m["role"] == "assistant":
                calls = parse_constrained(m["content"]).status is ParseStatus.CALLS
                assert (msgs[i + 1]["role"] == "tool") == calls if i + 1 < len(msgs) else not calls
        assert rec["meta"]["pack"] == "conversation"
    assert several >= len(recs) // 2  # most have a follow-up turn or several calls
    kinds = fig["conversation"]["user_turns"]
    assert kinds[CALL] == len(recs) and kinds[FOLLOW_UP] and kinds[NO_CALL] and kinds[NO_SEARCH]
    card = (path.parent / "README.md").read_text()
    assert "## Conversations" in card and "answers after the results" in card


def test_results_are_real_answers_carry_them_and_no_call_repeats() -> None:
    for env_name in ENVS:
        env = get_env(env_name)
        for conv in build_conversations(EpisodeConfig(env_name, 10, seed=3)):
            env.reset(conv.seed)
            seen: dict[str, str] = {}
            for turn in conv.turns:
                made, results = [], []
                for step in turn.steps:
                    if step.call is None:
                        continue
                    # the recorded result is what executing the call in the world gives
                    result = env.execute(step.call)
                    assert step.result == observation_text(result)
                    assert seen.get(call_key(step.call)) != step.result  # never repeated
                    seen[call_key(step.call)] = step.result
                    made.append(step.call)
                    results.append(result)
                last = json.loads(turn.steps[-1].target)
                assert last["decision"] == "no_call"
                if made:
                    assert last["answer"] == answer_from(made, results)


def test_follow_ups_in_a_changed_tabletop_scene_are_drawn_again_not_a_crash() -> None:
    """A Tabletop follow-up drawn after a turn that stacked blocks: a goal whose programs cannot
    run there (a block under another) is drawn again; every kept turn runs in the world."""
    env = get_env("tabletop")
    convs = build_conversations(EpisodeConfig("tabletop", 120, seed=5))
    follow_ups = [t for c in convs for t in c.turns if t.kind == FOLLOW_UP]
    assert len(convs) == 120 and follow_ups
    for conv in convs:
        env.reset(conv.seed)
        for turn in conv.turns:
            for step in turn.steps:
                if step.call is not None:
                    assert step.result == observation_text(env.execute(step.call))


def test_the_answer_says_the_observed_values() -> None:
    from toollab.schema import ToolCall

    call = ToolCall(name="get_stock_quote", arguments={"symbol": "AAPL"})
    obs = {"kind": "quote", "symbol": "AAPL", "price": 183.73, "items": [{"title": "A"}, "b"]}
    text = answer_from([call], [obs])
    assert text == "get_stock_quote: the symbol is AAPL; the price is 183.73; the items are A, b."
    assert answer_from([call], ["ok"]) == "get_stock_quote: the result is ok."


def test_chat_renders_the_same_conversation(tmp_path: Path) -> None:
    """Replaying a training conversation through ``toollab chat`` (the fake model writes the
    steps, the environment runs the calls) gives exactly the record's messages."""
    out = tmp_path / "c.jsonl"
    cfg = SFTConfig(
        sources=[parse_source("env:finance,n=6")],
        out=out,
        conversations=True,
        unguarded=["bfcl", "seal-tools", "deer"],
        count_tokens=False,
    )
    export_sft(cfg)
    convs = build_conversations(EpisodeConfig("finance", 6))
    tpl = get_template("json")

    class ConstrainedFake(FakeModel):
        supports_constraints = True

    for rec, conv in zip(read(out), convs, strict=True):
        env = get_env("finance")
        env.reset(conv.seed)
        model = ConstrainedFake(outputs=[s.target for s in conv.steps])
        chat = ChatSession(
            model,
            tpl,
            conv.tools,
            Executor(env.pool, confine=False),
            GenerateOptions(),
            max_steps=12,
            constrained=True,
            require_call=False,
        )
        for turn in conv.turns:
            chat.turn(turn.instance.query)
        assert chat.messages == rec["messages"]
        for req in model.requests:  # every prompt is a prefix of the training conversation
            assert req.messages == rec["messages"][: len(req.messages)]


def test_prompt_is_what_llama_cpp_renders(exported: tuple[Path, dict[str, Any]]) -> None:
    pytest.importorskip("llama_cpp")
    from toollab.models.base import ChatRequest
    from toollab.models.llamacpp import LlamaCppModel

    path, _ = exported
    model = LlamaCppModel(n_ctx=512)
    try:
        for rec in read(path)[:6]:
            msgs = rec["messages"]
            starts = [s for s, _ in rec["spans"]]
            at = [i for i, m in enumerate(msgs) if m["role"] == "assistant"]
            for i, start in zip(at, starts, strict=True):
                assert model.render(ChatRequest(messages=msgs[:i])) == rec["text"][:start]
    finally:
        model.close()


def test_conversations_take_environment_sources_only(tmp_path: Path, shared_data: Path) -> None:
    cfg = SFTConfig(
        sources=[parse_source(f"seal-tools:{shared_data / 'seal-tools' / 'dev.jsonl'}")],
        out=tmp_path / "x.jsonl",
        conversations=True,
        unguarded=["bfcl", "seal-tools", "deer"],
    )
    with pytest.raises(UsageError, match="environment sources only"):
        export_sft(cfg)
    res = CliRunner().invoke(
        app,
        ["data", "sft", "--conversations", "--env", "weather", "--n", "3", "--mask", "0.5",
         "--out", str(tmp_path / "y.jsonl"), "--unguarded", "bfcl", "--unguarded", "seal-tools",
         "--unguarded", "deer"],
    )  # fmt: skip
    assert res.exit_code == 2 and "no augmentation" in res.output
