"""Spreadsheet goal templates.  The goal shows the sheet (a compact table with column letters),
as SambaNova's Google Sheets task does.  ``rename_column`` is held out of training (test split
only).  ``two_goals`` joins two edits; the second is phrased against the sheet the first leaves
(a row deleted or sorted moves the cells that follow).  A column computed by an earlier goal stays
consistent: a new row gets its computed value, and no goal edits a computed column or a cell it is
computed from."""

from __future__ import annotations

import random
from typing import Any

from toollab.envs.base import EnvError, Environment
from toollab.envs.spreadsheet import (
    VALUE_CAP,
    SpreadsheetEnv,
    col_letter,
    evaluate,
    norm_value,
    render_sheet,
)
from toollab.envs.tasks.common import Goal, TemplateError, call, pick
from toollab.schema import GoldCall

#: formulas over a sheet serve the sales-table questions of ``data_understanding`` too
TASKS = SpreadsheetEnv.tasks

_FUNCS = {"SUM": "the sum", "AVERAGE": "the average", "MAX": "the maximum", "MIN": "the minimum"}
_NEW_ITEMS = {
    "Product": ("goat", "turkey", "tofu", "shrimp"),
    "Name": ("Gus", "Hana", "Ivo", "Jin"),
    "Student": ("Sven", "Tara", "Uma", "Vik"),
}
#: sheet -> (new column, fill values, how the goal says the fill)
_NEW_COLS: dict[str, tuple[tuple[str, tuple[Any, ...]], ...]] = {
    "products": (
        ("Supplier", ("Acme", "FarmCo")),
        ("On sale", ("yes", "no")),
        ("Discount", (0, 5)),
    ),
    "staff": (("Office", ("Berlin", "Lisbon")), ("Remote", ("yes", "no")), ("Bonus", (0, 1000))),
    "grades": (
        ("Term", ("spring", "autumn")),
        ("Passed", ("yes", "pending")),
        ("Extra credit", (0, 2)),
    ),
}
#: column -> sensible new names
_RENAMES = {
    "Product": ("Item", "Meat"),
    "Cost": ("Unit cost", "Purchase price"),
    "Price": ("Sale price", "Unit price"),
    "Stock": ("Units in stock", "Inventory"),
    "Name": ("Employee", "Full name"),
    "Dept": ("Department", "Team"),
    "Salary": ("Annual salary", "Pay"),
    "Age": ("Age in years", "Years old"),
    "Student": ("Pupil", "Name"),
    "Math": ("Mathematics", "Maths"),
    "Science": ("Natural science", "Sciences"),
    "English": ("English language", "Literature"),
}
#: sheet -> (new column, expression, how the goal says it)
_COMPUTED = {
    "products": (
        ("Margin", "Price - Cost", "Price minus Cost"),
        ("Stock value", "Price * Stock", "Price times Stock"),
        ("Stock cost", "Cost * Stock", "Cost times Stock"),
    ),
    "staff": (
        ("Monthly salary", "Salary / 12", "Salary divided by 12"),
        ("Bonus", "Salary * 0.1", "10% of Salary"),
        ("Age next year", "Age + 1", "Age plus 1"),
    ),
    "grades": (
        ("Total", "Math + Science + English", "the sum of Math, Science and English"),
        ("Math and Science", "Math + Science", "Math plus Science"),
        ("Science minus Math", "Science - Math", "Science minus Math"),
    ),
}


