"""BFCL scorer: possible answers rendered as calls score 100 %, wrong outputs land in the
upstream error types, and the official aggregation."""

from __future__ import annotations

import json
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
        "simple_python",
        "multiple",
        "parallel",
        "parallel_multiple",
        "non_live_ast_python",
        "irrelevance",
        "pooled_accuracy",
    ):
        assert res.metrics[key] == 1.0, (key, res.errors)
    assert res.errors == {}
    # no Java / JavaScript entries: the leaderboard's simple and non-live aggregates are N/A
    assert res.metrics["simple"] is None and res.metrics["non_live_ast"] is None
    assert any("simple_java, simple_javascript not scored" in n for n in res.notes)
    # the leaderboard still prints non_live_overall, Java and JavaScript counted as 0
    assert res.metrics["non_live_overall"] == pytest.approx((1 / 3 + 1 + 1 + 1 + 1) / 5)
    assert res.metrics["live_overall"] is None  # no live category in the shared data
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


def test_irrelevance_says_how_many_abstained_and_how_many_did_not_parse(
    bfcl: dict[str, Instance],
) -> None:
    """BFCL's figure passes both; the figures beside it tell an abstention from unreadable text."""
    irr = {k: v for k, v in list(bfcl.items()) if v.category == "irrelevance"}
    ids = list(irr)[:8]
    call = f"[{irr[ids[0]].tools[0].name}(x=1)]"
    outputs = ["[]", "", "I cannot help with that.", "[f(x=", call, call, "[]", "oops("]
    preds = [Prediction(id=i, raw=t) for i, t in zip(ids, outputs, strict=True)]
    preds.append(Prediction(id=list(irr)[8], raw="", error="backend down"))  # failed: neither
    res = get_scorer("bfcl").score(preds, irr)
    m = res.metrics
    assert m["irrelevance"] == pytest.approx(6 / 9)  # the faithful figure, as before
    assert (m["irrelevance_abstained"], m["irrelevance_unparsed"]) == (
        pytest.approx(3 / 9),
        pytest.approx(3 / 9),
    )
    assert m["irrelevance"] == pytest.approx(m["irrelevance_abstained"] + m["irrelevance_unparsed"])
    names = list(m)
    assert names[names.index("irrelevance") + 1 : names.index("irrelevance") + 3] == [
        "irrelevance_abstained",
        "irrelevance_unparsed",
    ]
    assert (
        res.breakdown["irrelevance"]["abstained"],
        res.breakdown["irrelevance"]["unparsed"],
    ) == (
        3.0,
        3.0,
    )
    rows = res.per_instance
    assert [rows[i]["outcome"] for i in ids] == [
        "no_call", "no_call", "unparsed", "unparsed", "call", "call", "no_call", "unparsed"
    ]  # fmt: skip
    defs = type(get_scorer("bfcl")).definitions()
    assert "gorilla issues 1362 and 443" in defs["irrelevance_unparsed"]["definition"]
    # no irrelevance entry scored: no such figure
    simple = {k: v for k, v in bfcl.items() if v.category == "simple_python"}
    sp = next(iter(simple))
    assert (
        "irrelevance_abstained"
        not in get_scorer("bfcl").score([Prediction(id=sp, raw="[]")], simple).metrics
    )


