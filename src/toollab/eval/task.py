"""The library API: :class:`Task` + :func:`evaluate` → :class:`EvalLog`.

>>> from toollab import Task, evaluate
>>> log = evaluate(Task(dataset="../shared/data/bfcl", format="bfcl", limit=20), "oracle")
>>> log.results["bfcl"]["overall_accuracy"]

A task is what to evaluate: a dataset (a :class:`~toollab.data.Dataset`, a list of
:class:`~toollab.schema.Instance` s, or a path with its ``format``), the agent that drives the
model, the environment that executes the calls, the scorers and the prompt template.
:func:`evaluate` runs every task on one model (a :class:`~toollab.models.base.Model` or a model
string) and returns a typed log: the resolved specification of each task, one record per sample
(the prediction, its trace of steps and its per-sample scores from every scorer), and the
aggregate figures with their definitions.  Every task runs in its own run directory under
``log_dir`` (resumable: an interrupted evaluation continues where it stopped).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field

from toollab.agents.base import Agent
from toollab.envs.base import CallExecutor
from toollab.errors import UsageError
from toollab.eval.runner import EvalConfig, ProgressSink, environment_named, run_eval
from toollab.models.base import Model
from toollab.schema import Instance
from toollab.schema.record import Prediction, Step

EnvironmentSpec = str | Callable[[Instance], CallExecutor | None]


@dataclass
class Task:
    """What to evaluate (see the module docs)."""

    #: a :class:`~toollab.data.Dataset`, a list of instances, or a path (with ``format``)
    dataset: Any
    #: an agent name (``single``, ``react``, ``deer``, ...) or an agent object; default by format
    agent: str | Agent | None = None
    #: the environment that executes the calls: a registered environment's name, or a function
    #: of the instance returning one (``None``: the environment the instances' source names)
    environment: EnvironmentSpec | None = None
    #: scorer names or globs (default: every applicable upstream-faithful scorer)
    scorers: Sequence[str] | None = None
    #: prompt template name (default by format)
    template: str | None = None
    #: the task's name (its run directory under ``log_dir``); default: the dataset's name
    name: str | None = None
    #: dataset format, when ``dataset`` is a path
    format: str | None = None
    data_options: dict[str, Any] = field(default_factory=dict)
    #: only the first N instances
    limit: int | None = None
    #: tokens per model turn (default 256; DEER 128)
    max_tokens: int | None = None
    max_turns: int = 9
    #: the task's run directory (default: ``log_dir/runs/NAME``)
    run_dir: str | Path | None = None


class SampleLog(BaseModel):
    """One sample of a task: the prediction, its trace and its per-sample scores."""

    id: str
    repeat: int = 0
    prediction: Prediction
    #: scorer name -> that scorer's per-sample scores
    scores: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @property
    def trace(self) -> list[Step]:
        """The agent's steps (empty for a single-turn agent)."""
        return self.prediction.steps


class TaskLog(BaseModel):
    """One task's run: its resolved specification, samples and aggregate results."""

    name: str
    run_dir: str
    #: the resolved specification (``run.json``)
    spec: dict[str, Any]
    samples: list[SampleLog] = Field(default_factory=list)
    #: scorer -> figure -> value
    results: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    #: scorer -> figure -> {label, definition, percent} (the per-sample scorers)
    definitions: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)
    #: everything else of ``results.json`` (breakdowns, errors, counts, timing, ci95)
    details: dict[str, Any] = Field(default_factory=dict)


class EvalLog(BaseModel):
    """What :func:`evaluate` did: one :class:`TaskLog` per task."""

    model: str
    log_dir: str
    tasks: list[TaskLog] = Field(default_factory=list)
    wall_s: float = 0.0

    def task(self, name: str) -> TaskLog:
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(f"no task {name!r}; tasks: {', '.join(t.name for t in self.tasks)}")

    @property
    def results(self) -> dict[str, dict[str, float | None]]:
        """The results of the only task (for one task)."""
        return self._only().results

    @property
    def samples(self) -> list[SampleLog]:
        """The samples of the only task (for one task)."""
        return self._only().samples

    def _only(self) -> TaskLog:
        if len(self.tasks) != 1:
            raise UsageError(f"this log has {len(self.tasks)} tasks: use log.task(name)")
        return self.tasks[0]


class EvalProgress(Protocol):
    """What :func:`evaluate` reports to: a task starts (returns the runner's sink for it), a
    task finishes."""

    def task_started(self, name: str, total: int) -> ProgressSink | None: ...

    def task_finished(self, log: TaskLog) -> None: ...


def _dataset_of(task: Task) -> tuple[Any, str, str]:
    """(the Dataset, its format, the path ``run.json`` names) of a task."""
    from toollab.data import Dataset, load_dataset

    ds = task.dataset
    if isinstance(ds, str | Path):
        if not task.format:
            raise UsageError(f"Task(dataset={str(ds)!r}) needs format= (e.g. 'bfcl')")
        loaded = load_dataset(ds, task.format, **task.data_options)
        return loaded, task.format, str(ds)
    if isinstance(ds, Dataset):
        return ds, ds.format, str(ds.path) if ds.path is not None else ""
    instances = list(ds)
    if not all(isinstance(i, Instance) for i in instances):
        raise UsageError("Task(dataset=...) takes a Dataset, a list of Instances or a path")
    name = task.name or "instances"
    return Dataset(name=name, format="toollab", instances=instances), "toollab", ""


def _environment(spec: EnvironmentSpec | None) -> Callable[[Instance], CallExecutor | None] | None:
    if spec is None or callable(spec):
        return spec
    return environment_named(spec)


