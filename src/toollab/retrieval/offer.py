"""Retrieval in the loop: each instance is offered the top-k tools a retriever finds for its
query in a large pool, instead of the tools the dataset hands it.

* the pool is the union of the dataset's tool pool and every instance's offered tools, or the
  tools of a pool file the user names (read by :meth:`toollab.tools.ToolPool.load`: a malformed
  file is a :class:`~toollab.tools.pool.PoolFileError` naming the file, line and tool);
* the query is ``Instance.query``; the retriever's top ``k`` hits, best first, replace
  ``Instance.tools``; the gold tools are never added, so a retriever miss stays a miss
  (``metadata["gold_not_offered"]`` names the gold tools left out);
* the retriever is a registered one (``bm25``, ``dense``, ``hybrid``; an unknown name is a
  :class:`~toollab.errors.UsageError` with a did-you-mean), ``k`` a positive integer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from toollab.data.base import offer_tools, tool_pool
from toollab.errors import UsageError
from toollab.retrieval.base import RETRIEVERS, Retriever, check_k, get_retriever
from toollab.schema import Instance, Tool
from toollab.tools import ToolPool

__all__ = ["ToolOffer", "check_retrieval", "load_pool", "offered_names", "top_k_of_own_tools"]

#: instances retrieved for at once
_BATCH = 64


def check_retrieval(retriever: str | None, k: int | None, pool: str | Path | None) -> None:
    """Refuse an unknown retriever, a ``k`` below 1 and ``k`` / ``pool`` without a retriever."""
    if retriever is None:
        if k is not None or pool is not None:
            raise UsageError(
                "--k and --pool (k and tool_pool) go with --retriever (bm25, dense or hybrid)"
            )
        return
    if not isinstance(retriever, str) or not retriever.strip():
        raise UsageError(f"--retriever takes a retriever name, got {retriever!r}")
    RETRIEVERS.get(retriever)  # an unknown name fails here, with a did-you-mean
    if k is not None:
        try:
            check_k(k)
        except UsageError:
            raise UsageError(f"--k must be a positive integer (1 or more), got {k!r}") from None


def load_pool(path: str | Path) -> list[Tool]:
    """The tools of a pool file (JSONL / JSON / YAML list, or a Python module of tools)."""

    return list(ToolPool.load(path).tools)


def offered_names(instance: Instance) -> list[str]:
    """The names of the tools an instance offers, in order."""
    return [t.name for t in instance.tools]


@dataclass
class ToolOffer:
    """An indexed retriever and the number of tools to offer per instance."""

    retriever: Retriever
    k: int

    @classmethod
    def build(
        cls,
        name: str,
        k: int,
        *,
        instances: Sequence[Instance],
        pool: Sequence[Tool] = (),
        pool_file: str | Path | None = None,
    ) -> ToolOffer:
        """Index the pool (the pool file's tools, else ``pool`` plus every instance's tools)."""
        check_retrieval(name, k, pool_file)
        if pool_file is not None:
            tools = load_pool(pool_file)
        else:
            tools = tool_pool([*pool, *(t for inst in instances for t in inst.tools)])
        return cls(get_retriever(name).index(tools), k)

    @property
    def pool_size(self) -> int:
        return len(self.retriever.tools)

    def offer(
        self,
        instances: Sequence[Instance],
        offered: Callable[[Instance, list[Tool]], Instance] = offer_tools,
    ) -> list[Instance]:
        """Each instance with its tools replaced by the top-k tools retrieved for its query;
        ``offered`` makes the instance that is offered them (the dataset adapter's
        :meth:`~toollab.data.base.Adapter.offered`: the answer key stays, or, where the right
        decision depends on what is offered, follows it)."""
        out: list[Instance] = []
        for start in range(0, len(instances), _BATCH):
            chunk = instances[start : start + _BATCH]
            results = self.retriever.retrieve_many([inst.query for inst in chunk], self.k)
            for inst, hits in zip(chunk, results, strict=True):
                new = offered(inst, [h.tool for h in hits])
                meta = {**new.metadata, "retriever": self.retriever.name}
                out.append(new.model_copy(update={"metadata": meta}))
        return out


def top_k_of_own_tools(
    instances: Sequence[Instance],
    k: int,
    text: Callable[[Instance], str],
    *,
    keep_gold: bool = False,
) -> list[Instance]:
    """Each instance that offers more than ``k`` tools offers the top ``k`` of its own tools that
    BM25 ranks for ``text(instance)`` (what the model reads, never the answer key), in the
    order it offered them, made up to ``k`` with the first unranked ones when fewer share a
    word with the text; the others are left as they are.  One index per tool set.

    ``keep_gold`` (training data and α-UMi traces: a demonstration must call tools it offers)
    adds the gold calls' tools the ranking missed; without it a miss stays a miss, as in
    ``toollab bench``."""
    check_k(k)
    indexes: dict[tuple[str, ...], Retriever] = {}
    out: list[Instance] = []
    for inst in instances:
        if len(inst.tools) <= k:
            out.append(inst)
            continue
        names = tuple(t.name for t in inst.tools)
        if names not in indexes:
            indexes[names] = get_retriever("bm25").index(list(inst.tools))
        hits = {h.tool.name for h in indexes[names].retrieve(text(inst), k)}
        # BM25 ranks only tools sharing a word with the text ("What is the plural of 'mouse'?"
        # shares none): the first others, in the order offered, make up the k
        hits |= set([n for n in names if n not in hits][: k - len(hits)])
        if keep_gold:
            hits |= {c.name for c in inst.gold}
        out.append(inst.model_copy(update={"tools": [t for t in inst.tools if t.name in hits]}))
    return out
