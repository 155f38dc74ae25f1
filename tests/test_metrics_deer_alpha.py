"""DEER decision accuracies and alpha-UMi step metrics on hand-built cases (values computed by
hand from the upstream rules), plus the DEER gold chains of the real data."""

from __future__ import annotations

from pathlib import Path

import pytest

from toollab.eval.metrics import (
    applicable_scorers,
    deer_second_round_prompt,
    get_scorer,
    parse_alpha_umi_output,
)
from toollab.eval.metrics.alpha_umi import arg_f1_step
from toollab.eval.metrics.deer import (
    NO_SEARCH_CHAIN,
    baseline_correct,
    deer_forced_prefix,
    deer_gold_chain,
    deer_outcome,
)
from toollab.eval.record import Prediction, Step
from toollab.schema import Decision, Instance, Tool

POOL = "#Begin# Need to look up the API Pool. #SearchAPI# The API Pool including: ['CTCP', 'x'] "
CALL = POOL + "#CallAPI# CTCP(nctid='N1') #APIResponse#  #End#"
NOCALL = POOL + "#NoCallAPI# There is no proper API and I need to answer this question. #End#"
ROUND1 = "#Begin# Need to look up the API Pool. #SearchAPI#"


def _pred(i: str, *rounds: str) -> Prediction:
    return Prediction(
        id=i, raw="".join(rounds), steps=[Step(role="assistant", text=r) for r in rounds]
    )


def _inst(i: str, chain: str, decision: Decision) -> Instance:
    return Instance(
        id=i, query="q", source="deer", decision=decision, metadata={"gold_chain": chain}
    )


def test_second_round_prompt_is_upstream_teacher_forcing() -> None:
    assert deer_second_round_prompt("P", CALL) == "P " + POOL + "#"
    assert deer_second_round_prompt("P", NOCALL) == "P " + POOL + "#"
    assert deer_forced_prefix(CALL).endswith("#")


@pytest.mark.parametrize(
    ("second", "upstream", "strict"),
    [
        ("CallAPI# CTCP(nctid='N1') #APIResponse#", True, True),
        ("CallAPI# CTCP(nctid='WRONG') #APIResponse#", True, False),  # arguments never checked
        ("CallAPI# CT(nctid='N1') #APIResponse#", True, False),  # name substring rule
        ("CallAPI# CTCPX #APIResponse#", True, False),  # no "(": find → -1 drops the last char
        ("CallAPI# Other(nctid='N1') #APIResponse#", False, False),
        ("CallAPI# CTCP(nctid='N1')", False, False),  # no #APIResponse#
    ],
)
def test_call_rules(second: str, upstream: bool, strict: bool) -> None:
    o = deer_outcome([ROUND1, second], CALL)
    assert o.search and o.call is upstream
    assert deer_outcome([ROUND1, second], CALL, strict=True).call is strict


def test_decision_accuracies_by_hand() -> None:
    insts = [
        _inst("i1", CALL, Decision.CALL),
        _inst("i2", CALL, Decision.CALL),
        _inst("i3", NOCALL, Decision.NO_CALL),
        _inst("i4", NOCALL, Decision.NO_CALL),
        _inst("i5", NO_SEARCH_CHAIN, Decision.NO_SEARCH),
        _inst("i6", NO_SEARCH_CHAIN, Decision.NO_SEARCH),
    ]
    preds = [
        _pred("i1", ROUND1, "CallAPI# CTCP(nctid='N1') #APIResponse#"),
        _pred("i2", ROUND1, "CallAPI# CTCP(nctid='N1')"),
        _pred("i3", ROUND1, "NoCallAPI#"),
        _pred("i4", ROUND1, "CallAPI# f() #APIResponse#"),
        _pred("i5", NO_SEARCH_CHAIN),
        _pred("i6", "I think the answer is 4."),
    ]
    res = get_scorer("deer").score(preds, {i.id: i for i in insts})
    m = res.metrics
    assert m["P_NoSearch"] == 0.5
    assert m["P_Search"] == 1.0
    assert m["P_DS"] == pytest.approx(5 / 6)
    assert m["P_NoCall"] == 0.5
    assert m["P_Call"] == 0.5
    assert m["P_DC"] == 0.5
    assert res.errors == {"no_api_response": 1, "call_but_no_call_needed": 1, "no_begin": 1}