class _Sheet:
    def __init__(self, env: Environment) -> None:
        if not isinstance(env, SpreadsheetEnv):
            raise TypeError("spreadsheet templates need a SpreadsheetEnv")
        self.title = env.title
        self.cols = [str(c) for c in env.df.columns]
        self.rows = [[norm_value(v) for v in r] for r in env.df.values.tolist()]
        if not self.rows:
            raise TemplateError("the sheet has no data rows")
        self.numeric = [
            c
            for j, c in enumerate(self.cols)
            if all(isinstance(r[j], int | float) for r in self.rows)
        ]
        self.key = self.cols[0]
        self.cap = VALUE_CAP.get(self.title)
        self.derived = self._derived()

    def _derived(self) -> dict[str, str]:
        """Columns holding one of the sheet's computed expressions in every row -> expression."""
        out: dict[str, str] = {}
        for name, expression, _words in _COMPUTED.get(self.title, ()):
            if name not in self.cols:
                continue
            try:
                ok = all(
                    norm_value(self.compute(expression, dict(zip(self.cols, r, strict=True))))
                    == r[self.cols.index(name)]
                    for r in self.rows
                )
            except EnvError:
                ok = False
            if ok:
                out[name] = expression
        return out

    @staticmethod
    def compute(expression: str, row: dict[str, Any]) -> Any:
        def name(n: str) -> Any:
            if n not in row:
                raise EnvError(f"no column {n!r}")
            return row[n]

        return evaluate(expression, name)

    def editable(self) -> list[str]:
        """Numeric columns a goal may edit: neither computed nor an input of a computed one."""
        inputs = {w for e in self.derived.values() for w in e.split() if w[0].isalpha()}
        return [c for c in self.numeric if c not in self.derived and c not in inputs]

    def letter(self, col: str) -> str:
        return col_letter(self.cols.index(col))

    def value(self, i: int, col: str) -> Any:
        return self.rows[i][self.cols.index(col)]

    def new_value(self, rng: random.Random, old: int) -> int:
        """A plausible new number for a cell holding ``old`` (never above the sheet's cap)."""
        hi = old + 9 if self.cap is None or old > self.cap else min(self.cap, old + 9)
        choices = [v for v in range(max(1, old - 9), hi + 1) if v != old]
        return pick(rng, choices)

    def task(self, goal: str, calls: list[GoldCall], **kw: Any) -> Goal:
        return Goal(query=goal, calls=calls, context=render_sheet(self.cols, self.rows), **kw)


@TASKS.template("update_cell", weight=2)
def update_cell(rng: random.Random, env: Environment) -> Goal:
    s = _Sheet(env)
    i = rng.randrange(len(s.rows))
    if not s.editable():
        raise TemplateError("every numeric column is computed or feeds a computed one")
    col = pick(rng, s.editable())
    value = s.new_value(rng, int(s.value(i, col)))
    cell = f"{s.letter(col)}{i + 2}"
    return s.task(
        f"Set the {col} of {s.rows[i][0]} to {value}.",
        [call("update_cell", cell=cell, value=value)],
    )


@TASKS.template("aggregate_formula", weight=2)
def aggregate_formula(rng: random.Random, env: Environment) -> Goal:
    s = _Sheet(env)
    col = pick(rng, s.numeric)
    fn = pick(rng, list(_FUNCS))
    L, last = s.letter(col), len(s.rows) + 1
    return s.task(
        f"Write {_FUNCS[fn]} of {col} ({L}2:{L}{last}) in the cell below the last row.",
        [call("write_formula", cell=f"{L}{last + 1}", formula=f"={fn}({L}2:{L}{last})")],
    )


@TASKS.template("sort")
def sort(rng: random.Random, env: Environment) -> Goal:
    s = _Sheet(env)
    col = pick(rng, s.cols)
    asc = rng.random() < 0.5
    args: dict[str, Any] = {"column": col} if asc else {"column": col, "ascending": False}
    numeric = col in s.numeric
    order = (
        pick(rng, ["ascending", "from smallest to largest" if numeric else "from A to Z"])
        if asc
        else pick(rng, ["descending", "from largest to smallest" if numeric else "from Z to A"])
    )
    return s.task(f"Sort the rows by {col}, {order}.", [call("sort_rows", **args)])


@TASKS.template("add_row")
def add_row(rng: random.Random, env: Environment) -> Goal:
    s = _Sheet(env)
    taken = {str(r[0]) for r in s.rows}
    names = [n for n in _NEW_ITEMS.get(s.key, ("new",)) if n not in taken]
    if not names:
        raise TemplateError("every new name is taken")
    name = pick(rng, names)
    values: dict[str, Any] = {s.key: name}
    for c in s.cols[1:]:
        if c in s.derived:
            continue
        if c in s.numeric:
            values[c] = s.new_value(rng, int(s.value(0, c)))
        else:
            values[c] = pick(rng, sorted({str(r[s.cols.index(c)]) for r in s.rows}))
    for c, expression in s.derived.items():  # computed from the new row's own values
        values[c] = norm_value(s.compute(expression, values))
    values = {c: values[c] for c in s.cols}
    desc = ", ".join(f"{k} {v}" for k, v in values.items() if k != s.key)
    return s.task(f"Add a row for {name} with {desc}.", [call("add_row", values=values)])


