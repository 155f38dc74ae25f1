"""Reading run directories for reports, and the one way figures are written.

Every page, table and summary formats a figure with :func:`fmt_value`, so a number in
``results.json`` can be found verbatim in the report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.errors import InputError
from toollab.eval.store import PREDICTIONS, RESULTS, RUN_JSON, read_json

#: the figure shown for a breakdown group when a scorer reports several (first present wins)
HEADLINE_ORDER = (
    "accuracy",
    "success_rate",
    "success",
    "f1",
    "param_f1",
    "tool_f1",
    "format_acc",
    "plan_acc",
)


def fmt_value(value: Any, ci: Any = None) -> str:
    """A figure as text: fractions with 4 decimals, ``± ci`` when there is an interval."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = f"{value:.4f}"
        if isinstance(ci, int | float) and not isinstance(ci, bool) and math.isfinite(ci):
            text += f" ± {ci:.4f}"
        return text
    return str(value)


def fmt_seconds(value: Any) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "n/a"
    if value < 1:
        return f"{value * 1000:.1f} ms"
    return f"{value:.2f} s"


@dataclass
class RunView:
    """One run directory as a report sees it."""

    path: Path
    label: str
    config: dict[str, Any]
    results: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = self.results.get("metrics") or {}
        return out

    @property
    def ci95(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = self.results.get("ci95") or {}
        return out

    @property
    def breakdown(self) -> dict[str, dict[str, dict[str, Any]]]:
        out: dict[str, dict[str, dict[str, Any]]] = self.results.get("breakdown") or {}
        return out

    @property
    def errors(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = self.results.get("errors") or {}
        return out

    @property
    def counts(self) -> dict[str, Any]:
        out: dict[str, Any] = self.results.get("counts") or {}
        return out

    @property
    def timing(self) -> dict[str, Any]:
        out: dict[str, Any] = self.results.get("timing") or {}
        return out

    def metric(self, scorer: str, name: str) -> str:
        value = self.metrics.get(scorer, {}).get(name)
        return fmt_value(value, self.ci95.get(scorer, {}).get(name))


def load_run(path: str | Path) -> RunView:
    """A run directory (or its ``results.json``) → :class:`RunView`, with clear errors."""
    p = Path(path)
    if p.is_file() and p.name == RESULTS:
        p = p.parent
    if not p.is_dir():
        raise InputError("not a run directory (no such directory)", path=p)
    results_path = p / RESULTS
    if not results_path.is_file():
        hint = (
            f"the run has not finished: rerun the same `toollab eval` to complete it, or "
            f"`toollab score {p / PREDICTIONS}`"
            if (p / PREDICTIONS).is_file()
            else "it is not a toollab run directory"
        )
        raise InputError(f"no {RESULTS} here; {hint}", path=p)
    results = read_json(results_path)
    run = results.get("run")
    config = (
        read_json(p / RUN_JSON)
        if (p / RUN_JSON).is_file()
        else dict(run)
        if isinstance(run, dict)
        else {}
    )
    if not isinstance(results.get("metrics"), dict):
        raise InputError(
            "not a toollab results file: it has no 'metrics' object", path=results_path
        )
    return RunView(path=p, label=p.name or str(p), config=config, results=results)


def load_runs(paths: Sequence[str | Path]) -> list[RunView]:
    """Several runs; labels are made unique (directory name, then parent/name)."""
    if not paths:
        raise InputError("give at least one run directory")
    runs = [load_run(p) for p in paths]
    seen: dict[str, int] = {}
    for run in runs:
        seen[run.label] = seen.get(run.label, 0) + 1
    for run in runs:
        if seen[run.label] > 1:
            run.label = f"{run.path.parent.name}/{run.path.name}"
    labels: dict[str, int] = {}
    for run in runs:  # still equal (same path twice): number them
        n = labels.get(run.label, 0)
        labels[run.label] = n + 1
        if n:
            run.label = f"{run.label} ({n + 1})"
    return runs


def scorer_metrics(runs: list[RunView]) -> list[tuple[str, list[str]]]:
    """Every scorer and its metric names over all runs, in first-seen order."""
    out: dict[str, list[str]] = {}
    for run in runs:
        for scorer, figs in run.metrics.items():
            names = out.setdefault(scorer, [])
            for name in figs:
                if name not in names:
                    names.append(name)
    return list(out.items())


def figure_definition(results: dict[str, Any], scorer: str, name: str) -> dict[str, Any]:
    """A figure's ``{label, definition}`` from a ``results.json`` (``{}`` when its scorer does
    not define it)."""
    d = ((results.get("definitions") or {}).get(scorer) or {}).get(name)
    return d if isinstance(d, dict) else {}


def figure_label(runs: Sequence[RunView], scorer: str, name: str) -> str:
    """The label every view prints for a figure: its scorer's label for it, else its key."""
    for r in runs:
        label = figure_definition(r.results, scorer, name).get("label")
        if label:
            return str(label)
    return name


def runs_with(runs: list[RunView], scorer: str) -> list[RunView]:
    """The runs that were scored by ``scorer``."""
    return [r for r in runs if scorer in r.metrics]


def headline(figures: dict[str, Any]) -> str | None:
    """The figure that represents a breakdown group."""
    for name in HEADLINE_ORDER:
        if isinstance(figures.get(name), int | float):
            return name
    for name, value in figures.items():
        if isinstance(value, float):
            return name
    return None


def breakdown_table(
    runs: list[RunView], scorer: str
) -> tuple[str | None, list[str], list[list[Any]]]:
    """(figure name, groups, values[group][run]) for a scorer's per-category breakdown."""
    groups: list[str] = []
    name: str | None = None
    for run in runs:
        for group, figs in run.breakdown.get(scorer, {}).items():
            if group not in groups:
                groups.append(group)
            if name is None:
                name = headline(figs)
    if name is None:
        return None, [], []
    values = [[run.breakdown.get(scorer, {}).get(g, {}).get(name) for run in runs] for g in groups]
    return name, groups, values


def error_table(runs: list[RunView], scorer: str) -> tuple[list[str], list[list[int]]]:
    """(error types, counts[type][run]) sorted by total count, largest first."""
    kinds: dict[str, int] = {}
    for run in runs:
        for kind, n in run.errors.get(scorer, {}).items():
            kinds[kind] = kinds.get(kind, 0) + int(n)
    order = sorted(kinds, key=lambda k: (-kinds[k], k))
    return order, [[int(run.errors.get(scorer, {}).get(k, 0)) for run in runs] for k in order]


#: run.json fields shown in the run overview, with their labels
RUN_FIELDS = (
    ("model", "model"),
    ("dataset_name", "dataset"),
    ("format", "format"),
    ("template", "template"),
    ("agent", "agent"),
    ("instances", "instances"),
    ("repeats", "repeats"),
    ("seed", "seed"),
    ("constrained", "constrained"),
    ("protocol_facts", "protocol facts used"),
    ("answer_key_read_by", "reads the answer key"),
)

#: counts shown per run, with their labels
COUNT_FIELDS = (
    ("predictions", "predictions"),
    ("errors", "errors (crash / timeout / backend)"),
    ("parse_errors", "unparsable outputs"),
    ("no_call", "no-call answers"),
    ("calls", "calls made"),
)
