"""Seal-Tools scorers: the upstream code's own fixed points on the real test files, and rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toollab.eval.metrics import get_scorer
from toollab.eval.metrics.seal_tools import count_instance
from toollab.eval.record import Prediction
from toollab.schema import GoldCall, Instance


@pytest.fixture(scope="module")
def seal(shared_data: Path) -> dict[str, Instance]:
    from toollab.data import load_dataset

    ds = load_dataset(shared_data / "seal-tools", "seal-tools")
    return {i.id: i for i in ds.instances}


def _split(seal: dict[str, Instance], split: str) -> dict[str, Instance]:
    return {k: v for k, v in seal.items() if v.split == split}


def _score(name: str, insts: dict[str, Instance], render) -> dict[str, float | None]:
    preds = [Prediction(id=i.id, raw=render(i.metadata["calling"])) for i in insts.values()]
    return get_scorer(name).score(preds, insts).metrics


def _r(m: dict[str, float | None], key: str) -> float:
    v = m[key]
    assert v is not None
    return round(v, 5)


def test_gold_as_json_matches_upstream_fixed_points(seal: dict[str, Instance]) -> None:
    ind = _score("seal_tools", _split(seal, "test_in_domain"), json.dumps)
    assert (_r(ind, "format_acc"), _r(ind, "tool_f1"), _r(ind, "param_f1")) == (1.0, 1.0, 0.9994)
    out = _score("seal_tools", _split(seal, "test_out_domain"), json.dumps)
    assert _r(out, "format_acc") == 0.99694
    assert _r(out, "param_p") == 0.99909
    assert _r(out, "param_f1") == 0.99864


def test_gold_as_python_literals_matches_upstream_fixed_points(seal: dict[str, Instance]) -> None:
    ind = _score("seal_tools", _split(seal, "test_in_domain"), repr)
    out = _score("seal_tools", _split(seal, "test_out_domain"), repr)
    assert (_r(ind, "format_acc"), _r(out, "format_acc")) == (0.99571, 0.99541)
    assert (_r(ind, "param_f1"), _r(out, "param_f1")) == (0.99657, 0.99727)


def test_strict_variant_scores_gold_perfectly(seal: dict[str, Instance]) -> None:
    for render in (json.dumps, repr):
        m = _score("seal_tools_strict", _split(seal, "test_out_domain"), render)
        assert m["format_acc"] == m["tool_f1"] == m["param_f1"] == 1.0


def test_breakdown_groups_and_counts(seal: dict[str, Instance]) -> None:
    ind = _split(seal, "test_in_domain")
    preds = [Prediction(id=i.id, raw=json.dumps(i.metadata["calling"])) for i in ind.values()]
    res = get_scorer("seal_tools").score(preds, ind)
    assert res.counts["n:single"] == 200
    assert res.counts["n:nested"] == 30
    assert res.counts["n:easy"] == 200 and res.counts["n:difficult"] == 500
    assert res.breakdown["single"]["tool_f1"] == 1.0


GOLD = [
    {"api": "a", "parameters": {"x": 1, "y": "Paris"}, "responses": ["API_call_0"]},
    {"api": "b", "parameters": {"z": "API_call_0"}, "responses": ["API_call_1"]},
]


def test_first_match_duplicates_and_str_equality() -> None:
    pred = [
        {"api": "a", "parameters": {"x": "1", "y": "paris"}},  # "1" == 1 by str; case differs
        {"api": "a", "parameters": {"x": 1}},  # duplicate matches the same gold call again
        {"api": "c", "parameters": {"q": 1}},  # wrong tool
        {"parameters": {"x": 1}},  # no "api" key: ignored
    ]
    c = count_instance(pred, GOLD)
    assert (c.pred_api, c.correct_api, c.gold_api) == (3, 2, 2)
    assert (c.pred_param, c.correct_param, c.gold_param) == (4, 2, 3)
    strict = count_instance(pred, GOLD, one_to_one=True)
    assert strict.correct_api == 1 and strict.correct_param == 1


def test_format_failure_still_counts_gold() -> None:
    c = count_instance(None, GOLD)
    assert (c.format_ok, c.gold_api, c.gold_param, c.pred_api) == (0, 2, 3, 0)


def _inst() -> dict[str, Instance]:
    inst = Instance(
        id="test_in_domain-easy-1",
        query="q",
        gold=[GoldCall(name="a", arguments={"x": 1})],
        source="seal-tools",
        metadata={"calling": [{"api": "a", "parameters": {"x": 1}, "responses": ["API_call_0"]}]},
    )
    return {inst.id: inst}


def test_upstream_quirks_on_raw_text() -> None:
    insts = _inst()
    sc = get_scorer("seal_tools")
    # the word "responses" anywhere in the list is enough; a missing word is a format error
    ok = '[{"api": "a", "parameters": {"x": 1}, "note": "no responses key"}]'
    assert (
        sc.score([Prediction(id="test_in_domain-easy-1", raw=ok)], insts).metrics["tool_f1"] == 1.0
    )
    no_resp = '[{"api": "a", "parameters": {"x": 1}}]'
    m = sc.score([Prediction(id="test_in_domain-easy-1", raw=no_resp)], insts).metrics
    assert m["format_acc"] == 0.0 and m["tool_f1"] is None
    quote = "[{'api': 'a', 'parameters': {'x': \"it's\"}, 'responses': []}]"
    assert (
        sc.score([Prediction(id="test_in_domain-easy-1", raw=quote)], insts).metrics["format_acc"]
        == 0.0
    )
    m2 = get_scorer("seal_tools_strict").score(
        [Prediction(id="test_in_domain-easy-1", raw=no_resp)], insts
    )
    assert m2.metrics["tool_f1"] == 1.0


def test_errored_prediction_is_a_failure_not_a_crash() -> None:
    insts = _inst()
    for name in ("seal_tools", "seal_tools_strict"):
        res = get_scorer(name).score([Prediction(id="test_in_domain-easy-1", error="boom")], insts)
        assert res.metrics["format_acc"] == 0.0
        assert res.errors == {"prediction_error": 1}
