"""Spreadsheet goal templates.  The goal shows the sheet (a compact table with column letters),
as SambaNova's Google Sheets task does.  ``rename_column`` is held out of training."""

from __future__ import annotations

import random
from typing import Any

from toollab.envs.base import Environment
from toollab.envs.spreadsheet import SpreadsheetEnv, col_letter, norm_value, render_sheet
from toollab.envs.tasks.common import Task, TaskSet, call, pick
from toollab.schema import GoldCall

TASKS = TaskSet("spreadsheet", held_out_tools=("rename_column",))

_FUNCS = {"SUM": "the sum", "AVERAGE": "the average", "MAX": "the maximum", "MIN": "the minimum"}
_NEW_ITEMS = {
    "Product": ("goat", "turkey", "tofu", "shrimp"),
    "Name": ("Gus", "Hana", "Ivo", "Jin"),
    "Student": ("Sven", "Tara", "Uma", "Vik"),
}
_NEW_COLS = ("Notes", "Flag", "Region", "Checked")


class _Sheet:
    def __init__(self, env: Environment) -> None:
        if not isinstance(env, SpreadsheetEnv):
            raise TypeError("spreadsheet templates need a SpreadsheetEnv")
        self.cols = [str(c) for c in env.df.columns]
        self.rows = [[norm_value(v) for v in r] for r in env.df.values.tolist()]
        self.numeric = [
            c
            for j, c in enumerate(self.cols)
            if all(isinstance(r[j], int | float) for r in self.rows)
        ]
        self.key = self.cols[0]

    def letter(self, col: str) -> str:
        return col_letter(self.cols.index(col))

    def show(self) -> str:
        return render_sheet(self.cols, self.rows)

    def task(self, goal: str, calls: list[GoldCall], **kw: Any) -> Task:
        return Task(query=f"{self.show()}\nTask: {goal}", calls=calls, **kw)


@TASKS.template("update_cell", weight=2)
def update_cell(rng: random.Random, env: Environment) -> Task:
    s = _Sheet(env)
    i = rng.randrange(len(s.rows))
    col = pick(rng, s.numeric)
    value = int(s.rows[i][s.cols.index(col)]) + rng.randint(1, 9)
    cell = f"{s.letter(col)}{i + 2}"
    return s.task(
        f"Set the {col} of {s.rows[i][0]} to {value}.",
        [call("update_cell", cell=cell, value=value)],
    )


@TASKS.template("aggregate_formula", weight=2)
def aggregate_formula(rng: random.Random, env: Environment) -> Task:
    s = _Sheet(env)
    col = pick(rng, s.numeric)
    fn = pick(rng, list(_FUNCS))
    L, last = s.letter(col), len(s.rows) + 1
    return s.task(
        f"Write {_FUNCS[fn]} of {col} ({L}2:{L}{last}) in the cell below the last row.",
        [call("write_formula", cell=f"{L}{last + 1}", formula=f"={fn}({L}2:{L}{last})")],
    )


@TASKS.template("sort")
def sort(rng: random.Random, env: Environment) -> Task:
    s = _Sheet(env)
    col = pick(rng, s.cols)
    asc = rng.random() < 0.5
    args: dict[str, Any] = {"column": col} if asc else {"column": col, "ascending": False}
    order = (
        pick(rng, ["ascending", "from smallest to largest"])
        if asc
        else pick(rng, ["descending", "from largest to smallest"])
    )
    return s.task(f"Sort the rows by {col}, {order}.", [call("sort_rows", **args)])


@TASKS.template("add_row")
def add_row(rng: random.Random, env: Environment) -> Task:
    s = _Sheet(env)
    name = pick(rng, list(_NEW_ITEMS.get(s.key, ("new",))))
    values: dict[str, Any] = {s.key: name}
    for c in s.cols[1:]:
        j = s.cols.index(c)
        values[c] = (
            (int(s.rows[0][j]) + rng.randint(-3, 3))
            if c in s.numeric
            else pick(rng, [str(r[j]) for r in s.rows])
        )
    desc = ", ".join(f"{k} {v}" for k, v in values.items() if k != s.key)
    return s.task(f"Add a row for {name} with {desc}.", [call("add_row", values=values)])