def _unique_names(tasks: Sequence[Task], datasets: Sequence[Any]) -> list[str]:
    names: list[str] = []
    for task, ds in zip(tasks, datasets, strict=True):
        base = task.name or str(ds.name or "task")
        name, k = base, 2
        while name in names:
            name, k = f"{base}-{k}", k + 1
        names.append(name)
    return names


def evaluate(
    tasks: Task | Sequence[Task],
    model: Model | str,
    *,
    log_dir: str | Path | None = None,
    repeats: int = 1,
    seed: int = 0,
    constrained: bool | None = None,
    temperature: float = 0.0,
    top_p: float = 1.0,
    timeout: float | None = None,
    concurrency: int | None = None,
    judge: str | None = None,
    judge_cache: str | Path | None = None,
    progress: EvalProgress | None = None,
) -> EvalLog:
    """Run every task on ``model`` and score it; returns the typed log.

    ``model`` is a model object or a model string (``bundled:smollm2-135m``, ``oracle``,
    ``openai:NAME@URL``, ``replay:/outputs.jsonl``, ...); a string is loaded once for all
    tasks (for one task, only when it has instances left to run).  ``log_dir`` holds one run directory per task (``log_dir/runs/NAME``; instances given
    in memory are also written to ``log_dir/data/NAME.jsonl`` so that ``toollab score`` and
    ``toollab report`` can read the run); default: a new temporary directory.  ``constrained``:
    ``None`` constrains decoding wherever the backend can, ``True`` requires it, ``False`` is the
    papers' unconstrained protocol; every run records which was used.
    """
    from toollab.models.registry import load_model

    t0 = time.perf_counter()
    task_list = [tasks] if isinstance(tasks, Task) else list(tasks)
    if not task_list:
        raise UsageError("evaluate() needs at least one Task")
    resolved = [_dataset_of(t) for t in task_list]
    needs_root = any(t.run_dir is None for t in task_list) or any(not r[2] for r in resolved)
    root = Path(log_dir) if log_dir is not None else None
    if root is None and needs_root:
        root = Path(tempfile.mkdtemp(prefix="toollab-"))
    names = _unique_names(task_list, [r[0] for r in resolved])
    envs = [_environment(t.environment) for t in task_list]  # bad names fail before any work
    # one task and a model string: the runner loads the model only when there is work left
    lazy = isinstance(model, str) and len(task_list) == 1
    owned = isinstance(model, str) and not lazy
    active: Model | None = load_model(model) if owned and isinstance(model, str) else None
    if isinstance(model, Model):
        active = model
    log = EvalLog(
        model=model if isinstance(model, str) else model.name,
        log_dir=str(root) if root is not None else "",
    )
    try:
        for task, (dataset, fmt, data_path), name, env in zip(
            task_list, resolved, names, envs, strict=True
        ):
            base = root if root is not None else Path(".")  # a root exists whenever one is needed
            if not data_path:
                data_path = str(dataset.write_jsonl(base / "data" / f"{name}.jsonl"))
            config = EvalConfig(
                model=log.model,
                data=data_path,
                format=fmt,
                data_options=dict(task.data_options or dataset.options),
                agent=task.agent if isinstance(task.agent, str) else None,
                template=task.template,
                metrics=list(task.scorers or []),
                limit=task.limit,
                repeats=repeats,
                seed=seed,
                constrained=constrained,
                max_tokens=task.max_tokens,
                temperature=temperature,
                top_p=top_p,
                max_turns=task.max_turns,
                timeout=timeout,
                concurrency=concurrency,
                judge=judge,
                judge_cache=str(judge_cache) if judge_cache is not None else None,
            )
            n = len(dataset.instances) if task.limit is None else min(task.limit, len(dataset))
            sink = progress.task_started(name, n * repeats) if progress is not None else None
            outcome = run_eval(
                config,
                Path(task.run_dir) if task.run_dir is not None else base / "runs" / name,
                model=active,
                progress=sink,
                environment=env,
                dataset=dataset,
                agent=task.agent
                if task.agent is not None and not isinstance(task.agent, str)
                else None,
            )
            task_log = task_log_of(
                name, outcome.out, outcome.results, outcome.predictions, outcome.instances
            )
            log.tasks.append(task_log)
            if progress is not None:
                progress.task_finished(task_log)
    finally:
        if owned and active is not None:
            active.close()
    log.wall_s = time.perf_counter() - t0
    return log


def task_log_of(
    name: str,
    run_dir: Path,
    results: dict[str, Any],
    predictions: Sequence[Prediction],
    instances: Sequence[Instance] = (),
) -> TaskLog:
    """The :class:`TaskLog` of a run from its ``results.json`` content and predictions (in
    the order of ``instances``)."""
    per_sample: dict[str, dict[str, Any]] = results.get("per_sample") or {}
    order = {inst.id: i for i, inst in enumerate(instances)}
    samples = []
    for pred in sorted(predictions, key=lambda p: (p.repeat, order.get(p.id, len(order)), p.id)):
        key = pred.id if not pred.repeat else f"{pred.id}@{pred.repeat}"
        scores = {sc: rows[key] for sc, rows in per_sample.items() if key in rows}
        samples.append(SampleLog(id=pred.id, repeat=pred.repeat, prediction=pred, scores=scores))
    details = {
        k: v for k, v in results.items() if k not in ("run", "metrics", "definitions", "per_sample")
    }
    return TaskLog(
        name=name,
        run_dir=str(run_dir),
        spec=dict(results.get("run") or {}),
        samples=samples,
        results=dict(results.get("metrics") or {}),
        definitions=dict(results.get("definitions") or {}),
        details=details,
    )
