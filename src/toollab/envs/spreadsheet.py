"""Spreadsheet manipulation on a real pandas DataFrame, judged by the final sheet.

Cells use A1 notation; row 1 is the header row, data rows start at row 2 (as in Google Sheets /
gspread).  Values that look like numbers are stored as numbers (``USER_ENTERED``).  Formulas
(``=SUM(B2:B6)``, ``=AVERAGE(..)``, ``MIN``, ``MAX``, ``COUNT``, arithmetic over cells) are
evaluated when written and the value is stored.  The state is every cell (``"A1": "Product"``)
plus the shape, so dict-F1 gives partial credit and success needs the whole sheet to match.
"""

from __future__ import annotations

import ast
import operator
import random
import re
from collections.abc import Callable
from typing import Annotated, Any, ClassVar, Literal

from toollab.envs.base import (
    BAD_VALUE,
    NOT_FOUND,
    EnvError,
    Environment,
    register_env,
)
from toollab.envs.taskset import TaskSet
from toollab.errors import BackendError
from toollab.tools.decorator import Param, tool

#: the bundled sheets: title -> (columns, row factory)
SHEETS: dict[str, tuple[list[str], list[list[Any]]]] = {
    "products": (
        ["Product", "Cost", "Price", "Stock"],
        [
            ["beef", 8, 12, 40],
            ["pork", 5, 9, 25],
            ["chicken", 4, 7, 60],
            ["lamb", 9, 15, 12],
            ["duck", 7, 11, 8],
            ["fish", 6, 10, 30],
        ],
    ),
    "staff": (
        ["Name", "Dept", "Salary", "Age"],
        [
            ["Ana", "Sales", 52000, 34],
            ["Ben", "IT", 61000, 29],
            ["Cleo", "HR", 48000, 41],
            ["Dev", "IT", 70000, 38],
            ["Eli", "Sales", 45000, 25],
            ["Fay", "HR", 50000, 31],
        ],
    ),
    "grades": (
        ["Student", "Math", "Science", "English"],
        [
            ["Liam", 78, 85, 90],
            ["Mia", 92, 88, 79],
            ["Noah", 65, 70, 72],
            ["Olga", 88, 94, 91],
            ["Pia", 73, 60, 84],
            ["Raj", 95, 91, 87],
        ],
    ),
}
SHEET_NAMES = tuple(SHEETS)
#: the largest value a sheet's numbers may take (grades are percentages)
VALUE_CAP: dict[str, int] = {"grades": 100}
OPERATORS = ("==", "!=", ">", ">=", "<", "<=", "contains")
_CELL = re.compile(r"^([A-Z]{1,2})([1-9]\d*)$")
_RANGE = re.compile(r"\b([A-Z]{1,2}[1-9]\d*):([A-Z]{1,2}[1-9]\d*)\b")
_BIN: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def col_letter(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


def col_index(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n - 1


def norm_value(v: Any) -> Any:
    """Numbers stay numbers (integral floats become ints); numeric text becomes a number."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        t = v.strip()
        try:
            v = float(t) if any(c in t for c in ".eE") else int(t)
        except ValueError:
            return v
    if isinstance(v, float):
        v = round(v, 6)
        return int(v) if v.is_integer() else v
    if hasattr(v, "item"):  # numpy scalars
        return norm_value(v.item())
    return v


def sheet_for_seed(seed: int) -> tuple[str, list[str], list[list[Any]]]:
    """The sheet an environment seeded with ``seed`` starts from (values vary with the seed)."""
    title = SHEET_NAMES[seed % len(SHEET_NAMES)]
    cols, rows = SHEETS[title]
    rng = random.Random(f"sheet:{seed}")
    cap = VALUE_CAP.get(title)
    out = []
    for row in rows:
        new = [row[0]] + [
            v if isinstance(v, str) else _jitter(v, rng.uniform(0.8, 1.2), cap) for v in row[1:]
        ]
        out.append(new)
    rng.shuffle(out)
    return title, list(cols), out[: 4 + seed % 3]


def _jitter(v: int, factor: float, cap: int | None) -> int:
    out = max(1, int(v * factor))
    return out if cap is None else min(cap, out)


def render_sheet(cols: list[str], rows: list[list[Any]]) -> str:
    """A compact Markdown table with column letters, for task texts."""
    head = "| " + " | ".join(f"{col_letter(i)}:{c}" for i, c in enumerate(cols)) + " |"
    body = ["| " + " | ".join(str(v) for v in r) + " |" for r in rows]
    return "\n".join([head, *body])


@register_env("spreadsheet")
class SpreadsheetEnv(Environment):
    description = "Edit a worksheet: cells, formulas, sorting, rows, columns and filters."
    scenario = "AM"
    #: the split policy of its generated data (the goal templates are in
    #: :mod:`toollab.envs.tasks.spreadsheet`)
    tasks: ClassVar[TaskSet] = TaskSet(
        "spreadsheet",
        held_out_tools=("rename_column",),
        also_serves=frozenset({"table_stats"}),
        inverses=(("add_column", "delete_column"), ("add_computed_column", "delete_column")),
    )

    def reset(self, seed: int = 0) -> None:
        try:
            import pandas as pd
        except ImportError as exc:  # pandas is an optional dependency (the eval extra)
            raise BackendError(
                "the spreadsheet environment needs pandas: pip install 'toollab[eval]'"
            ) from exc

        self.seed = seed
        self.title, cols, rows = sheet_for_seed(seed)
        self.df = pd.DataFrame(rows, columns=cols, dtype=object)

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {"shape": [int(self.df.shape[0]) + 1, int(self.df.shape[1])]}
        for j, name in enumerate(self.df.columns):
            out[f"{col_letter(j)}1"] = str(name)
            for i, v in enumerate(self.df.iloc[:, j].tolist()):
                out[f"{col_letter(j)}{i + 2}"] = norm_value(v)
        return out

    # -- helpers --------------------------------------------------------------------------------
    def _column(self, name: str) -> str:
        for c in self.df.columns:
            if str(c) == name:
                return str(c)
        for c in self.df.columns:
            if str(c).lower() == name.strip().lower():
                return str(c)
        raise EnvError(
            f"no column {name!r}; columns: {', '.join(map(str, self.df.columns))}", NOT_FOUND
        )

    def _cell(self, cell: str) -> tuple[int, int]:
        m = _CELL.match(cell.strip().upper())
        if not m:
            raise EnvError(f"{cell!r} is not an A1 cell", BAD_VALUE)
        r, c = int(m.group(2)) - 2, col_index(m.group(1))
        if c >= self.df.shape[1] or r >= self.df.shape[0] + 1:
            raise EnvError(f"cell {cell} is outside the sheet", BAD_VALUE)
        return r, c

    def _write(self, r: int, c: int, value: Any) -> None:
        if r < 0:
            raise EnvError("row 1 holds the header; use rename_column", BAD_VALUE)
        if r == self.df.shape[0]:  # the row right below the data: a new row
            self.df.loc[len(self.df)] = [""] * self.df.shape[1]
        self.df.iat[r, c] = norm_value(value)

    def _cell_value(self, ref: str) -> Any:
        r, c = self._cell(ref)
        if r < 0 or r >= self.df.shape[0]:
            raise EnvError(f"cell {ref} holds no data", BAD_VALUE)
        return norm_value(self.df.iat[r, c])

    def _range(self, a: str, b: str) -> list[Any]:
        (r1, c1), (r2, c2) = self._cell(a), self._cell(b)
        vals = []
        for r in range(min(r1, r2), max(r1, r2) + 1):
            for c in range(min(c1, c2), max(c1, c2) + 1):
                if 0 <= r < self.df.shape[0]:
                    v = norm_value(self.df.iat[r, c])
                    if isinstance(v, int | float) and not isinstance(v, bool):
                        vals.append(v)
        return vals

    # -- tools ---------------------------------------------------------------------------------
    @tool(returns=False)
    def update_cell(
        self, cell: Annotated[str, Param(pattern="^[A-Z]{1,2}[1-9][0-9]*$")], value: str | float
    ) -> str:
        """Write a value into a cell.

        Args:
            cell: A1 notation; row 1 is the header.
        """
        r, c = self._cell(cell)
        self._write(r, c, value)
        return "ok"

    @tool(returns=False)
    def write_formula(
        self,
        cell: Annotated[str, Param(pattern="^[A-Z]{1,2}[1-9][0-9]*$")],
        formula: Annotated[str, Param(pattern="^=")],
    ) -> Any:
        """Write a formula such as =SUM(B2:B5) or =B2*C2 into a cell.

        Args:
            cell: A1 notation; row 1 is the header.
        """
        r, c = self._cell(cell)
        ranges: dict[str, list[Any]] = {}

        def sub(m: re.Match[str]) -> str:
            key = f"RANGE_{len(ranges)}"
            ranges[key] = self._range(m.group(1), m.group(2))
            return key

        expr = _RANGE.sub(sub, formula[1:].strip())

        def name(n: str) -> Any:
            if n in ranges:
                return ranges[n]
            if _CELL.match(n):
                return self._cell_value(n)
            raise EnvError(f"unknown name {n!r} in formula", BAD_VALUE)

        value = evaluate(expr, name)
        if isinstance(value, list):
            raise EnvError("a formula must give one value", BAD_VALUE)
        self._write(r, c, value)
        return norm_value(value)

    @tool(returns=False)
    def sort_rows(self, column: str, ascending: bool = True) -> str:
        """Sort the data rows by a column.

        Args:
            column: Column header name.
        """
        col = self._column(column)
        try:
            self.df = self.df.sort_values(col, ascending=ascending, kind="mergesort").reset_index(
                drop=True
            )
        except TypeError as exc:
            raise EnvError(f"column {col!r} mixes text and numbers: {exc}", BAD_VALUE) from exc
        return "ok"

    @tool(returns=False)
    def add_row(self, values: dict[str, str | float]) -> str:
        """Append a data row; values maps column names to values."""
        row = [""] * self.df.shape[1]
        for k, v in values.items():
            row[list(self.df.columns).index(self._column(k))] = norm_value(v)
        self.df.loc[len(self.df)] = row
        return "ok"

    @tool(returns=False)
    def delete_row(self, row: Annotated[int, Param(minimum=2)]) -> str:
        """Delete a data row by its sheet row number (2 = first data row)."""
        if row - 2 >= self.df.shape[0]:
            raise EnvError(f"row {row} is outside the sheet", BAD_VALUE)
        self.df = self.df.drop(index=row - 2).reset_index(drop=True)
        return "ok"

    @tool(returns=False)
    def add_column(self, column: str, fill: str | float = "") -> str:
        """Append a column filled with one value.

        Args:
            column: Column header name.
        """
        if column in map(str, self.df.columns):
            raise EnvError(f"column {column!r} already exists", BAD_VALUE)
        self.df[column] = [norm_value(fill)] * len(self.df)
        self.df[column] = self.df[column].astype(object)  # cells keep any type, as a sheet's do
        return "ok"

    @tool(returns=False)
    def delete_column(self, column: str) -> str:
        """Delete a column.

        Args:
            column: Column header name.
        """
        self.df = self.df.drop(columns=[self._column(column)])
        return "ok"

    @tool(returns=False)
    def rename_column(self, column: str, new_name: str) -> str:
        """Rename a column.

        Args:
            column: Column header name.
        """
        self.df = self.df.rename(columns={self._column(column): new_name})
        return "ok"

    @tool(returns=False)
    def add_computed_column(self, column: str, expression: str) -> str:
        """Append a column computed per row, e.g. expression 'Price - Cost'.

        Args:
            column: Column header name.
        """
        if column in map(str, self.df.columns):
            raise EnvError(f"column {column!r} already exists", BAD_VALUE)
        values = []
        for i in range(len(self.df)):

            def name(n: str, i: int = i) -> Any:
                return self._row_name(n, i)

            values.append(norm_value(evaluate(expression, name)))
        self.df[column] = values
        self.df[column] = self.df[column].astype(object)
        return "ok"

    def _row_name(self, name: str, i: int) -> Any:
        return norm_value(self.df.at[i, self._column(name)])

    @tool(returns=False)
    def filter_rows(
        self,
        column: str,
        operator: Literal["==", "!=", ">", ">=", "<", "<=", "contains"],
        value: str | float,
    ) -> str:
        """Keep only the data rows where the condition holds.

        Args:
            column: Column header name.
        """
        col = self._column(column)
        target = norm_value(value)
        keep = []
        for v in self.df[col].tolist():
            keep.append(_compare(norm_value(v), operator, target))
        self.df = self.df[keep].reset_index(drop=True)
        return "ok"


def _compare(v: Any, op: str, target: Any) -> bool:
    if op == "contains":
        return str(target).lower() in str(v).lower()
    if op in ("==", "!="):
        eq = v == target or str(v).lower() == str(target).lower()
        return eq if op == "==" else not eq
    if not isinstance(v, int | float) or not isinstance(target, int | float):
        raise EnvError(f"{op} needs numbers, got {v!r} and {target!r}", BAD_VALUE)
    return {">": v > target, ">=": v >= target, "<": v < target, "<=": v <= target}[op]


_FUNCS: dict[str, Callable[[list[Any]], Any]] = {
    "SUM": lambda xs: sum(xs),
    "AVERAGE": lambda xs: sum(xs) / len(xs) if xs else 0,
    "MIN": lambda xs: min(xs) if xs else 0,
    "MAX": lambda xs: max(xs) if xs else 0,
    "COUNT": lambda xs: len(xs),
}


def evaluate(expr: str, name: Callable[[str], Any]) -> Any:
    """Evaluate ``+ - * /`` over numbers, names and the five spreadsheet functions, safely."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise EnvError(f"cannot read expression {expr!r}", BAD_VALUE) from exc

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name):
            return name(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -_num(ev(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            a, b = _num(ev(node.left)), _num(ev(node.right))
            if isinstance(node.op, ast.Div) and b == 0:
                raise EnvError("division by zero", BAD_VALUE)
            return _BIN[type(node.op)](a, b)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id.upper() in _FUNCS
        ):
            xs: list[Any] = []
            for arg in node.args:
                v = ev(arg)
                xs.extend(v if isinstance(v, list) else [_num(v)])
            return _FUNCS[node.func.id.upper()](xs)
        raise EnvError(f"unsupported expression part in {expr!r}", BAD_VALUE)

    return ev(tree)


def _num(v: Any) -> Any:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return v
    raise EnvError(f"{v!r} is not a number", BAD_VALUE)
