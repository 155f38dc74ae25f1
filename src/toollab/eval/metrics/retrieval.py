"""Retrieval in the loop, scored apart from calling.

When a retriever chose each instance's offered tools (``Prediction.offered_tools`` is set;
:mod:`toollab.retrieval.offer`), the ``retrieval`` scorer reads, per prediction, which gold
tools (the names the gold calls use) were offered:

* ``recall_at_k`` — the share of an instance's distinct gold tools among its offered tools,
  averaged over the instances with gold calls;
* ``gold_offered`` — the share of instances with gold calls whose every gold tool was offered
  (what a multi-tool instance needs; ``complete@k`` of ``toollab retrieve eval``).

An instance with a gold tool left out is a *retriever miss* (``errors["retriever_miss"]``; its
row names the missing tools): no offered tool fits, whatever the model does.  The calling
scorers of the run then also report their figures over two groups of their breakdown
(:func:`retrieval_groups`): ``retrieval:gold_offered`` (the instances whose gold tools were all
offered, so a failure there is a calling error) and ``retrieval:missed``; their headline figures
stay over all instances.  Tools are compared by name (a pool whose different tools share a name
counts any of them).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from toollab.eval.metrics.registry import MetricResult, Scorer, scorer
from toollab.eval.metrics.sample import Figure, Row, SampleScorer, mean_of
from toollab.schema import Instance
from toollab.schema.record import Prediction

__all__ = ["GOLD_OFFERED", "MISSED", "RetrievalScorer", "gold_offered", "retrieval_groups"]

#: breakdown groups the calling scorers get in a run with retrieval in the loop
GOLD_OFFERED = "retrieval:gold_offered"
MISSED = "retrieval:missed"


def gold_offered(prediction: Prediction, instance: Instance) -> bool | None:
    """Whether every gold tool of the instance was offered; ``None`` when no retriever chose
    the offered tools.  An instance without gold calls misses nothing (``True``)."""
    if prediction.offered_tools is None:
        return None
    return {c.name for c in instance.gold} <= set(prediction.offered_tools)


@scorer(
    "retrieval",
    formats=(),  # chosen by the predictions (offered_tools), not by the instances' source
    needs=("offered_tools",),
    description="Retrieval in the loop: gold-tool recall@k and the share with every gold tool "
    "offered (runs with --retriever)",
)
class RetrievalScorer(SampleScorer):
    """How well the retriever in the loop offered the gold tools."""

    figures = (
        Figure(
            "recall_at_k",
            "Recall@k",
            "the share of an instance's distinct gold tools among the k tools the retriever "
            "offered, averaged over the instances with gold calls",
            mean_of("recall"),
        ),
        Figure(
            "gold_offered",
            "Gold offered",
            "the share of instances with gold calls whose every gold tool was among the k "
            "offered tools (the others are retriever misses)",
            mean_of("gold_offered"),
        ),
    )

    def pairs(
        self, predictions: list[Prediction], instances: dict[str, Instance], result: MetricResult
    ) -> Iterator[tuple[Prediction, Instance]]:
        """Every prediction whose offered tools a retriever chose, with its instance."""
        unknown = 0
        for pred in predictions:
            inst = instances.get(pred.id)
            if inst is None:
                unknown += 1
            elif pred.offered_tools is not None:
                yield pred, inst
        if unknown:
            result.counts["unknown_id"] = unknown

    def score_sample(self, prediction: Prediction, instance: Instance) -> Row:
        gold = sorted({c.name for c in instance.gold})
        offered = list(prediction.offered_tools or [])
        if prediction.offered_tools is None or not gold:
            return {"gold": gold, "offered": offered, "recall": None, "gold_offered": None}
        missing = [g for g in gold if g not in set(offered)]
        return {
            "gold": gold,
            "offered": offered,
            "missing": missing,
            "recall": (len(gold) - len(missing)) / len(gold),
            "gold_offered": not missing,
        }

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = super().score(predictions, instances)
        misses = sum(1 for row in res.per_instance.values() if row.get("gold_offered") is False)
        if misses:
            res.add_error("retriever_miss", misses)
        res.counts["retriever_miss"] = misses
        res.counts["not_retrieved"] = sum(1 for p in predictions if p.offered_tools is None)
        return res


def retrieval_groups(
    sc: Scorer,
    result: MetricResult,
    predictions: Sequence[Prediction],
    instances: dict[str, Instance],
) -> None:
    """Add the ``retrieval:gold_offered`` and ``retrieval:missed`` groups to a calling scorer's
    breakdown: its own figures over those predictions (nothing when no retriever chose the
    offered tools, or for the ``retrieval`` scorer itself)."""
    if isinstance(sc, RetrievalScorer):
        return
    groups: dict[str, list[Prediction]] = {GOLD_OFFERED: [], MISSED: []}
    for pred in predictions:
        inst = instances.get(pred.id)
        verdict = gold_offered(pred, inst) if inst is not None else None
        if verdict is not None:
            groups[GOLD_OFFERED if verdict else MISSED].append(pred)
    if not groups[GOLD_OFFERED] and not groups[MISSED]:
        return
    for group, preds in groups.items():
        try:
            part = sc.score(preds, instances)
        except Exception as exc:  # a scorer bug must not lose the run's other scores
            result.notes.append(f"{group}: scorer failed: {type(exc).__name__}: {exc}")
            continue
        result.counts[f"n:{group}"] = part.counts.get("n", len(preds))
        if preds:
            result.breakdown[group] = dict(part.metrics)
