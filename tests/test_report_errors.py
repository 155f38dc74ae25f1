"""Per-sample error classes (:func:`toollab.eval.metrics.errors.classify`): one class per
failed sample, the first failing check in pipeline order."""

from __future__ import annotations

from typing import Any

import pytest

from toollab.eval.metrics.errors import ErrorClass, classify
from toollab.schema import Decision, GoldCall, Instance, Tool, ToolCall
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


def test_a_right_answer_has_no_class() -> None:
    assert (
        classify(_inst([PARIS]), _pred([ToolCall(name="weather", arguments={"city": "Paris"})]))
        is None
    )
    # a parameter stated at its schema default equals one left out
    stated = ToolCall(name="weather", arguments={"city": "Paris", "units": "metric"})
    assert classify(_inst([PARIS]), _pred([stated])) is None
    # no call where none is due
    assert classify(_inst([], decision=Decision.NO_CALL), _pred()) is None


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
            [ToolCall(name="weather", arguments={"city": "Paris"})] * 2,
            ErrorClass.WRONG_CALL_COUNT,
            "2 call(s): weather, weather; expected 1: weather",
        ),
        (
            [ToolCall(name="weather", arguments={"city": "Berlin"})],
            ErrorClass.WRONG_ARGUMENT,
            "weather.city = 'Berlin' (expected 'Paris')",
        ),
        (
            [ToolCall(name="weather", arguments={"city": "Paris", "units": "imperial"})],
            ErrorClass.WRONG_ARGUMENT,
            "weather: unexpected 'units' = 'imperial'",
        ),
        (
            [ToolCall(name="weather", arguments={})],
            ErrorClass.WRONG_ARGUMENT,
            "weather: missing 'city' (expected 'Paris')",
        ),
    ],
)
def test_each_call_level_class(calls: list[ToolCall], kind: ErrorClass, detail: str) -> None:
    err = classify(_inst([PARIS]), _pred(calls))
    assert err is not None and (err.kind, err.detail) == (kind, detail)
    assert err.key == kind.value and err.label == kind.label


def test_format_comes_first_and_a_model_failure_before_it() -> None:
    wrong = [ToolCall(name="time", arguments={})]
    err = classify(_inst([PARIS]), _pred(wrong, parsed=ParseResult.fail("not JSON at 3")))
    assert err is not None and err.kind is ErrorClass.UNPARSABLE and err.detail == "not JSON at 3"
    err = classify(_inst([PARIS]), _pred(wrong, error="backend timed out after 30 s"))
    assert err is not None and err.kind is ErrorClass.MODEL_FAILURE
    assert "timed out" in err.detail


def test_a_call_where_none_was_due() -> None:
    err = classify(
        _inst([], decision=Decision.NO_CALL), _pred([ToolCall(name="time", arguments={})])
    )
    assert err is not None and err.kind is ErrorClass.UNEXPECTED_CALL
    assert err.detail == "called time; the answer needs no call (NoCall)"


def test_execution_a_crash_by_its_reason_and_a_wrong_outcome() -> None:
    right = [ToolCall(name="weather", arguments={"city": "Paris"})]
    crashed = ExecutionRecord(
        crashed=True, error="city not found: 'Paris'", reason="not_found", failed_call=0
    )
    err = classify(_inst([PARIS]), _pred(right, execution=crashed))
    assert err is not None and err.kind is ErrorClass.CRASH and err.reason == "not_found"
    assert err.key == "crash: not_found" and err.detail == "call 1: city not found: 'Paris'"
    wrong_state = ExecutionRecord(success=False, f1=0.5)
    err = classify(_inst([PARIS]), _pred(right, execution=wrong_state))
    assert err is not None and err.kind is ErrorClass.WRONG_OUTCOME
    assert err.detail == "the final state is not a label's (dict-F1 0.50)"
    # arguments are checked before execution: a wrong value that crashes is a wrong argument
    berlin = [ToolCall(name="weather", arguments={"city": "Berlin"})]
    err = classify(_inst([PARIS]), _pred(berlin, execution=crashed))
    assert err is not None and err.kind is ErrorClass.WRONG_ARGUMENT


def test_a_checked_success_is_right_whatever_the_calls() -> None:
    other = [ToolCall(name="weather", arguments={"city": "paris"})]
    assert classify(_inst([PARIS]), _pred(other, execution=ExecutionRecord(success=True))) is None


def test_alternatives_and_acceptable_values() -> None:
    alt = [GoldCall(name="time", arguments={})]
    inst = _inst([PARIS], alternatives=[alt])
    assert classify(inst, _pred([ToolCall(name="time", arguments={})])) is None
    # the class of the reference the calls come furthest with: right tool, wrong value
    err = classify(inst, _pred([ToolCall(name="weather", arguments={"city": "Rome"})]))
    assert err is not None and err.kind is ErrorClass.WRONG_ARGUMENT
    bfcl = GoldCall(
        name="weather",
        arguments={"city": "Paris", "units": "metric"},
        acceptable={"city": ["Paris", "Paris, France"], "units": ["metric", ""]},
    )
    ok = ToolCall(name="weather", arguments={"city": "Paris, France"})
    assert classify(_inst([bfcl]), _pred([ok])) is None


def test_hostile_model_output_is_classified_never_raised() -> None:
    odd = ToolCall(name="weather", arguments={"city": {"nested": [1, 2, {"x": None}]}, "ü": "\x00"})
    err = classify(_inst([PARIS]), _pred([odd]))
    assert err is not None and err.kind is ErrorClass.WRONG_ARGUMENT
    long = ToolCall(name="weather", arguments={"city": "x" * 10_000})
    err = classify(_inst([PARIS]), _pred([long]))
    assert err is not None and len(err.detail) <= 260
