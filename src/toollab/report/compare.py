"""Models side by side: environments (or tasks, or categories) as rows, models as columns.

The runs of a report are grouped by the model that made them (``run.json``'s ``model``).  For
each scorer that scored runs of more than one model:

* when every model has several runs of it (``toollab bench``: one run per environment), the rows
  are the runs' tasks (environments): one table per figure, plus the figures' unweighted mean
  over the rows, as ``toollab bench`` prints it;
* when every model has one run (one dataset evaluated by each model), the rows are the scorer's
  figures, then the per-category breakdown of its headline figure.

Every value is taken as ``results.json`` holds it and written by one formatter
(:func:`~toollab.report.runs.fmt_figure`, percentages as the terminal prints them); the
difference columns are each model minus the first, in percentage points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toollab.report.runs import (
    RunView,
    fmt_delta,
    fmt_figure,
    headline,
    models_of,
    runs_with,
    scorer_metrics,
)

#: the label of the mean row (the same mean ``toollab bench`` prints under its table)
MEAN_ROW = "mean"
#: what the mean row is
MEAN_NOTE = "mean: the unweighted mean over the rows where the figure is defined, as toollab bench prints it"


@dataclass
class Table:
    """One comparison table: ``values[row][model]`` with their texts, and its difference
    columns (each model after the first minus the first)."""

    title: str
    corner: str
    rows: list[str]
    models: list[str]
    values: list[list[Any]]
    #: per row: the figure is a fraction shown as a percentage (None: not declared)
    percent: list[bool | None]
    ci: list[list[Any]] = field(default_factory=list)
    definition: str = ""
    #: the row that is a mean of the others (drawn apart), if any
    mean_row: int | None = None

    def text(self, i: int, j: int) -> str:
        ci = self.ci[i][j] if self.ci else None
        return fmt_figure(self.values[i][j], ci, self.percent[i])

    def delta(self, i: int, j: int) -> str:
        """Model ``j`` minus the first model on row ``i``."""
        new, base = self.values[i][j], self.values[i][0]
        if self.percent[i] is False:
            if isinstance(new, int | float) and isinstance(base, int | float):
                return f"{new - base:+.4g}"
            return "n/a"
        return fmt_delta(new, base)

    def series(self) -> list[tuple[str, list[Any]]]:
        """(model, values over the rows but the mean) for a chart."""
        rows = [i for i in range(len(self.rows)) if i != self.mean_row]
        return [(m, [self.values[i][j] for i in rows]) for j, m in enumerate(self.models)]

    def chart_rows(self) -> list[str]:
        return [r for i, r in enumerate(self.rows) if i != self.mean_row]


@dataclass
class Comparison:
    """The comparison tables of one scorer: the first is the one charted."""

    scorer: str
    models: list[str]
    tables: list[Table]
    #: what the rows are: ``environment`` / ``task`` or ``category``
    rows_are: str


def _mean(values: Sequence[Any]) -> float | None:
    nums = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    return sum(nums) / len(nums) if nums else None


def _label(runs: Sequence[RunView], scorer: str, name: str) -> tuple[str, str, bool | None]:
    """(label, definition, percent) of a figure, as its scorer defines it."""
    for r in runs:
        d = r.definition(scorer, name)
        if d:
            pct = d.get("percent")
            return (
                str(d.get("label") or name),
                str(d.get("definition") or ""),
                pct if isinstance(pct, bool) else None,
            )
    return name, "", None


def _by_task(runs: Sequence[RunView], scorer: str, models: list[str]) -> Comparison:
    tasks: list[str] = []
    cell: dict[tuple[str, str], RunView] = {}
    for r in runs:
        if r.task not in tasks:
            tasks.append(r.task)
        cell.setdefault((r.task, r.model), r)
    names = next(names for sc, names in scorer_metrics(list(runs)) if sc == scorer)
    kind = "environment" if all(_is_environment(r) for r in runs) else "task"
    figures: dict[str, Any] = {}
    for r in runs:
        figures.update(r.metrics.get(scorer, {}))
    head = headline(figures)
    first = 0
    per_figure: list[Table] = []
    means: list[list[Any]] = []
    flags: list[bool | None] = []
    labels: list[str] = []
    for name in names:
        label, definition, pct = _label(runs, scorer, name)
        values = [
            [
                cell[(t, m)].metrics.get(scorer, {}).get(name) if (t, m) in cell else None
                for m in models
            ]
            for t in tasks
        ]
        if all(v is None for row in values for v in row):
            continue  # a figure no run defines (e.g. plan LCS outside household)
        mean = [_mean([row[j] for row in values]) for j in range(len(models))]
        if name == head:
            first = len(per_figure)
        per_figure.append(
            Table(
                title=f"{label} by {kind} (%)" if pct is not False else f"{label} by {kind}",
                corner=kind,
                rows=[*tasks, MEAN_ROW],
                models=models,
                values=[*values, mean],
                percent=[pct] * (len(tasks) + 1),
                definition=definition,
                mean_row=len(tasks),
            )
        )
        means.append(mean)
        flags.append(pct)
        labels.append(label)
    overview = Table(
        title=f"every figure, mean over the {kind}s (%)",
        corner="figure",
        rows=labels,
        models=models,
        values=means,
        percent=flags,
        definition=f"the unweighted mean over the {kind}s where the figure is defined",
    )
    ordered = [per_figure[first], *[t for i, t in enumerate(per_figure) if i != first]]
    return Comparison(scorer, models, [*ordered[:1], overview, *ordered[1:]], kind)


def _is_environment(run: RunView) -> bool:
    """Whether the run's instances are executed in one of toollab's environments."""
    sources = {str(i.source or "") for i in run.instances.by_id.values()}
    return bool(sources) and all(s.startswith("env:") for s in sources)


def _by_category(runs: Sequence[RunView], scorer: str, models: list[str]) -> Comparison:
    one = {m: next(r for r in runs if r.model == m) for m in models}
    names = next(names for sc, names in scorer_metrics(list(runs)) if sc == scorer)
    infos = [_label(runs, scorer, n) for n in names]
    figures = Table(
        title="figures",
        corner="figure",
        rows=[info[0] for info in infos],
        models=models,
        values=[[one[m].metrics.get(scorer, {}).get(n) for m in models] for n in names],
        percent=[info[2] for info in infos],
        ci=[[one[m].ci95.get(scorer, {}).get(n) for m in models] for n in names],
    )
    tables = [figures]
    groups: list[str] = []
    fig: str | None = None
    for m in models:
        for group, figs in one[m].breakdown.get(scorer, {}).items():
            if group not in groups:
                groups.append(group)
            fig = fig or headline(figs)
    if fig is not None and groups:
        label, definition, pct = _label(runs, scorer, fig)
        tables.insert(
            0,
            Table(
                title=f"{label} by category (%)" if pct is not False else f"{label} by category",
                corner="category",
                rows=groups,
                models=models,
                values=[
                    [one[m].breakdown.get(scorer, {}).get(g, {}).get(fig) for m in models]
                    for g in groups
                ],
                percent=[pct] * len(groups),
                definition=definition,
            ),
        )
    return Comparison(scorer, models, tables, "category")


def comparisons(runs: Sequence[RunView]) -> list[Comparison]:
    """The comparison of every scorer that scored runs of more than one model."""
    out: list[Comparison] = []
    for scorer, _names in scorer_metrics(list(runs)):
        scored = runs_with(list(runs), scorer)
        models = models_of(scored)
        if len(models) < 2:
            continue
        counts = [sum(1 for r in scored if r.model == m) for m in models]
        tasks = {r.task for r in scored}
        if max(counts) == 1 and len(tasks) == 1:
            out.append(_by_category(scored, scorer, models))
        else:
            out.append(_by_task(scored, scorer, models))
    return out
