"""The spreadsheet environment's rule and chart tools (Google Sheets' ``setBasicFilter``,
``addConditionalFormatRule``, ``setDataValidation``, ``addChart``): the basic filter,
conditional format rules, data validation and charts.  A chart is kept as data: its sheet, type
and source range."""

from __future__ import annotations

from typing import Annotated, Literal

from toollab.envs.base import BAD_VALUE, NOT_FOUND, EnvError
from toollab.envs.spreadsheet_format import Colour
from toollab.envs.spreadsheet_model import Chart, norm_value, parse_block
from toollab.envs.spreadsheet_ranges import BookAccess, Range, Value
from toollab.tools.decorator import Param, tool


class RuleTools(BookAccess):
    """Mixin of :class:`~toollab.envs.spreadsheet.SpreadsheetEnv`: filters, conditional
    formats, data validation, charts."""

    @tool(returns=False)
    def set_basic_filter(self, range: Range) -> str:
        """Turn on the filter buttons of the header row over a range (replaces the sheet's
        filter).

        Args:
            range: A1 range starting at the header row, e.g. A1:D7.
        """
        b = self._active().block(range)
        if b.r1 != 1:
            raise EnvError(f"a filter range starts at row 1, not {b.a1}", BAD_VALUE)
        self._active().basic_filter = b.a1
        return "ok"

    @tool(returns=False)
    def clear_basic_filter(self) -> str:
        """Turn off the filter of the active sheet (all rows show again)."""
        sheet = self._active()
        if sheet.basic_filter is None:
            raise EnvError(f"sheet {sheet.title!r} has no filter", NOT_FOUND)
        sheet.basic_filter = None
        return "ok"

    @tool(returns=False)
    def add_conditional_format(
        self,
        range: Range,
        condition: Literal[">", "<", ">=", "<=", "==", "contains"],
        value: Value,
        color: Colour,
    ) -> str:
        """Highlight the cells of a range whose value meets a condition with a background
        colour (a conditional formatting rule).

        Args:
            range: A1 range.
            condition: How a cell compares to the value.
            value: The value to compare with.
            color: The highlight colour.
        """
        b = self._active().block(range)
        self._active().conditional.append((b.a1, condition, norm_value(value), color))
        return "ok"

    @tool(returns=False)
    def clear_conditional_formats(self) -> str:
        """Remove every conditional formatting rule of the active sheet."""
        sheet = self._active()
        if not sheet.conditional:
            raise EnvError(f"sheet {sheet.title!r} has no conditional format rules", NOT_FOUND)
        sheet.conditional = []
        return "ok"

    @tool(returns=False)
    def set_list_validation(self, range: Range, values: list[str]) -> str:
        """Allow only values from a list in a range (a dropdown).

        Args:
            range: A1 range.
            values: The allowed values.
        """
        if not values:
            raise EnvError("values must list at least one allowed value", BAD_VALUE)
        b = self._active().block(range)
        self._active().validation[b.a1] = "one of " + ", ".join(values)
        return "ok"

    @tool(returns=False)
    def set_number_validation(self, range: Range, minimum: float, maximum: float) -> str:
        """Allow only numbers between a minimum and a maximum in a range.

        Args:
            range: A1 range.
            minimum: The smallest allowed number.
            maximum: The largest allowed number.
        """
        if minimum > maximum:
            raise EnvError(f"minimum {minimum} is above maximum {maximum}", BAD_VALUE)
        b = self._active().block(range)
        lo, hi = norm_value(minimum), norm_value(maximum)
        self._active().validation[b.a1] = f"number between {lo} and {hi}"
        return "ok"

    @tool(returns=False)
    def clear_data_validation(self, range: Range) -> str:
        """Remove the data validation rules that touch a range.

        Args:
            range: A1 range.
        """
        sheet = self._active()
        cells = set(sheet.block(range).cells())
        hit = [r for r in sheet.validation if set(parse_block(r).cells()) & cells]
        if not hit:
            raise EnvError(f"no data validation rule touches {range}", NOT_FOUND)
        for r in hit:
            del sheet.validation[r]
        return "ok"

    def _chart(self, title: str) -> str:
        for name in self.book.charts:
            if name.lower() == title.strip().lower():
                return name
        raise EnvError(
            f"no chart {title!r}; charts: {', '.join(self.book.charts) or 'none'}", NOT_FOUND
        )

    @tool(returns=False)
    def add_chart(
        self,
        title: Annotated[str, Param(minLength=1)],
        chart_type: Literal["column", "bar", "line", "pie", "scatter"],
        range: Range,
    ) -> str:
        """Add a chart of a range of the active sheet.

        Args:
            title: The chart's title.
            chart_type: The kind of chart.
            range: A1 range of the data, header row included, e.g. A1:B6.
        """
        if title.strip().lower() in {n.lower() for n in self.book.charts}:
            raise EnvError(f"a chart titled {title!r} already exists", BAD_VALUE)
        b = self._active().block(range)
        self.book.charts[title.strip()] = Chart(self._active().title, chart_type, b.a1)
        return "ok"

    @tool(returns=False)
    def delete_chart(self, title: str) -> str:
        """Delete a chart.

        Args:
            title: The chart's title.
        """
        del self.book.charts[self._chart(title)]
        return "ok"

    @tool(returns=False)
    def set_chart_title(self, title: str, new_title: Annotated[str, Param(minLength=1)]) -> str:
        """Change a chart's title.

        Args:
            title: The chart's current title.
            new_title: Its new title.
        """
        old = self._chart(title)
        if new_title.strip().lower() in {n.lower() for n in self.book.charts if n != old}:
            raise EnvError(f"a chart titled {new_title!r} already exists", BAD_VALUE)
        self.book.charts[new_title.strip()] = self.book.charts.pop(old)
        return "ok"
