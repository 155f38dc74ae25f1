"""ToolEyes: rule-based IF and tool reality on ReAct traces, and the judged capabilities with a
scripted judge model (cached on disk)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toollab.errors import InputError
from toollab.eval.metrics import Judge, get_scorer, parse_judge_score
from toollab.eval.metrics.tooleyes import MAX_TURNS_STOP, score_trace, tool_table, trace_of
from toollab.eval.metrics.tooleyes_prompts import (
    final_answer,
    process_action_pair,
    tool_documents,
    turn_thought,
    turn_tool,
)
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


# -- the in-place ``required`` quirk and the corrected variant ----------------------------------

SUPPLIES_CITY = "Thought: a\nAction: get_weather\nAction Input: {'city': 'Paris'}"
LACKS_CITY = "Thought: b\nAction: get_weather\nAction Input: {'unit': 'C'}"
FINAL = "Thought: c\nAction: finish\nAction Input: {'answer': 'x'}"


@pytest.mark.parametrize(
    ("turns", "faithful", "strict"),
    [
        ([SUPPLIES_CITY, LACKS_CITY, FINAL], 0, 1),  # city left the list with the first call
        ([LACKS_CITY, LACKS_CITY, FINAL], 2, 2),  # never supplied: flagged every time
        ([LACKS_CITY, SUPPLIES_CITY, LACKS_CITY, FINAL], 1, 2),
    ],
)
def test_required_list_shrinks_over_a_conversation(
    turns: list[str], faithful: int, strict: int
) -> None:
    """Upstream ``required_param_check`` removes supplied parameters from the doc's required
    list in place, once per conversation; ``tooleyes_strict`` checks each call afresh."""
    table = tool_table(INST)
    assert score_trace(turns, turns[-1], table).param_err == faithful
    assert score_trace(turns, turns[-1], table, consume_required=False).param_err == strict
    # the next conversation starts from the full list again
    assert score_trace([LACKS_CITY, FINAL], FINAL, table).param_err == 1
    pred = _trace(turns)
    checked = len(turns) - 1
    res = get_scorer("tooleyes").score([pred], {"TG-0": INST})
    assert res.metrics["tool_reality"] == pytest.approx(1 - faithful / checked)
    res = get_scorer("tooleyes_strict").score([pred], {"TG-0": INST})
    assert res.metrics["tool_reality"] == pytest.approx(1 - strict / checked)


def test_the_strict_variant_runs_only_when_named() -> None:
    from toollab.eval.metrics import applicable_scorers

    assert [s.name for s in applicable_scorers([INST])] == ["tooleyes"]
    every = [s.name for s in applicable_scorers([INST], include_variants=True)]
    assert every == ["tooleyes", "tooleyes_strict"]


def test_a_run_stopped_by_max_turns_ends_with_the_forced_turn() -> None:
    """Upstream's loop appends "I cannot solve this task due to trying too many times" when it
    runs out of turns: a format error, and the answer does not pass."""
    turns = [SUPPLIES_CITY, SUPPLIES_CITY]
    pred = _trace(turns)
    pred.steps.append(Step(role="observation", text="{}"))
    pred.execution = {"ended_by": "max_turns"}
    got, _, last = trace_of(pred)
    assert got[-1] == last == MAX_TURNS_STOP and len(got) == 3
    res = get_scorer("tooleyes").score([pred], {"TG-0": INST})
    assert res.metrics["IF"] == pytest.approx(2 / 3)
    assert res.metrics["ans_pass"] == 0.0 and res.errors["force_terminated"] == 1
    pred.execution = {"ended_by": "finish"}
    assert trace_of(pred)[0] == turns


# -- the judge prompts, byte for byte ------------------------------------------------------------

# Code/Evaluation/util/process_utils.py, copied verbatim (two start with EXPERT + " ")
EXPERT = (
    "As a professional assessment expert, your task is to objectively evaluate the quality of "
    "the provided data based on the given guidelines."
)
UPSTREAM_FOCUS = '''As a professional assessment expert, your task is to objectively evaluate the quality of the provided data based on the given guidelines.

When given a tool document, a user query, and a thought chain that addresses the query, please rate the quality of the thought chain based on the following criteria:

1. The extent to which the thought chain consistently focuses on resolving the user query. The more relevant it is to the user query, the higher the score.

2. The ability of the thought chain to adapt promptly when the user provides new information or makes new requests. The higher the alignment with the new information and requests, the higher the score. If there is no new information or requests, please ignore the criteria.

Please provide your assessment in the following format:"""
Scoring Reason: <Provide a reason for your score, referencing the given criteria>.

