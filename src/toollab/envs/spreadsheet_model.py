"""The spreadsheet environment's workbook: sheets of cells (pandas DataFrames) and what a sheet
carries besides its values (formats, notes, merges, frozen rows, column widths, filters,
conditional formats, data validation), plus the workbook's named ranges, charts and protected
ranges.

Cells use A1 notation; row 1 of a sheet is its header row (the DataFrame's column names), data
rows start at row 2.  The workbook a seed starts from holds the seed's data sheet, a visible
``Notes`` sheet and a hidden ``Archive`` sheet, a bold and frozen header row, a note, a named
range, a chart, a basic filter, a conditional format rule, a data validation rule and a
protected header (:func:`new_workbook`).

State (:meth:`Workbook.state`): the data sheet's cells (``"B3": 12``) and ``shape`` exactly as
the one-sheet environment had them, plus every other fact of the workbook *that differs from the
seed's starting workbook* (``"Products!A1.bold": false``, ``"chart.Overview": null`` for a
deleted chart).  A program that leaves the workbook's other facts alone has the one-sheet state.
"""

from __future__ import annotations

import copy
import random
import re
from dataclasses import dataclass, field
from typing import Any

from toollab.envs.base import BAD_VALUE, NOT_FOUND, EnvError

#: the bundled sheets: title -> (columns, rows)
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
#: A1 patterns: a cell, and a cell or a block of cells
CELL_PATTERN = "^[A-Z]{1,2}[1-9][0-9]*$"
RANGE_PATTERN = "^[A-Z]{1,2}[1-9][0-9]*(:[A-Z]{1,2}[1-9][0-9]*)?$"
_CELL = re.compile(r"^([A-Z]{1,2})([1-9]\d*)$")
#: the seed's starting workbook: the other sheets, the note, the chart and the named range
NOTES_SHEET, ARCHIVE_SHEET = "Notes", "Archive"
START_NOTE = "Updated weekly"
START_CHART = "Overview"
START_NAMED = "Items"
START_PROTECTED = "Header"


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


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


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


@dataclass(frozen=True)
class Block:
    """A block of cells: rows 1-based (row 1 = header), columns 0-based, both inclusive."""

    r1: int
    c1: int
    r2: int
    c2: int

    @property
    def a1(self) -> str:
        a, b = f"{col_letter(self.c1)}{self.r1}", f"{col_letter(self.c2)}{self.r2}"
        return a if a == b else f"{a}:{b}"

    def cells(self) -> list[tuple[int, int]]:
        return [(r, c) for r in range(self.r1, self.r2 + 1) for c in range(self.c1, self.c2 + 1)]

    @property
    def height(self) -> int:
        return self.r2 - self.r1 + 1

    @property
    def width(self) -> int:
        return self.c2 - self.c1 + 1


def parse_block(text: str) -> Block:
    """``"B2:C5"`` or ``"B2"`` as a :class:`Block` (corners in any order)."""
    parts = text.strip().upper().split(":")
    if not 1 <= len(parts) <= 2:
        raise EnvError(f"{text!r} is not an A1 range", BAD_VALUE)
    corners = []
    for p in parts:
        m = _CELL.match(p)
        if not m:
            raise EnvError(f"{text!r} is not an A1 range", BAD_VALUE)
        corners.append((int(m.group(2)), col_index(m.group(1))))
    (ra, ca), (rb, cb) = corners[0], corners[-1]
    return Block(min(ra, rb), min(ca, cb), max(ra, rb), max(ca, cb))


def cell_name(r: int, c: int) -> str:
    return f"{col_letter(c)}{r}"


