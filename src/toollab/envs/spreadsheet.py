"""Spreadsheet manipulation on real pandas DataFrames, judged by the final workbook.

Cells use A1 notation; row 1 is the header row, data rows start at row 2 (as in Google Sheets /
gspread).  Values that look like numbers are stored as numbers (``USER_ENTERED``).  Formulas
(``=SUM(B2:B6)``, ``=AVERAGE(..)``, ``MIN``, ``MAX``, ``COUNT``, arithmetic over cells) are
evaluated when written and the value is stored.

The environment is one class built from tool groups, one module each: the cell and table tools
(:mod:`~toollab.envs.spreadsheet_cells`), ranges (:mod:`~toollab.envs.spreadsheet_ranges`),
formatting and layout (:mod:`~toollab.envs.spreadsheet_format`), sheets, named and protected
ranges (:mod:`~toollab.envs.spreadsheet_book`), filters, conditional formats, validation and
charts (:mod:`~toollab.envs.spreadsheet_rules`), over the workbook of
:mod:`~toollab.envs.spreadsheet_model`.  The state is the data sheet's cells (``"A1":
"Product"``) and shape, plus every other fact of the workbook that differs from the seed's
starting workbook, so dict-F1 gives partial credit and success needs the whole workbook to match.

Sixty-odd tool documents do not fit a small model's prompt: ``toollab bench`` offers each request
the :attr:`SpreadsheetEnv.retrieved_tools` tools a BM25 retriever finds for it
(:attr:`toollab.envs.base.Environment.retrieved_tools`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from toollab.envs.base import Environment, register_env
from toollab.envs.spreadsheet_book import BookTools
from toollab.envs.spreadsheet_cells import CellTools
from toollab.envs.spreadsheet_format import FormatTools, LayoutTools
from toollab.envs.spreadsheet_formula import OPERATORS, evaluate
from toollab.envs.spreadsheet_model import (
    SHEET_NAMES,
    SHEETS,
    VALUE_CAP,
    Workbook,
    col_index,
    col_letter,
    new_workbook,
    norm_value,
    render_sheet,
    sheet_for_seed,
    workbook_state,
)
from toollab.envs.spreadsheet_ranges import RangeTools
from toollab.envs.spreadsheet_rules import RuleTools
from toollab.envs.taskset import TaskSet
from toollab.errors import BackendError

__all__ = [
    "OPERATORS",
    "SHEETS",
    "SHEET_NAMES",
    "VALUE_CAP",
    "SpreadsheetEnv",
    "col_index",
    "col_letter",
    "evaluate",
    "norm_value",
    "render_sheet",
    "sheet_for_seed",
]


@register_env("spreadsheet")
class SpreadsheetEnv(
    RuleTools, BookTools, LayoutTools, FormatTools, RangeTools, CellTools, Environment
):
    description = (
        "Edit a workbook: cells, formulas, ranges, sorting, rows, columns, filters, formats, "
        "sheets, named ranges, notes, validation, conditional formats and charts."
    )
    scenario = "AM"
    #: the split policy of its generated data (the goal templates are in
    #: :mod:`toollab.envs.tasks.spreadsheet` and the ``spreadsheet_*`` modules beside it)
    tasks: ClassVar[TaskSet] = TaskSet(
        "spreadsheet",
        held_out_tools=("rename_column",),
        also_serves=frozenset({"table_stats"}),
        inverses=(
            ("add_column", "delete_column"),
            ("add_computed_column", "delete_column"),
            ("add_sheet", "delete_sheet"),
            ("duplicate_sheet", "delete_sheet"),
            ("hide_sheet", "unhide_sheet"),
            ("add_note", "clear_note"),
            ("add_chart", "delete_chart"),
            ("add_named_range", "delete_named_range"),
        ),
    )
    #: a request is offered the 8 tools BM25 ranks best for it (of 63)
    retrieved_tools: ClassVar[int | None] = 8

    def reset(self, seed: int = 0) -> None:
        try:
            import pandas  # noqa: F401
        except ImportError as exc:  # pandas is an optional dependency (the eval extra)
            raise BackendError(
                "the spreadsheet environment needs pandas: pip install 'toollab[eval]'"
            ) from exc

        self.seed = seed
        self.title = SHEET_NAMES[seed % len(SHEET_NAMES)]
        self.book: Workbook = new_workbook(seed)
        self._start = self.book.facts()
        #: the sheets the seed's workbook starts with (goals name only these)
        self.start_titles = tuple(s.title for s in self.book.sheets)

    @property
    def df(self) -> Any:
        """The active sheet's values (a pandas DataFrame; the column names are row 1)."""
        return self.book.active.df

    @df.setter
    def df(self, value: Any) -> None:
        self.book.active.df = value

    def state(self) -> dict[str, Any]:
        return workbook_state(self.book, self._start)
