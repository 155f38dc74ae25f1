"""Per-sample scorers: a scorer scores one sample, its figures aggregate the samples.

A :class:`SampleScorer` implements :meth:`~SampleScorer.score_sample` (one prediction and its
instance → a row of per-sample scores) and declares its :class:`Figure` s; :meth:`score` runs
the rows and aggregates each figure over them.  The rows are the scorer's ``per_instance``
details, so every sample's scores are in the run's log, and each figure carries its definition
(which instances it is over), which every view (terminal table, ``--json``, ``results.json``,
the report) shows under the same label.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from toollab.eval.metrics.registry import MetricResult, Scorer, instance_key
from toollab.schema import Instance
from toollab.schema.measures import Number, f1, mean
from toollab.schema.record import Prediction

Row = dict[str, Any]
Aggregate = Callable[[Sequence[Row]], Number]


@dataclass(frozen=True)
class Figure:
    """One figure of a scorer: its key, its short label, what it means and how it aggregates."""

    name: str
    #: the short label every view prints (column headers, legends)
    label: str
    #: the definition in words: what it measures and over which instances
    definition: str
    aggregate: Aggregate
    #: shown as a percentage (a fraction in [0, 1])
    percent: bool = True

    def describe(self) -> dict[str, Any]:
        return {"label": self.label, "definition": self.definition, "percent": self.percent}


def mean_of(key: str) -> Aggregate:
    """The mean of ``row[key]`` over the rows where it is defined (not ``None``)."""

    def agg(rows: Sequence[Row]) -> Number:
        return mean(float(r[key]) for r in rows if r.get(key) is not None)

    return agg


def micro_f1(correct: str, predicted: str, gold: str) -> Aggregate:
    """F1 over the counts summed over every row (:func:`toollab.schema.measures.f1`)."""

    def agg(rows: Sequence[Row]) -> Number:
        return f1(
            sum(int(r.get(correct, 0)) for r in rows),
            sum(int(r.get(predicted, 0)) for r in rows),
            sum(int(r.get(gold, 0)) for r in rows),
        )

    return agg


class SampleScorer(Scorer):
    """A scorer defined one sample at a time, with declared figures."""

    figures: ClassVar[tuple[Figure, ...]] = ()

    @abstractmethod
    def score_sample(self, prediction: Prediction, instance: Instance) -> Row:
        """The per-sample scores of one prediction (a JSON-able row); never raises on model
        output."""

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = self.new_result()
        rows: list[Row] = []
        for pred, inst in self.pairs(predictions, instances, res):
            row = self.score_sample(pred, inst)
            res.per_instance[instance_key(pred)] = row
            rows.append(row)
        res.metrics = {fig.name: fig.aggregate(rows) for fig in self.figures}
        res.counts = {"n": len(rows), **res.counts}
        return res

    @classmethod
    def definitions(cls) -> dict[str, dict[str, Any]]:
        """Every figure's label and definition, by figure name."""
        return {fig.name: fig.describe() for fig in cls.figures}


def figure_definitions(
    scorers: Sequence[Scorer], reported: dict[str, dict[str, Any]] | None = None
) -> dict[str, dict[str, dict[str, Any]]]:
    """The figure definitions of ``scorers`` (those that define figures), by scorer name; with
    ``reported`` (figures by scorer), a scorer that reported figures keeps the definitions of
    those it reported."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for sc in scorers:
        defs = sc.definitions()
        shown = (reported or {}).get(sc.name)
        if shown:
            defs = {name: d for name, d in defs.items() if name in shown}
        if defs or isinstance(sc, SampleScorer):
            out[sc.name] = defs
    return out
