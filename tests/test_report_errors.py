"""The error taxonomy (:func:`toollab.eval.metrics.errors.classify`): one class per sample,
the first failing check in pipeline order, hand-built predictions for each class and for the
precedence between them."""

from __future__ import annotations

from typing import Any

import pytest

from toollab.eval.metrics.errors import CLASSES, STAGES, ErrorClass, classify
from toollab.schema import Decision, GoldCall, Instance, Ref, Tool, ToolCall
from toollab.schema.record import ExecutionRecord, ParseResult, Prediction

WEATHER = Tool(
    name="weather",
    description="Weather in a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "units": {"type": "string", "default": "metric"},
        },
        "required": ["city"],
    },
)
TIME = Tool(name="time", description="Local time.", parameters={"type": "object", "properties": {}})


def _inst(gold: list[GoldCall], **kw: Any) -> Instance:
    return Instance(id="i", query="Weather in Paris?", tools=[WEATHER, TIME], gold=gold, **kw)


def _pred(calls: list[ToolCall] | None = None, **kw: Any) -> Prediction:
    parsed = ParseResult.ok(calls) if calls else ParseResult.no_call("no idea")
    return Prediction(id="i", raw="...", parsed=kw.pop("parsed", parsed), **kw)


PARIS = GoldCall(name="weather", arguments={"city": "Paris"})
RIGHT = [ToolCall(name="weather", arguments={"city": "Paris"})]


def _kind(inst: Instance, pred: Prediction) -> ErrorClass:
    return classify(inst, pred).kind


def test_the_table_has_every_class_once_in_precedence_order() -> None:
    assert [c.kind for c in CLASSES] == list(ErrorClass)
    assert all(c.definition and c.label for c in CLASSES)
    # stages appear in pipeline order, every stage has a class, correct has none
    seen = [c.stage for c in CLASSES if c.stage]
    assert sorted(set(seen), key=seen.index) == list(STAGES)
    assert CLASSES[-1].kind is ErrorClass.CORRECT and CLASSES[-1].stage == ""
    assert len({c.label for c in CLASSES}) == len(CLASSES)


def test_a_right_answer_is_correct() -> None:
    got = classify(_inst([PARIS]), _pred(RIGHT))
    assert got.kind is ErrorClass.CORRECT and not got.failed
    # a parameter stated at its schema default equals one left out
    stated = ToolCall(name="weather", arguments={"city": "Paris", "units": "metric"})
    assert _kind(_inst([PARIS]), _pred([stated])) is ErrorClass.CORRECT
    # no call where none is due
    assert _kind(_inst([], decision=Decision.NO_CALL), _pred()) is ErrorClass.CORRECT


@pytest.mark.parametrize(
    ("calls", "kind", "detail"),
    [
        ([], ErrorClass.MISSED_CALL, "answered without a call; expected weather"),
        (
            [ToolCall(name="time", arguments={})],
            ErrorClass.WRONG_TOOL,
            "called time; no call to weather",
        ),
        (
            [ToolCall(name="forecast", arguments={"city": "Paris"})],
            ErrorClass.HALLUCINATED_TOOL,
            "called forecast, not offered",
        ),
        (
            RIGHT * 2,
            ErrorClass.WRONG_CALL_COUNT,
            "2 call(s): weather, weather; expected 1: weather",
        ),
        (
            [ToolCall(name="weather", arguments={"city": "Berlin"})],
            ErrorClass.WRONG_VALUE,
            "weather.city = 'Berlin' (expected 'Paris')",
        ),
        (
            [ToolCall(name="weather", arguments={"city": "Paris", "units": "imperial"})],
            ErrorClass.EXTRA_ARGUMENT,
            "weather: unexpected 'units' = 'imperial'",
        ),
        (
            [ToolCall(name="weather", arguments={})],
            ErrorClass.MISSING_ARGUMENT,
            "weather: missing 'city' (expected 'Paris')",
        ),
    ],
)
def test_each_call_level_class(calls: list[ToolCall], kind: ErrorClass, detail: str) -> None:
    got = classify(_inst([PARIS]), _pred(calls))
    assert (got.kind, got.detail) == (kind, detail)
    assert got.key == kind.value and got.label == kind.label
    assert got.row() == {"class": kind.value, "stage": kind.stage, "detail": detail, "reason": None}


