"""The spreadsheet environment's range tools (Google Sheets' ``values`` and ``copyPaste`` /
``sortRange`` / ``findReplace`` requests): write, clear, copy, move, sort, fill and scale a block
of cells, insert and append rows, find and replace.  They act on the active sheet; row 1 holds
the headers and is never cleared, sorted or scaled."""

from __future__ import annotations

from typing import Annotated, Any

from toollab.envs.base import BAD_VALUE, EnvError
from toollab.envs.spreadsheet_model import (
    RANGE_PATTERN,
    Block,
    Sheet,
    Workbook,
    col_index,
    is_number,
    norm_value,
    parse_block,
)
from toollab.tools.decorator import Param, tool

Range = Annotated[str, Param(pattern=RANGE_PATTERN)]
Value = str | float


class BookAccess:
    """What every tool mixin of the spreadsheet environment reads: the workbook."""

    book: Workbook

    def _active(self) -> Sheet:
        return self.book.active

    def _data_block(self, text: str, *, grow: int = 0) -> Block:
        """A block of the active sheet below the header row."""
        b = self._active().block(text, grow=grow)
        if b.r1 < 2:
            raise EnvError(f"range {b.a1} includes row 1, the header row", BAD_VALUE)
        return b


class RangeTools(BookAccess):
    """Mixin of :class:`~toollab.envs.spreadsheet.SpreadsheetEnv`: the range tools."""

    @tool(returns=False)
    def set_values(self, range: Range, values: list[list[Value]]) -> str:
        """Write a block of values (rows of cells) starting at a range; rows below the last row
        are added.

        Args:
            range: A1 range, e.g. B2:C3, or its top-left cell.
            values: The rows of values, top to bottom.
        """
        if not values or not all(values) or len({len(r) for r in values}) != 1:
            raise EnvError("values must be rows of equal, non-zero length", BAD_VALUE)
        start = parse_block(range)
        if start.height * start.width == 1:
            start = Block(
                start.r1, start.c1, start.r1 + len(values) - 1, start.c1 + len(values[0]) - 1
            )
        b = self._data_block(start.a1, grow=len(values))
        if (b.height, b.width) != (len(values), len(values[0])):
            raise EnvError(
                f"range {b.a1} is {b.height}x{b.width}, the values are "
                f"{len(values)}x{len(values[0])}",
                BAD_VALUE,
            )
        sheet = self._active()
        for i, row in enumerate(values):
            for j, v in enumerate(row):
                sheet.put(b.r1 + i, b.c1 + j, v)
        return "ok"

    @tool(returns=False)
    def clear_range(self, range: Range) -> str:
        """Clear the values of a range (formats stay).

        Args:
            range: A1 range below the header row, e.g. C2:C5.
        """
        b = self._data_block(range)
        sheet = self._active()
        for r, c in b.cells():
            sheet.put(r, c, "")
        return "ok"

    def _paste(self, source: str, destination: str) -> tuple[Block, Block]:
        src = self._data_block(source)
        sheet = self._active()
        values = block_values(sheet, src)
        top = parse_block(destination)
        dst = self._data_block(
            Block(top.r1, top.c1, top.r1 + src.height - 1, top.c1 + src.width - 1).a1,
            grow=src.height,
        )
        for i, row in enumerate(values):
            for j, v in enumerate(row):
                sheet.put(dst.r1 + i, dst.c1 + j, v)
        return src, dst

    @tool(returns=False)
    def copy_range(self, source: Range, destination: Range) -> str:
        """Copy the values of a range to another place of the sheet.

        Args:
            source: The A1 range to copy.
            destination: The top-left cell to paste at.
        """
        self._paste(source, destination)
        return "ok"

    @tool(returns=False)
    def move_range(self, source: Range, destination: Range) -> str:
        """Move (cut and paste) the values of a range to another place; the source is cleared.

        Args:
            source: The A1 range to move.
            destination: The top-left cell to paste at.
        """
        src, dst = self._paste(source, destination)
        sheet = self._active()
        pasted = set(dst.cells())
        for r, c in src.cells():
            if (r, c) not in pasted:
                sheet.put(r, c, "")
        return "ok"

    @tool(returns=False)
    def sort_range(
        self,
        range: Range,
        column: Annotated[str, Param(pattern="^[A-Z]{1,2}$")],
        ascending: bool = True,
    ) -> str:
        """Sort the rows of a range by one of its columns (cells outside the range stay).

        Args:
            range: A1 range below the header row, e.g. A2:D5.
            column: The column letter to sort by.
        """
        b = self._data_block(range)
        key = col_index(column) - b.c1
        if not 0 <= key < b.width:
            raise EnvError(f"column {column} is not in range {b.a1}", BAD_VALUE)
        sheet = self._active()
        rows = block_values(sheet, b)
        keys = [row[key] for row in rows]
        if any(is_number(k) for k in keys) and not all(is_number(k) for k in keys):
            raise EnvError(f"column {column} of {b.a1} mixes text and numbers", BAD_VALUE)
        rows.sort(key=lambda row: row[key], reverse=not ascending)
        for i, row in enumerate(rows):
            for j, v in enumerate(row):
                sheet.put(b.r1 + i, b.c1 + j, v)
        return "ok"

    @tool(returns=False)
    def fill_range(self, range: Range, value: Value) -> str:
        """Write one value into every cell of a range.

        Args:
            range: A1 range below the header row.
        """
        b = self._data_block(range, grow=1)
        sheet = self._active()
        for r, c in b.cells():
            sheet.put(r, c, value)
        return "ok"

    @tool(returns=False)
    def scale_range(self, range: Range, factor: float) -> str:
        """Multiply every number in a range by a factor (e.g. 1.1 raises them by 10%); text
        cells stay.

        Args:
            range: A1 range below the header row.
        """
        b = self._data_block(range)
        sheet = self._active()
        for r, c in b.cells():
            v = sheet.get(r, c)
            if is_number(v):
                sheet.put(r, c, round(v * factor, 2))
        return "ok"

    @tool(returns=False)
    def insert_rows(
        self,
        count: Annotated[int, Param(minimum=1, maximum=5)],
        row: Annotated[int, Param(minimum=2)],
    ) -> str:
        """Insert empty rows above a sheet row (the rows below move down).

        Args:
            count: How many rows.
            row: The sheet row number the new rows go above (2 = first data row).
        """
        import pandas as pd  # the environment checked that pandas is installed

        sheet = self._active()
        if row > sheet.n_rows:
            raise EnvError(f"row {row} is below the last row ({sheet.n_rows})", BAD_VALUE)
        at = row - 2
        blank = pd.DataFrame([[""] * sheet.n_cols] * count, columns=sheet.df.columns, dtype=object)
        sheet.df = pd.concat([sheet.df.iloc[:at], blank, sheet.df.iloc[at:]], ignore_index=True)
        return "ok"

    @tool(returns=False)
    def append_rows(self, values: list[list[Value]]) -> str:
        """Append rows below the last row (a row shorter than the sheet is padded with empty
        cells).

        Args:
            values: The rows to add, each a list of cell values from column A.
        """
        sheet = self._active()
        if not values or any(not r or len(r) > sheet.n_cols for r in values):
            raise EnvError(f"each row needs 1 to {sheet.n_cols} values", BAD_VALUE)
        for r in values:
            sheet.df.loc[len(sheet.df)] = [norm_value(v) for v in r] + [""] * (
                sheet.n_cols - len(r)
            )
        return "ok"

    @tool(returns=False)
    def find_replace(
        self, find: str, replacement: str, match_case: bool = False, entire_cell: bool = False
    ) -> int:
        """Find text in the data cells of the active sheet and replace it.

        Args:
            find: The text to look for.
            replacement: The text to put instead.
            match_case: Only matches with the same upper and lower case.
            entire_cell: Only cells whose whole content is the text.
        """
        if not find:
            raise EnvError("find must not be empty", BAD_VALUE)
        sheet = self._active()
        changed = 0
        for r in range(2, sheet.n_rows + 1):
            for c in range(sheet.n_cols):
                new = _replaced(str(sheet.get(r, c)), find, replacement, match_case, entire_cell)
                if new is not None:
                    sheet.put(r, c, new)
                    changed += 1
        return changed


def block_values(sheet: Sheet, b: Block) -> list[list[Any]]:
    """The values of a block, row by row."""
    return [[sheet.get(r, c) for c in range(b.c1, b.c2 + 1)] for r in range(b.r1, b.r2 + 1)]


def _replaced(text: str, find: str, repl: str, match_case: bool, whole: bool) -> Any:
    """The cell text after the replacement, ``None`` when it does not match."""
    if whole:
        same = text == find if match_case else text.lower() == find.lower()
        return repl if same else None
    if match_case:
        return text.replace(find, repl) if find in text else None
    low, f = text.lower(), find.lower()
    if f not in low:
        return None
    out, i = [], 0
    while (j := low.find(f, i)) >= 0:
        out.append(text[i:j] + repl)
        i = j + len(f)
    return "".join(out) + text[i:]
