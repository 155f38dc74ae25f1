"""The environment suite behind ``toollab bench``: one :class:`~toollab.eval.task.Task` per
environment, evaluated with :func:`~toollab.eval.task.evaluate`.

For each environment: generate its test split (API combinations unseen in training), hand the
instances straight to a task whose environment executes them (model -> agent -> template ->
parse -> execute in the environment), and take the per-environment figures from the
``environment`` scorer (:mod:`toollab.eval.metrics.environment`, where each figure is defined):
success, crash rate and dict-F1 over Call instances, Tool / Param F1 and decision accuracy over
every instance, and plan LCS where the environment scores plans (household).  The run directory
keeps each environment's instances (``data/NAME.jsonl``) and run (``runs/NAME``), so
``toollab score`` and ``toollab report`` read the same figures back.

Everything runs offline on the bundled model by default.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from toollab.eval.metrics.environment import FIGURES, best_call_counts, call_counts
from toollab.eval.runner import ProgressSink
from toollab.eval.store import RESULTS, read_json

__all__ = [
    "FIGURES",
    "BenchResult",
    "EnvSummary",
    "best_call_counts",
    "call_counts",
    "run_bench",
    "summarise",
    "summary_of",
]

DEFAULT_MODEL = "bundled:smollm2-135m"
#: what ``toollab bench`` runs when no model is named: the bundled model beside its tool-tuned
#: version, so the main job shows what training does
DEFAULT_BENCH_MODELS = ("bundled:smollm2-135m", "bundled:smollm2-135m-tools")
#: test instances per environment in a default run (sized to finish in ~10 min on 2 CPU cores)
DEFAULT_LIMIT = 6
#: size of the training set the test split's API complexity is measured against
REFERENCE_TRAIN = 100
#: the scorer whose figures the bench reports
SCORER = "environment"
#: the figures in the order every view shows them
FIGURE_KEYS = tuple(f.name for f in FIGURES)


@dataclass
class EnvSummary:
    env: str
    n: int
    n_call: int
    success: float | None
    crash_rate: float | None
    dict_f1: float | None
    tool_f1: float | None
    param_f1: float | None
    decision_acc: float | None
    lcs: float | None = None
    seconds: float = 0.0
    run_dir: str = ""
    api_complexity: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def summary_of(env: str, results: dict[str, Any], run_dir: str = "") -> EnvSummary:
    """An environment's summary from its run's ``results.json`` content (the ``environment``
    scorer's figures, as they are there)."""
    figs: dict[str, Any] = (results.get("metrics") or {}).get(SCORER) or {}
    rows: dict[str, Any] = (results.get("per_sample") or {}).get(SCORER) or {}
    counts = (results.get("scorer_counts") or {}).get(SCORER) or {}
    return EnvSummary(
        env=env,
        n=int(counts.get("n", len(rows))),
        n_call=sum(1 for r in rows.values() if r.get("call")),
        run_dir=run_dir,
        success=figs.get("success"),
        crash_rate=figs.get("crash_rate"),
        dict_f1=figs.get("dict_f1"),
        tool_f1=figs.get("tool_f1"),
        param_f1=figs.get("param_f1"),
        decision_acc=figs.get("decision_acc"),
        lcs=figs.get("lcs"),
    )


def summarise(env: str, instances: Sequence[Any], preds: Sequence[Any]) -> EnvSummary:
    """The per-environment figures of predictions (the first repeat) over ``instances``,
    through the ``environment`` scorer."""
    from toollab.eval.metrics.environment import EnvironmentScorer

    res = EnvironmentScorer().score(
        [p for p in preds if p.repeat == 0], {i.id: i for i in instances}
    )
    return summary_of(
        env,
        {
            "metrics": {SCORER: res.metrics},
            "per_sample": {SCORER: res.per_instance},
            "scorer_counts": {SCORER: res.counts},
        },
    )


@dataclass
class BenchResult:
    model: str
    agent: str | None
    constrained: bool
    limit: int
    seed: int
    envs: list[EnvSummary] = field(default_factory=list)
    wall_s: float = 0.0
    report: str | None = None
    out: str = ""

    def overall(self) -> dict[str, float | None]:
        """The mean over environments of each figure (of those where it is defined)."""
        out: dict[str, float | None] = {}
        for k in FIGURE_KEYS:
            vals = [getattr(e, k) for e in self.envs if getattr(e, k) is not None]
            out[k] = sum(vals) / len(vals) if vals else None
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "agent": self.agent,
            "constrained": self.constrained,
            "limit": self.limit,
            "seed": self.seed,
            "wall_s": round(self.wall_s, 2),
            "out": self.out,
            "report": self.report,
            "definitions": {f.name: f.describe() for f in FIGURES},
            "overall": self.overall(),
            "envs": {e.env: e.as_dict() for e in self.envs},
        }


