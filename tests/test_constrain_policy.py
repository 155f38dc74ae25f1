"""Reading constrained output back, repetition handling and two-stage decisions."""

from __future__ import annotations

import asyncio
import json

import pytest

from toollab.models.base import GenerateOptions, ModelOutput
from toollab.models.constrain import (
    RepeatGuard,
    calls_array_start,
    drop_repeats,
    stop_at_repetition,
)
from toollab.models.fake import FakeModel
from toollab.models.policy import (
    CallPolicy,
    ConstraintPlan,
    constrained_options,
    native_calls_text,
    parse_constrained,
    parse_decision,
    run_policy,
)
from toollab.parsing import ParseStatus
from toollab.schema import Decision, GoldCall, Instance, Tool, ToolCall

TOOL = Tool(
    name="f",
    parameters={"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
)
A = {"name": "f", "arguments": {"x": 1}}
B = {"name": "f", "arguments": {"x": 2}}


def names_args(calls: list[ToolCall]) -> list[tuple[str, dict]]:
    return [(c.name, dict(c.arguments)) for c in calls]


def test_shapes_parse() -> None:
    single = parse_constrained(json.dumps(A), CallPolicy.single())
    assert single.status is ParseStatus.CALLS and names_args(single.calls) == [("f", {"x": 1})]
    dec = parse_constrained(
        json.dumps({"decision": "call", "call": A}), CallPolicy.decision_first()
    )
    assert dec.decision is Decision.CALL and len(dec.calls) == 1
    no = parse_constrained(
        '{"decision": "no_call", "answer": "none fits"}', CallPolicy.decision_first()
    )
    assert no.status is ParseStatus.NO_CALL and no.text == "none fits"
    empty = parse_constrained("[]", CallPolicy.naive())
    assert empty.status is ParseStatus.NO_CALL
    counted = parse_constrained(
        json.dumps({"count": 2, "calls": [A, B]}), CallPolicy(max_calls=2, declare_count=True)
    )
    assert len(counted.calls) == 2


def test_repetition_policies() -> None:
    text = json.dumps([A, B, A, A])
    stop = parse_constrained(text, CallPolicy(max_calls=None))
    assert names_args(stop.calls) == [("f", {"x": 1}), ("f", {"x": 2})]
    assert stop.details["repeats_dropped"] == 2
    keep = parse_constrained(text, CallPolicy.naive())
    assert len(keep.calls) == 4
    first = parse_constrained(text, CallPolicy.naive_first())
    assert names_args(first.calls) == [("f", {"x": 1})] and first.details["calls_dropped"] == 3
    calls = [ToolCall(name="f", arguments={"x": i}) for i in (1, 2, 1, 3)]
    assert [c.arguments["x"] for c in stop_at_repetition(calls)[0]] == [1, 2]
    assert [c.arguments["x"] for c in drop_repeats(calls)[0]] == [1, 2, 3]


def test_cut_off_output_keeps_complete_calls() -> None:
    cut = json.dumps([A, B])[:-1] + ', {"name": "f", "argu'
    res = parse_constrained(cut, CallPolicy(max_calls=None))
    assert res.status is ParseStatus.CALLS and len(res.calls) == 2 and res.details["truncated"]
    cut_dec = '{"decision": "call", "calls": [' + json.dumps(A) + ', {"na'
    res = parse_constrained(cut_dec, CallPolicy.decision_first(max_calls=3))
    assert res.status is ParseStatus.CALLS and len(res.calls) == 1
    nothing = parse_constrained('[{"name": "f", "argum', CallPolicy.naive())
    assert nothing.status is ParseStatus.ERROR
    garbage = parse_constrained("I think f(1)", CallPolicy.single())
    assert garbage.status is ParseStatus.ERROR
    no_cut = parse_constrained(
        '{"decision": "no_call", "answer": "I cann', CallPolicy.decision_first()
    )
    assert no_cut.status is ParseStatus.NO_CALL


def _stream(guard: RepeatGuard, text: str) -> int | None:
    """Feed ``text`` to ``guard`` one character at a time; where it stopped (or None)."""
    for i in range(1, len(text) + 1):
        if guard(text[:i]):
            return i
    return None


def test_repeat_guard_stops_on_first_repeat() -> None:
    guard = RepeatGuard()
    assert not guard("[" + json.dumps(A))
    assert not guard("[" + json.dumps(A) + ", " + json.dumps(B) + ", ")
    assert guard("[" + json.dumps(A) + ", " + json.dumps(B) + ", " + json.dumps(A))
    assert guard.stopped and guard.calls == 3
    # streamed: it stops at the closing brace of the repeat, not later
    text = "[" + json.dumps(A) + ", " + json.dumps(B) + ", " + json.dumps(A)
    assert _stream(RepeatGuard(), text + ", " + json.dumps(B) + "]") == len(text)
    # key order inside a call does not hide a repeat
    swapped = '{"arguments": {"x": 1}, "name": "f"}'
    assert _stream(RepeatGuard(), f"[{json.dumps(A)},{swapped}]") is not None


@pytest.mark.parametrize(
    "prefix",
    [
        '{"decision": "call", "calls": ',
        '{ "count": 3, "calls":',
        '{"decision":"call","count":2,"calls":',
    ],
)
def test_repeat_guard_finds_the_calls_array(prefix: str) -> None:
    text = prefix + "[" + json.dumps(A) + ", " + json.dumps(A)
    assert calls_array_start(text) == text.index("[")
    assert _stream(RepeatGuard(), text) == len(text)


def test_repeat_guard_ignores_answers_without_a_calls_array() -> None:
    """A single call whose arguments hold a list of equal objects, or a no-call answer that
    mentions brackets, is not a repetition of calls."""
    single = json.dumps({"name": "f", "arguments": {"items": [{"a": 1}, {"a": 1}]}})
    no_call = json.dumps({"decision": "no_call", "answer": '[{"a": 1}, {"a": 1}]'})
    for text in (single, no_call, "I cannot [help] [help]"):
        assert calls_array_start(text) is None
        assert _stream(RepeatGuard(), text) is None


def test_multi_call_plans_ask_to_stop_on_repeat() -> None:
    assert ConstraintPlan([TOOL], CallPolicy(max_calls=8)).options().stop_on_repeat
    assert not ConstraintPlan([TOOL], CallPolicy.single()).options().stop_on_repeat
    assert not ConstraintPlan([TOOL], CallPolicy.naive()).options().stop_on_repeat  # "keep"
    dedupe = CallPolicy(max_calls=8, repetition="dedupe")
    assert not ConstraintPlan([TOOL], dedupe).options().stop_on_repeat


def test_constrained_options_carry_the_schema() -> None:
    opts = constrained_options([TOOL], CallPolicy.single(), GenerateOptions(max_tokens=40))
    assert opts.max_tokens == 40
    assert opts.json_schema is not None
    assert opts.json_schema["properties"]["name"] == {"const": "f"}
    plan = ConstraintPlan([TOOL], CallPolicy.decision_first(two_stage=True))
    assert plan.two_stage and plan.options().json_schema == plan.schema
    assert plan.decision_options().json_schema == plan.decision
    assert parse_decision('{"decision": "no_call"}') is Decision.NO_CALL
    assert parse_decision("maybe") is None


def test_two_stage_run_with_scripted_model() -> None:
    msgs = [{"role": "user", "content": "x=1 please"}]
    model = FakeModel(outputs=['{"decision": "call"}', json.dumps(A)])
    out = asyncio.run(run_policy(model, msgs, [TOOL], CallPolicy.decision_first(two_stage=True)))
    assert out.result.status is ParseStatus.CALLS and out.result.decision is Decision.CALL
    first, second = (r.options.json_schema or {} for r in model.requests)
    assert first["properties"]["decision"] == {"enum": ["call", "no_call"]}
    assert second["properties"]["name"] == {"const": "f"}
    model = FakeModel(outputs=['{"decision": "no_call"}'])
    out = asyncio.run(run_policy(model, msgs, [TOOL], CallPolicy.decision_first(two_stage=True)))
    assert out.result.status is ParseStatus.NO_CALL and len(model.requests) == 1
    failing = FakeModel(outputs=[RuntimeError("server down")])
    out = asyncio.run(run_policy(failing, msgs, [TOOL], CallPolicy.single()))
    assert out.result.is_error and "server down" in (out.result.error or "")


def test_constrained_requests_never_ask_for_native_tools() -> None:
    msgs = [{"role": "user", "content": "x=1 please"}]
    model = FakeModel(outputs=['{"decision": "call"}', json.dumps(A)])
    base = GenerateOptions(max_tokens=32, native_tools=True)
    asyncio.run(run_policy(model, msgs, [TOOL], CallPolicy.decision_first(two_stage=True), base))
    assert len(model.requests) == 2
    for req in model.requests:
        assert req.tools == [TOOL]  # still offered (prompt-based backends document them)
        assert req.options.native_tools is False and req.options.json_schema is not None
    assert base.native_tools is True  # the caller's options are not changed


def test_native_tool_calls_answer_is_read() -> None:
    """A server that answers a constrained request with native tool_calls is still parsed."""
    msgs = [{"role": "user", "content": "x=1 and x=2"}]
    calls = [ToolCall(name="f", arguments={"x": 1}), ToolCall(name="f", arguments={"x": 2})]
    model = FakeModel(outputs=[ModelOutput(text="", tool_calls=calls)])
    policy = CallPolicy(max_calls=4)
    out = asyncio.run(run_policy(model, msgs, [TOOL], policy))
    assert out.result.status is ParseStatus.CALLS
    assert names_args(out.result.calls) == [("f", {"x": 1}), ("f", {"x": 2})]
    assert native_calls_text(ModelOutput(text=" ", tool_calls=calls)).startswith('[{"name"')
    # two-stage: native calls in the decision stage mean "call"
    model = FakeModel(
        outputs=[ModelOutput(tool_calls=calls[:1]), ModelOutput(tool_calls=calls[:1])]
    )
    out = asyncio.run(run_policy(model, msgs, [TOOL], CallPolicy.decision_first(two_stage=True)))
    assert out.result.decision is Decision.CALL and names_args(out.result.calls) == [
        ("f", {"x": 1})
    ]
    # text wins when there is some
    assert native_calls_text(ModelOutput(text=json.dumps(B), tool_calls=calls)) == json.dumps(B)


def test_policy_for_instance() -> None:
    from toollab.data.adapters.bfcl import protocol_facts
    from toollab.data.adapters.deer import PROTOCOL as DEER
    from toollab.data.adapters.seal_tools import PROTOCOL as SEAL

    def inst(category: str, n: int = 1) -> Instance:
        return Instance(
            id=category,
            query="q",
            category=category,
            source="bfcl",
            protocol=protocol_facts(category),
            gold=[GoldCall(name="f")] * n,
        )

    assert CallPolicy.for_instance(inst("simple_python")).max_calls == 1
    assert CallPolicy.for_instance(inst("multiple")).max_calls == 1
    par = CallPolicy.for_instance(inst("parallel", 3))
    assert par.max_calls == 16 and not par.allow_no_call
    assert CallPolicy.for_instance(inst("parallel", 3), use_gold_count=True).max_calls == 3
    irr = CallPolicy.for_instance(inst("irrelevance", 0))
    assert irr.allow_no_call and irr.max_calls == 1
    # Seal-Tools publishes no call count: single- and multi-call instances get the same shape
    seal = inst("multiple", 3).model_copy(update={"source": "seal-tools", "protocol": SEAL})
    easy = inst("single").model_copy(update={"source": "seal-tools", "protocol": SEAL})
    assert CallPolicy.for_instance(seal) == CallPolicy.for_instance(easy)
    assert CallPolicy.for_instance(easy) == CallPolicy(allow_no_call=False, max_calls=16)
    deer = Instance(id="d", query="q", source="deer", protocol=DEER)
    assert CallPolicy.for_instance(deer) == CallPolicy(allow_no_call=True, max_calls=1)
    # the category and the source are not read: only the published protocol facts are
    bare = Instance(id="b", query="q", source="bfcl", category="simple_python")
    assert CallPolicy.for_instance(bare) == CallPolicy(allow_no_call=True, max_calls=16)
    # the decision label never shapes the constraint: Call and NoCall instances of one task agree
    env_call = Instance(id="e1", query="q", source="env:weather", gold=[GoldCall(name="f")])
    env_nocall = Instance(id="e2", query="q", source="env:weather", decision=Decision.NO_CALL)
    assert CallPolicy.for_instance(env_call) == CallPolicy.for_instance(env_nocall)
    assert CallPolicy.for_instance(env_call).allow_no_call
