"""Hybrid retrieval: reciprocal rank fusion (RRF) of BM25 and dense rankings.

score(tool) = Σ_r w_r / (c + rank_r(tool)), with c = 60 (Cormack et al., 2009). Each
component ranks ``depth`` candidates (default max(50, 4k)); BM25 contributes only the tools that
share a word with the query (it returns no zero-score hits), so a query BM25 knows no word of is
ranked by the dense side alone.
"""

from __future__ import annotations

from typing import Any

from toollab.retrieval.base import Retriever, register_retriever
from toollab.retrieval.bm25 import BM25Retriever
from toollab.retrieval.dense import DenseRetriever


def rrf(
    rankings: list[list[int]], weights: list[float] | None = None, c: float = 60.0
) -> list[tuple[int, float]]:
    """Fuse rankings of item indices; best first, ties by first appearance."""
    weights = weights or [1.0] * len(rankings)
    scores: dict[int, float] = {}
    for ranking, w in zip(rankings, weights, strict=True):
        for r, item in enumerate(ranking):
            scores[item] = scores.get(item, 0.0) + w / (c + r + 1)
    return sorted(scores.items(), key=lambda kv: -kv[1])


@register_retriever("hybrid")
class HybridRetriever(Retriever):
    name = "hybrid"

    def __init__(
        self,
        c: float = 60.0,
        weights: tuple[float, float] = (1.0, 1.0),
        depth: int | None = None,
        **dense_options: Any,
    ) -> None:
        super().__init__()
        self.c, self.weights, self.depth = c, list(weights), depth
        self.bm25 = BM25Retriever()
        self.dense = DenseRetriever(**dense_options)

    def _build(self, texts: list[str]) -> None:
        # the components share the pool checks already done by index()
        self.bm25.tools = self.dense.tools = self.tools
        self.bm25.keys = self.dense.keys = self.keys
        self.bm25._build(texts)
        self.dense._build(texts)

    def _search(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        depth = min(len(self.tools), self.depth or max(50, 4 * k))
        sparse = self.bm25._search(queries, depth)
        dense = self.dense._search(queries, depth)
        out = []
        for s, d in zip(sparse, dense, strict=True):
            fused = rrf([[i for i, _ in s], [i for i, _ in d]], self.weights, self.c)
            out.append(fused[:k])
        return out
