"""The goal templates of the built-in environments, one module per environment: each fills the
task set its environment class declares (the spreadsheet's in three modules) (:attr:`toollab.envs.base.Environment.tasks`); the
shared phrasing helpers are in :mod:`toollab.envs.tasks.common`."""

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
    spreadsheet_book,
    spreadsheet_ranges,
    tabletop,
    text_generation,
    trip_booking,
    weather,
    webshop,
    workspace,
)

__all__ = [
    "data_understanding",
    "favourites",
    "finance",
    "home_search",
    "household",
    "info_retrieval",
    "personal_life",
    "realtime_search",
    "spreadsheet",
    "spreadsheet_book",
    "spreadsheet_ranges",
    "tabletop",
    "text_generation",
    "trip_booking",
    "weather",
    "webshop",
    "workspace",
]