Evaluation Score: <Assign a score between 1 and 10>.
"""
'''
UPSTREAM_VALIDITY = '''As a professional assessment expert, your task is to objectively evaluate the quality of the provided data based on the given guidelines.

When given a tool document, a user query, and a thought chain that addresses the query, please rate the quality of the thought chain based on the following criteria:

1. Each step should succinctly summarize relevant information from the previous step; the more comprehensive the summary, the higher the score.

2. Each step should timely plan for the next one; the more detailed the next step, the higher the score.

3. Each step should be distinct from the previous one and contribute to resolving the user's query; the less repetition, the higher the score.

Please provide your assessment in the following format:"""
Scoring Reason: <Provide a reason for your score, referencing the given criteria>.

Evaluation Score: <Assign a score between 1 and 10>.
"""
'''
UPSTREAM_QUALITY = '''As a professional assessment expert, your task is to objectively evaluate the quality of the provided data based on the given guidelines.

When given a tool document, a user query and a thought chain that addresses the query, please rate the quality of the thought chain based on the following criteria:

1. The presence or absence of grammatical errors in the thought chain. The fewer the errors, the higher the score.

2. The logical consistency of the thought chain. The fewer logical inconsistencies, the higher the score.

3. The timeliness of detection and correction of any logical inconsistencies in the thought chain. The more timely the correction, the higher the score.

Please provide your assessment in the following format:"""
Scoring Reason: <Provide a reason for your score, referencing the given criteria>.

Evaluation Score: <Assign a score between 1 and 10>.
"""
'''
UPSTREAM_MATCH = (
    EXPERT
    + " "
    + '''

When presented with a tool document, a THOUGHT, and a tool from the tool document, please ascertain the correlation between the specified tool and the given THOUGHT based on the guidelines below:

    1. If the THOUGHT is empty, assign a score of 5 immediately.

    2. If the THOUGHT is not empty, determine if the chosen tool is more pertinent to the planning in the THOUGHT compared to other tools in the tool document based on the tool documentation description. The more relevant the tool, the higher the score.

Please provide your assessment in the following format:"""
    Scoring Reason: <Provide a reason for your score, referencing the given criteria>.

    Evaluation Score: <Assign a score between 1 and 10>.
"""
    '''
)
UPSTREAM_RELEVANCE = (
    EXPERT
    + " "
    + '''

When presented with a tool documentation, a user's initial query and a corresponding response, please rate the response's effectiveness in meeting the user's needs using the following criteria:

1. Assess whether the response directly addresses the user's original question. The more on-point the response is, the higher it should be scored.
2. Determine if the response includes any inaccurate information. Unless you have exact information, you need to assume that the information in the response is correct. A response with minimal inaccuracies should receive a higher score.
3. Consider if the response offer suggestions that could help resolve the user's query? The more beneficial the guidance, the higher the score should be. Disregard this criterion if the user's question has been fully answered by the response.

Please provide your assessment in the following format:"""
Scoring Reason: <Provide a reason for your score, referencing the given criteria>.

