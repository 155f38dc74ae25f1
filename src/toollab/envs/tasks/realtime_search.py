"""Goal templates of the real-time search environment (ToolEyes scenario RS).  Exchange rates
need the ``currency`` capability, which the finance environment's conversion also serves."""

from __future__ import annotations

import random
from typing import Any

from toollab.envs.base import Environment
from toollab.envs.realtime_search import (
    AIRLINES,
    CURRENCIES,
    STOCKS,
    TIMEZONES,
    TOPICS,
    RealtimeSearchEnv,
)
from toollab.envs.tasks.common import Goal, call, pick

TASKS = RealtimeSearchEnv.tasks


def _flight(rng: random.Random) -> str:
    return f"{pick(rng, AIRLINES)}{rng.randint(1, 999)}"


@TASKS.template("fx", weight=2, needs=("currency",))
def fx(rng: random.Random, env: Environment) -> Goal:
    a, b = rng.sample(list(CURRENCIES), 2)
    return Goal(
        query=pick(
            rng,
            [
                f"What's the exchange rate from {a} to {b} right now?",
                f"How many {b} do I get for one {a} today?",
            ],
        ),
        calls=[call("get_exchange_rate", base=a, quote=b)],
    )


@TASKS.template("stock", weight=2)
def stock(rng: random.Random, env: Environment) -> Goal:
    s = pick(rng, list(STOCKS))
    return Goal(
        query=pick(rng, [f"What's the latest price of {s} stock?", f"How is {s} trading today?"]),
        calls=[call("get_stock_quote", symbol=s)],
    )


@TASKS.template("news", weight=2)
def news(rng: random.Random, env: Environment) -> Goal:
    t = pick(rng, TOPICS)
    n = rng.randint(1, 5)
    args: dict[str, Any] = {"topic": t, **({} if n == 3 else {"limit": n})}
    lang = ""
    if rng.random() < 0.3:
        code, word = pick(rng, [("es", "Spanish"), ("fr", "French"), ("de", "German")])
        args["language"] = code
        lang = f" in {word}"
    what = f"the latest {t} headline" if n == 1 else f"the {n} latest {t} headlines"
    return Goal(query=f"Show me {what}{lang}.", calls=[call("search_news", **args)])


@TASKS.template("time")
def time(rng: random.Random, env: Environment) -> Goal:
    c = pick(rng, list(TIMEZONES))
    return Goal(query=f"What time is it in {c} now?", calls=[call("get_local_time", city=c)])


@TASKS.template("flight")
def flight(rng: random.Random, env: Environment) -> Goal:
    f = _flight(rng)
    return Goal(
        query=f"Is flight {f} on time today?", calls=[call("get_flight_status", flight_number=f)]
    )


@TASKS.template("two_stocks", atomic=False)
def two_stocks(rng: random.Random, env: Environment) -> Goal:
    a, b = rng.sample(list(STOCKS), 2)
    return Goal(
        query=f"Compare the current prices of {a} and {b}.",
        calls=[call("get_stock_quote", symbol=a), call("get_stock_quote", symbol=b)],
    )


@TASKS.template("trip_check", atomic=False)
def trip_check(rng: random.Random, env: Environment) -> Goal:
    f = _flight(rng)
    c = pick(rng, list(TIMEZONES))
    return Goal(
        query=f"I'm landing in {c} on flight {f}: what's its status and the local time there?",
        calls=[call("get_flight_status", flight_number=f), call("get_local_time", city=c)],
    )


TASKS.add_composition(weight=4, three=0.4)
