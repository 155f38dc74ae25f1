"""BFCL scorer: possible answers rendered as calls score 100 %, wrong outputs land in the
upstream error types, and the official aggregation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toollab.eval.metrics import get_scorer
from toollab.eval.metrics.bfcl import aggregate, bfcl_docs, check_entry
from toollab.eval.record import Prediction
from toollab.schema import Instance


@pytest.fixture(scope="module")
def bfcl(shared_data: Path) -> dict[str, Instance]:
    from toollab.data import load_dataset

    ds = load_dataset(shared_data / "bfcl", "bfcl")
    return {i.id: i for i in ds.instances}


def _value(v: Any) -> Any:
    """A possible-answer value as a concrete value: dict entries hold acceptable lists."""
    if isinstance(v, dict):
        out = {}
        for k, vals in v.items():
            opts = [x for x in (vals if isinstance(vals, list) else [vals]) if x != ""]
            if opts:
                out[k] = _value(opts[0])
        return out
    if isinstance(v, list):
        return [_value(x) for x in v]
    return v


def render_gold(inst: Instance) -> str:
    """First acceptable non-"" value per parameter; optional parameters the doc does not
    declare are omitted (parallel_multiple_12 / _26)."""
    docs = {d["name"]: d for d in bfcl_docs(inst)}
    calls = []
    for g in inst.gold:
        props = docs[g.name]["parameters"].get("properties", {})
        args = []
        for k, vals in g.acceptable.items():
            opts = [v for v in vals if v != ""]
            if not opts or ("" in vals and k not in props):
                continue
            args.append(f"{k}={_value(opts[0])!r}")
        calls.append(f"{g.name}({', '.join(args)})")
    return "[" + ", ".join(calls) + "]" if calls else ""


def test_rendered_possible_answers_score_100(bfcl: dict[str, Instance]) -> None:
    preds = [Prediction(id=i.id, raw=render_gold(i)) for i in bfcl.values()]
    res = get_scorer("bfcl").score(preds, bfcl)
    for key in (
        "simple",
        "multiple",
        "parallel",
        "parallel_multiple",
        "non_live_ast",
        "irrelevance",
    ):
        assert res.metrics[key] == 1.0, (key, res.errors)
    assert res.errors == {}
    assert res.breakdown["simple_python"]["total"] == 400
    assert res.breakdown["irrelevance"]["total"] == 240


def test_irrelevance_no_call_passes_and_call_fails(bfcl: dict[str, Instance]) -> None:
    irr = {k: v for k, v in bfcl.items() if v.category == "irrelevance"}
    for text in ("", "I cannot help with that.", "[]"):
        preds = [Prediction(id=i, raw=text) for i in irr]
        assert get_scorer("bfcl").score(preds, irr).metrics["irrelevance"] == 1.0
    first = next(iter(irr.values()))
    call = f"[{first.tools[0].name}(x=1)]"
    res = get_scorer("bfcl").score([Prediction(id=first.id, raw=call)], irr)
    assert res.metrics["irrelevance"] == 0.0
    assert res.errors == {"irrelevance_error:decoder_success": 1}


DOC = {
    "name": "calc_area",
    "description": "",
    "parameters": {
        "type": "dict",
        "properties": {
            "base": {"type": "integer"},
            "height": {"type": "float"},
            "unit": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["base", "height"],
    },
}
ANS = [{"calc_area": {"base": [10], "height": [5.0], "unit": ["units", ""], "tags": [["a b"], ""]}}]


@pytest.mark.parametrize(
    ("text", "category", "error_type"),
    [
        ("[calc_area(base=10, height=5)]", "simple_python", None),  # int accepted for float
        ("[calc_area(base=10, height=5.0, unit='Units')]", "simple_python", None),  # standardized
        ("[calc_area(base=10, height=5, tags=['A-B'])]", "simple_python", None),
        ("[area(base=10, height=5)]", "simple_python", "simple_function_checker:wrong_func_name"),
        ("[calc_area(base=10)]", "simple_python", "simple_function_checker:missing_required"),
        ("[calc_area(10, 5.0)]", "simple_python", "simple_function_checker:missing_required"),
        (
            "[calc_area(base=10, height=5, color='r')]",
            "simple_python",
            "simple_function_checker:unexpected_param",
        ),
        ("[calc_area(base='10', height=5)]", "simple_python", "type_error:simple"),
        ("[calc_area(base=11, height=5)]", "simple_python", "value_error:others"),
        ("[calc_area(base=10, height=5, unit='feet')]", "simple_python", "value_error:string"),
        ("[calc_area(base=10, height=5, tags=['c'])]", "simple_python", "value_error:list/tuple"),
        (
            "[calc_area(base=10, height=5), calc_area(base=10, height=5)]",
            "simple_python",
            "simple_function_checker:wrong_count",
        ),
        (
            "[calc_area(base=10, height=5), calc_area(base=10, height=5)]",
            "multiple",
            "multiple_function_checker:wrong_count",
        ),
        ("[calc_area(base=10, height=5", "simple_python", "ast_decoder:decoder_failed"),
        (
            "```python\n[calc_area(base=10, height=5)]\n```",
            "simple_python",
            "ast_decoder:decoder_failed",
        ),
        ("calc_area(base=10, height=5)", "simple_python", None),  # no [] needed
        ("[calc_area(base=10, height=5)]", "parallel", None),
        (
            "[calc_area(base=12, height=5)]",
            "parallel",
            "parallel_function_checker_no_order:cannot_find_match",
        ),
        ("[]", "parallel", "parallel_function_checker_no_order:wrong_count"),
    ],
)
def test_error_types(text: str, category: str, error_type: str | None) -> None:
    check = check_entry(text, category, [DOC], ANS)
    assert check["valid"] is (error_type is None), check
    assert check["error_type"] == error_type


def test_missing_optional_and_dict_rules() -> None:
    doc = {
        "name": "f",
        "parameters": {
            "type": "dict",
            "properties": {"opt": {"type": "string"}, "d": {"type": "dict"}},
            "required": [],
        },
    }
    ans = [{"f": {"opt": ["x"], "d": [{"k": ["v"], "o": ["1", ""]}, ""]}}]
    assert check_entry("[f(d={'k': 'v'})]", "simple", [doc], ans)["error_type"] == (
        "simple_function_checker:missing_optional"
    )
    assert check_entry("[f(opt='x', d={'k': 'V'})]", "simple", [doc], ans)["valid"]
    assert check_entry("[f(opt='x', d={'k': 'w'})]", "simple", [doc], ans)["error_type"] == (
        "value_error:dict_value"
    )
    assert check_entry("[f(opt='x', d={'z': 'v'})]", "simple", [doc], ans)["error_type"] == (
        "value_error:dict_key"
    )


def test_parallel_is_order_free_and_greedy() -> None:
    doc = {
        "name": "play",
        "parameters": {"type": "dict", "properties": {"a": {"type": "string"}}, "required": ["a"]},
    }
    ans = [{"play": {"a": ["x"]}}, {"play": {"a": ["y"]}}]
    assert check_entry("[play(a='y'), play(a='x')]", "parallel", [doc], ans)["valid"]
    assert not check_entry("[play(a='x'), play(a='x')]", "parallel", [doc], ans)["valid"]


def test_relevance_requires_a_call() -> None:
    assert check_entry("[f(a=1)]", "live_relevance", [], [])["valid"]
    assert (
        check_entry("[]", "live_relevance", [], [])["error_type"]
        == "relevance_error:decoder_failed"
    )


def test_official_aggregation() -> None:
    figs = aggregate(
        {
            "simple_python": (90, 100),
            "simple_java": (50, 100),
            "multiple": (80, 100),
            "parallel": (70, 100),
            "parallel_multiple": (60, 100),
            "irrelevance": (10, 20),
            "live_simple": (1, 4),
            "live_multiple": (9, 16),
        }
    )
    assert figs["simple"] == pytest.approx(0.7)
    assert figs["non_live_ast"] == pytest.approx((0.7 + 0.8 + 0.7 + 0.6) / 4)
    assert figs["irrelevance"] == 0.5
    assert figs["live_ast"] == pytest.approx(10 / 20)  # count-weighted, not (0.25 + 0.5625) / 2


def test_errored_prediction_fails(bfcl: dict[str, Instance]) -> None:
    one = {"simple_python_0": bfcl["simple_python_0"], "irrelevance_0": bfcl["irrelevance_0"]}
    preds = [Prediction(id=k, error="backend down") for k in one]
    res = get_scorer("bfcl").score(preds, one)
    assert res.metrics["accuracy"] == 0.0
    assert res.errors == {"prediction_error": 2}
