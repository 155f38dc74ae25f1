"""Goal templates and value pools per environment (see :mod:`toollab.envs.tasks.common`)."""

from __future__ import annotations

from toollab.envs.tasks import (
    data_understanding,
    favourites,
    finance,
    home_search,
    household,
    info_retrieval,
    personal_life,
    realtime_search,
    spreadsheet,
    text_generation,
    trip_booking,
    weather,
    workspace,
)
from toollab.envs.tasks.common import Goal, TaskSet, call

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
        text_generation.TASKS,
        data_understanding.TASKS,
        realtime_search.TASKS,
        workspace.TASKS,
        personal_life.TASKS,
        info_retrieval.TASKS,
        finance.TASKS,
    )
}

__all__ = ["TASKSETS", "Goal", "TaskSet", "call"]