@dataclass
class Sheet:
    """One sheet: its values (``df``; the column names are row 1) and what it carries."""

    title: str
    df: Any  # a pandas DataFrame of object columns
    hidden: bool = False
    tab_color: str | None = None
    frozen_rows: int = 0
    frozen_columns: int = 0
    column_widths: dict[str, int] = field(default_factory=dict)
    row_heights: dict[int, int] = field(default_factory=dict)
    hidden_columns: set[str] = field(default_factory=set)
    #: cell -> format property -> value
    formats: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    merges: list[str] = field(default_factory=list)
    basic_filter: str | None = None
    #: conditional format rules, in order: (range, condition, value, colour)
    conditional: list[tuple[str, str, Any, str]] = field(default_factory=list)
    #: range -> validation rule text
    validation: dict[str, str] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        """Rows in use, the header included."""
        return int(self.df.shape[0]) + 1

    @property
    def n_cols(self) -> int:
        return int(self.df.shape[1])

    @property
    def columns(self) -> list[str]:
        return [str(c) for c in self.df.columns]

    def block(self, text: str, *, grow: int = 0) -> Block:
        """The block ``text`` names, refused when it leaves the sheet (``grow`` rows below the
        last row are allowed: values written there add rows)."""
        b = parse_block(text)
        if b.c2 >= self.n_cols or b.r2 > self.n_rows + grow:
            raise EnvError(
                f"range {b.a1} is outside sheet {self.title!r} "
                f"(A1:{col_letter(self.n_cols - 1)}{self.n_rows})",
                BAD_VALUE,
            )
        return b

    def get(self, r: int, c: int) -> Any:
        if r == 1:
            return self.columns[c]
        return norm_value(self.df.iat[r - 2, c])

    def put(self, r: int, c: int, value: Any) -> None:
        """Write one cell; row 1 renames a column, a row below the last adds a row."""
        if r == 1:
            name = str(value).strip()
            if not name or (name in self.columns and self.columns[c] != name):
                raise EnvError(f"column header {name!r} is empty or already used", BAD_VALUE)
            self.df = self.df.rename(columns={self.columns[c]: name})
            return
        while r - 2 >= len(self.df):
            self.df.loc[len(self.df)] = [""] * self.n_cols
        self.df.iat[r - 2, c] = norm_value(value)

    def cell_values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for j, name in enumerate(self.columns):
            out[f"{col_letter(j)}1"] = name
            for i, v in enumerate(self.df.iloc[:, j].tolist()):
                out[f"{col_letter(j)}{i + 2}"] = norm_value(v)
        return out

    def facts(self) -> dict[str, Any]:
        """Everything the sheet carries besides its values, flat, keyed ``Title.fact``."""
        t = self.title
        out: dict[str, Any] = {
            f"{t}.hidden": self.hidden,
            f"{t}.tab_color": self.tab_color,
            f"{t}.frozen_rows": self.frozen_rows,
            f"{t}.frozen_columns": self.frozen_columns,
            f"{t}.hidden_columns": sorted(self.hidden_columns),
            f"{t}.merges": sorted(self.merges),
            f"{t}.filter": self.basic_filter,
            f"{t}.conditional": [list(rule) for rule in self.conditional],
        }
        out.update({f"{t}.width.{c}": w for c, w in self.column_widths.items()})
        out.update({f"{t}.height.{r}": h for r, h in self.row_heights.items()})
        out.update({f"{t}!{rng}.validation": v for rng, v in self.validation.items()})
        out.update({f"{t}!{cell}.note": n for cell, n in self.notes.items()})
        for cell, props in self.formats.items():
            out.update({f"{t}!{cell}.{k}": v for k, v in props.items()})
        return out


@dataclass
class Chart:
    sheet: str
    kind: str
    source: str

    def fact(self) -> list[str]:
        return [self.sheet, self.kind, self.source]


