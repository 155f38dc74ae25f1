"""BM25 over tool documents, with ``bm25s`` (sparse, eagerly scored: fast at query time)."""

from __future__ import annotations

from typing import Any

from toollab.retrieval.base import Retriever, register_retriever, split_identifier, top_k


def _analyse(text: str) -> str:
    # split identifiers inside free text too (``getWeather`` in a description)
    return split_identifier(text)


@register_retriever("bm25")
class BM25Retriever(Retriever):
    """Okapi BM25 (k1=1.5, b=0.75 by default) with English stop words removed.

    Only tools sharing a word with the query are returned: a tool that scores 0 is not a hit, so
    a query with no known word gets no hits at all (fewer than ``k`` results is normal).
    """

    name = "bm25"

    def __init__(self, k1: float = 1.5, b: float = 0.75, stopwords: str | None = "en") -> None:
        super().__init__()
        self.k1, self.b, self.stopwords = k1, b, stopwords
        self._bm25: Any = None
        self._tokenizer: Any = None

    def _build(self, texts: list[str]) -> None:
        import bm25s

        self._tokenizer = bm25s.tokenization.Tokenizer(
            stopwords=self.stopwords, splitter=r"(?u)\b\w+\b"
        )
        tokens = self._tokenizer.tokenize(
            [_analyse(t) for t in texts], return_as="tuple", show_progress=False
        )
        self._bm25 = bm25s.BM25(k1=self.k1, b=self.b)
        self._bm25.index(tokens, show_progress=False)

    def _search(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        out: list[list[tuple[int, float]]] = []
        for q in queries:
            ids = self._tokenizer.tokenize(
                [_analyse(q)], update_vocab=False, return_as="ids", show_progress=False
            )
            if not ids or not ids[0]:
                out.append([])  # no known word: nothing matches
                continue
            # score straight from the sparse index: bm25s' batch ``retrieve`` spins up a thread
            # pool and a progress bar per call, which dominates single-query latency
            scores = self._bm25.get_scores_from_ids(ids[0])
            out.append([(i, s) for i, s in top_k(scores, k) if s > 0.0])
        return out
