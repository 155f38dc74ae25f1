"""The spreadsheet environment's formatting and layout tools (Google Sheets' ``repeatCell``
formats, ``mergeCells``, frozen rows, dimension sizes, notes): text style, colours, number
formats, alignment, wrapping, borders; merged cells, frozen rows and columns, column widths, row
heights, hidden columns, notes.  They act on the active sheet."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from toollab.envs.base import BAD_VALUE, EnvError
from toollab.envs.spreadsheet_model import CELL_PATTERN, cell_name, col_index, parse_block
from toollab.envs.spreadsheet_ranges import BookAccess, Range
from toollab.tools.decorator import Param, tool

Colour = Literal["red", "green", "blue", "yellow", "orange", "purple", "gray", "black", "white"]
Column = Annotated[str, Param(pattern="^[A-Z]{1,2}$")]


class FormatTools(BookAccess):
    """Mixin of :class:`~toollab.envs.spreadsheet.SpreadsheetEnv`: the formatting tools."""

    def _format(self, range: str, key: str, value: Any) -> str:
        sheet = self._active()
        for r, c in sheet.block(range).cells():
            sheet.formats.setdefault(cell_name(r, c), {})[key] = value
        return "ok"

    @tool(returns=False)
    def set_bold(self, range: Range, bold: bool = True) -> str:
        """Make the text of a range bold (or not bold).

        Args:
            range: A1 range, e.g. A1:D1 for the header row.
        """
        return self._format(range, "bold", bold)

    @tool(returns=False)
    def set_italic(self, range: Range, italic: bool = True) -> str:
        """Make the text of a range italic (or upright).

        Args:
            range: A1 range.
        """
        return self._format(range, "italic", italic)

    @tool(returns=False)
    def set_underline(self, range: Range, underline: bool = True) -> str:
        """Underline the text of a range (or remove the underline).

        Args:
            range: A1 range.
        """
        return self._format(range, "underline", underline)

    @tool(returns=False)
    def set_font_size(
        self, range: Range, size: Annotated[int, Param(minimum=6, maximum=48)]
    ) -> str:
        """Set the font size of a range, in points.

        Args:
            range: A1 range.
        """
        return self._format(range, "font_size", size)

    @tool(returns=False)
    def set_font_family(
        self,
        range: Range,
        font: Literal["Arial", "Roboto", "Times New Roman", "Courier New", "Georgia", "Verdana"],
    ) -> str:
        """Set the font (typeface) of a range.

        Args:
            range: A1 range.
        """
        return self._format(range, "font", font)

    @tool(returns=False)
    def set_text_color(self, range: Range, color: Colour) -> str:
        """Set the text (font) colour of a range.

        Args:
            range: A1 range.
        """
        return self._format(range, "text_color", color)

    @tool(returns=False)
    def set_background_color(self, range: Range, color: Colour) -> str:
        """Fill (highlight) the background of a range with a colour.

        Args:
            range: A1 range.
        """
        return self._format(range, "background", color)

    @tool(returns=False)
    def set_number_format(
        self,
        range: Range,
        format: Literal["number", "currency", "percent", "date", "scientific", "plain text"],
        decimals: Annotated[int, Param(minimum=0, maximum=6)] = 2,
    ) -> str:
        """Show the numbers of a range as currency, percent, date, ... with some decimals.

        Args:
            range: A1 range.
            decimals: Digits after the decimal point.
        """
        self._format(range, "number_format", format)
        return self._format(range, "decimals", decimals)

    @tool(returns=False)
    def set_horizontal_alignment(
        self, range: Range, alignment: Literal["left", "center", "right"]
    ) -> str:
        """Align the text of a range left, centre or right.

        Args:
            range: A1 range.
        """
        return self._format(range, "align", alignment)

    @tool(returns=False)
    def set_text_wrap(self, range: Range, wrap: Literal["wrap", "overflow", "clip"]) -> str:
        """Choose how long text in a range shows: wrap onto new lines, overflow or clip.

        Args:
            range: A1 range.
        """
        return self._format(range, "wrap", wrap)

    @tool(returns=False)
    def set_borders(
        self, range: Range, style: Literal["solid", "dashed", "dotted", "double", "none"]
    ) -> str:
        """Draw borders around every cell of a range (style none removes them).

        Args:
            range: A1 range.
        """
        return self._format(range, "border", style)

    @tool(returns=False)
    def clear_formatting(self, range: Range) -> str:
        """Remove all formatting (bold, colours, number formats, ...) from a range; values stay.

        Args:
            range: A1 range.
        """
        sheet = self._active()
        for r, c in sheet.block(range).cells():
            sheet.formats.pop(cell_name(r, c), None)
        return "ok"


class LayoutTools(BookAccess):
    """Mixin of :class:`~toollab.envs.spreadsheet.SpreadsheetEnv`: merges, frozen panes, sizes,
    hidden columns and notes."""

    @tool(returns=False)
    def merge_cells(self, range: Range) -> str:
        """Merge the cells of a range into one; only the top-left value is kept.

        Args:
            range: A1 range of at least two cells below the header row.
        """
        b = self._data_block(range)
        if b.height * b.width < 2:
            raise EnvError(f"range {b.a1} is one cell: nothing to merge", BAD_VALUE)
        sheet = self._active()
        for m in sheet.merges:
            if set(parse_block(m).cells()) & set(b.cells()):
                raise EnvError(f"range {b.a1} overlaps the merged range {m}", BAD_VALUE)
        for r, c in b.cells()[1:]:
            sheet.put(r, c, "")
        sheet.merges.append(b.a1)
        return "ok"

    @tool(returns=False)
    def freeze_rows(self, rows: Annotated[int, Param(minimum=0, maximum=10)]) -> str:
        """Freeze the top rows so they stay visible when scrolling (0 unfreezes).

        Args:
            rows: How many rows from the top.
        """
        self._active().frozen_rows = rows
        return "ok"

    @tool(returns=False)
    def freeze_columns(self, columns: Annotated[int, Param(minimum=0, maximum=10)]) -> str:
        """Freeze the leftmost columns so they stay visible when scrolling (0 unfreezes).

        Args:
            columns: How many columns from the left.
        """
        self._active().frozen_columns = columns
        return "ok"

    def _column_letter(self, column: str) -> str:
        if col_index(column) >= self._active().n_cols:
            raise EnvError(f"column {column} is outside the sheet", BAD_VALUE)
        return column

    @tool(returns=False)
    def set_column_width(
        self, width: Annotated[int, Param(minimum=20, maximum=500)], column: Column
    ) -> str:
        """Set the width of a column, in pixels.

        Args:
            width: Pixels.
            column: The column letter.
        """
        self._active().column_widths[self._column_letter(column)] = width
        return "ok"

    @tool(returns=False)
    def set_row_height(
        self,
        height: Annotated[int, Param(minimum=10, maximum=200)],
        row: Annotated[int, Param(minimum=1)],
    ) -> str:
        """Set the height of a row, in pixels.

        Args:
            height: Pixels.
            row: The sheet row number (1 = header).
        """
        self._active().row_heights[row] = height
        return "ok"

    @tool(returns=False)
    def hide_column(self, column: Column) -> str:
        """Hide a column from view (its values stay).

        Args:
            column: The column letter.
        """
        self._active().hidden_columns.add(self._column_letter(column))
        return "ok"

    @tool(returns=False)
    def add_note(self, cell: Annotated[str, Param(pattern=CELL_PATTERN)], note: str) -> str:
        """Attach a note (a comment shown on hover) to a cell, replacing any note there.

        Args:
            cell: A1 cell.
            note: The note's text.
        """
        b = self._active().block(cell)
        self._active().notes[b.a1] = note
        return "ok"

    @tool(returns=False)
    def clear_note(self, cell: Annotated[str, Param(pattern=CELL_PATTERN)]) -> str:
        """Remove the note from a cell.

        Args:
            cell: A1 cell.
        """
        b = self._active().block(cell)
        self._active().notes.pop(b.a1, None)
        return "ok"