def test_arguments_omission_before_surplus_before_value() -> None:
    two = _inst(
        [GoldCall(name="weather", arguments={"city": "Paris"}), GoldCall(name="time")],
    )
    calls = [
        ToolCall(name="weather", arguments={"city": "Rome"}),  # wrong value
        ToolCall(name="time", arguments={"zone": "CET"}),  # surplus
    ]
    got = classify(two, _pred(calls))
    assert got.kind is ErrorClass.EXTRA_ARGUMENT and got.detail.endswith("(+1 more)")
    calls[0] = ToolCall(name="weather", arguments={})  # omission wins over both
    assert _kind(two, _pred(calls)) is ErrorClass.MISSING_ARGUMENT


def test_retriever_miss_comes_first() -> None:
    # the retriever offered only `time`: a miss, whatever the output (even unparsable)
    miss = classify(_inst([PARIS]), _pred(RIGHT, offered_tools=["time"]))
    assert miss.kind is ErrorClass.RETRIEVER_MISS and miss.detail.startswith("not offered: weather")
    bad = _pred(parsed=ParseResult.fail("not JSON"), offered_tools=["time"])
    assert _kind(_inst([PARIS]), bad) is ErrorClass.RETRIEVER_MISS
    # the gold tool offered: no miss; no retriever (None): no miss
    assert _kind(_inst([PARIS]), _pred(RIGHT, offered_tools=["weather"])) is ErrorClass.CORRECT
    assert _kind(_inst([PARIS]), _pred(RIGHT, offered_tools=None)) is ErrorClass.CORRECT
    # an acceptable alternative program whose tools were all offered: no miss
    alt = _inst([PARIS], alternatives=[[GoldCall(name="time")]])
    assert _kind(alt, _pred([ToolCall(name="time")], offered_tools=["time"])) is ErrorClass.CORRECT
    # a NoCall instance has nothing to retrieve
    nocall = _inst([], decision=Decision.NO_CALL)
    assert _kind(nocall, _pred(offered_tools=[])) is ErrorClass.CORRECT


def test_hallucinated_against_what_the_retriever_offered() -> None:
    # `time` is one of the instance's tools, but the retriever offered only `weather`
    got = classify(_inst([PARIS]), _pred([ToolCall(name="time")], offered_tools=["weather"]))
    assert got.kind is ErrorClass.HALLUCINATED_TOOL
    # a gold tool the dataset left out of the offered list is never a hallucination
    inst = Instance(id="i", query="q", tools=[TIME], gold=[PARIS])
    assert _kind(inst, _pred(RIGHT)) is ErrorClass.CORRECT
    # hallucinated before wrong tool (the same stage): a made-up name and a wrong real one
    both = [ToolCall(name="time"), ToolCall(name="forecast")]
    assert _kind(_inst([PARIS]), _pred(both)) is ErrorClass.HALLUCINATED_TOOL


def test_format_comes_before_the_decision_and_a_model_failure_before_it() -> None:
    wrong = [ToolCall(name="time", arguments={})]
    got = classify(_inst([PARIS]), _pred(wrong, parsed=ParseResult.fail("not JSON at 3")))
    assert got.kind is ErrorClass.UNPARSED and got.detail == "not JSON at 3"
    got = classify(_inst([PARIS]), _pred(wrong, error="backend timed out after 30 s"))
    assert got.kind is ErrorClass.MODEL_FAILURE and "timed out" in got.detail
    assert _kind(_inst([PARIS]), Prediction(id="i")) is ErrorClass.UNPARSED  # nothing parsed


def test_invalid_output_is_read_but_not_executable() -> None:
    decided = ParseResult.no_call(decision=Decision.CALL)  # DEER: a Call marker, no call
    got = classify(_inst([PARIS]), _pred(parsed=decided))
    assert got.kind is ErrorClass.INVALID and got.detail == "decided to call but wrote no call"
    dangling = [ToolCall(name="weather", arguments={"city": Ref("API_call_7")})]
    got = classify(_inst([PARIS]), _pred(dangling))
    assert got.kind is ErrorClass.INVALID and "'API_call_7', which no earlier call" in got.detail
    # a reference to an earlier call's output is fine (then the value is judged)
    linked = [
        ToolCall(name="time", outputs=["API_call_0"]),
        ToolCall(name="weather", arguments={"city": Ref("API_call_0")}),
    ]
    chain = _inst([GoldCall(name="time", outputs=["API_call_0"]), PARIS])
    assert _kind(chain, _pred(linked)) is ErrorClass.WRONG_VALUE
    nameless = [ToolCall(name=" ", arguments={})]
    assert _kind(_inst([PARIS]), _pred(nameless)) is ErrorClass.INVALID
    refused = ExecutionRecord(crashed=True, error="unparsable output: ?", reason="format")
    assert _kind(_inst([PARIS]), _pred(RIGHT, execution=refused)) is ErrorClass.INVALID


