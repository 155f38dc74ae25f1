"""The conversation evaluation (``toollab eval --conversations``): held-out episodes, the
``conversation`` agent playing them with real environment execution, and the ``conversation``
scorer's figures — driven by scripted models that follow the reference, loop, write garbage or
fail, and once by the bundled model through llama.cpp."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab import Task, evaluate
from toollab.agents.conversation import answer_turn
from toollab.cli.main import app
from toollab.envs.splits import api_combo, is_eval_query, is_test_combo
from toollab.errors import UsageError
from toollab.eval.conversations import episodes
from toollab.eval.log import TaskLog, read_task_log
from toollab.eval.metrics.conversation import carries, reference_turns
from toollab.models.base import Message
from toollab.models.fake import FakeModel
from toollab.schema import Instance, Tool

ENVS = ("finance", "favourites")


@cache
def _episodes(env: str, split: str = "test", n: int = 3) -> tuple[Instance, ...]:
    return tuple(episodes(env, split, n))


def all_episodes() -> list[Instance]:
    return [i for env in ENVS for i in _episodes(env)]


def _user_turns(messages: list[Message]) -> tuple[int, list[Message]]:
    """(index of the current user turn, the messages after its user message)."""
    users = [k for k, m in enumerate(messages) if m["role"] == "user"]
    return len(users) - 1, messages[users[-1] + 1 :]


def follower(instances: list[Instance], *, answer: bool = True) -> Callable[..., str]:
    """A model that makes each turn's reference calls and then answers with what they returned
    (``answer=False``: with a made-up sentence)."""
    by_first = {i.messages[0]["content"]: i for i in instances}

    def fn(messages: list[Message], tools: list[Tool]) -> str:
        inst = by_first[next(m["content"] for m in messages if m["role"] == "user")]
        refs = reference_turns(inst) or []
        turn, since = _user_turns(messages)
        made = sum(1 for m in since if m["role"] == "tool")
        offset = sum(r.calls for r in refs[:turn])
        if made < refs[turn].calls:
            call = inst.gold[offset + made]
            return json.dumps({"name": call.name, "arguments": call.arguments})
        if not made:
            return "None of the available tools can do this."
        if not answer:
            return "Thanks for waiting."
        # the protocol's answer object (what a model trained on it writes, read without a grammar)
        found = " ".join(m["content"] for m in since if m["role"] == "tool")
        return answer_turn(f"Here is what I found: {found}")

    return fn


def run(model: FakeModel, instances: list[Instance], tmp_path: Path, steps: int = 4) -> TaskLog:
    task = Task(dataset=instances, agent="conversation", name="conv", max_turns=steps)
    return evaluate(task, model, log_dir=tmp_path, concurrency=1).tasks[0]


# -- the episodes ----------------------------------------------------------------------------------
def test_episodes_come_from_held_out_splits_only() -> None:
    """Test episodes: every turn with calls is of a test API combination (what sets test Call
    queries apart), every other turn's text is reserved for evaluation; validation episodes use
    reserved texts only; the train split is refused."""
    for env in ENVS:
        for inst in _episodes(env):
            refs = reference_turns(inst)
            assert refs is not None and refs[0].kind == "call"
            assert inst.split == "test" and inst.source == f"env:{env}"
            assert len(inst.messages) == len(refs)
            assert refs[0].id.startswith(f"{env}-test-")
            offset = 0
            for ref, msg in zip(refs, inst.messages, strict=True):
                program = inst.gold[offset : offset + ref.calls]
                offset += ref.calls
                if ref.calls:
                    assert is_test_combo(env, api_combo(program)), msg
                else:
                    assert is_eval_query(msg["content"]), msg
            assert offset == len(inst.gold)
    for inst in _episodes("favourites", "validation"):
        assert inst.split == "validation"
        assert all(is_eval_query(m["content"]) for m in inst.messages)
    with pytest.raises(UsageError, match="held-out"):
        episodes("finance", "train", 1)


def test_every_turn_kind_and_values_to_carry_occur() -> None:
    refs = [r for i in all_episodes() for r in reference_turns(i) or []]
    kinds = {r.kind for r in refs}
    assert "call" in kinds and kinds & {"no-call", "no-search"}
    with_values = [r for r in refs if r.values]
    assert with_values
    for r in with_values:  # the values are the reference answer's own
        assert all(carries(v, r.answer) for v in r.values), r


def test_carries_is_deterministic_and_strict() -> None:
    assert carries("2697.92", "the balance is now 2,697.92 dollars")
    assert carries("115.0", "It converts 115 CHF.")
    assert not carries("115", "It converts 1150 CHF.")
    assert not carries("7", "about 17 files")
    assert carries("Madrid, ES", "In madrid,  es it is warm")
    assert not carries("Emma", "Emmanuel called")
    assert carries("-3.5", "a change of -3.5 %")


def test_the_spreadsheet_offers_its_retrieved_tools_from_the_user_messages_only() -> None:
    """62 tools do not fit the context: as in the bench, the top 8 BM25 hits are offered, ranked
    by the user messages (model-visible), never by the answer key."""
    from toollab.envs.base import env_class
    from toollab.eval.conversations import with_retrieved_tools

    sheet = env_class("spreadsheet")()
    every = [sheet.tool(n) for n in sheet.tool_names]
    k = env_class("spreadsheet").retrieved_tools
    assert k is not None and len(every) > k
    for inst in episodes("spreadsheet", "test", 2):
        assert len(inst.tools) == k
        [with_key] = with_retrieved_tools("spreadsheet", [inst.model_copy(update={"tools": every})])
        blind = inst.model_copy(update={"tools": every, "gold": [], "metadata": {}})
        [without] = with_retrieved_tools("spreadsheet", [blind])
        assert with_key.tools == without.tools == inst.tools
    finance = _episodes("finance")[0]
    assert with_retrieved_tools("finance", [finance])[0] is finance  # no retrieval: every tool


# -- scripted models -------------------------------------------------------------------------------
def test_a_model_that_follows_and_answers_with_the_results_scores_full(tmp_path: Path) -> None:
    insts = all_episodes()
    log = run(FakeModel(fn=follower(insts)), insts, tmp_path)
    figs = log.results["conversation"]
    assert figs["answered"] == 1.0
    assert figs["carries_values"] == 1.0 and figs["value_recall"] == 1.0
    assert figs["no_tool_answered"] == 1.0
    assert figs["repeated_calls"] == 0 and figs["step_limit"] == 0.0 and figs["crashed"] == 0.0
    assert figs["turns"] == sum(len(i.messages) for i in insts) / len(insts)
    assert log.results["environment"]["success"] == 1.0  # the world ends as the reference's
    # per-sample scores in the run's record, read back as `toollab score` / reports read them
    back = read_task_log(log.run_dir)
    assert back.scores.per_sample["conversation"] == log.scores.per_sample["conversation"]
    assert set(back.scores.breakdown["conversation"]) == set(ENVS)


def test_an_answer_without_the_values_is_answered_but_carries_none(tmp_path: Path) -> None:
    insts = all_episodes()
    figs = run(FakeModel(fn=follower(insts, answer=False)), insts, tmp_path).results["conversation"]
    assert figs["answered"] == 1.0
    assert figs["carries_values"] == 0.0 and figs["value_recall"] == 0.0


def test_a_model_that_loops_is_stopped_by_the_guard_and_the_step_limit(tmp_path: Path) -> None:
    insts = list(_episodes("finance"))
    first = insts[0].gold[0]
    same = json.dumps({"name": first.name, "arguments": first.arguments})
    log = run(FakeModel(outputs=[same], repeat=True), insts[:1], tmp_path)
    figs = log.results["conversation"]
    assert figs["answered"] == 0.0 and figs["carries_values"] == 0.0
    assert figs["guard_ended"] == 1.0 and figs["repeat_turns"] == 1.0
    assert figs["repeated_calls"] == 2 * len(insts[0].messages)  # two repeats end each turn
    ex = log.samples[0].prediction.execution
    assert ex is not None and ex.n_calls <= len(insts[0].messages) * 2  # never ran a third time

    # calls that differ every step are no repeats: the step limit ends each turn
    counter = iter(range(10_000))

    def fresh(messages: list[Message], tools: list[Tool]) -> str:
        return json.dumps({"name": "get_balance", "arguments": {"account_id": f"X{next(counter)}"}})

    figs = run(FakeModel(fn=fresh), insts[:1], tmp_path / "b", steps=3).results["conversation"]
    assert figs["step_limit"] == 1.0 and figs["repeated_calls"] == 0
    assert figs["steps"] == 3 * len(insts[0].messages)
    assert figs["final_step"] == 0.0  # unconstrained: no final step

    # constrained, the step after the limit admits only the answer: every turn gets one
    class ConstrainedFake(FakeModel):
        supports_constraints = True

    def fresh_then_answer(messages: list[Message], tools: list[Tool]) -> str:
        _, since = _user_turns(messages)
        if sum(1 for m in since if m["role"] == "tool") >= 3:
            return answer_turn("Here is what I found.")
        return fresh(messages, tools)

    model = ConstrainedFake(fn=fresh_then_answer)
    log = run(model, insts[:1], tmp_path / "c", steps=3)
    figs = log.results["conversation"]
    assert figs["final_step"] == 1.0 and figs["step_limit"] == 0.0
    assert figs["answered"] == 1.0 and figs["steps"] == 4 * len(insts[0].messages)
    finals = [r for r in model.requests if '"call"' not in json.dumps(r.options.json_schema)]
    assert len(finals) == len(insts[0].messages)
    turns = log.samples[0].prediction.metadata["turns"]
    assert [t["ended_by"] for t in turns] == ["final_answer"] * len(insts[0].messages)


def test_garbage_and_failures_are_data(tmp_path: Path) -> None:
    insts = list(_episodes("finance"))[:2]
    garbage = '{"name": "transfer", "arguments": {"amount": '
    figs = run(FakeModel(outputs=[garbage], repeat=True), insts, tmp_path).results["conversation"]
    assert figs["unparsed"] == 1.0 and figs["answered"] == 0.0 and figs["crashed"] == 0.0
    assert figs["turns"] == sum(len(i.messages) for i in insts) / 2  # every turn still played

    log = run(FakeModel(outputs=[RuntimeError("backend down")], repeat=True), insts, tmp_path / "f")
    figs = log.results["conversation"]
    assert figs["crashed"] == 1.0 and figs["turns"] == 1.0 and figs["answered"] == 0.0
    assert all(s.prediction.error for s in log.samples)


# -- the command line ------------------------------------------------------------------------------
def test_cli_runs_scores_and_refuses_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["eval", "--conversations", "-e", "finance", "--episodes", "2", "-m", "fake:"]
    result = CliRunner().invoke(app, [*args, "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["run"]["agent"] == "conversation" and data["run"]["max_turns"] == 4
    assert data["metrics"]["conversation"]["no_tool_answered"] is not None
    assert len(data["per_sample"]["conversation"]) == 2
    scored = CliRunner().invoke(app, ["score", str(out), "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["metrics"]["conversation"] == data["metrics"]["conversation"]
    for bad, says in (
        (["--split", "train"], "held-out"),
        (["--data", str(tmp_path)], "--data"),
        (["-e", "atlantis"], "atlantis"),
        (["--agent", "react"], "conversation agent"),
        (["--episodes", "5000"], "1000 per environment"),
        (["--followups", "9"], "follow-up turns"),
    ):
        res = CliRunner().invoke(app, [*args, *bad, "--out", str(tmp_path / "x")])
        assert res.exit_code == 2 and says in res.output, res.output
    res = CliRunner().invoke(app, ["eval", "-m", "fake:", "--out", str(tmp_path / "y")])
    assert res.exit_code == 2 and "--conversations" in res.output


# -- the bundled model -----------------------------------------------------------------------------
@pytest.mark.slow
def test_bundled_model_plays_a_held_out_episode(tmp_path: Path) -> None:
    """One episode through llama.cpp, constrained: every turn ends one way or another."""
    pytest.importorskip("llama_cpp")
    insts = list(_episodes("finance"))[:1]
    log = evaluate(
        Task(dataset=insts, agent="conversation", name="conv", max_turns=2, max_tokens=64),
        "bundled:smollm2-135m",
        log_dir=tmp_path,
    ).tasks[0]
    (sample,) = log.samples
    assert log.spec.constrained is True and not sample.prediction.error
    row = sample.scores["conversation"]
    assert row["played"] == len(insts[0].messages)
    assert 1 <= row["steps"] <= 2 * len(insts[0].messages)
    assert row["unparsed"] == 0  # constrained decoding: every step reads
