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

import math
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import JsonValue

from toollab.agents.base import Agent, get_agent
from toollab.data import Dataset, load_dataset
from toollab.envs.base import CallExecutor
from toollab.errors import (
    ArgumentError,
    InputError,
    UsageError,
    check_arg,
    check_int,
    path_component,
)
from toollab.eval.log import EvalLog, SampleLog, TaskLog, task_log_of
from toollab.eval.progress import Progress
from toollab.eval.runner import EvalConfig, environment_named, run_eval
from toollab.eval.store import MAX_REPEATS
from toollab.eval.toolserver import check_server_spec, check_user_spec
from toollab.models import registry as model_registry
from toollab.models.base import Model
from toollab.models.registry import ModelSource
from toollab.retrieval.offer import check_retrieval
from toollab.schema import Instance
from toollab.templates.base import get_template

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
    #: retrieval in the loop: a retriever (``bm25``, ``dense``, ``hybrid``) whose top ``k``
    #: tools for each query replace the tools the instance offers (the gold tools are never
    #: added); ``None``: the dataset's offered tools
    retriever: str | None = None
    #: tools offered per instance with a retriever (default 5)
    k: int | None = None
    #: a pool file to retrieve from (default: the dataset's tool pool and every instance's tools)
    tool_pool: str | Path | None = None
    #: what answers the calls when no ``environment`` is named: ``sim`` (the simulated tool
    #: server), ``none``, or a model string (a model plays the API); default: the format's own
    #: (``sim`` for ToolEyes)
    tool_server: str | None = None
    #: the folder of the simulated server's answers (default: ``tool_cache`` in the run directory)
    tool_cache: str | Path | None = None
    #: who answers ``ask_to_user`` with a tool server: ``scripted`` (default), ``none`` or a
    #: model string
    user: str | None = None

    def __post_init__(self) -> None:
        check_task(self, "Task")


_STR = "a string or None"
_PATH = "a path (str or Path) or None"


def _optional(
    where: str, field_name: str, value: object, types: tuple[type, ...], expected: str
) -> None:
    if value is not None:
        check_arg(f"{where}.{field_name}", value, types, expected)


def check_task(task: Task, where: str) -> None:
    """Raise :class:`~toollab.errors.ArgumentError` naming the first field of ``task`` that has
    the wrong type or value (``where`` names the task: ``Task``, ``tasks[2]``).  Run when a task
    is made and again by :func:`evaluate` (a field may have been changed since), before anything
    is written."""
    ds = task.dataset
    if isinstance(ds, str | Path):
        if not str(ds).strip():
            raise ArgumentError(f"{where}.dataset", "a non-empty path", ds)
    elif isinstance(ds, Dataset):
        if not ds.instances:
            raise ArgumentError(f"{where}.dataset", "a Dataset with instances", ds)
    elif isinstance(ds, Sequence) and not isinstance(ds, bytes):
        if not ds:
            raise ArgumentError(f"{where}.dataset", "a non-empty list of Instances", ds)
        for i, inst in enumerate(ds):
            check_arg(f"{where}.dataset[{i}]", inst, Instance, "an Instance")
    else:
        raise ArgumentError(
            f"{where}.dataset", "a Dataset, a list of Instances or a path (str or Path)", ds
        )
    agent = task.agent
    if isinstance(agent, str):
        if not agent.strip():
            raise ArgumentError(f"{where}.agent", "an agent name", agent)
    elif agent is not None and not (
        isinstance(getattr(agent, "name", None), str) and callable(getattr(agent, "run", None))
    ):
        raise ArgumentError(
            f"{where}.agent", "an agent name, an Agent object (with name and run) or None", agent
        )
    env = task.environment
    if env is not None and not isinstance(env, str) and not callable(env):
        raise ArgumentError(
            f"{where}.environment",
            "an environment name, a function of the instance returning one, or None",
            env,
        )
    if task.scorers is not None:
        if isinstance(task.scorers, str) or not isinstance(task.scorers, list | tuple):
            raise ArgumentError(
                f"{where}.scorers",
                "a list of scorer names or globs (e.g. ['bfcl']) or None",
                task.scorers,
            )
        for i, s in enumerate(task.scorers):
            check_arg(f"{where}.scorers[{i}]", s, str, "a scorer name or glob")
    _optional(where, "template", task.template, (str,), _STR)
    _optional(where, "format", task.format, (str,), _STR)
    if task.name is not None:
        path_component(task.name, f"{where}.name")
    check_arg(f"{where}.data_options", task.data_options, dict, "a dict of format options")
    for key in task.data_options:
        check_arg(f"{where}.data_options", key, str, "option names that are strings")
    if task.limit is not None:
        check_int(f"{where}.limit", task.limit, minimum=0)  # 0: refused when it runs
    if task.max_tokens is not None:
        check_int(f"{where}.max_tokens", task.max_tokens, minimum=1)
    check_int(f"{where}.max_turns", task.max_turns, minimum=1)
    _optional(where, "run_dir", task.run_dir, (str, Path), _PATH)
    if task.run_dir is not None and not str(task.run_dir).strip():
        raise ArgumentError(f"{where}.run_dir", "a non-empty path or None", task.run_dir)
    _optional(where, "retriever", task.retriever, (str,), "a retriever name (bm25, dense, hybrid)")
    if task.k is not None:
        check_int(f"{where}.k", task.k, minimum=1)
    _optional(where, "tool_pool", task.tool_pool, (str, Path), _PATH)
    _optional(where, "tool_server", task.tool_server, (str,), "sim, none or a model string")
    if task.tool_server is not None:
        check_server_spec(task.tool_server, f"{where}.tool_server")
        if env is not None and task.tool_server != "none":
            raise ArgumentError(
                f"{where}.tool_server", "None when an environment is named", task.tool_server
            )
    _optional(where, "tool_cache", task.tool_cache, (str, Path), _PATH)
    _optional(where, "user", task.user, (str,), "scripted, none or a model string")
    if task.user is not None:
        check_user_spec(task.user, f"{where}.user")
    if task.retriever is None and (task.k is not None or task.tool_pool is not None):
        raise ArgumentError(
            f"{where}.retriever", "a retriever name when k or tool_pool is given", None
        )


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
    """Each task's name, made unique (``NAME-2``, ...); every one is a path component under
    ``log_dir`` (a dataset's own name included), checked by :func:`path_component`."""
    names: list[str] = []
    for i, (task, ds) in enumerate(zip(tasks, datasets, strict=True)):
        base = task.name or str(ds.name or "task")
        where = f"tasks[{i}].name" if task.name else f"tasks[{i}]: the dataset's name"
        path_component(base, where)
        name, k = base, 2
        while name in names:
            name, k = f"{base}-{k}", k + 1
        names.append(path_component(name, where))
    return names


