"""Retrieval benchmark: a 100,000-tool pool and retrieval quality on Seal-Tools.

Scale: Seal-Tools' 4,076 tools are varied into N tools (default 100,000) with new names and
reworded descriptions; we time index builds, measure the memory they add (RSS delta) and the
p50 / p95 latency of single queries (Seal-Tools queries).  Dense latency includes embedding the
query; its pool embeddings are precomputed (cached on disk, as in normal use).
Quality: Recall@5 / complete@5 of BM25, dense and hybrid on Seal-Tools (pool = all 4,076 tools)
and on the built-in environments' test splits (``--env-n`` instances per environment, seed 0;
pool = the tools of all 13 environments together; Call instances only).

Dense at scale: embedding 100,000 tool texts takes about half an hour on a 2-core CPU, so by default
the scaled pool's vectors are the real embeddings of the 4,076 Seal-Tools tools, each variant
jittered (Gaussian noise, sigma 0.05, renormalised): the index and the search see 100,000 distinct
unit vectors in the model's space, and every query is really embedded.  ``--real-embeddings``
embeds all the variant texts instead.

    python benchmarks/bench_retrieval.py --data ../shared/data/seal-tools [--n 100000] [--queries 300]
    python benchmarks/bench_retrieval.py --envs-only [--env-n 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from toollab.data import load_dataset, load_tools
from toollab.retrieval import BM25Retriever, DenseRetriever, evaluate_retriever, get_retriever
from toollab.schema import Tool

PREFIXES = [
    "",
    "Use this service to ",
    "An API that lets you ",
    "Tool for developers: ",
    "Quickly ",
    "Enterprise endpoint to ",
    "Lightweight helper that can ",
    "Official interface to ",
]
SUFFIXES = [
    "",
    " Results are returned as JSON.",
    " Supports pagination.",
    " Requires an API key.",
    " Data is refreshed hourly.",
    " Free tier available.",
    " Works worldwide.",
    " Beta.",
]
NAME_TAGS = [
    "",
    "V2",
    "Pro",
    "Lite",
    "Plus",
    "Cloud",
    "Fast",
    "Open",
    "Global",
    "Max",
    "Next",
    "Core",
]


def scaled_pool(base: list[Tool], n: int) -> list[Tool]:
    out: list[Tool] = []
    for i in range(n):
        b = base[i % len(base)]
        v = i // len(base)
        if v == 0:
            out.append(b)
            continue
        desc = b.description[:1].lower() + b.description[1:]
        out.append(
            b.model_copy(
                update={
                    "name": f"{b.name}{NAME_TAGS[v % len(NAME_TAGS)]}{v}",
                    "description": PREFIXES[v % len(PREFIXES)]
                    + desc
                    + SUFFIXES[(v // 3) % len(SUFFIXES)],
                }
            )
        )
    return out


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def latency(retriever, queries: list[str], k: int = 5) -> dict[str, float]:  # type: ignore[no-untyped-def]
    retriever.retrieve(queries[0], k)  # warm up
    times = []
    for q in queries:
        t0 = time.perf_counter()
        retriever.retrieve(q, k)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {
        "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 3),
        "queries": len(times),
    }


def quality_builtin_envs(n: int, seed: int = 0, k: int = 5) -> dict[str, object]:
    """Recall@k / complete@k of each retriever on the pooled built-in environments' test splits,
    overall and per environment (the pool is every environment's tools)."""
    from toollab.data.base import tool_pool
    from toollab.envs import env_names
    from toollab.envs.generate import generate

    names = env_names()
    by_env = {name: [i for i in generate(name, "test", n, seed) if i.gold] for name in names}
    pool = tool_pool(t for insts in by_env.values() for i in insts for t in i.tools)
    every = [i for insts in by_env.values() for i in insts]
    out: dict[str, object] = {"instances": len(every), "pool_size": len(pool), "n_per_env": n}
    for rname in ("bm25", "dense", "hybrid"):
        r = get_retriever(rname).index(pool)
        rep = evaluate_retriever(r, every, k=k)
        row: dict[str, object] = {
            f"recall@{k}": round(rep.recall, 4),
            f"complete@{k}": round(rep.complete, 4),
            f"ndcg@{k}": round(rep.ndcg, 4),
        }
        for name, insts in by_env.items():
            e = evaluate_retriever(r, insts, k=k)
            row[name] = {f"recall@{k}": round(e.recall, 4), f"complete@{k}": round(e.complete, 4)}
        out[rname] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=Path("../shared/data/seal-tools"))
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--skip-dense-scale", action="store_true", help="skip the dense scale test")
    ap.add_argument("--real-embeddings", action="store_true", help="embed every scaled tool text")
    ap.add_argument("--env-n", type=int, default=50, help="test instances per built-in environment")
    ap.add_argument(
        "--envs-only", action="store_true", help="only the quality on the built-in environments"
    )
    args = ap.parse_args()
    if args.envs_only:
        print(json.dumps({"quality_builtin_envs": quality_builtin_envs(args.env_n)}, indent=2))
        return

    base = load_tools(args.data / "tool.jsonl", "seal-tools")
    out_dom = load_dataset(
        args.data / "test_out_domain.jsonl", "seal-tools", tools=str(args.data / "tool.jsonl")
    )
    in_dom = load_dataset(
        args.data / "test_in_domain.jsonl", "seal-tools", tools=str(args.data / "tool.jsonl")
    )
    queries = [i.query for i in out_dom.instances][: args.queries]
    result: dict[str, object] = {"pool_size": args.n}

    # -- quality on Seal-Tools --------------------------------------------------------------
    quality: dict[str, object] = {}
    for name in ("bm25", "dense", "hybrid"):
        r = get_retriever(name).index(base)
        for split, ds in (("out_domain", out_dom), ("in_domain", in_dom)):
            rep = evaluate_retriever(r, ds.instances, k=5)
            quality[f"{name}/{split}"] = {
                "recall@5": round(rep.recall, 4),
                "complete@5": round(rep.complete, 4),
                "ndcg@5": round(rep.ndcg, 4),
            }
    result["quality_seal_tools"] = quality
    result["quality_builtin_envs"] = quality_builtin_envs(args.env_n)

    # -- scale ---------------------------------------------------------------------------------
    pool = scaled_pool(base, args.n)
    m0 = rss_mb()
    t0 = time.perf_counter()
    bm25 = BM25Retriever().index(pool)
    result["bm25"] = {
        "build_s": round(time.perf_counter() - t0, 2),
        "rss_added_mb": round(rss_mb() - m0, 1),
        **latency(bm25, queries),
    }
    del bm25
    if not args.skip_dense_scale:
        import numpy as np

        from toollab.retrieval.base import tool_text

        dense = DenseRetriever(show_progress=True)
        t0 = time.perf_counter()
        if args.real_embeddings:
            vectors = dense.embedder.encode([tool_text(t) for t in pool], show_progress=True)
            kind = "real"
        else:
            base_vecs = dense.embedder.encode([tool_text(t) for t in base])
            rng = np.random.default_rng(0)
            vectors = base_vecs[np.arange(len(pool)) % len(base)] + rng.normal(
                0, 0.05, (len(pool), base_vecs.shape[1])
            ).astype(np.float32)
            vectors[: len(base)] = base_vecs
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            kind = "jittered real embeddings of the 4,076 Seal-Tools tools"
        embed_s = time.perf_counter() - t0
        m0 = rss_mb()
        t0 = time.perf_counter()
        dense.index_embeddings(pool, vectors)
        result["dense"] = {
            "vectors": kind,
            "embed_s": round(embed_s, 1),
            "build_s": round(time.perf_counter() - t0, 2),
            "rss_added_mb": round(rss_mb() - m0, 1),
            "ann": dense._ann is not None,
            **latency(dense, queries),
        }
        # the same searches with the query embeddings computed beforehand: the index's own cost
        qvecs = dense.embed_queries(queries)
        times = []
        for row in qvecs:
            t0 = time.perf_counter()
            dense._ann.knn_query(row[None, :], k=5, num_threads=1)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        result["dense"]["search_only_p50_ms"] = round(statistics.median(times), 3)
        result["dense"]["search_only_p95_ms"] = round(times[int(0.95 * (len(times) - 1))], 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