@dataclass
class Workbook:
    """The sheets (in tab order), the active sheet, and the workbook-wide objects."""

    sheets: list[Sheet]
    #: the seed's data sheet (its cells are the unprefixed part of the state)
    data: Sheet
    active: Sheet
    named_ranges: dict[str, str] = field(default_factory=dict)
    charts: dict[str, Chart] = field(default_factory=dict)
    #: protected range ("Sheet!A1:D1") -> description
    protected: dict[str, str] = field(default_factory=dict)

    def sheet(self, title: str) -> Sheet:
        for s in self.sheets:
            if s.title == title:
                return s
        for s in self.sheets:
            if s.title.lower() == title.strip().lower():
                return s
        raise EnvError(
            f"no sheet {title!r}; sheets: {', '.join(s.title for s in self.sheets)}", NOT_FOUND
        )

    def has_sheet(self, title: str) -> bool:
        return any(s.title.lower() == title.strip().lower() for s in self.sheets)

    def facts(self) -> dict[str, Any]:
        """Every fact of the workbook besides the data sheet's cells, flat."""
        out: dict[str, Any] = {"sheets": [s.title for s in self.sheets]}
        for s in self.sheets:
            out.update(s.facts())
            if s is not self.data:
                out.update({f"{s.title}!{k}": v for k, v in s.cell_values().items()})
                out[f"{s.title}.shape"] = [s.n_rows, s.n_cols]
        out.update({f"named.{n}": r for n, r in self.named_ranges.items()})
        out.update({f"chart.{n}": c.fact() for n, c in self.charts.items()})
        out.update({f"protected.{r}": d for r, d in self.protected.items()})
        return out

    def copy(self) -> Workbook:
        return copy.deepcopy(self)


def new_workbook(seed: int) -> Workbook:
    """The workbook an environment seeded with ``seed`` starts from (see the module doc)."""
    import pandas as pd  # the environment checked that pandas is installed

    key, cols, rows = sheet_for_seed(seed)
    data = Sheet(title=key.capitalize(), df=pd.DataFrame(rows, columns=cols, dtype=object))
    n = data.n_rows
    last = col_letter(data.n_cols - 1)
    header = f"A1:{last}1"
    data.frozen_rows = 1
    data.formats = {f"{col_letter(j)}1": {"bold": True} for j in range(data.n_cols)}
    data.notes = {"A1": START_NOTE}
    data.basic_filter = f"A1:{last}{n}"
    data.conditional = [(f"B2:B{n}", "<", _threshold(rows), "red")]
    data.validation = {f"B2:B{n}": "number >= 0"}
    _, _, spare = sheet_for_seed(seed + 3)  # same kind of sheet, other rows
    archive_rows = [r for r in spare if r[0] not in {x[0] for x in rows}][:2] or spare[:1]
    archive = Sheet(
        title=ARCHIVE_SHEET,
        df=pd.DataFrame(archive_rows, columns=cols, dtype=object),
        hidden=True,
    )
    notes = Sheet(
        title=NOTES_SHEET,
        df=pd.DataFrame([["Check the figures on Monday"]], columns=["Note"], dtype=object),
    )
    return Workbook(
        sheets=[data, notes, archive],
        data=data,
        active=data,
        named_ranges={START_NAMED: f"{data.title}!A2:A{n}"},
        charts={START_CHART: Chart(data.title, "column", f"A1:B{n}")},
        protected={f"{data.title}!{header}": START_PROTECTED},
    )


def _threshold(rows: list[list[Any]]) -> Any:
    values = sorted(r[1] for r in rows)
    return values[len(values) // 2]


def workbook_state(book: Workbook, start: dict[str, Any]) -> dict[str, Any]:
    """The data sheet's cells and shape, plus each other fact that differs from ``start`` (the
    facts of the seed's starting workbook); a fact that is gone is ``None``."""
    out: dict[str, Any] = {}
    if book.data in book.sheets:
        out["shape"] = [book.data.n_rows, book.data.n_cols]
        out.update(book.data.cell_values())
    now = book.facts()
    for k in sorted(set(now) | set(start)):
        v = now.get(k)
        if v != start.get(k):
            out[k] = v
    return out
