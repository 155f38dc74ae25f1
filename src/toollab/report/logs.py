"""A run directory as the typed record the report reads: its :class:`~toollab.eval.task.TaskLog`
and the instances its samples answer.

:func:`read_task_log` is the one place that builds a ``TaskLog`` from a run directory
(``results.json`` + ``predictions.jsonl``); :func:`read_instances` loads the instances of the
dataset its specification names (the answer key the per-sample error classes and the drill-down
read).  A run moved away from the place it was written still finds its dataset when the dataset
moved with it (a bench output folder: ``OUT/runs/NAME`` beside ``OUT/data/NAME.jsonl``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

from toollab.data import load_dataset
from toollab.data.base import DataNote
from toollab.errors import ToolLabError
from toollab.eval.log import TaskLog
from toollab.eval.log import read_task_log as read_log
from toollab.schema import Instance


@dataclass
class RunInstances:
    """The instances of a run by id, or why they could not be read."""

    by_id: dict[str, Instance] = field(default_factory=dict)
    #: why the instances are not there (the report then shows no error classes for the run)
    problem: str | None = None


def read_task_log(run_dir: Path) -> TaskLog:
    """The :class:`TaskLog` of a finished run directory: the typed record
    (:func:`toollab.eval.log.read_task_log`), named by the directory."""
    return read_log(run_dir, run_dir.name or str(run_dir))


def _candidates(run_dir: Path, data: str) -> list[Path]:
    """Where a run's dataset may be: as named, else beside one of the run's parent folders
    (each tail of the named path under each parent)."""
    named = Path(data)
    out = [named]
    if named.is_absolute():
        return out
    parts = named.parts
    for parent in run_dir.resolve().parents:
        out.extend(parent.joinpath(*parts[i:]) for i in range(len(parts)))
    return out


def read_instances(log: TaskLog) -> RunInstances:
    """The instances of the dataset ``log.spec`` names, checked against the run's fingerprint."""
    data, fmt = log.spec.data, log.spec.format
    if not data or not fmt:
        return RunInstances(problem="the run names no dataset")
    path = next((p for p in _candidates(Path(log.run_dir), str(data)) if p.exists()), None)
    if path is None:
        return RunInstances(problem=f"its dataset {data} is not there any more")
    options = log.spec.data_options
    try:
        with warnings.catch_warnings():  # the run's notes were shown when it ran
            warnings.simplefilter("ignore", DataNote)
            dataset = load_dataset(path, str(fmt), **(options if isinstance(options, dict) else {}))
    except ToolLabError as exc:
        return RunInstances(problem=f"its dataset {path} cannot be read: {exc}")
    fingerprint = log.spec.dataset
    if fingerprint and fingerprint != dataset.fingerprint:
        return RunInstances(problem=f"the dataset at {path} is not the one the run used")
    return RunInstances(by_id={inst.id: inst for inst in dataset.instances})