Evaluation Score: <Assign a score between 1 and 10>.
"""
'''
)

DOC = '[{"name": "get_weather"}]'
TURN_1 = "Thought: need weather\nAction: get_weather\nAction Input: {'city': 'Paris'}"
TURN_2 = "Thought: done\nAction: finish\nAction Input: {'answer': 'Sunny'}"


def test_judge_prompts_are_upstream_byte_for_byte() -> None:
    inst = INST.model_copy(update={"metadata": {"tool_document": DOC}})
    pred = Prediction(
        id="TG-0",
        steps=[
            Step(role="assistant", text=TURN_1),
            Step(role="observation", text="{'weather': 'sunny'}"),
            Step(role="user", text="  It's for tomorrow "),
            Step(role="assistant", text=TURN_2),
        ],
    )
    model = FakeModel(fn=lambda messages, tools: JUDGE_ANSWER, name="fake:judge")
    get_scorer("tooleyes", judge=model).score([pred], {"TG-0": inst})
    sent = {r.messages[0]["content"]: r for r in model.requests}
    chain = "Turn 1:\nneed weather\n\nTurn 2:\ndone"
    head = f'\nTool Document:\n{DOC}\n\nLet\'s\n\nUser Query:"""\nWeather in Paris?\n"""\n\n'
    expected = {
        UPSTREAM_FOCUS: head
        + 'Thought Chain:"""\nTurn 1:\nneed weather\n\nUser request:\nIt\'s for tomorrow\n\n'
        'Turn 2:\ndone\n"""\n\nAssessment:',
        UPSTREAM_VALIDITY: head + f'Thought Chain:"""\n{chain}\n"""\n\nAssessment:\n',
        UPSTREAM_QUALITY: head + f'Thought Chain:"""\n{chain}\n"""\n\nAssessment:',
        UPSTREAM_RELEVANCE: f'\nTool Document:\n{DOC}\n    \nUser Query:"""\nWeather in Paris?'
        '\n"""\n\nCorresponding Response:"""\nSunny\n"""\n\nAssessment:',
    }
    for system, user in expected.items():
        assert sent[system].messages[1]["content"] == user
    matches = [
        r.messages[1]["content"]
        for r in model.requests
        if r.messages[0]["content"] == UPSTREAM_MATCH
    ]
    assert matches == [
        f'\nTool Document:\n{DOC}\n\nLet\'s Begin!\n\nTHOUGHT:"""\n{thought}\n"""\n\n'
        f'Tool:"""\n{tool}\n"""\n\nAssessment:'
        for thought, tool in (("need weather", "get_weather"), ("done", "finish"))
    ]
    # upstream's judge call: gpt-4 at temperature 0, top_p 0.5, 1024 tokens
    options = model.requests[0].options
    assert (options.temperature, options.top_p, options.max_tokens) == (0.0, 0.5, 1024)


def test_five_shot_runs_show_the_document_alone() -> None:
    docs = tool_documents(DOC, demonstrations=True)
    assert docs == {"match": DOC, "chain": DOC, "relevance": DOC}
    assert tool_documents(DOC) == {
        "match": DOC + "\n\nLet's Begin!",
        "chain": DOC + "\n\nLet's",
        "relevance": DOC,
    }


def test_thoughts_tools_and_answers_are_cut_as_upstream() -> None:
    # process_utils.process_message: re.sub("Action.:*", "") also eats "Actions" in a thought
    assert turn_thought("Thought: Actions first.\nAction: f\nAction Input: {}") == "first."
    assert turn_tool("Thought: t\nAction:  get_weather \nAction Input: {}") == "get_weather"
    assert turn_thought("no format at all") == "no format at all" and turn_tool("x") == ""
    # the answer: eval(...)['answer'], else str(process_action_pair(...))
    assert final_answer(TURN_2) == "Sunny"
    broken = "Thought: t\nAction: finish\nAction Input: {'answer': 'It's sunny'}"
    assert final_answer(broken) == str({"answer": "It's sunny"})
    assert final_answer("Thought: t\nAction: finish\nAction Input: {'answer': 3}") == "3"
    # process_action_pair's value pattern runs to the next "}", keys without a value get ""
    assert process_action_pair("{'a': 'x', 'b': }") == {"a": "x', 'b'", "b": ""}


def test_a_judge_cache_that_cannot_be_written_is_refused_up_front(tmp_path: Path) -> None:
    model = FakeModel(fn=lambda messages, tools: JUDGE_ANSWER, name="fake:judge")
    blocker = tmp_path / "afile"
    blocker.write_text("")
    with pytest.raises(InputError, match=r"afile/sub/c\.jsonl: .*afile is a file, not a directory"):
        Judge(model, blocker / "sub" / "c.jsonl")
    with pytest.raises(InputError, match="must be a file, but a directory is there"):
        Judge(model, tmp_path)
    assert model.calls == 0
    fresh = tmp_path / "new" / "dir" / "c.jsonl"
    Judge(model, fresh)
    assert not (tmp_path / "new").exists()  # checking creates nothing


def test_a_failing_cache_write_keeps_the_figures(tmp_path: Path) -> None:
    """The cache folder turns into a file after the check: the answers are used all the same
    and a note says they were not cached."""
    cache = tmp_path / "gone" / "judge.jsonl"
    model = FakeModel(fn=lambda messages, tools: JUDGE_ANSWER, name="fake:judge")
    judge = Judge(model, cache)
    (tmp_path / "gone").write_text("")
    res = get_scorer("tooleyes", judge=judge).score([_trace(TURNS)], {"TG-0": INST})
    assert res.metrics["IU"] == pytest.approx(0.8) and res.metrics["overall"] is not None
    assert judge.cache_error is not None and str(cache) in judge.cache_error
    assert any("not cached" in n for n in res.notes)
    assert "scorer_exception" not in res.errors