def test_abstention_figures_in_every_view(shared_data: Path, tmp_path: Path) -> None:
    """``eval`` (table and ``--json``), ``results.json`` and the report show the figures, with
    their definitions."""
    from typer.testing import CliRunner

    from toollab.cli.main import app
    from toollab.report import fmt_figure

    runner = CliRunner()
    data = shared_data / "bfcl" / "BFCL_v4_irrelevance.json"
    ids = [json.loads(line)["id"] for line in data.read_text().splitlines()[:5]]
    outputs = ["[]", "Sorry, I cannot.", "[]", "[get_weather(city='x')]", "not ( a call"]
    replay = tmp_path / "outputs.jsonl"
    replay.write_text(
        "".join(
            json.dumps({"id": i, "output": o}) + "\n" for i, o in zip(ids, outputs, strict=True)
        )
    )
    args = ["eval", "-m", f"replay:{replay}", "-d", str(data), "-f", "bfcl", "-n", "5"]
    r = runner.invoke(app, [*args, "--json", "--out", str(tmp_path / "run")])
    assert r.exit_code == 0, r.output
    shown = json.loads(r.stdout)
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    for view in (shown, results):
        m = view["metrics"]["bfcl"]
        assert (m["irrelevance"], m["irrelevance_abstained"], m["irrelevance_unparsed"]) == (
            0.8,
            0.4,
            0.4,
        )
        defs = view["definitions"]["bfcl"]
        assert set(defs) == {"irrelevance", "irrelevance_abstained", "irrelevance_unparsed"}
    table = runner.invoke(app, ["score", str(tmp_path / "run" / "predictions.jsonl")])
    assert table.exit_code == 0, table.output
    for name in ("irrelevance_abstained", "irrelevance_unparsed"):
        assert name in table.output
    rep = runner.invoke(
        app, ["report", str(tmp_path / "run"), "--out", str(tmp_path / "report.html")]
    )
    assert rep.exit_code == 0, rep.output
    html = (tmp_path / "report.html").read_text()
    md = (tmp_path / "report.md").read_text()
    for page in (html, md):
        assert "irrelevance_unparsed" in page and fmt_figure(0.4) in page
    assert "gorilla issues 1362 and 443" in html


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
    full = {
        "simple_python": (90, 100),
        "simple_java": (50, 100),
        "simple_javascript": (10, 20),
        "multiple": (80, 100),
        "parallel": (70, 100),
        "parallel_multiple": (60, 100),
        "irrelevance": (10, 20),
        "live_simple": (1, 4),
        "live_multiple": (9, 16),
        "live_parallel": (0, 4),
        "live_parallel_multiple": (4, 8),
        "live_irrelevance": (3, 4),
        "live_relevance": (1, 4),
    }
    figs, notes = aggregate(full)
    assert notes == []
    assert figs["simple_java"] == 0.5 and figs["simple_python"] == 0.9
    assert figs["simple"] == pytest.approx((0.9 + 0.5 + 0.5) / 3)
    assert figs["non_live_ast"] == pytest.approx((figs["simple"] + 0.8 + 0.7 + 0.6) / 4)
    assert figs["non_live_overall"] == pytest.approx((figs["simple"] + 0.8 + 0.7 + 0.6 + 0.5) / 5)
    assert figs["non_live_ast_python"] == pytest.approx((0.9 + 0.8 + 0.7 + 0.6) / 4)
    assert figs["live_ast"] == pytest.approx(14 / 32)  # count-weighted, not a mean of means
    assert figs["live_overall"] == pytest.approx(18 / 40)
    assert figs["pooled_accuracy"] == pytest.approx(388 / 580)


def test_aggregates_with_missing_categories_as_on_the_leaderboard() -> None:
    """Upstream counts a category that was not run as 0: ``simple``, ``non_live_ast`` and
    ``live_ast`` are printed N/A (``None`` here), the overall figures as numbers
    (``display_na_if_category_missing=False``), a missing live category weighing its full size."""
    figs, notes = aggregate(
        {
            "simple_python": (90, 100),
            "simple_java": (50, 100),
            "multiple": (80, 100),
            "irrelevance": (10, 20),
            "live_simple": (1, 4),
        }
    )
    assert figs["simple"] is None and figs["non_live_ast"] is None
    assert figs["non_live_ast_python"] is None and figs["live_ast"] is None
    # (simple with javascript as 0) + multiple + parallel 0 + parallel_multiple 0 + irrelevance
    assert figs["non_live_overall"] == pytest.approx(((0.9 + 0.5 + 0) / 3 + 0.8 + 0.5) / 5)
    # 1 correct of live_simple's 4, the five missing live categories at their full v4 sizes
    assert figs["live_overall"] == pytest.approx(1 / (4 + 1053 + 16 + 24 + 884 + 16))
    assert figs["simple_python"] == 0.9 and figs["live_simple"] == 0.25
    assert figs["pooled_accuracy"] == pytest.approx(231 / 324)
    assert (
        "simple: not reported, as on the leaderboard (N/A): simple_javascript not scored" in notes
    )
    assert any(n.startswith("live_ast:") and "live_parallel_multiple" in n for n in notes)
    assert (
        "non_live_overall: as on the leaderboard, simple_javascript, parallel, parallel_multiple "
        "not scored and counted as 0" in notes
    )
    assert any(
        n.startswith("live_overall: as on the leaderboard, live_multiple (1053 entries)")
        for n in notes
    )
    # a figure none of whose categories was scored is not made up
    live_only, notes = aggregate({"live_simple": (1, 4)})
    assert live_only["non_live_overall"] is None and not any("non_live" in n for n in notes)
    non_live_only, _ = aggregate({"simple_python": (1, 2)})
    assert non_live_only["live_overall"] is None
    assert non_live_only["non_live_overall"] == pytest.approx(0.5 / 3 / 5)
    # older category names are reported under the v4 names
    old, _ = aggregate({"simple": (1, 2), "java": (1, 1), "javascript": (0, 1)})
    assert old["simple_python"] == 0.5 and old["simple"] == pytest.approx(0.5)