# -- the suite ----------------------------------------------------------------------------------------
class Progress(Protocol):
    """What :func:`run_bench` reports to."""

    def env_started(self, env: str, total: int) -> ProgressSink | None:
        """An environment starts; returns the runner's progress sink for it (or None)."""

    def env_finished(self, summary: EnvSummary) -> None: ...


class _TaskProgress:
    """:class:`~toollab.eval.task.EvalProgress` over the bench's per-environment progress."""

    def __init__(self, progress: Progress | None, on_finish: Callable[[Any], None]) -> None:
        self.progress = progress
        self.on_finish = on_finish

    def task_started(self, name: str, total: int) -> ProgressSink | None:
        return self.progress.env_started(name, total) if self.progress is not None else None

    def task_finished(self, log: Any) -> None:
        self.on_finish(log)


def bench_tasks(
    names: Sequence[str],
    *,
    limit: int = DEFAULT_LIMIT,
    seed: int = 0,
    agent: str | None = None,
    template: str | None = None,
    max_tokens: int | None = None,
) -> list[Any]:
    """One task per environment: its generated test split, executed in that environment."""
    from toollab.data import Dataset
    from toollab.envs.base import env_class
    from toollab.envs.generate import generate
    from toollab.eval.task import Task

    tasks = []
    for name in names:
        insts = generate(name, "test", limit, seed)
        tasks.append(
            Task(
                dataset=Dataset(name=name, format="toollab", instances=insts),
                agent=agent,
                environment=name,
                template=template,
                name=name,
                max_tokens=max_tokens or env_class(name).max_tokens,
            )
        )
    return tasks


def run_bench(
    *,
    model: str = DEFAULT_MODEL,
    agent: str | None = None,
    template: str | None = None,
    envs: Sequence[str] | None = None,
    limit: int = DEFAULT_LIMIT,
    out: str | Path = "runs/bench",
    seed: int = 0,
    constrained: bool = True,
    max_tokens: int | None = None,
    progress: Progress | None = None,
    model_factory: Callable[[str], Any] | None = None,
    reporter: Callable[[list[Path], Path], str | None] | None = None,
) -> BenchResult:
    """Run the environment suite and write ``bench.json`` into ``out``; ``reporter`` (the run
    directories, ``out``) writes the report and returns its path (``toollab bench`` passes
    :func:`toollab.report.write_bench_report`)."""
    from toollab.envs.base import env_class, task_env_names
    from toollab.envs.generate import generate, split_complexity
    from toollab.eval.task import evaluate

    t0 = time.perf_counter()
    names = list(envs) if envs else task_env_names()
    for name in names:
        env_class(name)  # unknown name -> did-you-mean before any work
    out = Path(out)
    load = model_factory or _load_model
    active = load(model)  # a bad model string fails here, before anything is written
    use_constraints = constrained and bool(active.supports_constraints)
    result = BenchResult(
        model=model, agent=agent, constrained=use_constraints, limit=limit, seed=seed, out=str(out)
    )
    tasks = bench_tasks(
        names, limit=limit, seed=seed, agent=agent, template=template, max_tokens=max_tokens
    )
    started = {"t": time.perf_counter()}

    def finished(log: Any) -> None:
        # the figures as results.json holds them: every view reads the same numbers
        results = read_json(Path(log.run_dir) / RESULTS)
        summary = summary_of(log.name, results, log.run_dir)
        summary.seconds = round(time.perf_counter() - started["t"], 2)
        result.envs.append(summary)
        if progress is not None:
            progress.env_finished(summary)
        started["t"] = time.perf_counter()

    try:
        evaluate(
            tasks,
            active,
            log_dir=out,
            seed=seed,
            constrained=use_constraints,
            progress=_TaskProgress(progress, finished),
        )
    finally:
        active.close()
    for task, summary in zip(tasks, result.envs, strict=True):
        train = generate(summary.env, "train", REFERENCE_TRAIN, seed, (1, 0, 0))
        summary.api_complexity = split_complexity(summary.env, task.dataset.instances, train)
    result.wall_s = time.perf_counter() - t0
    if reporter is not None and result.envs:
        result.report = reporter([Path(e.run_dir) for e in result.envs], out)
    (out / "bench.json").write_text(json.dumps(result.as_dict(), indent=2), encoding="utf-8")
    return result


def _load_model(spec: str) -> Any:
    from toollab.models.registry import load_model

    return load_model(spec)
