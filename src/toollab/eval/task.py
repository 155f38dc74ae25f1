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

from pydantic import JsonValue

from toollab.agents.base import Agent
from toollab.data import Dataset, load_dataset
from toollab.envs.base import CallExecutor
from toollab.errors import UsageError
from toollab.eval.log import EvalLog, SampleLog, TaskLog, task_log_of
from toollab.eval.progress import Progress
from toollab.eval.runner import EvalConfig, environment_named, run_eval
from toollab.models import registry as model_registry
from toollab.models.base import Model
from toollab.models.registry import ModelSource
from toollab.schema import Instance

__all__ = ["EvalLog", "SampleLog", "Task", "TaskLog", "evaluate", "task_log_of"]

EnvironmentSpec = str | Callable[[Instance], CallExecutor | None]


@dataclass
class Task:
    """What to evaluate (see the module docs)."""

    #: a :class:`~toollab.data.Dataset`, a list of instances, or a path (with ``format``)
    dataset: Dataset | Sequence[Instance] | str | Path
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
    data_options: dict[str, JsonValue] = field(default_factory=dict)
    #: only the first N instances
    limit: int | None = None
    #: tokens per model turn (default 256; DEER 128)
    max_tokens: int | None = None
    max_turns: int = 9
    #: the task's run directory (default: ``log_dir/runs/NAME``)
    run_dir: str | Path | None = None


def _dataset_of(task: Task) -> tuple[Dataset, str, str]:
    """(the Dataset, its format, the path ``run.json`` names) of a task."""
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


def _unique_names(tasks: Sequence[Task], datasets: Sequence[Dataset]) -> list[str]:
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
    progress: Progress | None = None,
) -> EvalLog:
    """Run every task on ``model`` and score it; returns the typed log.

    ``model`` is a model object or a model string (``bundled:smollm2-135m``, ``oracle``,
    ``openai:NAME@URL``, ``replay:/outputs.jsonl``, ...); a string is loaded once for all
    tasks, when the first task with instances left to run needs it.  ``log_dir`` holds one run
    directory per task (``log_dir/runs/NAME``; instances given in memory are also written to
    ``log_dir/data/NAME.jsonl`` so that ``toollab score`` and ``toollab report`` can read the
    run); default: a new temporary directory.  ``constrained``: ``None`` constrains decoding
    wherever the backend can, ``True`` requires it, ``False`` is the papers' unconstrained
    protocol; every run records which was used.  ``progress`` hears each task start, each
    sample finish and each task finish (:class:`~toollab.eval.progress.Progress`).
    """
    t0 = time.perf_counter()
    if judge:
        model_registry.check_model_string(judge)  # a bad judge string fails before any data is read
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
    with ModelSource(model) as source:
        log = EvalLog(model=source.name, log_dir=str(root) if root is not None else "")
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
            outcome = run_eval(
                config,
                Path(task.run_dir) if task.run_dir is not None else base / "runs" / name,
                model=source,
                progress=progress,
                name=name,
                environment=env,
                dataset=dataset,
                agent=task.agent
                if task.agent is not None and not isinstance(task.agent, str)
                else None,
            )
            task_log = outcome.log(name)
            log.tasks.append(task_log)
            if progress is not None:
                progress.task_finished(task_log)
    log.wall_s = time.perf_counter() - t0
    return log