def test_empty_list_passes_an_omittable_list_parameter(bfcl: dict[str, Instance]) -> None:
    """Upstream list checkers standardize the "" option to [] (``range(len(""))``), so ``[]``
    passes where "" is listed: multiple_178 ``deck=[]`` (a list of dicts) is correct."""
    inst = bfcl["multiple_178"]
    text = "[find_card_in_deck(rank='Queen', suit='Hearts', deck=[])]"
    res = get_scorer("bfcl").score([Prediction(id=inst.id, raw=text)], {inst.id: inst})
    assert res.metrics["multiple"] == 1.0, res.per_instance
    wrong = "[find_card_in_deck(rank='Queen', suit='Hearts', deck=[{'rank': 'Queen'}])]"
    res = get_scorer("bfcl").score([Prediction(id=inst.id, raw=wrong)], {inst.id: inst})
    assert res.errors == {"value_error:list_dict_count": 1}
    # a plain list parameter: [] passes only where "" is listed
    assert check_entry("[calc_area(base=10, height=5, tags=[])]", "simple_python", [DOC], ANS)[
        "valid"
    ]
    no_omit = [{"calc_area": {**ANS[0]["calc_area"], "tags": [["a b"]]}}]
    assert (
        check_entry("[calc_area(base=10, height=5, tags=[])]", "simple_python", [DOC], no_omit)[
            "error_type"
        ]
        == "value_error:list/tuple"
    )


def test_errored_prediction_fails(bfcl: dict[str, Instance]) -> None:
    one = {"simple_python_0": bfcl["simple_python_0"], "irrelevance_0": bfcl["irrelevance_0"]}
    preds = [Prediction(id=k, error="backend down") for k in one]
    res = get_scorer("bfcl").score(preds, one)
    assert res.metrics["pooled_accuracy"] == 0.0
    assert res.errors == {"prediction_error": 2}


def _structured(inst: Instance, calls: list[tuple[str, dict[str, Any]]], raw: str) -> Prediction:
    """A prediction whose calls came out of constrained decoding (structured before any text)."""
    from toollab.parsing import ParseResult
    from toollab.schema import ToolCall

    parsed = (
        ParseResult.ok([ToolCall(name=n, arguments=a) for n, a in calls])
        if calls
        else ParseResult.no_call("no tool fits")
    )
    return Prediction(id=inst.id, raw=raw, parsed=parsed, metadata={"constrained_raw": raw})


def test_structured_calls_are_read_as_bfcl_fc_handlers_read_tool_calls(
    bfcl: dict[str, Instance],
) -> None:
    """Constrained decoding gives structured calls: BFCL's function-calling handlers take such
    calls as [{name: arguments}], whatever text a template renders them into; a free-text
    output in another syntax still goes through the prompting decoder and fails there."""
    simple = bfcl["simple_python_0"]
    gold = {
        k: _value(next(v for v in vals if v != ""))
        for k, vals in simple.gold[0].acceptable.items()
        if any(v != "" for v in vals)
    }
    as_json = json.dumps({"name": simple.gold[0].name, "arguments": gold})
    scorer = get_scorer("bfcl")
    res = scorer.score([_structured(simple, [(simple.gold[0].name, gold)], as_json)], bfcl)
    assert res.breakdown["simple_python"]["correct"] == 1.0, res.errors
    wrong = _structured(simple, [(simple.gold[0].name, {**gold, "base": 11})], as_json)
    res = scorer.score([wrong], bfcl)
    assert res.breakdown["simple_python"]["correct"] == 0.0
    assert res.errors == {"value_error:others": 1}, res.errors
    # the same JSON text from a prompting model: BFCL's prompting decoder cannot read it
    res = scorer.score([Prediction(id=simple.id, raw=as_json)], bfcl)
    assert res.errors == {"ast_decoder:decoder_failed": 1}
    # read by the json template's parser, which plays the part of an FC handler's decoder
    free = _structured(simple, [(simple.gold[0].name, gold)], as_json)
    free.metadata = {"parser": "json"}
    assert scorer.score([free], bfcl).breakdown["simple_python"]["correct"] == 1.0
    free.metadata = {"parser": "python"}  # BFCL's own prompting format: its own decoder
    assert scorer.score([free], bfcl).errors == {"ast_decoder:decoder_failed": 1}
    # irrelevance: a structured no-call passes, a structured call fails
    irr = next(i for i in bfcl.values() if i.category == "irrelevance")
    res = scorer.score([_structured(irr, [], '{"decision": "no_call"}')], bfcl)
    assert res.breakdown["irrelevance"]["correct"] == 1.0
    call = _structured(irr, [(irr.tools[0].name, {"x": 1})], "{}")
    assert scorer.score([call], bfcl).errors == {"irrelevance_error:decoder_success": 1}
