"""ToolEyes: rule-based IF and tool reality on ReAct traces, and the judged capabilities with a
scripted judge model (cached on disk)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toollab.eval.metrics import Judge, get_scorer, parse_judge_score
from toollab.eval.metrics.tooleyes import score_trace, tool_table
from toollab.eval.record import Prediction, Step
from toollab.models.fake import FakeModel
from toollab.schema import Instance, Tool

WEATHER = Tool(
    name="get_weather",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
)
FINISH = Tool(
    name="finish",
    parameters={
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    },
)
INST = Instance(
    id="TG-0", query="Weather in Paris?", tools=[WEATHER, FINISH], source="tooleyes", category="RS"
)

TURNS = [
    "Thought: need weather\nAction: get_weather\nAction Input: {'city': 'Paris'}",
    "Thought: hmm\nAction: get_weather\nAction Input: {'town': 'Paris'}",  # param error
    "I will now answer",  # no ReAct format
    "Thought: x\nAction: get_weather\nAction Input: {city: Paris}",  # not a literal
    "Thought: done\nAction: finish\nAction Input: {'answer': 'Sunny'}",  # final turn
]


def _trace(turns: list[str]) -> Prediction:
    steps: list[Step] = []
    for t in turns:
        steps.append(Step(role="assistant", text=t))
        if t is not turns[-1]:
            steps.append(Step(role="observation", text="{}"))
    return Prediction(id="TG-0", raw=turns[-1], steps=steps)


def test_format_alignment_and_tool_reality_by_hand() -> None:
    ts = score_trace(TURNS, TURNS[-1], tool_table(INST))
    assert pytest.approx(3 / 5) == ts.IF
    assert ts.tool_checked == 2 and ts.param_err == 1
    assert ts.tool_reality == 0.5
    assert ts.match_turns == [0, 1, 4]


def test_no_param_check_after_a_hallucinated_tool() -> None:
    turns = [
        "Thought: a\nAction: weather_api\nAction Input: {'city': 'Paris'}",
        "Thought: b\nAction: get_weather\nAction Input: {'town': 'Paris'}",
        "Thought: c\nAction: finish\nAction Input: {'answer': 'x'}",
    ]
    ts = score_trace(turns, turns[-1], tool_table(INST))
    assert (ts.tool_hallu, ts.param_err, ts.tool_checked) == (1, 0, 2)
    assert ts.tool_reality == 0.5


def test_forced_stop_is_a_format_error() -> None:
    last = "Thought: x\nAction: finish\nAction Input: {'answer': 'I cannot handle the task. I was trying too many times'}"
    ts = score_trace([TURNS[0], last], last, tool_table(INST))
    assert ts.IF == 0.5 and ts.ans_pass == 0


def test_without_judge_only_rule_figures() -> None:
    res = get_scorer("tooleyes").score([_trace(TURNS)], {"TG-0": INST})
    assert res.metrics["IF"] == pytest.approx(0.6)
    assert res.metrics["tool_reality"] == 0.5
    for k in ("IU", "BP", "TS", "AO", "overall"):
        assert res.metrics[k] is None
    assert any("judge" in n for n in res.notes)
    assert res.breakdown["RS"]["IF"] == pytest.approx(0.6)


JUDGE_ANSWER = "Scoring Reason: the thought chain is focused.\n\nEvaluation Score: 8"


def test_judged_capabilities_and_cache(tmp_path: Path) -> None:
    cache = tmp_path / "judge.jsonl"
    model = FakeModel(fn=lambda messages, tools: JUDGE_ANSWER, name="fake:judge")
    judge = Judge(model, cache)
    res = get_scorer("tooleyes", judge=judge).score([_trace(TURNS)], {"TG-0": INST})
    m = res.metrics
    assert m["IU"] == pytest.approx(0.8)
    assert m["BP"] == pytest.approx(0.64)
    assert m["TS"] == pytest.approx(0.5 * 0.8)
    assert m["AO"] == pytest.approx(0.8)
    assert m["overall"] == pytest.approx((0.6 + 0.8 + 0.64 + 0.4 + 0.8) / 5)
    assert judge.requests_made == 4 + 3  # four chain prompts and one match per counted turn
    systems = [r.messages[0]["content"] for r in model.requests]
    assert any("grammatical errors" in s for s in systems)
    assert any("If the THOUGHT is empty, assign a score of 5" in s for s in systems)
    # a second scoring with the same cache asks nothing
    judge2 = Judge(FakeModel(outputs=[], name="fake:judge"), cache)
    again = get_scorer("tooleyes", judge=judge2).score([_trace(TURNS)], {"TG-0": INST})
    assert judge2.requests_made == 0
    assert again.metrics == res.metrics


def test_unreadable_judge_answer_scores_zero(tmp_path: Path) -> None:
    model = FakeModel(fn=lambda messages, tools: "I refuse to grade.", name="fake:mute")
    res = get_scorer("tooleyes", judge=model, judge_cache=tmp_path / "c.jsonl").score(
        [_trace(TURNS)], {"TG-0": INST}
    )
    assert res.metrics["IU"] == 0.0
    assert res.errors["judge_unparseable"] == 7


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("Scoring Reason: ok.\n\nEvaluation Score: 10", 10),
        ("Evaluation Score: 7/10", 7),
        ("Evaluation Score: **8**", 8),
        ("evaluation score : 3.", 3),
        ("Reason... I would give it 6/10.", 6),
        ("no number here", None),
        ("", None),
    ],
)
def test_parse_judge_score(text: str, score: int | None) -> None:
    assert parse_judge_score(text) == score


def test_real_tooleyes_instances_accept_traces(shared_data: Path) -> None:
    from toollab.data import load_dataset

    insts = {i.id: i for i in load_dataset(shared_data / "tooleyes", "tooleyes").instances[:20]}
    preds = []
    for i in insts.values():
        tool = next(t for t in i.tools if t.name not in ("finish", "ask_to_user"))
        args = {r: "x" for r in tool.required}
        turn = f"Thought: use it\nAction: {tool.name}\nAction Input: {args!r}"
        last = "Thought: done\nAction: finish\nAction Input: {'answer': 'ok'}"
        preds.append(
            Prediction(
                id=i.id,
                steps=[
                    Step(role="assistant", text=turn),
                    Step(role="observation", text="{}"),
                    Step(role="assistant", text=last),
                ],
            )
        )
    res = get_scorer("tooleyes").score(preds, insts)
    assert res.metrics["IF"] == 1.0 and res.metrics["tool_reality"] == 1.0
