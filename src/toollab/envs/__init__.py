"""Built-in executable environments (deterministic, offline).

Each environment offers tools with JSON schemas, executes calls against a state and judges a
program by its final state (see :mod:`toollab.envs.base`).  ``get_env(name)`` builds one;
``env_names()`` lists them.
"""

# importing the modules registers the built-in environments, in this order
from toollab.envs import (
    favourites,
    home_search,
    household,
    scenarios,
    spreadsheet,
    trip_booking,
    weather,
)
from toollab.envs.base import (
    CallExecutor,
    CheckResult,
    EnvError,
    Environment,
    Execution,
    PlanScored,
    dict_prf,
    env_class,
    env_names,
    get_env,
    register_env,
)

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
    "PlanScored",
    "dict_prf",
    "env_class",
    "env_names",
    "favourites",
    "get_env",
    "home_search",
    "household",
    "register_env",
    "scenarios",
    "spreadsheet",
    "trip_booking",
    "weather",
]