def test_round_two_needs_search_and_teacher_forcing() -> None:
    # without the second round nothing is counted; a search on a NoSearch gold is wrong
    assert deer_outcome([ROUND1], CALL).error == "missing_second_round"
    o = deer_outcome([ROUND1], NO_SEARCH_CHAIN)
    assert o.error == "search_not_needed" and not o.search
    # the round-2 text is read after the forced gold prefix, which supplies #Begin#
    assert deer_outcome([ROUND1, "NoCallAPI#"], NOCALL).no_call
    # a round 2 that searches again gives no decision
    assert deer_outcome([ROUND1, "SearchAPI# again"], CALL).error == "no_decision"
    # NoCallAPI on a NoSearch gold: the search is not counted
    assert deer_outcome(["#Begin# x #NoCallAPI#"], NO_SEARCH_CHAIN).error == "search_not_needed"


def test_errored_prediction_counts_as_wrong() -> None:
    insts = {"i1": _inst("i1", CALL, Decision.CALL)}
    res = get_scorer("deer").score([Prediction(id="i1", error="timeout")], insts)
    assert res.metrics["P_Call"] == 0.0 and res.metrics["P_Search"] == 0.0
    assert res.errors == {"prediction_error": 1}


def test_baselines_rule() -> None:
    assert baseline_correct(
        "Thought: x\nAction: weather-get\nAction Input: {}", ["weather-get"], True
    )
    assert not baseline_correct("Action: weather\n", ["weather-get"], True)
    assert baseline_correct("Action: NoCallAPI", [], False)
    assert not baseline_correct("Action: weather-get", [], False)


def test_real_gold_chains_score_perfectly(shared_data: Path) -> None:
    from toollab.data import load_dataset

    ds = load_dataset(shared_data / "deer" / "test.json", "deer")
    insts = {i.id: i for i in ds.instances}
    preds = []
    for i in insts.values():
        chain = deer_gold_chain(i)
        prefix = deer_forced_prefix(chain)
        rest = chain[len(prefix) :]
        second = (
            rest.split("#APIResponse#")[0] + "#APIResponse#"
            if "#APIResponse#" in rest
            else "NoCallAPI#"
        )
        preds.append(_pred(i.id, ROUND1, second))
    for name in ("deer", "deer_strict"):
        res = get_scorer(name).score(preds, insts)
        assert res.counts["Call"] == 445 and res.counts["NoCall"] == 298
        assert res.metrics["P_Call"] == res.metrics["P_NoCall"] == res.metrics["P_DS"] == 1.0


# -- alpha-UMi ---------------------------------------------------------------------------------


def test_parse_output() -> None:
    assert parse_alpha_umi_output("assistant: hmm. Next: give up.").plan == "give up"
    fin = parse_alpha_umi_output("assistant: ok Next: conclusion.</s>conclusion: Sunny.</s>")
    assert (fin.plan, fin.answer) == ("finish", "Sunny.")
    call = parse_alpha_umi_output(
        'assistant: go. Next: caller.</s>caller: Action: get_weather\nAction Input: {"a": 1}'
    )
    assert (call.plan, call.action, call.action_input) == ("call", "get_weather", '{"a": 1}')
    bare = parse_alpha_umi_output("no separator at all")
    assert (bare.plan, bare.action, bare.action_input) == ("call", "none", "{}")