def test_the_decision_give_up_missed_and_unexpected_call() -> None:
    got = classify(
        _inst([], decision=Decision.NO_CALL), _pred([ToolCall(name="time", arguments={})])
    )
    assert got.kind is ErrorClass.UNEXPECTED_CALL
    assert got.detail == "called time; the answer needs no call (NoCall)"
    # the decision comes before the tool: a made-up tool where none was due is unexpected
    nosearch = _inst([], decision=Decision.NO_SEARCH)
    assert _kind(nosearch, _pred([ToolCall(name="forecast")])) is ErrorClass.UNEXPECTED_CALL
    # DEER's NoSearch vs. NoCall is not the taxonomy's decision (both are "no call")
    assert _kind(nosearch, _pred(parsed=ParseResult.no_call(decision=Decision.NO_CALL))) is (
        ErrorClass.CORRECT
    )
    gave_up = ExecutionRecord(ended_by="give_up", state={"x": 1})
    got = classify(_inst([PARIS]), _pred([ToolCall(name="time")], execution=gave_up))
    assert got.kind is ErrorClass.GIVE_UP and got.detail == "gave up after 1 call(s)"
    # giving up where no call is due is declining to act: correct
    nocall = _inst([], decision=Decision.NO_CALL)
    assert _kind(nocall, _pred(execution=gave_up)) is ErrorClass.CORRECT


def test_execution_a_crash_by_its_reason_and_a_wrong_outcome() -> None:
    crashed = ExecutionRecord(
        crashed=True, error="city not found: 'Paris'", reason="not_found", failed_call=0
    )
    got = classify(_inst([PARIS]), _pred(RIGHT, execution=crashed))
    assert got.kind is ErrorClass.CRASH and got.reason == "not_found"
    assert got.key == "crash: not_found" and got.detail == "call 1: city not found: 'Paris'"
    wrong_state = ExecutionRecord(success=False, f1=0.5)
    got = classify(_inst([PARIS]), _pred(RIGHT, execution=wrong_state))
    assert got.kind is ErrorClass.WRONG_OUTCOME
    assert got.detail == "the final state is not a label's (dict-F1 0.50)"
    # arguments are checked before execution: a wrong value that crashes is a wrong value
    berlin = [ToolCall(name="weather", arguments={"city": "Berlin"})]
    assert _kind(_inst([PARIS]), _pred(berlin, execution=crashed)) is ErrorClass.WRONG_VALUE
    # a record with no verdict and no environment to judge it: the calls decide
    assert _kind(_inst([PARIS]), _pred(RIGHT, execution=ExecutionRecord())) is ErrorClass.CORRECT


def test_a_checked_success_is_correct_whatever_the_calls() -> None:
    other = [ToolCall(name="weather", arguments={"city": "paris"})]
    ok = ExecutionRecord(success=True)
    assert _kind(_inst([PARIS]), _pred(other, execution=ok)) is ErrorClass.CORRECT
    # but a run that failed has no outcome to trust
    assert _kind(_inst([PARIS]), _pred(RIGHT, execution=ok, error="boom")) is (
        ErrorClass.MODEL_FAILURE
    )


def test_alternatives_and_acceptable_values() -> None:
    alt = [GoldCall(name="time", arguments={})]
    inst = _inst([PARIS], alternatives=[alt])
    assert _kind(inst, _pred([ToolCall(name="time", arguments={})])) is ErrorClass.CORRECT
    # the class of the reference the calls come furthest with: right tool, wrong value
    assert _kind(inst, _pred([ToolCall(name="weather", arguments={"city": "Rome"})])) is (
        ErrorClass.WRONG_VALUE
    )
    bfcl = GoldCall(
        name="weather",
        arguments={"city": "Paris", "units": "metric"},
        acceptable={"city": ["Paris", "Paris, France"], "units": ["metric", ""]},
    )
    ok = ToolCall(name="weather", arguments={"city": "Paris, France"})
    assert _kind(_inst([bfcl]), _pred([ok])) is ErrorClass.CORRECT


def test_hostile_model_output_is_classified_never_raised() -> None:
    odd = ToolCall(name="weather", arguments={"city": {"nested": [1, 2, {"x": None}]}, "ü": "\x00"})
    assert _kind(_inst([PARIS]), _pred([odd])) is ErrorClass.EXTRA_ARGUMENT
    long = ToolCall(name="weather", arguments={"city": "x" * 10_000})
    got = classify(_inst([PARIS]), _pred([long]))
    assert got.kind is ErrorClass.WRONG_VALUE and len(got.detail) <= 260
