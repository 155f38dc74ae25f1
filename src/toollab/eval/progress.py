"""The one progress protocol of an evaluation: tasks start, samples finish, tasks finish.

:func:`~toollab.eval.task.evaluate` (and ``toollab bench`` through it) reports to one
:class:`Progress`; the CLI's progress bars implement it, and a library user may pass any object
with these three methods (every method is optional in spirit: :class:`NoProgress` is the base
to inherit from when only some are wanted).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from toollab.eval.log import TaskLog
from toollab.schema.record import Prediction


@runtime_checkable
class Progress(Protocol):
    """What an evaluation reports to."""

    def task_started(self, name: str, total: int, completed: int) -> None:
        """A task starts: ``total`` samples, ``completed`` of them already done (a resumed run)."""

    def sample_done(self, name: str, prediction: Prediction) -> None:
        """One sample of task ``name`` finished and is durable on disk."""

    def task_finished(self, log: TaskLog) -> None:
        """A task finished and was scored."""


class NoProgress:
    """A :class:`Progress` that ignores everything (subclass it to handle only some events)."""

    def task_started(self, name: str, total: int, completed: int) -> None:
        return None

    def sample_done(self, name: str, prediction: Prediction) -> None:
        return None

    def task_finished(self, log: TaskLog) -> None:
        return None
