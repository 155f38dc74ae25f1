"""Built-in executable environments (deterministic, offline).

Each environment is one class in one module, ``toollab.envs.<name>``: its tools, its state, its
success check, its task set (the split policy of its generated data; the goal templates that
fill it are in ``toollab.envs.tasks.<name>``) and its decoding budget (see
:mod:`toollab.envs.base`).  ``get_env(name)`` builds one; ``env_names()`` lists them in the
order they are imported below, the order they register in (plugins come after).

| environment | ToolEyes scenario |
|---|---|
| ``home_search``, ``trip_booking`` | personal life (PL) |
| ``weather`` | real-time search (RS) |
| ``favourites``, ``spreadsheet``, ``household`` | application manipulation (AM) |
| ``text_generation`` | text generation (TG) |
| ``data_understanding`` | data understanding (DU) |
| ``realtime_search`` | real-time search (RS) |
| ``workspace`` | application manipulation (AM) |
| ``personal_life`` | personal life (PL) |
| ``info_retrieval`` | information retrieval (IR) |
| ``finance`` | financial transactions (FT) |
| ``webshop`` | application manipulation (AM) |
| ``tabletop`` | application manipulation (AM): Code as Policies' tabletop |
"""

# isort: off
# importing an environment's module registers it: this order is the order environments are
# listed and run in
from toollab.envs import home_search, trip_booking, weather, favourites, spreadsheet, household
from toollab.envs import text_generation, data_understanding, realtime_search, workspace
from toollab.envs import personal_life, info_retrieval, finance
from toollab.envs import webshop
from toollab.envs import tabletop

# isort: on
from toollab.envs import tasks  # the goal templates, filling each class's task set
from toollab.envs.base import (
    CallExecutor,
    CheckResult,
    EnvError,
    Environment,
    Execution,
    HasState,
    PlanScored,
    RendersActions,
    RunsPrograms,
    dict_prf,
    env_class,
    env_names,
    get_env,
    register_env,
    task_env_names,
)
from toollab.envs.taskset import Goal, TaskSet

#: ToolEyes scenario code -> full name
SCENARIOS = {
    "TG": "text generation",
    "DU": "data understanding",
    "RS": "real-time search",
    "AM": "application manipulation",
    "PL": "personal life",
    "IR": "information retrieval",
    "FT": "financial transactions",
}

__all__ = [
    "SCENARIOS",
    "CallExecutor",
    "CheckResult",
    "EnvError",
    "Environment",
    "Execution",
    "Goal",
    "HasState",
    "PlanScored",
    "RendersActions",
    "RunsPrograms",
    "TaskSet",
    "data_understanding",
    "dict_prf",
    "env_class",
    "env_names",
    "favourites",
    "finance",
    "get_env",
    "home_search",
    "household",
    "info_retrieval",
    "personal_life",
    "realtime_search",
    "register_env",
    "spreadsheet",
    "tabletop",
    "task_env_names",
    "tasks",
    "text_generation",
    "trip_booking",
    "weather",
    "webshop",
    "workspace",
]