@TASKS.template("delete_row")
def delete_row(rng: random.Random, env: Environment) -> Task:
    s = _Sheet(env)
    i = rng.randrange(len(s.rows))
    return s.task(f"Delete the row of {s.rows[i][0]}.", [call("delete_row", row=i + 2)])


@TASKS.template("add_column")
def add_column(rng: random.Random, env: Environment) -> Task:
    s = _Sheet(env)
    col = pick(rng, _NEW_COLS)
    fill = pick(rng, ["yes", "no", "0", "pending"])
    return s.task(
        f"Add a column {col} with the value {fill} in every row.",
        [call("add_column", column=col, fill=norm_value(fill))],
    )


@TASKS.template("delete_column")
def delete_column(rng: random.Random, env: Environment) -> Task:
    s = _Sheet(env)
    col = pick(rng, s.cols[1:])
    return s.task(f"Remove the {col} column.", [call("delete_column", column=col)])


@TASKS.template("rename_column")
def rename_column(rng: random.Random, env: Environment) -> Task:
    s = _Sheet(env)
    col = pick(rng, s.cols)
    new = pick(rng, ["Total", "Item", "Value", "Label", "Amount"])
    return s.task(
        f"Rename the column {col} to {new}.", [call("rename_column", column=col, new_name=new)]
    )


@TASKS.template("computed_column")
def computed_column(rng: random.Random, env: Environment) -> Task:
    s = _Sheet(env)
    a, b = rng.sample(s.numeric, 2)
    op = pick(rng, ["-", "+", "*"])
    word = {"-": "minus", "+": "plus", "*": "times"}[op]
    name = pick(rng, ["Result", "Derived", "Calc"])
    return s.task(
        f"Add a column {name} equal to {a} {word} {b} for every row.",
        [call("add_computed_column", column=name, expression=f"{a} {op} {b}")],
    )


@TASKS.template("filter")
def filter_rows(rng: random.Random, env: Environment) -> Task:
    s = _Sheet(env)
    col = pick(rng, s.numeric)
    vals = sorted(r[s.cols.index(col)] for r in s.rows)
    cut = vals[len(vals) // 2]
    op, word = pick(
        rng, [(">", "greater than"), (">=", "at least"), ("<", "less than"), ("<=", "at most")]
    )
    return s.task(
        f"Keep only the rows whose {col} is {word} {cut}.",
        [call("filter_rows", column=col, operator=op, value=cut)],
    )


@TASKS.template("filter_then_sort")
def filter_then_sort(rng: random.Random, env: Environment) -> Task:
    s = _Sheet(env)
    col, by = rng.sample(s.numeric, 2)
    vals = sorted(r[s.cols.index(col)] for r in s.rows)
    cut = vals[len(vals) // 2]
    return s.task(
        f"Keep the rows whose {col} is greater than {cut}, then sort them by {by} descending.",
        [
            call("filter_rows", column=col, operator=">", value=cut),
            call("sort_rows", column=by, ascending=False),
        ],
    )


@TASKS.template("update_and_sum")
def update_and_sum(rng: random.Random, env: Environment) -> Task:
    s = _Sheet(env)
    col = pick(rng, s.numeric)
    i = rng.randrange(len(s.rows))
    value = int(s.rows[i][s.cols.index(col)]) + rng.randint(1, 9)
    L, last = s.letter(col), len(s.rows) + 1
    return s.task(
        f"Set the {col} of {s.rows[i][0]} to {value}, then write the sum of {col} below the last row.",
        [
            call("update_cell", cell=f"{L}{i + 2}", value=value),
            call("write_formula", cell=f"{L}{last + 1}", formula=f"=SUM({L}2:{L}{last})"),
        ],
    )
