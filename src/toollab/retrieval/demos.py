"""The demonstration retriever (SambaNova ToolBench): for a query, the most similar solved
examples from a pool, to show the model as few-shot demonstrations.

Examples are :class:`~toollab.schema.Instance` objects with gold calls; they are indexed by their
query with BM25 (upstream's choice) or dense embeddings.  :func:`few_shot_messages` renders the
chosen examples as user/assistant turns through any template, so the demonstrations use exactly
the format the model is asked to answer in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from toollab.errors import InputError, UsageError
from toollab.retrieval.base import check_k, get_retriever
from toollab.schema import Instance, Tool


class DemoRetriever:
    """Solved examples indexed by their query, or by ``texts`` (one per example: SambaNova's
    action generator indexes each demonstration's whole document, goal and answer).  Examples
    without gold calls are left out, unless ``declining``: then an example labelled with a
    decision (NoCall, NoSearch) is a demonstration of declining."""

    def __init__(
        self,
        examples: Sequence[Instance],
        method: Literal["bm25", "dense"] = "bm25",
        texts: Sequence[str] | None = None,
        declining: bool = False,
    ) -> None:
        if texts is not None and len(texts) != len(examples):
            raise UsageError(
                f"texts must give one text per example: {len(texts)} texts, "
                f"{len(examples)} examples"
            )
        docs_of = list(texts) if texts is not None else [e.query for e in examples]
        pairs = zip(examples, docs_of, strict=True)
        kept = [(e, d) for e, d in pairs if e.gold or (declining and e.decision is not None)]
        self.examples = [e for e, _ in kept]
        if not self.examples:
            raise InputError(
                "the demonstration pool is empty: it needs solved examples (with gold calls)"
            )
        # index the example texts as pseudo-tools so the tool retrievers serve demos too
        docs = [Tool(name=f"demo-{i}", description=d) for i, (_, d) in enumerate(kept)]
        self._retriever = get_retriever(method)
        self._retriever.index(docs)

    def retrieve(self, query: str, k: int = 3, exclude_id: str | None = None) -> list[Instance]:
        """The ``k`` most similar examples (never the instance ``exclude_id`` itself)."""
        check_k(k)
        want = min(len(self.examples), k + (1 if exclude_id else 0))
        hits = self._retriever.retrieve(query, want)
        out = [self.examples[int(h.name.split("-", 1)[1])] for h in hits]
        return [e for e in out if e.id != exclude_id][:k]


def few_shot_messages(examples: Sequence[Instance], template: Any) -> list[dict[str, str]]:
    """User/assistant message pairs showing each example answered in ``template``'s format."""
    msgs: list[dict[str, str]] = []
    for e in examples:
        msgs.append({"role": "user", "content": e.query})
        msgs.append({"role": "assistant", "content": template.render_calls(list(e.gold))})
    return msgs
