"""Tool retrieval: BM25, dense, hybrid, demos, evaluation, and the defined edge behaviour."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.errors import InputError, UsageError
from toollab.retrieval import (
    BM25Retriever,
    CandidateSampler,
    DemoRetriever,
    DenseRetriever,
    HybridRetriever,
    evaluate_retriever,
    get_retriever,
    rrf,
    tool_text,
)
from toollab.schema import GoldCall, Instance, Tool

POOL = [
    Tool(name="getWeatherForecast", description="Weather forecast for a city for the next days."),
    Tool(name="convert_currency", description="Convert an amount of money between two currencies."),
    Tool(name="book_hotel", description="Reserve a hotel room in a city for given dates."),
    Tool(name="translate_text", description="Translate text from one language to another."),
    Tool(name="get_stock_price", description="Latest share price of a listed company."),
    Tool(
        name="searchRecipes",
        description="",
        parameters={"type": "object", "properties": {"ingredient": {"type": "string"}}},
    ),
]


@pytest.fixture(scope="session")
def _onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx")


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _onnx_dir: Path) -> None:
    """A fresh cache per test; the ONNX export of the encoder (a few seconds) is shared."""
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "onnx").symlink_to(_onnx_dir, target_is_directory=True)
    monkeypatch.setenv("TOOLLAB_CACHE", str(tmp_path / "cache"))


def test_tool_text_splits_identifiers() -> None:
    assert tool_text(POOL[0]).startswith("get weather forecast. Weather forecast")


@pytest.mark.parametrize("name", ["bm25", "dense", "hybrid"])
def test_retrievers_find_the_right_tool(name: str) -> None:
    r = get_retriever(name).index(POOL)
    assert (
        r.retrieve("what will the weather be in Oslo tomorrow?", 1)[0].name == "getWeatherForecast"
    )
    assert r.retrieve("convert this amount of money to yen", 2)[0].name == "convert_currency"
    hits = r.retrieve("translate this into French", 3)
    # BM25 returns only the tools sharing a word with the query (here one)
    assert len(hits) == (1 if name == "bm25" else 3)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert hits[0].name == "translate_text"
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))


def test_k_larger_than_pool_returns_everything_ranked() -> None:
    r = DenseRetriever().index(POOL)
    hits = r.retrieve("hotel", 50)
    assert len(hits) == len(POOL)
    assert hits[0].name == "book_hotel"
    assert {h.name for h in hits} == {t.name for t in POOL}


def test_bm25_returns_only_tools_sharing_a_word_with_the_query() -> None:
    r = BM25Retriever().index(POOL)
    hits = r.retrieve("hotel", 50)
    assert [h.name for h in hits] == ["book_hotel"] and hits[0].score > 0
    assert r.retrieve("zzzz qqqq", 3) == []  # no known word: no hits
    assert all(h.score > 0 for h in r.retrieve("the weather and the currency", 6))


def test_hybrid_gives_no_rank_credit_to_bm25_misses() -> None:
    dense = DenseRetriever().index(POOL)
    hybrid = HybridRetriever().index(POOL)
    # BM25 knows no word: the fused ranking is the dense ranking
    q = "zzzz qqqq"
    assert [h.name for h in hybrid.retrieve(q, 6)] == [h.name for h in dense.retrieve(q, 6)]
    # one BM25 hit: every other tool is scored by its dense rank alone
    d_rank = {h.name: h.rank for h in dense.retrieve("hotel", 6)}
    for h in hybrid.retrieve("hotel", 6):
        bm25 = 1 / 61 if h.name == "book_hotel" else 0.0
        assert h.score == pytest.approx(bm25 + 1 / (60 + d_rank[h.name]))


def test_bad_inputs_have_clear_errors() -> None:
    with pytest.raises(InputError, match="empty"):
        BM25Retriever().index([])
    # the same tool listed twice is indexed once; the candidate sampler, keyed by name, refuses
    assert BM25Retriever().index([*POOL, POOL[2]]).keys == [t.name for t in POOL]
    with pytest.raises(InputError, match=r"duplicate tool name.*'book_hotel'"):
        CandidateSampler([*POOL, POOL[2]], k=2)
    r = BM25Retriever().index(POOL)
    with pytest.raises(UsageError, match="positive integer"):
        r.retrieve("x", 0)
    with pytest.raises(UsageError, match="positive integer, got True"):
        r.retrieve("x", True)
    with pytest.raises(UsageError, match=r"positive integer, got 2\.0"):
        r.retrieve("x", 2.0)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="query must be a string, got NoneType None"):
        r.retrieve(None)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="query 1 is int 5"):
        r.retrieve_many(["hotel", 5])  # type: ignore[list-item]
    with pytest.raises(UsageError, match="list of queries"):
        r.retrieve_many("hotel")
    with pytest.raises(UsageError, match="did you mean 'dense'"):
        get_retriever("dens")
    with pytest.raises(InputError, match="no index"):
        BM25Retriever().retrieve("x", 1)


def test_missing_description_is_indexed_by_name_and_params() -> None:
    r = BM25Retriever().index(POOL)
    assert r.undocumented == ["searchRecipes"]
    assert r.retrieve("recipes with this ingredient", 1)[0].name == "searchRecipes"


def test_dense_embeddings_are_cached_on_disk(tmp_path: Path) -> None:
    r = DenseRetriever().index(POOL)
    files = list((tmp_path / "cache" / "embeddings").glob("*.npy"))
    assert len(files) == 1
    cached = np.load(files[0])
    assert np.allclose(cached, r.matrix)
    assert np.allclose(np.linalg.norm(cached, axis=1), 1.0, atol=1e-4)
    # a second index of the same pool reads the cache
    r2 = DenseRetriever()
    r2.embedder.encode_uncached = None  # type: ignore[assignment]  # would fail if called
    r2.index(POOL)
    assert np.allclose(r2.matrix, r.matrix)


def test_onnx_and_torch_encoders_give_the_same_vectors(shared_data: Path, tmp_path: Path) -> None:
    """Real queries and tool texts, short to past the 256-token cut, one by one and batched."""
    from toollab.retrieval.embeddings import Embedder

    queries = [
        json.loads(line)["query"]
        for line in (shared_data / "seal-tools" / "test_out_domain.jsonl").open()
    ][:80]
    texts = [*queries, "", "x", " ".join(["a long tool description"] * 120)]
    torch_e, onnx_e = Embedder(backend="torch"), Embedder(backend="onnx")
    assert torch_e.onnx is None and onnx_e.onnx is not None
    a, b = torch_e.encode_uncached(texts), onnx_e.encode_uncached(texts)
    assert a.shape == b.shape == (len(texts), 384) and b.dtype == np.float32
    assert float(np.abs(a - b).max()) < 1e-5
    one = np.concatenate([onnx_e.encode_uncached([t]) for t in texts[:10]])
    assert float(np.abs(one - a[:10]).max()) < 1e-5
    # the export is made once and reused by the next encoder
    exported = list((tmp_path / "cache" / "onnx").glob("*.onnx"))
    assert len(exported) == 1
    stamp = exported[0].stat().st_mtime_ns
    assert Embedder(backend="auto").onnx is not None
    assert exported[0].stat().st_mtime_ns == stamp
    assert list((tmp_path / "cache" / "onnx").glob("*.onnx")) == exported


def test_a_damaged_onnx_export_is_made_again(tmp_path: Path) -> None:
    from toollab.retrieval.embeddings import Embedder

    good = Embedder(backend="onnx")
    ref = good.encode_uncached(["weather in Oslo"])
    (path,) = (tmp_path / "cache" / "onnx").glob("*.onnx")
    saved = path.read_bytes()
    try:
        path.write_bytes(b"not a model")
        again = Embedder(backend="onnx")
        assert float(np.abs(again.encode_uncached(["weather in Oslo"]) - ref).max()) < 1e-6
        assert path.stat().st_size > 1_000_000  # a real model again, not the damaged bytes
    finally:  # the export folder is shared by the tests of this module
        path.write_bytes(saved)


def test_unknown_embedding_backend_is_a_usage_error() -> None:
    from toollab.retrieval.embeddings import Embedder

    with pytest.raises(UsageError, match="did you mean 'onnx'"):
        Embedder(backend="onxx")


def test_ann_index_agrees_with_exact_search() -> None:
    tools = [
        Tool(name=f"t{i}", description=f"tool number {i} about topic {i % 7}") for i in range(60)
    ]
    tools += POOL
    exact = DenseRetriever().index(tools)
    ann = DenseRetriever(ann_threshold=10).index(tools)
    assert ann._ann is not None and exact._ann is None
    for q in ("weather forecast", "currency conversion", "topic 3"):
        assert [h.name for h in ann.retrieve(q, 3)] == [h.name for h in exact.retrieve(q, 3)]


def test_rrf_fuses_rankings() -> None:
    fused = rrf([[0, 1, 2], [2, 0, 3]])
    assert fused[0][0] == 0  # ranked 1st and 2nd beats 3rd and 1st
    assert {i for i, _ in fused} == {0, 1, 2, 3}
    assert HybridRetriever().index(POOL).retrieve("share price", 1)[0].name == "get_stock_price"


def _inst(i: int, query: str, tool: str) -> Instance:
    return Instance(id=str(i), query=query, gold=[GoldCall(name=tool)], tools=[])


def test_evaluation_metrics_on_hand_computed_case() -> None:
    r = BM25Retriever().index(POOL)
    insts = [
        _inst(0, "hotel room in Rome", "book_hotel"),
        Instance(
            id="1",
            query="convert 5 dollars and the weather forecast",
            gold=[GoldCall(name="convert_currency"), GoldCall(name="getWeatherForecast")],
        ),
        Instance(id="2", query="hello"),  # no gold: skipped
        _inst(3, "hotel room in Rome", "not_in_pool"),
    ]
    rep = evaluate_retriever(r, insts, k=2)
    assert rep.instances == 3 and rep.skipped_no_gold == 1 and rep.unreachable_gold == 1
    assert rep.recall == pytest.approx((1 + 1 + 0) / 3)
    assert rep.complete == pytest.approx(2 / 3)


def test_demo_retriever_picks_similar_solved_examples() -> None:
    examples = [
        _inst(0, "What is the weather in Paris?", "getWeatherForecast"),
        _inst(1, "Book a hotel in Rome for two nights", "book_hotel"),
        _inst(2, "Translate good morning into German", "translate_text"),
        Instance(id="3", query="no gold here"),
    ]
    demos = DemoRetriever(examples)
    assert [e.id for e in demos.retrieve("Find me a hotel in Berlin", 1)] == ["1"]
    assert "1" not in [e.id for e in demos.retrieve("Book a hotel in Rome", 2, exclude_id="1")]
    with pytest.raises(InputError, match="empty"):
        DemoRetriever([Instance(id="x", query="q")])


def test_seal_tools_retrieval_eval_cli(shared_data: Path) -> None:
    seal = shared_data / "seal-tools"
    res = CliRunner().invoke(
        app,
        [
            "retrieve", "eval", "--data", str(seal / "test_out_domain.jsonl"),
            "--format", "seal-tools", "--pool", str(seal / "tool.jsonl"),
            "--retriever", "bm25", "--k", "5", "--json",
        ],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["pool_size"] == 4076
    assert report["instances"] == 654
    assert 0.5 < report["recall"] <= 1.0
    assert report["complete"] <= report["recall"]


def test_retrieve_query_cli(tmp_path: Path) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text("\n".join(t.model_dump_json() for t in POOL) + "\n")
    res = CliRunner().invoke(
        app, ["retrieve", "query", "hotel in Rome", "--pool", str(pool), "--json"]
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["hits"][0]["name"] == "book_hotel"
    res = CliRunner().invoke(
        app, ["retrieve", "query", "x", "--pool", str(tmp_path / "missing.jsonl")]
    )
    assert res.exit_code == 2


def test_index_with_precomputed_embeddings() -> None:
    reference = DenseRetriever().index(POOL)
    given = DenseRetriever().index_embeddings(POOL, reference.matrix)
    assert [h.name for h in given.retrieve("hotel room", 3)] == [
        h.name for h in reference.retrieve("hotel room", 3)
    ]
    with pytest.raises(InputError, match="one embedding row per tool"):
        DenseRetriever().index_embeddings(POOL, reference.matrix[:2])


# -- tools that share a name ------------------------------------------------------------------------
def _tz(category: str, what: str) -> Tool:
    return Tool(
        name="timezone",
        description=f"Get the list of available timezone to be used in the {what} endpoint.",
        category=category,
    )


def test_same_name_tools_are_told_apart_by_category_qualified_keys() -> None:
    from toollab.retrieval.base import pool_keys

    basket, f1 = _tz("Competition/API_BASKETBALL", "games"), _tz("Competition/API_F1", "races")
    twin = Tool(name="drivers", description="Drivers of a season.", category="Competition/API_F1")
    other = Tool(name="drivers", description="Driver ids by name.", category="Competition/API_F1")
    bare = [Tool(name="search", description="a"), Tool(name="search", description="b")]
    pool = [*POOL, basket, f1, twin, other, *bare]
    assert pool_keys(pool)[len(POOL) :] == [
        "Competition/API_BASKETBALL/timezone",
        "Competition/API_F1/timezone",
        "Competition/API_F1/drivers#1",
        "Competition/API_F1/drivers#2",
        "search#1",
        "search#2",
    ]
    r = BM25Retriever().index(pool)
    assert r.shared_names == ["drivers", "search", "timezone"]
    hits = r.retrieve("timezone for the races endpoint", 2)
    assert [h.key for h in hits] == [
        "Competition/API_F1/timezone",
        "Competition/API_BASKETBALL/timezone",
    ]
    assert [h.name for h in hits] == ["timezone", "timezone"]


def test_a_gold_tool_sharing_its_name_is_the_one_the_instance_offers() -> None:
    basket, f1 = _tz("Competition/API_BASKETBALL", "games"), _tz("Competition/API_F1", "races")
    r = BM25Retriever().index([*POOL, basket, f1])
    query = "timezone for the races endpoint"  # F1's timezone ranks first

    def inst(offered: list[Tool]) -> Instance:
        return Instance(id="x", query=query, gold=[GoldCall(name="timezone")], tools=offered)

    assert evaluate_retriever(r, [inst([f1])], k=1).recall == 1.0
    assert evaluate_retriever(r, [inst([basket])], k=1).recall == 0.0  # the wrong timezone
    assert evaluate_retriever(r, [inst([basket])], k=2).recall == 1.0
    # not singled out by the offered tools: either counts, and only once
    rep = evaluate_retriever(r, [inst([])], k=2)
    assert rep.recall == 1.0 and rep.ndcg == pytest.approx(1.0) and rep.mrr == 1.0


def test_retrieval_over_the_real_tooleyes_pool(shared_data: Path) -> None:
    """ToolEyes' library: 568 tool entries, 567 distinct tools, 29 names shared by different
    tools (the same classify_grocery_product is listed twice in one file)."""
    from toollab.data import load_dataset

    ds = load_dataset(shared_data / "tooleyes", "tooleyes")
    assert len(ds.tools) == 568 and len({t.name for t in ds.tools}) == 530
    r = BM25Retriever().index(ds.tools)
    assert len(r.tools) == 567 == len(set(r.keys))
    assert len(r.shared_names) == 29 and "timezone" in r.shared_names
    keys = [h.key for h in r.retrieve("Get the list of available timezone", 5)]
    assert {"Competition/API_BASKETBALL/timezone", "Competition/API_F1/timezone"} <= set(keys)
    # the two different blacklist_ip tools of one category are numbered
    assert [k for k in r.keys if k.endswith("blacklist_ip") or "blacklist_ip#" in k] == [
        "Anti_Malware/Anti_Malware/blacklist_ip#1",
        "Anti_Malware/Anti_Malware/blacklist_ip#2",
    ]
    # an instance offering the F1 tools: its timezone is the F1 one
    ir38 = ds.by_id("IR-38")
    gold = ir38.model_copy(
        update={
            "query": "available timezone for the races endpoint",
            "gold": [GoldCall(name="timezone")],
        }
    )
    hits = r.retrieve(gold.query, 3)
    first_f1 = next(h.rank for h in hits if h.key == "Competition/API_F1/timezone")
    assert evaluate_retriever(r, [gold], k=3).mrr == pytest.approx(1 / first_f1)


def test_retrieve_cli_on_the_real_tooleyes_data(shared_data: Path) -> None:
    data = ["--data", str(shared_data / "tooleyes"), "--format", "tooleyes"]
    res = CliRunner().invoke(
        app,
        ["retrieve", "query", "list the available timezone values", *data, "--k", "3", "--json"],
    )
    assert res.exit_code == 0, res.stderr
    hits = json.loads(res.stdout)["hits"]
    assert {h["key"] for h in hits[:2]} == {
        "Competition/API_BASKETBALL/timezone",
        "Competition/API_F1/timezone",
    }
    assert {h["name"] for h in hits[:2]} == {"timezone"}
    res = CliRunner().invoke(app, ["retrieve", "query", "timezone", *data])
    assert res.exit_code == 0, res.stderr
    assert "29 tool name(s) are shared by different tools" in " ".join(res.stderr.split())
    res = CliRunner().invoke(app, ["retrieve", "eval", *data, "--json"])
    assert res.exit_code == 0, res.stderr
    report = json.loads(res.stdout)  # ToolEyes has no gold calls: nothing to score
    assert report["pool_size"] == 567 and report["instances"] == 0
    assert report["skipped_no_gold"] == 382
    res = CliRunner().invoke(app, ["retrieve", "query", "x"])
    assert res.exit_code == 2 and "--pool FILE, or --data PATH --format FORMAT" in res.stderr
