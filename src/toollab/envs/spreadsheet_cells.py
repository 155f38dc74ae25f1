"""The spreadsheet environment's cell and table tools (the first ten): write a cell or a formula,
sort, add and delete rows and columns, rename a column, add a computed column, filter rows.
They act on the active sheet (``df``, a pandas DataFrame whose column names are row 1)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from toollab.envs.base import BAD_VALUE, NOT_FOUND, EnvError
from toollab.envs.spreadsheet_formula import compare, evaluate
from toollab.envs.spreadsheet_model import CELL_PATTERN, col_index, norm_value
from toollab.tools.decorator import Param, tool

_CELL = re.compile(r"^([A-Z]{1,2})([1-9]\d*)$")
_RANGE = re.compile(r"\b([A-Z]{1,2}[1-9]\d*):([A-Z]{1,2}[1-9]\d*)\b")


class CellTools:
    """Mixin of :class:`~toollab.envs.spreadsheet.SpreadsheetEnv`: the cell and table tools."""

    df: Any

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
        self, cell: Annotated[str, Param(pattern=CELL_PATTERN)], value: str | float
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
        cell: Annotated[str, Param(pattern=CELL_PATTERN)],
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
            keep.append(compare(norm_value(v), operator, target))
        self.df = self.df[keep].reset_index(drop=True)
        return "ok"
