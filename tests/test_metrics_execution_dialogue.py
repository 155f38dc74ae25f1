"""Execution metrics (dict F1, success, crash rate, LCS), the API complexity score, dialogue
BLEU/ROUGE, mean ± CI over repeats, and the scorer registry."""

from __future__ import annotations

import math

import pytest

from toollab.errors import UsageError
from toollab.eval.metrics import (
    MetricResult,
    Scorer,
    aggregate_repeats,
    api_complexity_score,
    api_rf1_score,
    applicable_scorers,
    compute_f1_between_dicts,
    get_scorer,
    mean_ci,
    normalized_lcs,
    score_all,
    score_repeats,
    scorer_names,
)
from toollab.eval.metrics.registry import scorer_class
from toollab.eval.record import Prediction
from toollab.schema import GoldCall, Instance

# Home Search: "Find a multi-family, townhouse or co-op in Cape Coral between $707000 and $1457000."
LABEL = {
    "location": "Cape Coral",
    "buy_or_rent": "buy",
    "home_type": "co-op,multi-family,townhouse",
    "min_price": 707000,
    "max_price": 1457000,
    "min_square_feet": 0,
}


def test_dict_f1_home_search_style() -> None:
    assert compute_f1_between_dicts(dict(LABEL), LABEL) == (1.0, 1.0, 1.0)
    no_max = {k: v for k, v in LABEL.items() if k != "max_price"}
    p, r, f = compute_f1_between_dicts(no_max, LABEL)
    assert (p, r) == (1.0, 5 / 6) and f == pytest.approx(10 / 11)
    wrong_min = {**LABEL, "min_price": 700000}
    assert compute_f1_between_dicts(wrong_min, LABEL)[2] == pytest.approx(5 / 6)


def _env(i: str) -> Instance:
    return Instance(id=i, query="q", source="sambanova:home_search", gold=[GoldCall(name="search")])


def test_execution_scorer() -> None:
    insts = {i: _env(i) for i in ("a", "b", "c", "d")}
    preds = [
        Prediction(id="a", execution={"state": dict(LABEL), "crashed": False, "labels_states": [{"x": 1}, LABEL]}),
        Prediction(id="b", execution={"state": {k: v for k, v in LABEL.items() if k != "max_price"}, "crashed": False, "labels_states": [LABEL]}),
        Prediction(id="c", execution={"state": None, "crashed": True, "labels_states": [LABEL]}),
        Prediction(id="d", error="backend down"),
    ]  # fmt: skip
    res = get_scorer("execution").score(preds, insts)
    m = res.metrics
    assert m["success_rate"] == 0.25
    assert m["crash_rate"] == 0.5
    assert m["f1"] == pytest.approx((1 + 10 / 11) / 4)
    assert m["precision"] == pytest.approx(0.5)
    assert res.per_instance["a"]["label"] == 1  # the best-F1 label is kept
    assert res.errors == {"crashed": 1, "prediction_error": 1}


def test_lcs() -> None:
    assert normalized_lcs(["a", "b", "c", "d"], ["a", "c", "d", "e", "f"]) == pytest.approx(0.6)
    assert normalized_lcs([], []) == 1.0
    inst = {"v": _env("v")}
    pred = Prediction(
        id="v",
        execution={"state": {}, "crashed": False, "labels_states": [{}], "actions": ["walk", "grab"],
                   "labels_actions": [["walk", "open", "grab"], ["run"]]},
    )  # fmt: skip
    assert get_scorer("execution").score([pred], inst).metrics["lcs"] == pytest.approx(2 / 3)


def test_api_complexity_score_by_hand() -> None:
    # the paper's example: |D| = 10, e covers a1..a4, t needs a1, a2, a6, a4, a5
    e1 = ["a1", "a2", "a3", "a4"]
    t = ["a1", "a2", "a6", "a4", "a5"]
    assert api_complexity_score([t], [e1], 10) == pytest.approx(4 * math.log(2) + 2 * math.log(10))
    e2 = ["a1", "a2", "a4", "a5", "a6"]
    assert api_complexity_score([t], [e1, e2], 10) == pytest.approx(5 * math.log(2))
    # multisets: a repeated call is another call to cover
    assert api_complexity_score([["a", "a"]], [["a"]], 4) == pytest.approx(
        math.log(2) + math.log(4)
    )
    assert api_complexity_score([["a"], ["b"]], [["a"]], 2, base=2) == pytest.approx((1 + 2) / 2)
    assert api_rf1_score([["a", "b"]], [["a"], ["a", "b"]]) == 0.0
    with pytest.raises(ValueError):
        api_complexity_score([], [["a"]], 3)


