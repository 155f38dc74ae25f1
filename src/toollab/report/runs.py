"""Reading run directories for reports, and the one way figures are written.

Every page, table and summary formats a figure with :func:`fmt_value`, so a number in
``results.json`` can be found verbatim in the report.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from toollab.errors import InputError
from toollab.eval.store import PREDICTIONS, RESULTS
from toollab.eval.task import TaskLog
from toollab.report.logs import RunInstances, read_instances, read_task_log

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


def fmt_figure(value: Any, ci: Any = None, percent: bool | None = None) -> str:
    """A figure as the report writes it: a fraction as a percentage with one decimal, as the
    terminal's tables print it (``0.4375`` -> ``43.8``; ``± ci`` in percentage points), a count
    as an integer.  ``percent``: what the figure's definition says; ``None`` (a scorer that
    declares none) takes a float in [0, 1] as a fraction."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, float):
        return fmt_value(value)
    if percent is False or (percent is None and not 0.0 <= value <= 1.0):
        return fmt_value(value, ci)
    text = f"{100 * value:.1f}"
    if isinstance(ci, int | float) and not isinstance(ci, bool) and math.isfinite(ci):
        text += f" ± {100 * ci:.1f}"
    return text


def fmt_delta(new: Any, base: Any) -> str:
    """The difference of two fractions in percentage points (``+12.5``), ``n/a`` without both."""
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (new, base)):
        return "n/a"
    if any(math.isnan(float(v)) for v in (new, base)):
        return "n/a"
    return f"{100 * (float(new) - float(base)):+.1f}"


def fmt_seconds(value: Any) -> str:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "n/a"
    if value < 1:
        return f"{value * 1000:.1f} ms"
    return f"{value:.2f} s"


@dataclass
class RunView:
    """One run as a report sees it: its typed record (:class:`~toollab.eval.task.TaskLog`) and
    the instances its samples answer."""

    path: Path
    label: str
    log: TaskLog
    instances: RunInstances = field(default_factory=RunInstances)

    @cached_property
    def config(self) -> dict[str, Any]:
        """The run's resolved specification (``run.json``) as JSON."""
        return self.log.spec.model_dump(mode="json")

    @property
    def model(self) -> str:
        """The model string the run used (``bundled:smollm2-135m``)."""
        return self.log.spec.model or "unknown model"

    @property
    def task(self) -> str:
        """What was evaluated: the dataset's (environment's) name, else the directory's."""
        return self.log.spec.dataset_name or self.path.name or str(self.path)

    @cached_property
    def _scores(self) -> dict[str, Any]:
        return self.log.scores.model_dump(mode="json", exclude={"per_sample"})

    def _detail(self, key: str) -> Any:
        value = self._scores.get(key)
        return value if value is not None else {}

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        return dict(self.log.results)

    @property
    def ci95(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = self._detail("ci95")
        return out

    @property
    def breakdown(self) -> dict[str, dict[str, dict[str, Any]]]:
        out: dict[str, dict[str, dict[str, Any]]] = self._detail("breakdown")
        return out

    @property
    def errors(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = self._detail("errors")
        return out

    @property
    def counts(self) -> dict[str, Any]:
        out: dict[str, Any] = self._detail("counts")
        return out

    @property
    def timing(self) -> dict[str, Any]:
        out: dict[str, Any] = self._detail("timing")
        return out

    @property
    def warnings(self) -> list[str]:
        """A run's record has none (``toollab score`` warns about partial files itself)."""
        return []

    @property
    def notes(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = self._detail("notes")
        return out

    def definition(self, scorer: str, name: str) -> dict[str, Any]:
        """A figure's ``{label, definition, percent}`` (``{}`` when its scorer defines none)."""
        d = self.log.definitions.get(scorer, {}).get(name)
        return d.model_dump() if d is not None else {}

    def metric(self, scorer: str, name: str) -> str:
        """A figure as every view of the report writes it (:func:`fmt_figure`)."""
        value = self.metrics.get(scorer, {}).get(name)
        return fmt_figure(value, self.ci95.get(scorer, {}).get(name), self.percent(scorer, name))

    def percent(self, scorer: str, name: str) -> bool | None:
        """Whether the figure is a fraction shown as a percentage (``None``: not declared)."""
        flag = self.definition(scorer, name).get("percent")
        return flag if isinstance(flag, bool) else None


def load_run(path: str | Path) -> RunView:
    """A run directory (or its ``results.json``) → :class:`RunView`, with clear errors."""
    p = Path(path)
    if p.is_file() and p.name == RESULTS:
        p = p.parent
    if not p.is_dir():
        raise InputError("not a run directory (no such directory)", path=p)
    if not (p / RESULTS).is_file():
        hint = (
            f"the run has not finished: rerun the same `toollab eval` to complete it, or "
            f"`toollab score {p / PREDICTIONS}`"
            if (p / PREDICTIONS).is_file()
            else "it is not a toollab run directory"
        )
        raise InputError(f"no {RESULTS} here; {hint}", path=p)
    log = read_task_log(p)
    return RunView(path=p, label=p.name or str(p), log=log, instances=read_instances(log))


def _relabel(
    runs: list[RunView], label: Callable[[RunView], str], *, models_differ: bool = False
) -> None:
    """Relabel the runs whose labels are not unique (``models_differ``: only where the runs
    sharing a label were run by different models)."""
    groups: dict[str, list[RunView]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    for group in groups.values():
        if len(group) < 2 or (models_differ and len({r.model for r in group}) < 2):
            continue
        for run in group:
            run.label = label(run)


def load_runs(paths: Sequence[str | Path]) -> list[RunView]:
    """Several runs; labels are made unique: the directory name, then ``name · model`` (the
    same environment run by several models), then ``parent/name``, then numbered."""
    if not paths:
        raise InputError("give at least one run directory")
    runs = [load_run(p) for p in paths]
    _relabel(runs, lambda r: f"{r.label} · {r.model}", models_differ=True)
    _relabel(runs, lambda r: f"{r.path.parent.name}/{r.label}")
    labels: dict[str, int] = {}
    for run in runs:  # still equal (same path twice): number them
        n = labels.get(run.label, 0)
        labels[run.label] = n + 1
        if n:
            run.label = f"{run.label} ({n + 1})"
    return runs


def models_of(runs: Sequence[RunView]) -> list[str]:
    """The models of the runs, in first-seen order."""
    out: list[str] = []
    for r in runs:
        if r.model not in out:
            out.append(r.model)
    return out


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
        label = r.definition(scorer, name).get("label")
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
