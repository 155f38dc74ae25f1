"""Dense retrieval: cosine similarity of all-MiniLM-L6-v2 embeddings.

Pools up to ``ann_threshold`` tools (default 20,000) are searched exactly with one matrix
product; larger pools use an HNSW index (``hnswlib``), built once per pool and cached on disk
next to the embeddings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from toollab.errors import InputError
from toollab.retrieval.base import Retriever, keyed_pool, register_retriever, top_k
from toollab.retrieval.embeddings import DEFAULT_MODEL, Embedder, cache_dir
from toollab.schema import Tool


@register_retriever("dense")
class DenseRetriever(Retriever):
    name = "dense"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        ann_threshold: int = 20_000,
        embedder: Embedder | None = None,
        show_progress: bool = False,
        backend: str = "auto",
    ) -> None:
        super().__init__()
        self.embedder = embedder or Embedder(model, backend=backend)
        self.ann_threshold = ann_threshold
        self.show_progress = show_progress
        self.matrix: np.ndarray = np.zeros((0, 0), dtype=np.float32)
        self._ann: Any = None

    def _build(self, texts: list[str]) -> None:
        self._set_matrix(
            self.embedder.encode(texts, show_progress=self.show_progress), self.embedder.key(texts)
        )

    def index_embeddings(self, tools: Sequence[Tool], embeddings: np.ndarray) -> DenseRetriever:
        """Index tools with embeddings computed elsewhere (one unit-length row per tool, in the
        space of this retriever's query encoder)."""
        pool, keys = keyed_pool(tools, dedupe=False)  # one row per tool given
        matrix = np.asarray(embeddings, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(pool):
            raise InputError(
                f"expected one embedding row per tool ({len(pool)}), got shape {matrix.shape}"
            )
        self._set_pool(pool, keys)
        digest = hashlib.sha256(matrix.tobytes()).hexdigest()[:32]
        self._set_matrix(matrix, f"given-{digest}")
        return self

    def _set_matrix(self, matrix: np.ndarray, key: str) -> None:
        self.matrix = matrix
        self._ann = self._build_ann(key) if matrix.shape[0] > self.ann_threshold else None

    def _build_ann(self, key: str) -> Any:
        import hnswlib

        n, dim = self.matrix.shape
        index = hnswlib.Index(space="ip", dim=dim)
        path = cache_dir() / "embeddings" / f"{key}.hnsw"
        if path.is_file():
            try:
                index.load_index(str(path), max_elements=n)
                index.set_ef(128)
                return index
            except RuntimeError:
                pass  # rebuilt below
        index.init_index(max_elements=n, ef_construction=200, M=32, random_seed=0)
        index.add_items(self.matrix, np.arange(n), num_threads=-1)
        index.set_ef(128)
        path.parent.mkdir(parents=True, exist_ok=True)
        index.save_index(str(path))
        return index

    def embed_queries(self, queries: list[str]) -> np.ndarray:
        return self.embedder.encode_uncached(queries)

    def _search(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        q = self.embed_queries(queries)
        if self._ann is not None:
            labels, dists = self._ann.knn_query(q, k=k, num_threads=1)
            # hnswlib's "ip" space returns 1 - inner product
            return [
                [(int(i), float(1.0 - d)) for i, d in zip(row_l, row_d, strict=True)]
                for row_l, row_d in zip(labels, dists, strict=True)
            ]
        sims = q @ self.matrix.T
        return [top_k(row, k) for row in sims]