@TASKS.template("delete_row")
def delete_row(rng: random.Random, env: Environment) -> Goal:
    s = _Sheet(env)
    if len(s.rows) < 2:
        raise TemplateError("the last data row stays")
    i = rng.randrange(len(s.rows))
    return s.task(f"Delete the row of {s.rows[i][0]}.", [call("delete_row", row=i + 2)])


@TASKS.template("add_column")
def add_column(rng: random.Random, env: Environment) -> Goal:
    s = _Sheet(env)
    options = [c for c in _NEW_COLS.get(s.title, ()) if c[0] not in s.cols]
    if not options:
        raise TemplateError("no new column left")
    col, fills = pick(rng, options)
    fill = pick(rng, fills)
    return s.task(
        f"Add a column {col} with the value {fill} in every row.",
        [call("add_column", column=col, fill=norm_value(fill))],
    )


@TASKS.template("delete_column")
def delete_column(rng: random.Random, env: Environment) -> Goal:
    s = _Sheet(env)
    if len(s.cols) < 3:
        raise TemplateError("too few columns left")
    col = pick(rng, s.cols[1:])
    return s.task(f"Remove the {col} column.", [call("delete_column", column=col)])


@TASKS.template("rename_column")
def rename_column(rng: random.Random, env: Environment) -> Goal:
    s = _Sheet(env)
    options = [c for c in s.cols if c in _RENAMES]
    if not options:
        raise TemplateError("no column to rename")
    col = pick(rng, options)
    new = pick(rng, [n for n in _RENAMES[col] if n not in s.cols])
    return s.task(
        f"Rename the column {col} to {new}.", [call("rename_column", column=col, new_name=new)]
    )


@TASKS.template("computed_column")
def computed_column(rng: random.Random, env: Environment) -> Goal:
    s = _Sheet(env)
    options = [
        c
        for c in _COMPUTED.get(s.title, ())
        if c[0] not in s.cols and all(w in s.numeric for w in c[1].split() if w[0].isalpha())
    ]
    if not options:
        raise TemplateError("no computed column fits the sheet")
    name, expression, words = pick(rng, options)
    return s.task(
        f"Add a column {name} equal to {words} for every row.",
        [call("add_computed_column", column=name, expression=expression)],
    )


@TASKS.template("filter")
def filter_rows(rng: random.Random, env: Environment) -> Goal:
    s = _Sheet(env)
    col = pick(rng, s.numeric)
    vals = sorted(s.value(i, col) for i in range(len(s.rows)))
    cut = vals[len(vals) // 2]
    op, word = pick(
        rng, [(">", "greater than"), (">=", "at least"), ("<", "less than"), ("<=", "at most")]
    )
    return s.task(
        f"Keep only the rows whose {col} is {word} {cut}.",
        [call("filter_rows", column=col, operator=op, value=cut)],
    )


@TASKS.template("filter_then_sort", atomic=False)
def filter_then_sort(rng: random.Random, env: Environment) -> Goal:
    s = _Sheet(env)
    if len(s.numeric) < 2:
        raise TemplateError("two numeric columns needed")
    col, by = rng.sample(s.numeric, 2)
    vals = sorted(s.value(i, col) for i in range(len(s.rows)))
    cut = vals[len(vals) // 2]
    return s.task(
        f"Keep the rows whose {col} is greater than {cut}, then sort them by {by} descending.",
        [
            call("filter_rows", column=col, operator=">", value=cut),
            call("sort_rows", column=by, ascending=False),
        ],
    )


@TASKS.template("update_and_sum", atomic=False)
def update_and_sum(rng: random.Random, env: Environment) -> Goal:
    s = _Sheet(env)
    if not s.editable():
        raise TemplateError("every numeric column is computed or feeds a computed one")
    col = pick(rng, s.editable())
    i = rng.randrange(len(s.rows))
    value = s.new_value(rng, int(s.value(i, col)))
    L, last = s.letter(col), len(s.rows) + 1
    return s.task(
        f"Set the {col} of {s.rows[i][0]} to {value}, then write the sum of {col} below the last row.",
        [
            call("update_cell", cell=f"{L}{i + 2}", value=value),
            call("write_formula", cell=f"{L}{last + 1}", formula=f"=SUM({L}2:{L}{last})"),
        ],
    )


TASKS.add_composition(weight=5)