def test_dialogue_scores() -> None:
    insts = {
        "x": Instance(
            id="x", query="q", source="dialogue", answer="The capital of France is Paris."
        ),
        "y": Instance(
            id="y",
            query="q",
            source="deer",
            metadata={"reference_output": "Water boils at 100 degrees."},
        ),
    }
    same = [
        Prediction(id="x", raw="The capital of France is Paris."),
        Prediction(id="y", raw="Water boils at 100 degrees."),
    ]
    m = get_scorer("dialogue").score(same, insts).metrics
    assert m["bleu"] == pytest.approx(1.0) and m["rouge_l"] == pytest.approx(1.0, abs=1e-6)
    other = [Prediction(id="x", raw="Paris is the capital."), Prediction(id="y", error="boom")]
    res = get_scorer("dialogue").score(other, insts)
    r1, bleu = res.metrics["rouge_1"], res.metrics["bleu"]
    assert r1 is not None and 0 < r1 < 0.5  # the empty answer scores 0
    assert bleu is not None and bleu < 0.5
    assert res.errors == {"prediction_error": 1}


def test_mean_ci() -> None:
    est = mean_ci([0.5, 0.7, 0.6])
    assert est.mean == pytest.approx(0.6)
    assert est.ci95 == pytest.approx(4.303 * 0.1 / math.sqrt(3))
    assert mean_ci([0.4]).ci95 is None
    assert mean_ci([None, None]).mean is None
    big = mean_ci([float(i % 2) for i in range(100)])
    assert big.std is not None
    assert big.ci95 == pytest.approx(1.984 * big.std / 10, rel=1e-3)


def test_score_repeats() -> None:
    insts = {i: Instance(id=i, query="q", source="dialogue", answer="a b c d") for i in ("p", "q")}
    preds = [
        Prediction(id="p", repeat=0, raw="a b c d"),
        Prediction(id="q", repeat=0, raw="a b c d"),
        Prediction(id="p", repeat=1, raw="a b"),
        Prediction(id="q", repeat=1, raw="a b"),
    ]
    agg = score_repeats(get_scorer("dialogue"), preds, insts)
    assert agg.repeats == 2
    r1 = agg.runs[1].metrics["rouge_1"]
    assert r1 is not None
    assert agg.metrics["rouge_1"].mean == pytest.approx((1 + r1) / 2, abs=1e-6)
    assert agg.metrics["rouge_1"].ci95 is not None
    merged = aggregate_repeats(
        [
            MetricResult(metrics={"x": 1.0}, errors={"e": 1}),
            MetricResult(metrics={"x": 0.0}, errors={"e": 2}),
        ]
    )
    assert merged.metrics["x"].mean == 0.5 and merged.errors == {"e": 3}


def test_registry_selection_and_errors() -> None:
    insts = [
        Instance(id="1", query="q", source="seal-tools"),
        Instance(id="2", query="q", source="bfcl"),
        Instance(id="3", query="q", source="env:weather"),
    ]
    names = [s.name for s in applicable_scorers(insts)]
    assert names == ["bfcl", "environment", "seal_tools"]  # the faithful scorers only
    every = [s.name for s in applicable_scorers(insts, include_variants=True)]
    assert every == ["bfcl", "environment", "seal_tools", "seal_tools_strict"]
    assert "tooleyes" not in every
    variants = {n for n in scorer_names() if not scorer_class(n).default}
    assert variants == {"seal_tools_strict", "deer_strict", "tooleyes_strict"}
    with pytest.raises(UsageError, match="did you mean 'bfcl'"):
        get_scorer("bfcl_ast_x")

    class Broken(Scorer):
        name = "broken"
        formats = ("bfcl",)

        def score(self, predictions, instances):  # type: ignore[no-untyped-def]
            raise RuntimeError("bug")

    out = score_all([Prediction(id="2", raw="[]")], {i.id: i for i in insts}, [Broken()])
    assert out["broken"].errors == {"scorer_exception": 1}