def test_arg_f1_edge_rules() -> None:
    assert arg_f1_step("a", "b", "{}", "{}") == ("wrong_action", 0.0)
    assert arg_f1_step("a", "a", "{}", "not json") is None  # reference unparseable: skipped
    assert arg_f1_step("a", "a", "not json", '{"k": 1}') == ("hard", 0.0)
    assert arg_f1_step("a", "a", "{}", "{}") == ("easy", 1.0)
    assert arg_f1_step("a", "a", '{"k": 1}', "{}") == ("easy", 0.0)
    assert arg_f1_step("a", "a", '{"z": 2}', '{"k": 1}') == ("hard", 0.0)  # 0/0 caught
    assert arg_f1_step("a", "a", "[1]", '{"k": 1}') == ("hard", 0.0)  # not a dict
    kind, f1 = arg_f1_step("a", "a", '{"k": 1, "u": "F", "x": 1}', '{"k": 1, "u": "C"}')  # type: ignore[misc]
    assert kind == "hard" and f1 == pytest.approx(0.6)


def _step(i: str, ref: str) -> Instance:
    return Instance(
        id=i,
        query="q",
        source="alpha-umi",
        tools=[Tool(name="get_weather"), Tool(name="get_time")],
        metadata={"reference": ref},
    )


def test_alpha_umi_scorer_by_hand() -> None:
    caller = "assistant: plan. Next: caller.</s>caller: Action: {}\nAction Input: {}"
    steps = [
        (caller.format("get_weather", '{"city": "Paris", "unit": "C"}') + "</s>",
         caller.format("get_weather", '{"city": "Paris", "unit": "F", "x": 1}')),
        (caller.format("get_time", "{}") + "</s>", caller.format("get_time", "{}")),
        (caller.format("get_time", "not json") + "</s>", caller.format("get_time", '{"a": 1}')),
        (caller.format("get_weather", '{"city": "Rome"}') + "</s>", caller.format("search_web", "{}")),
        ("assistant: done. Next: conclusion.</s>conclusion: It is sunny in Paris</s>",
         "assistant: Next: conclusion.</s>conclusion: It is sunny"),
        ("assistant: Next: give up.", caller.format("fake_tool", "{}")),
    ]  # fmt: skip
    insts = {f"s{k}": _step(f"s{k}", ref) for k, (ref, _) in enumerate(steps)}
    preds = [Prediction(id=f"s{k}", raw=p) for k, (_, p) in enumerate(steps)]
    res = get_scorer("alpha_umi").score(preds, insts)
    m = res.metrics
    assert m["plan_acc"] == pytest.approx(5 / 6)
    assert m["act_em"] == 0.75
    assert m["hallu_rate"] == pytest.approx(2 / 6)  # denominator: all steps
    assert m["arg_f1"] == pytest.approx((0.6 + 1 + 0) / 3)  # the unparseable reference is skipped
    assert m["easy_f1"] == pytest.approx(0.5)
    assert m["hard_f1"] == pytest.approx(0.3)
    assert m["rouge_l"] == pytest.approx(0.75, abs=1e-6)  # LCS 3 of 3 / 5 words
    assert res.counts["arg_scored_steps"] == 3


def test_alpha_umi_errored_and_empty_predictions() -> None:
    insts = {"s": _step("s", "assistant: done. Next: conclusion.</s>conclusion: yes</s>")}
    res = get_scorer("alpha_umi").score([Prediction(id="s", error="boom")], insts)
    assert res.metrics["plan_acc"] == 0.0 and res.metrics["rouge_l"] == 0.0


def test_baseline_sets(shared_data: Path) -> None:
    from toollab.data import load_dataset

    ds = load_dataset(shared_data / "deer" / "baselines" / "tool_bench.json", "deer")
    insts = {i.id: i for i in ds.instances}
    assert [s.name for s in applicable_scorers(insts)] == ["deer_baseline"]
    preds = [
        Prediction(
            id=i.id,
            raw=f"Thought: ok\nAction: {i.metadata['api_label'][0]}\nAction Input: {{}}"
            if i.metadata.get("api_label") and i.decision is Decision.CALL
            else "Action: NoCallAPI",
        )
        for i in insts.values()
    ]
    res = get_scorer("deer_baseline").score(preds, insts)
    assert res.counts == {"n": 200, "call": 120, "no_call": 80}
    assert res.metrics["acc"] == 1.0
    wrong = [Prediction(id=p.id, raw="Action: NoCallAPI") for p in preds]
    assert get_scorer("deer_baseline").score(wrong, insts).metrics["acc"] == pytest.approx(0.4)
