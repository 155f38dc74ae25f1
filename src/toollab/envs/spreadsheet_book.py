"""The spreadsheet environment's workbook tools (Google Sheets' ``addSheet``, ``deleteSheet``,
``duplicateSheet``, ``updateSheetProperties``, ``addNamedRange``, ``addProtectedRange``): sheets
(add, rename, delete, duplicate, select, move, hide, show, tab colour), named ranges and
protected ranges."""

from __future__ import annotations

from typing import Annotated

from toollab.envs.base import BAD_VALUE, NOT_FOUND, EnvError
from toollab.envs.spreadsheet_format import Colour
from toollab.envs.spreadsheet_model import Sheet
from toollab.envs.spreadsheet_ranges import BookAccess, Range
from toollab.tools.decorator import Param, tool

Title = Annotated[str, Param(pattern="^[A-Za-z0-9][A-Za-z0-9 _-]*$")]


class BookTools(BookAccess):
    """Mixin of :class:`~toollab.envs.spreadsheet.SpreadsheetEnv`: sheets, named and protected
    ranges."""

    def _new_title(self, title: str) -> str:
        title = title.strip()
        if self.book.has_sheet(title):
            raise EnvError(f"a sheet named {title!r} already exists", BAD_VALUE)
        return title

    @tool(returns=False)
    def add_sheet(self, title: Title, headers: list[str]) -> str:
        """Add a new sheet (tab) at the end, with a header row.

        Args:
            title: The new sheet's name.
            headers: The column headers of row 1.
        """
        import pandas as pd  # the environment checked that pandas is installed

        names = [h.strip() for h in headers]
        if not names or "" in names or len(set(names)) != len(names):
            raise EnvError("headers must be distinct, non-empty names", BAD_VALUE)
        sheet = Sheet(title=self._new_title(title), df=pd.DataFrame(columns=names, dtype=object))
        self.book.sheets.append(sheet)
        return "ok"

    @tool(returns=False)
    def rename_sheet(self, title: str, new_title: Title) -> str:
        """Rename a sheet (tab).

        Args:
            title: The sheet's current name.
            new_title: Its new name.
        """
        sheet = self.book.sheet(title)
        sheet.title = self._new_title(new_title)
        return "ok"

    @tool(returns=False)
    def delete_sheet(self, title: str) -> str:
        """Delete a sheet (tab) and everything on it.

        Args:
            title: The sheet's name.
        """
        sheet = self.book.sheet(title)
        if len(self.book.sheets) == 1:
            raise EnvError("the last sheet cannot be deleted", BAD_VALUE)
        self.book.sheets.remove(sheet)
        if self.book.active is sheet:
            self.book.active = self.book.sheets[0]
        return "ok"

    @tool(returns=False)
    def duplicate_sheet(self, title: str, new_title: Title) -> str:
        """Copy a sheet (values and formats) into a new sheet placed after it.

        Args:
            title: The sheet to copy.
            new_title: The copy's name.
        """
        sheet = self.book.sheet(title)
        name = self._new_title(new_title)
        copy = Sheet(
            title=name,
            df=sheet.df.copy(),
            frozen_rows=sheet.frozen_rows,
            frozen_columns=sheet.frozen_columns,
            column_widths=dict(sheet.column_widths),
            formats={k: dict(v) for k, v in sheet.formats.items()},
            notes=dict(sheet.notes),
            merges=list(sheet.merges),
        )
        self.book.sheets.insert(self.book.sheets.index(sheet) + 1, copy)
        return "ok"

    @tool(returns=False)
    def select_sheet(self, title: str) -> str:
        """Make a sheet the active one: the cell, range and format tools act on it.

        Args:
            title: The sheet's name.
        """
        self.book.active = self.book.sheet(title)
        return "ok"

    @tool(returns=False)
    def move_sheet(self, title: str, position: Annotated[int, Param(minimum=1)]) -> str:
        """Move a sheet's tab to a position (1 = first tab).

        Args:
            title: The sheet's name.
            position: Its new place among the tabs.
        """
        sheet = self.book.sheet(title)
        if position > len(self.book.sheets):
            raise EnvError(f"there are only {len(self.book.sheets)} sheets", BAD_VALUE)
        self.book.sheets.remove(sheet)
        self.book.sheets.insert(position - 1, sheet)
        return "ok"

    @tool(returns=False)
    def hide_sheet(self, title: str) -> str:
        """Hide a sheet's tab (its data stays).

        Args:
            title: The sheet's name.
        """
        sheet = self.book.sheet(title)
        if all(s.hidden for s in self.book.sheets if s is not sheet):
            raise EnvError("the only visible sheet cannot be hidden", BAD_VALUE)
        sheet.hidden = True
        return "ok"

    @tool(returns=False)
    def unhide_sheet(self, title: str) -> str:
        """Show a hidden sheet's tab again.

        Args:
            title: The sheet's name.
        """
        self.book.sheet(title).hidden = False
        return "ok"

    @tool(returns=False)
    def set_tab_color(self, title: str, color: Colour) -> str:
        """Colour a sheet's tab.

        Args:
            title: The sheet's name.
        """
        self.book.sheet(title).tab_color = color
        return "ok"

    @tool(returns=False)
    def add_named_range(
        self, name: Annotated[str, Param(pattern="^[A-Za-z_][A-Za-z0-9_]*$")], range: Range
    ) -> str:
        """Give a range of the active sheet a name (usable in formulas).

        Args:
            name: The range's name (letters, digits, underscores).
            range: A1 range.
        """
        if name.lower() in {n.lower() for n in self.book.named_ranges}:
            raise EnvError(f"a range named {name!r} already exists", BAD_VALUE)
        b = self._active().block(range)
        self.book.named_ranges[name] = f"{self._active().title}!{b.a1}"
        return "ok"

    @tool(returns=False)
    def delete_named_range(self, name: str) -> str:
        """Remove a named range (the cells stay).

        Args:
            name: The range's name.
        """
        for n in self.book.named_ranges:
            if n.lower() == name.strip().lower():
                del self.book.named_ranges[n]
                return "ok"
        raise EnvError(
            f"no named range {name!r}; named ranges: {', '.join(self.book.named_ranges) or 'none'}",
            NOT_FOUND,
        )

    @tool(returns=False)
    def protect_range(self, range: Range, description: str) -> str:
        """Protect a range of the active sheet from edits by others.

        Args:
            range: A1 range.
            description: Why it is protected.
        """
        b = self._active().block(range)
        self.book.protected[f"{self._active().title}!{b.a1}"] = description
        return "ok"
