"""ToolEyes scenario *data understanding* (DU): questions about a bundled sales table.

The table (region, product, month, units, price, revenue; 48 rows) is generated deterministically
from the environment seed by :func:`sales_table`.  Every tool reads it; the state is the sorted
list of responses.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import defaultdict
from collections.abc import Callable
from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal, get_args

from toollab.envs.base import BAD_VALUE, EnvError, Environment, QueryLog, register_env
from toollab.envs.taskset import TaskSet
from toollab.tools.decorator import Param, tool

REGIONS = ("North", "South", "East", "West")
PRODUCTS = ("laptop", "phone", "tablet", "monitor")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun")
Column = Literal["region", "product", "month", "units", "price", "revenue"]
COLUMNS: tuple[str, ...] = get_args(Column)
Numeric = Literal["units", "price", "revenue"]
NUMERIC: tuple[str, ...] = get_args(Numeric)
STATS = ("mean", "median", "min", "max", "sum", "std", "count")
AGGS = ("sum", "mean", "max", "min", "count")
_PRICE = {"laptop": 900, "phone": 600, "tablet": 400, "monitor": 250}


def sales_table(seed: int = 0) -> list[dict[str, Any]]:
    """The bundled table for ``seed``: 2 regions x 4 products x 6 months (regions vary by seed)."""
    return [dict(r) for r in _sales_table(seed)]


@lru_cache(maxsize=256)
def _sales_table(seed: int) -> tuple[dict[str, Any], ...]:
    rng = random.Random(f"sales:{seed}")
    regions = sorted(rng.sample(REGIONS, 2))
    rows = []
    for region in regions:
        for product in PRODUCTS:
            for month in MONTHS:
                units = rng.randint(5, 120)
                price = _PRICE[product] + rng.choice((-50, -25, 0, 25, 50))
                rows.append(
                    {
                        "region": region,
                        "product": product,
                        "month": month,
                        "units": units,
                        "price": price,
                        "revenue": units * price,
                    }
                )
    return tuple(rows)


def _round(v: float) -> float | int:
    v = round(float(v), 2)
    return int(v) if v.is_integer() else v


@register_env("data_understanding")
class DataUnderstandingEnv(Environment):
    description = "Statistics over a sales table: columns, stats, groups, counts, top rows."
    scenario = "DU"
    #: the split policy of its generated data (the goal templates are in
    #: :mod:`toollab.envs.tasks.data_understanding`)
    tasks: ClassVar[TaskSet] = TaskSet("data_understanding", lends_goals=True)

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.rows = list(_sales_table(seed))  # read-only rows, shared
        self.log = QueryLog()

    def state(self) -> dict[str, Any]:
        return self.log.flat()

    def _col(self, column: str) -> list[Any]:
        return [r[column] for r in self.rows]

    @tool(returns=False)
    def list_columns(self) -> dict[str, Any]:
        """Column names and the number of rows."""
        return self.log.add({"kind": "columns", "columns": list(COLUMNS), "rows": len(self.rows)})

    @tool(returns=False)
    def column_stat(
        self,
        column: Numeric,
        stat: Literal["mean", "median", "min", "max", "sum", "std", "count"],
    ) -> dict[str, Any]:
        """One statistic of a numeric column."""
        xs = self._col(column)
        fns: dict[str, Callable[..., Any]] = {
            "mean": statistics.mean,
            "median": statistics.median,
            "min": min,
            "max": max,
            "sum": sum,
            "std": statistics.pstdev,
            "count": len,
        }
        fn = fns[stat]
        return self.log.add(
            {"kind": "stat", "column": column, "stat": stat, "value": _round(fn(xs))}
        )

    @tool(returns=False)
    def group_aggregate(
        self,
        group_by: Literal["region", "product", "month"],
        column: Numeric,
        agg: Literal["sum", "mean", "max", "min", "count"] = "sum",
    ) -> dict[str, Any]:
        """Aggregate a numeric column per group."""
        groups: dict[str, list[float]] = defaultdict(list)
        for r in self.rows:
            groups[r[group_by]].append(r[column])
        fns: dict[str, Callable[..., Any]] = {
            "sum": sum,
            "mean": statistics.mean,
            "max": max,
            "min": min,
            "count": len,
        }
        fn = fns[agg]
        return self.log.add(
            {
                "kind": "groups",
                "group_by": group_by,
                "column": column,
                "agg": agg,
                "groups": {k: _round(fn(v)) for k, v in sorted(groups.items())},
            }
        )

    @tool(returns=False)
    def count_rows(
        self,
        column: Column,
        value: str | float,
    ) -> dict[str, Any]:
        """Number of rows where a column equals a value."""
        target = str(value).strip().lower()
        n = sum(1 for r in self.rows if str(r[column]).lower() == target)
        return self.log.add({"kind": "count", "column": column, "value": target, "count": n})

    @tool(returns=False)
    def top_rows(
        self,
        column: Numeric,
        k: Annotated[int, Param(minimum=1, maximum=10)] = 3,
        ascending: bool = False,
    ) -> dict[str, Any]:
        """The k rows with the largest (or smallest) values of a column."""
        rows = sorted(
            self.rows,
            key=lambda r: (r[column], r["region"], r["product"], r["month"]),
            reverse=not ascending,
        )
        return self.log.add(
            {"kind": "top", "column": column, "ascending": ascending, "rows": rows[:k]}
        )

    @tool(returns=False)
    def correlation(
        self,
        column_a: Numeric,
        column_b: Numeric,
    ) -> dict[str, Any]:
        """Pearson correlation of two numeric columns."""
        a, b = self._col(column_a), self._col(column_b)
        ma, mb = statistics.mean(a), statistics.mean(b)
        sa = math.sqrt(sum((x - ma) ** 2 for x in a))
        sb = math.sqrt(sum((y - mb) ** 2 for y in b))
        if sa == 0 or sb == 0:
            raise EnvError("a constant column has no correlation", BAD_VALUE)
        r = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True)) / (sa * sb)
        pair = sorted((column_a, column_b))
        return self.log.add({"kind": "correlation", "columns": pair, "r": round(r, 3)})

    @tool(returns=False)
    def distinct_values(self, column: Column) -> dict[str, Any]:
        """The distinct values of a column."""
        vals = sorted({str(v) for v in self._col(column)})
        return self.log.add({"kind": "distinct", "column": column, "values": vals})
