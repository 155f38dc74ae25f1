"""Goal templates of the data-understanding environment (ToolEyes scenario DU): questions about
the bundled sales table.  They need the ``table_stats`` capability, which the spreadsheet's
formulas also serve (so they are never lent to it as NoCall goals)."""

from __future__ import annotations

import random
from typing import Any

from toollab.envs.base import Environment
from toollab.envs.data_understanding import NUMERIC, PRODUCTS, DataUnderstandingEnv
from toollab.envs.tasks.common import Goal, call, pick

TASKS = DataUnderstandingEnv.tasks
_TABLE = ("table_stats",)
_STAT_WORDS = {
    "mean": "average",
    "median": "median",
    "min": "minimum",
    "max": "maximum",
    "sum": "total",
    "std": "standard deviation",
}
_COL_WORDS = {"units": "units sold", "revenue": "revenue", "price": "price"}


@TASKS.template("stat", weight=2, needs=_TABLE)
def stat(rng: random.Random, env: Environment) -> Goal:
    col = pick(rng, NUMERIC)
    st = pick(rng, list(_STAT_WORDS))
    return Goal(
        query=f"What is the {_STAT_WORDS[st]} of the {col} column in the sales table?",
        calls=[call("column_stat", column=col, stat=st)],
    )


@TASKS.template("group", weight=2, needs=_TABLE)
def group(rng: random.Random, env: Environment) -> Goal:
    by = pick(rng, ["region", "product", "month"])
    col = pick(rng, ["units", "revenue"])
    agg = pick(rng, ["sum", "mean", "max"])
    word = {"sum": "total", "mean": "average", "max": "highest"}[agg]
    args: dict[str, Any] = {"group_by": by, "column": col, **({} if agg == "sum" else {"agg": agg})}
    return Goal(
        query=f"Show the {word} {_COL_WORDS[col]} per {by}.",
        calls=[call("group_aggregate", **args)],
    )


@TASKS.template("count_rows", needs=_TABLE)
def count_rows(rng: random.Random, env: Environment) -> Goal:
    p = pick(rng, PRODUCTS)
    return Goal(
        query=f"How many rows of the sales table are about {p}s?",
        calls=[call("count_rows", column="product", value=p)],
    )


@TASKS.template("top", needs=_TABLE)
def top(rng: random.Random, env: Environment) -> Goal:
    col = pick(rng, ["units", "revenue"])
    k = rng.randint(1, 5)
    low = rng.random() < 0.3
    args: dict[str, Any] = {
        "column": col,
        **({} if k == 3 else {"k": k}),
        **({"ascending": True} if low else {}),
    }
    which = "Which sales row has" if k == 1 else f"Which {k} sales rows have"
    return Goal(
        query=f"{which} the {'lowest' if low else 'highest'} {_COL_WORDS[col]}?",
        calls=[call("top_rows", **args)],
    )


@TASKS.template("correlation", needs=_TABLE)
def correlation(rng: random.Random, env: Environment) -> Goal:
    a, b = rng.sample(NUMERIC, 2)
    return Goal(
        query=f"How strongly are {a} and {b} correlated in the sales table?",
        calls=[call("correlation", column_a=a, column_b=b)],
    )


@TASKS.template("columns", needs=_TABLE)
def columns(rng: random.Random, env: Environment) -> Goal:
    return Goal(
        query=pick(
            rng, ["What columns does the sales table have?", "Describe the sales table's columns."]
        ),
        calls=[call("list_columns")],
    )


@TASKS.template("distinct", needs=_TABLE)
def distinct(rng: random.Random, env: Environment) -> Goal:
    col = pick(rng, ["region", "product", "month"])
    return Goal(
        query=f"Which distinct {col} values appear in the sales table?",
        calls=[call("distinct_values", column=col)],
    )


@TASKS.template("stat_and_group", atomic=False, needs=_TABLE)
def stat_and_group(rng: random.Random, env: Environment) -> Goal:
    col = pick(rng, ["units", "revenue"])
    return Goal(
        query=f"Give me the total {_COL_WORDS[col]} overall and per region.",
        calls=[
            call("column_stat", column=col, stat="sum"),
            call("group_aggregate", group_by="region", column=col),
        ],
    )


TASKS.add_composition(weight=4)
