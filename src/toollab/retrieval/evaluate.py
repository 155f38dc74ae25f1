"""Retrieval quality: Recall@k, nDCG@k and the rate at which *all* gold tools are in the top k.

For each instance with gold calls, the relevant set is the distinct gold tools, as pool keys
(:func:`~toollab.retrieval.base.pool_keys`): a gold call names a tool; where several different
tools of the pool share that name (ToolEyes' ``timezone`` of two categories), the one the
instance offers is the gold tool, and when the instance does not single one out any tool of
that name counts.  Recall@k = |relevant ∩ top-k| / |relevant|, averaged over instances; nDCG@k
uses binary gains; ``complete@k`` is the fraction of instances whose every gold tool is in the
top k (what a multi-tool instance needs).  Instances without gold calls are skipped and
counted; gold tools missing from the pool are counted as unreachable (they still count as
misses).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from toollab.retrieval.base import Hit, Retriever
from toollab.schema import Instance, Tool


@dataclass
class RetrievalReport:
    retriever: str
    k: int
    instances: int
    skipped_no_gold: int
    pool_size: int
    recall: float
    ndcg: float
    complete: float
    mrr: float
    unreachable_gold: int
    by_category: dict[str, dict[str, float]] = field(default_factory=dict)
    index_seconds: float = 0.0
    query_seconds: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def ndcg_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    dcg = sum(1.0 / math.log2(r + 2) for r, name in enumerate(ranked[:k]) if name in relevant)
    ideal = sum(1.0 / math.log2(r + 2) for r in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


def gold_tools(inst: Instance) -> set[str]:
    return {c.name for c in inst.gold}


def _gold_labels(
    inst: Instance, by_name: dict[str, list[tuple[Tool, str]]]
) -> tuple[set[str], set[str]]:
    """(the instance's relevant labels, the names that stay ambiguous): a gold tool's pool key,
    or its bare name when the pool has several tools of that name and the instance's offered
    tools do not single one out (any tool of that name then counts)."""
    labels: set[str] = set()
    ambiguous: set[str] = set()
    for name in gold_tools(inst):
        entries = by_name.get(name, [])
        if len(entries) == 1:
            labels.add(entries[0][1])
            continue
        offered = [t for t in inst.tools if t.name == name]
        chosen = [key for tool, key in entries if any(tool == o for o in offered)]
        if len(chosen) == 1:
            labels.add(chosen[0])
        else:
            labels.add(name)
            if entries:
                ambiguous.add(name)
    return labels, ambiguous


def _hit_labels(hits: Sequence[Hit], ambiguous: set[str]) -> list[str]:
    """Each hit's label (its key; its name for an ambiguous gold name), a label repeated by a
    later hit replaced by that hit's own key so that it never counts twice."""
    seen: set[str] = set()
    out = []
    for h in hits:
        label = h.name if h.name in ambiguous else h.key
        if label in seen:
            label = f"{h.key}\x00repeat"
        seen.add(label)
        out.append(label)
    return out


def evaluate_retriever(
    retriever: Retriever,
    instances: Sequence[Instance],
    k: int = 5,
    batch: int = 64,
    on_batch: Callable[[int], None] | None = None,
) -> RetrievalReport:
    """Score an indexed retriever on instances (queries + gold tools)."""
    pool = {t.name for t in retriever.tools}
    by_name: dict[str, list[tuple[Tool, str]]] = {}
    for tool, key in zip(retriever.tools, retriever.keys, strict=True):
        by_name.setdefault(tool.name, []).append((tool, key))
    scored = [i for i in instances if i.gold]
    sums = {"recall": 0.0, "ndcg": 0.0, "complete": 0.0, "mrr": 0.0}
    cats: dict[str, dict[str, float]] = {}
    unreachable = 0
    t0 = time.perf_counter()
    for start in range(0, len(scored), batch):
        chunk = scored[start : start + batch]
        results = retriever.retrieve_many([i.query for i in chunk], k)
        for inst, hits in zip(chunk, results, strict=True):
            unreachable += len(gold_tools(inst) - pool)
            rel, ambiguous = _gold_labels(inst, by_name)
            names = _hit_labels(hits, ambiguous)
            found = rel.intersection(names)
            first = next((r for r, n in enumerate(names) if n in rel), None)
            vals = {
                "recall": len(found) / len(rel),
                "ndcg": ndcg_at_k(names, rel, k),
                "complete": float(found == rel),
                "mrr": 1.0 / (first + 1) if first is not None else 0.0,
            }
            for key, v in vals.items():
                sums[key] += v
            cat = cats.setdefault(inst.category or "all", {"n": 0.0, **dict.fromkeys(vals, 0.0)})
            cat["n"] += 1
            for key, v in vals.items():
                cat[key] += v
        if on_batch:
            on_batch(len(chunk))
    elapsed = time.perf_counter() - t0
    n = len(scored) or 1
    by_cat = {
        c: {"n": v["n"], **{key: v[key] / v["n"] for key in sums}} for c, v in sorted(cats.items())
    }
    return RetrievalReport(
        retriever=retriever.name,
        k=min(k, len(retriever.tools)),
        instances=len(scored),
        skipped_no_gold=len(instances) - len(scored),
        pool_size=len(retriever.tools),
        recall=sums["recall"] / n,
        ndcg=sums["ndcg"] / n,
        complete=sums["complete"] / n,
        mrr=sums["mrr"] / n,
        unreachable_gold=unreachable,
        by_category=by_cat if len(by_cat) > 1 else {},
        query_seconds=elapsed,
    )