def _check_evaluate_args(
    tasks: object,
    model: object,
    *,
    log_dir: object,
    repeats: object,
    seed: object,
    constrained: object,
    temperature: object,
    top_p: object,
    timeout: object,
    concurrency: object,
    judge: object,
    judge_cache: object,
    progress: object,
) -> list[Task]:
    """The tasks of an :func:`evaluate` call, every argument checked: an
    :class:`~toollab.errors.ArgumentError` names the first wrong one."""
    if isinstance(tasks, Task):
        task_list = [tasks]
    elif isinstance(tasks, Sequence) and not isinstance(tasks, str | bytes):
        task_list = list(tasks)
        for i, t in enumerate(task_list):
            check_arg(f"evaluate(tasks[{i}])", t, Task, "a Task")
    else:
        raise ArgumentError("evaluate(tasks)", "a Task or a list of Tasks", tasks)
    if not task_list:
        raise ArgumentError("evaluate(tasks)", "at least one Task", tasks)
    for i, t in enumerate(task_list):
        check_task(t, f"tasks[{i}]")
    if not isinstance(model, Model | str):
        raise ArgumentError("evaluate(model)", "a Model or a model string", model)
    if isinstance(model, str) and not model.strip():
        raise ArgumentError("evaluate(model)", "a model string such as 'oracle'", model)
    if log_dir is not None:
        check_arg("evaluate(log_dir)", log_dir, (str, Path), _PATH)
    check_int("evaluate(repeats)", repeats, minimum=1, maximum=MAX_REPEATS)
    check_int("evaluate(seed)", seed)
    if constrained is not None:
        check_arg("evaluate(constrained)", constrained, bool, "True, False or None")
    _check_number("evaluate(temperature)", temperature, "a number >= 0", lambda v: v >= 0)
    _check_number("evaluate(top_p)", top_p, "a number in (0, 1]", lambda v: 0 < v <= 1)
    if timeout is not None:
        _check_number("evaluate(timeout)", timeout, "seconds > 0 or None", lambda v: v > 0)
    if concurrency is not None:
        check_int("evaluate(concurrency)", concurrency, minimum=1)
    if judge is not None:
        check_arg("evaluate(judge)", judge, str, "a model string or None")
    if judge_cache is not None:
        check_arg("evaluate(judge_cache)", judge_cache, (str, Path), _PATH)
    if progress is not None and not isinstance(progress, Progress):
        raise ArgumentError(
            "evaluate(progress)",
            "a Progress (task_started, sample_done, task_finished) or None",
            progress,
        )
    return task_list


def _check_number(argument: str, value: object, expected: str, ok: Callable[[float], bool]) -> None:
    check_arg(argument, value, (int, float), expected)
    if not (isinstance(value, int | float) and math.isfinite(value) and ok(value)):
        raise ArgumentError(argument, expected, value)


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
    task_list = _check_evaluate_args(
        tasks,
        model,
        log_dir=log_dir,
        repeats=repeats,
        seed=seed,
        constrained=constrained,
        temperature=temperature,
        top_p=top_p,
        timeout=timeout,
        concurrency=concurrency,
        judge=judge,
        judge_cache=judge_cache,
        progress=progress,
    )
    if judge:
        model_registry.check_model_string(judge)  # a bad judge string fails before any data is read
    resolved = [_dataset_of(t) for t in task_list]
    for i, (task, (dataset, _fmt, _path)) in enumerate(zip(task_list, resolved, strict=True)):
        # an empty selection fails before anything is written (the instances given in memory
        # are written under log_dir/data for `toollab score`)
        if not dataset.instances[: task.limit]:
            raise InputError(
                f"tasks[{i}]: the dataset {dataset.name!r} has no instances to evaluate"
                + (f" (limit {task.limit})" if task.limit is not None else ""),
                path=_path or None,
            )
    needs_root = any(t.run_dir is None for t in task_list) or any(not r[2] for r in resolved)
    root = Path(log_dir) if log_dir is not None else None
    if root is None and needs_root:
        root = Path(tempfile.mkdtemp(prefix="toollab-"))
    names = _unique_names(task_list, [r[0] for r in resolved])
    envs = [_environment(t.environment) for t in task_list]  # bad names fail before any work
    for task in task_list:  # so do unknown agent and template names
        if isinstance(task.agent, str):
            get_agent(task.agent)
        if task.template is not None:
            get_template(task.template)
        check_retrieval(task.retriever, task.k, task.tool_pool)
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
                retriever=task.retriever,
                retrieval_k=task.k,
                tool_pool=str(task.tool_pool) if task.tool_pool is not None else None,
                tool_server=task.tool_server,
                tool_cache=str(task.tool_cache) if task.tool_cache is not None else None,
                user=task.user,
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
