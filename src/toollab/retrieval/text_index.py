"""A small BM25 index over plain texts, in pure Python (no optional dependency).

The tool retrievers (:mod:`toollab.retrieval.bm25`) index :class:`~toollab.schema.Tool` objects
through ``bm25s``; this index serves any list of documents (a shop catalogue, notes) and is exactly
reproducible: scores are summed in query-term order and ties go to the earlier document, so the
same texts and query always give the same ranking, on every platform.

Okapi BM25 with the non-negative idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``; words are runs of
letters and digits, lower-cased, with a few English stop words removed.  Only documents sharing a
word with the query are hits.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from toollab.errors import UsageError

_WORD = re.compile(r"[a-z0-9]+")
#: words too common to rank by
STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "has", "have", "i",
    "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "so", "that", "the", "their",
    "then", "there", "these", "this", "to", "was", "we", "were", "with", "you", "your",
))  # fmt: skip


def words(text: str) -> list[str]:
    """The index terms of a text: lower-cased runs of letters and digits, stop words removed."""
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


@dataclass(frozen=True)
class TextHit:
    """One matching document: its position in the indexed list and its BM25 score."""

    doc: int
    score: float


class TextIndex:
    """BM25 over ``texts`` (``k1``, ``b`` as in Okapi BM25); :meth:`search` ranks them."""

    def __init__(self, texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        if isinstance(texts, str):
            raise UsageError("TextIndex takes a list of texts, got one string")
        if k1 < 0 or not 0 <= b <= 1:
            raise UsageError(f"TextIndex: k1 must be >= 0 and b in [0, 1], got k1={k1}, b={b}")
        self.k1, self.b = k1, b
        self.size = len(texts)
        self._lengths: list[int] = []
        self._postings: dict[str, list[tuple[int, int]]] = {}
        for doc, text in enumerate(texts):
            counts = Counter(words(text))
            self._lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self._postings.setdefault(term, []).append((doc, tf))
        self._avg = (sum(self._lengths) / self.size) if self.size else 0.0
        self._idf = {
            t: math.log(1.0 + (self.size - len(p) + 0.5) / (len(p) + 0.5))
            for t, p in self._postings.items()
        }

    def search(self, query: str, k: int = 10) -> list[TextHit]:
        """The ``k`` best documents for ``query``, best first (ties: the earlier document); only
        documents sharing a word with the query."""
        if not isinstance(query, str):
            raise UsageError(f"the query must be a string, got {type(query).__name__} {query!r}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise UsageError(f"k must be a positive integer, got {k!r}")
        scores: dict[int, float] = {}
        for term in dict.fromkeys(words(query)):
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = self._idf[term]
            for doc, tf in postings:
                norm = self.k1 * (1.0 - self.b + self.b * self._lengths[doc] / self._avg)
                scores[doc] = scores.get(doc, 0.0) + idf * tf * (self.k1 + 1.0) / (tf + norm)
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        return [TextHit(doc, score) for doc, score in ranked]
