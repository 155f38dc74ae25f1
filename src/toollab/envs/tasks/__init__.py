"""Goal templates and value pools per environment (see :mod:`toollab.envs.tasks.common`)."""

from __future__ import annotations

from toollab.envs.tasks import (
    favourites,
    home_search,
    household,
    scenarios,
    spreadsheet,
    trip_booking,
    weather,
)
from toollab.envs.tasks.common import Task, TaskSet, call

#: environment name -> its task set
TASKSETS: dict[str, TaskSet] = {
    ts.env: ts
    for ts in (
        home_search.TASKS,
        trip_booking.TASKS,
        weather.TASKS,
        favourites.TASKS,
        spreadsheet.TASKS,
        household.TASKS,
        *scenarios.TASKSETS,
    )
}

__all__ = ["TASKSETS", "Task", "TaskSet", "call"]
