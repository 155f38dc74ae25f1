"""DEER adapter: decision chains, API pools, gold calls, tool.json and the baseline sets."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from toollab.data import Dataset, load_dataset, load_tools
from toollab.data.pysig import parse_call_text, parse_signature
from toollab.errors import InputError
from toollab.schema import Decision


@pytest.fixture(scope="module")
def deer(shared_data: Path) -> Dataset:
    return load_dataset(shared_data / "deer", "deer")


def _decisions(ds: Dataset, split: str) -> Counter[str]:
    return Counter(i.decision.value for i in ds if i.split == split and i.decision is not None)


def test_counts_match_upstream(deer: Dataset) -> None:
    assert _decisions(deer, "test") == {"Call": 445, "NoCall": 298}
    assert _decisions(deer, "valid") == {"Call": 526, "NoCall": 346, "NoSearch": 193}
    stats = deer.stats()
    assert stats["instances"] == 743 + 1065
    assert stats["tools"] == 977  # every pool tool is one of tool.json's
    # the breakdown the data is published in: file × decision
    assert stats["by_category"] == {
        "test/Call": 445,
        "test/NoCall": 298,
        "valid/Call": 526,
        "valid/NoCall": 346,
        "valid/NoSearch": 193,
    }
    assert stats["unknown_types"]["count"] == 0  # DEER's bytes / bytearray are Python types


def test_baseline_categories(shared_data: Path) -> None:
    ds = load_dataset(shared_data / "deer", "deer", splits="tool_bench,tool_corpus")
    assert ds.stats()["by_category"] == {
        "tool_bench/Call": 120,
        "tool_bench/NoCall": 80,
        "tool_corpus/Call": 75,
        "tool_corpus/NoCall": 51,
    }


def test_chain_pool_and_gold_call(deer: Dataset) -> None:
    inst = deer.by_id("test-0")
    assert inst.query == "What are the eligibility restrictions for clinical study NCT03780233?"
    assert inst.tool_names == ["search", "ad4mat", "aiAgents", "CTCP", "revelo_talent_finder"]
    assert inst.metadata["api_pool"] == inst.tool_names
    assert [(c.name, c.arguments) for c in inst.gold] == [("CTCP", {"nctid": "NCT03780233"})]
    assert inst.answer == inst.metadata["gold_chain"]
    assert inst.answer.startswith("#Begin# Need to look up the API Pool.")
    ad4mat = inst.tool("ad4mat")
    assert ad4mat is not None
    assert ad4mat.required == ["api_key", "user_id", "site_id", "product_urls"]
    assert ad4mat.properties["product_urls"] == {"type": "array", "items": {"type": "string"}}
    revelo = inst.tool("revelo_talent_finder")
    assert revelo is not None and revelo.optional == ["location", "remote"]
    assert revelo.properties["remote"] == {"type": "boolean", "default": None}


def test_every_call_and_pool_is_read(deer: Dataset) -> None:
    for inst in deer:
        if inst.decision is Decision.NO_SEARCH:
            assert not inst.tools and not inst.gold
            assert "Don't need to look up" in inst.answer
            continue
        assert len(inst.tools) == 5, inst.id
        if inst.decision is Decision.CALL:
            text = inst.metadata["gold_call_text"]
            assert len(inst.gold) == 1
            assert text.startswith(inst.gold[0].name + "(")
            assert inst.metadata["gold_call_parse"] in ("ast", "lenient")
        else:
            assert not inst.gold


def test_malformed_upstream_calls_are_read_leniently(deer: Dataset) -> None:
    lenient = [i for i in deer if i.metadata.get("gold_call_parse") == "lenient"]
    assert lenient and all(i.metadata["gold_call_problems"] for i in lenient)
    call = parse_call_text(
        "giga(user_id='user124', query='What's the best way for me to learn programming?', "
        "response_style='recommendation')"
    )
    assert call.method == "lenient"
    assert call.arguments == {
        "user_id": "user124",
        "query": "What's the best way for me to learn programming?",
        "response_style": "recommendation",
    }


def test_signature_parsing_is_lenient() -> None:
    sig = parse_signature(
        'printify(action: str, design_text: str = "", user_id: int, details: dict = {}, ...)'
    )
    assert sig.name == "printify"
    assert sig.parameters["required"] == ["action", "user_id"]
    assert sig.parameters["properties"]["details"] == {"type": "object", "default": {}}
    assert sig.skipped == ["..."]
    sig = parse_signature(
        "g(occasion: str, optional budget: float = None, t: Optional[Tuple[int, int]])"
    )
    assert sig.parameters["required"] == ["occasion", "t"]
    assert sig.parameters["properties"]["t"]["prefixItems"] == [{"type": "integer"}] * 2
    sig = parse_signature("h(x: Dict[str, Union[str, int]], y: bytes)")
    props = sig.parameters["properties"]
    assert props["x"]["additionalProperties"] == {
        "anyOf": [{"type": "string"}, {"type": "integer"}]
    }
    assert props["y"] == {"x-original-type": "bytes"}


def test_tool_pool_file(shared_data: Path) -> None:
    tools = load_tools(shared_data / "deer" / "tool.json", "deer")
    assert len(tools) == 977
    assert sum(len(t.metadata["examples"]) for t in tools) == 9393
    t = tools[0]
    assert t.name == "ABSummarize"
    assert t.required == ["content_type", "url", "file_id", "query"]
    ds = load_dataset(shared_data / "deer" / "tool.json", "deer")
    assert len(ds) == 0 and len(ds.tools) == 977


def test_baselines(shared_data: Path) -> None:
    ds = load_dataset(shared_data / "deer", "deer", splits="tool_bench,tool_corpus")
    assert _decisions(ds, "tool_bench") == {"Call": 120, "NoCall": 80}
    assert _decisions(ds, "tool_corpus") == {"Call": 75, "NoCall": 51}
    for inst in ds:
        assert len(inst.tools) == 5
        labels = inst.metadata["api_label"]
        if inst.decision is Decision.CALL:
            names = [inst.gold[0].name] + [alt[0].name for alt in inst.alternatives]
            assert sorted(names) == sorted(labels)
        else:
            assert not inst.gold
    inst = ds.by_id("tool_bench-0")
    num = inst.tools[0].properties["number"]
    assert num["type"] == "number" and num["default"] == "12345345483453456434354131"


def test_bad_chain_names_file_and_line(tmp_path: Path) -> None:
    good = {
        "conversations": [
            {"from": "human", "value": "hi"},
            {"from": "gpt", "value": "#Begin# Don't need to look up. #End#"},
        ]
    }
    bad = {
        "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "no markers"}]
    }
    f = tmp_path / "test.json"
    f.write_text("[\n" + json.dumps(good) + ",\n" + json.dumps(bad) + "\n]\n")
    with pytest.raises(InputError) as err:
        load_dataset(f, "deer")
    assert err.value.line == 3 and "#Begin#" in err.value.problem


def test_generic_pool_loader_reads_deer_tool_json(shared_data: Path) -> None:
    """``--pool tool.json`` (the generic pool loader) reads DEER's records as the adapter does:
    the description for humans, the parameters of ``api_function`` (not a nameless Seal-Tools
    reading with empty descriptions, which no retriever can search)."""
    from toollab.tools import ToolPool

    pool = ToolPool.load(shared_data / "deer" / "tool.json").tools
    adapter = load_tools(shared_data / "deer" / "tool.json", "deer")
    assert len(pool) == len(adapter) == 977
    for a, b in zip(pool, adapter, strict=True):
        assert (a.name, a.description, a.parameters) == (b.name, b.description, b.parameters)
    assert all(t.description for t in pool[:50])


def test_source_calls_and_the_deployable_mode(deer: Dataset, shared_data: Path) -> None:
    """Every test query is a tool.json example: its tool and call are kept (a NoCall sample's
    too), and retrieval in the loop re-derives the decision from what was retrieved."""
    from toollab.data import get_adapter
    from toollab.eval.metrics.deer import deer_gold_chain, gold_kind
    from toollab.retrieval.offer import ToolOffer

    test = [i for i in deer if i.split == "test"]
    assert all("source_tool" in i.metadata for i in test)
    for inst in test:
        if inst.label() is Decision.CALL:
            assert inst.metadata["source_call"] == inst.metadata["gold_call_text"]
        else:  # the sample's pool lacks the tool its query came from
            assert inst.metadata["source_tool"] not in inst.metadata["api_pool"]
    # the file alone finds the tool.json beside it
    alone = load_dataset(shared_data / "deer" / "test.json", "deer")
    assert [i.metadata["source_tool"] for i in alone] == [i.metadata["source_tool"] for i in test]

    offer = ToolOffer.build("bm25", 5, instances=test, pool=deer.tools)
    out = offer.offer(test, get_adapter("deer").offered)
    kinds = Counter()
    for before, after in zip(test, out, strict=True):
        names = [t.name for t in after.tools]
        retrieved = before.metadata["source_tool"] in names
        assert after.metadata["source_offered"] is retrieved
        assert after.metadata["dataset_decision"] == before.label().value
        assert after.label() is (Decision.CALL if retrieved else Decision.NO_CALL)
        chain = deer_gold_chain(after)  # what the deer scorer checks against
        assert gold_kind(chain) == after.label().value
        if retrieved:
            assert after.gold[0].name == parse_call_text(before.metadata["source_call"]).name
        kinds[(before.label().value, after.label().value)] += 1
    assert len(kinds) == 4  # both ways: a NoCall sample's tool retrieved, a Call's tool missed


def test_deployable_mode_end_to_end(tmp_path: Path, shared_data: Path) -> None:
    """``toollab eval --retriever bm25 --pool tool.json`` on DEER: the agent's second round
    reads the retrieved candidates, and the oracle (which answers the re-derived key) is right
    on every instance, with the retrieved / missed source tools counted."""
    from typer.testing import CliRunner

    from toollab.cli.main import app

    out = tmp_path / "run"
    args = ["eval", "--data", str(shared_data / "deer" / "test.json"), "--format", "deer"]
    args += ["--model", "oracle", "--retriever", "bm25", "--k", "5", "--limit", "80"]
    args += ["--pool", str(shared_data / "deer" / "tool.json"), "--out", str(out), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert res["metrics"]["deer"]["P_DC"] == 1.0
    counts = res["scorer_counts"]["deer"]
    assert counts["source_tool_retrieved"] + counts["source_tool_missed"] == 80
    assert counts["Call"] == counts["source_tool_retrieved"] > 0
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    for p in preds:
        if len(p["steps"]) == 2:  # the second round read the retrieved pool, not the gold one
            assert repr(p["offered_tools"]) in p["steps"][1]["observation"]
