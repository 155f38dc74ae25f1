"""Spreadsheet goal templates of the workbook tools, part 1: ranges, formatting and layout (part
2, sheets, named ranges, rules and charts, is :mod:`toollab.envs.tasks.spreadsheet_book`).

Each workbook tool has a goal template of its own, in :data:`FEATURES`, a task set of these
templates alone; every one is also a template of the environment's task set (a single-call goal,
never joined by the cell templates' ``two_goals``), and ``workbook_goals`` joins two or three of
them in one request, the second drawn from the workbook the first leaves.  A goal shows the
data sheet, as every spreadsheet goal does; what it asks of the rest of the workbook (the Notes
and hidden Archive sheets, the note on A1, the chart "Overview", the named range "Items") it
names in the request."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from toollab.envs.base import Environment
from toollab.envs.spreadsheet import SpreadsheetEnv, col_letter, render_sheet
from toollab.envs.spreadsheet_model import Sheet, Workbook, is_number
from toollab.envs.tasks.common import Goal, Maker, TaskSet, TemplateError, call, compose, pick
from toollab.schema import GoldCall

TASKS = SpreadsheetEnv.tasks
#: the workbook tools' templates, joined by ``workbook_goals``
FEATURES = TaskSet("spreadsheet", inverses=TASKS.inverses)
#: probability that ``workbook_goals`` joins a third goal
THREE = 0.25
COLOURS = ("red", "green", "blue", "yellow", "orange", "purple", "gray")


class Book:
    """What a template reads of the workbook: the data sheet's rows and columns (the data
    sheet must be the active one)."""

    def __init__(self, env: Environment, *, any_sheet: bool = False) -> None:
        if not isinstance(env, SpreadsheetEnv):
            raise TypeError("spreadsheet templates need a SpreadsheetEnv")
        self.env = env
        self.book: Workbook = env.book
        if self.book.data not in self.book.sheets:
            raise TemplateError("the data sheet was deleted")
        if self.book.active is not self.book.data and not any_sheet:
            raise TemplateError("another sheet is active")
        self.sheet: Sheet = self.book.data
        self.cols = self.sheet.columns
        self.rows = [
            [self.sheet.get(r, c) for c in range(self.sheet.n_cols)]
            for r in range(2, self.sheet.n_rows + 1)
        ]
        if not self.rows:
            raise TemplateError("the sheet has no data rows")
        self.n = self.sheet.n_rows
        self.last = col_letter(self.sheet.n_cols - 1)
        self.numeric = [
            c for j, c in enumerate(self.cols) if all(is_number(r[j]) for r in self.rows)
        ]
        self.title = self.sheet.title
        #: the sheets a goal may name: those the workbook started with, under their first
        #: names (a sheet made or renamed by an earlier part of the request is never looked up,
        #: so a wrong name there cannot break a later part)
        self.named = [s for s in self.book.sheets if s.title in env.start_titles]
        if self.title not in env.start_titles:
            raise TemplateError("the data sheet was renamed")

    def letter(self, col: str) -> str:
        return col_letter(self.cols.index(col))

    def column_range(self, col: str) -> str:
        L = self.letter(col)
        return f"{L}2:{L}{self.n}"

    def row_of(self, rng: random.Random) -> tuple[int, str]:
        """A data row's sheet number and its first cell's value."""
        i = rng.randrange(len(self.rows))
        return i + 2, str(self.rows[i][0])

    def task(
        self, goal: str, calls: list[GoldCall], alternatives: list[list[GoldCall]] | None = None
    ) -> Goal:
        data = render_sheet(self.cols, self.rows)
        return Goal(query=goal, calls=calls, alternatives=alternatives or [], context=data)


def feature(name: str, weight: float = 1.0) -> Callable[[Maker], Maker]:
    """Register a workbook tool's template in :data:`FEATURES` and in the environment's task
    set (a goal of its own there, not joined by ``two_goals``)."""

    def deco(fn: Maker) -> Maker:
        FEATURES.template(name)(fn)
        TASKS.template(name, weight=weight, atomic=False)(fn)
        return fn

    return deco


@TASKS.template("workbook_goals", weight=40, atomic=False)
def workbook_goals(rng: random.Random, env: Environment) -> Goal:
    """Two (now and then three) workbook goals in one request."""
    task = compose(FEATURES, rng, env)
    if rng.random() < THREE:
        task = compose(FEATURES, rng, env, first=task)
    return task


# -- ranges -----------------------------------------------------------------------------------------
def _numbers(b: Book) -> list[str]:
    if not b.numeric:
        raise TemplateError("no numeric column")
    return b.numeric


@feature("set_values")
def set_values(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    cols = _numbers(b)
    if len(cols) < 2:
        raise TemplateError("two numeric columns needed")
    j = rng.randrange(len(cols) - 1)
    c1, c2 = cols[j], cols[j + 1]
    if b.cols.index(c2) != b.cols.index(c1) + 1:
        raise TemplateError("the columns are not side by side")
    r, item = b.row_of(rng)
    v1, v2 = (int(b.sheet.get(r, b.cols.index(c)) or 0) + rng.randint(1, 9) for c in (c1, c2))
    a1, a2 = f"{b.letter(c1)}{r}", f"{b.letter(c2)}{r}"
    return b.task(
        f"Write {v1} and {v2} into {a1}:{a2} ({c1} and {c2} of {item}).",
        [call("set_values", range=f"{a1}:{a2}", values=[[v1, v2]])],
        [[call("update_cell", cell=a1, value=v1), call("update_cell", cell=a2, value=v2)]],
    )


@feature("clear_range")
def clear_range(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    col = pick(rng, b.cols[1:])
    return b.task(
        f"Clear the {col} values ({b.column_range(col)}), keeping the header.",
        [call("clear_range", range=b.column_range(col))],
    )


@feature("copy_range")
def copy_range(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    r, item = b.row_of(rng)
    return b.task(
        f"Copy the row of {item} (A{r}:{b.last}{r}) to the row below the last one (A{b.n + 1}).",
        [call("copy_range", source=f"A{r}:{b.last}{r}", destination=f"A{b.n + 1}")],
    )


@feature("move_range")
def move_range(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    r, item = b.row_of(rng)
    return b.task(
        f"Move the row of {item} (A{r}:{b.last}{r}) below the last row, to A{b.n + 1}.",
        [call("move_range", source=f"A{r}:{b.last}{r}", destination=f"A{b.n + 1}")],
    )


@feature("sort_range")
def sort_range(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    if b.n < 4:
        raise TemplateError("too few rows")
    end = rng.randint(4, b.n)
    col = pick(rng, _numbers(b))
    asc = rng.random() < 0.5
    way = "ascending" if asc else "descending"
    args: dict[str, Any] = {"range": f"A2:{b.last}{end}", "column": b.letter(col)}
    if not asc:
        args["ascending"] = False
    return b.task(
        f"Sort only rows 2 to {end} (A2:{b.last}{end}) by {col} (column {b.letter(col)}), {way}.",
        [call("sort_range", **args)],
    )


@feature("fill_range")
def fill_range(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    col = pick(rng, _numbers(b))
    value = rng.randint(1, 60)
    return b.task(
        f"Fill every {col} cell ({b.column_range(col)}) with {value}.",
        [call("fill_range", range=b.column_range(col), value=value)],
    )


@feature("scale_range")
def scale_range(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    col = pick(rng, _numbers(b))
    pct = pick(rng, (5, 10, 20, 50))
    up = rng.random() < 0.6
    factor = round(1 + pct / 100 if up else 1 - pct / 100, 2)
    return b.task(
        f"{'Raise' if up else 'Lower'} every {col} value ({b.column_range(col)}) by {pct}%.",
        [call("scale_range", range=b.column_range(col), factor=factor)],
    )


@feature("insert_rows")
def insert_rows(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    r, item = b.row_of(rng)
    count = rng.randint(1, 3)
    rows = "an empty row" if count == 1 else f"{count} empty rows"
    return b.task(
        f"Insert {rows} above the row of {item} (row {r}).",
        [call("insert_rows", count=count, row=r)],
    )


_NEW = {"Product": ("goat", "tofu"), "Name": ("Gus", "Ivo"), "Student": ("Sven", "Uma")}


@feature("append_rows")
def append_rows(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    taken = {str(r[0]) for r in b.rows}
    names = [x for x in _NEW.get(b.cols[0], ("new",)) if x not in taken]
    if not names:
        raise TemplateError("every new name is taken")
    row: list[Any] = [pick(rng, names)]
    for j in range(1, len(b.cols)):
        row.append(b.rows[0][j] if not is_number(b.rows[0][j]) else rng.randint(5, 60))
    said = ", ".join(str(v) for v in row)
    return b.task(
        f"Append the row {said} at the bottom of the sheet.",
        [call("append_rows", values=[row])],
        [[call("add_row", values=dict(zip(b.cols, row, strict=True)))]],
    )


@feature("find_replace")
def find_replace(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    texts = sorted({str(v) for r in b.rows for v in r if isinstance(v, str) and v})
    if not texts:
        raise TemplateError("no text to replace")
    old = pick(rng, texts)
    new = pick(rng, [f"{old} (old)", old.upper(), f"New {old}"])
    if new == old:
        raise TemplateError("nothing changes")
    return b.task(
        f'Replace "{old}" with "{new}" everywhere in the sheet.',
        [call("find_replace", find=old, replacement=new)],
    )


# -- formatting -------------------------------------------------------------------------------------
def _target(b: Book, rng: random.Random) -> tuple[str, str]:
    """A range to format and how a request names it."""
    kind = rng.randrange(3)
    if kind == 0:
        return f"A1:{b.last}1", "the header row"
    if kind == 1:
        col = pick(rng, b.cols)
        return b.column_range(col), f"the {col} values ({b.column_range(col)})"
    r, item = b.row_of(rng)
    return f"A{r}:{b.last}{r}", f"the row of {item} (A{r}:{b.last}{r})"


def _style(name: str, phrase: str, **fixed: Any) -> Maker:
    def make(rng: random.Random, env: Environment) -> Goal:
        b = Book(env)
        rng_text, said = _target(b, rng)
        return b.task(phrase.format(what=said), [call(name, range=rng_text, **fixed)])

    return make


feature("set_bold")(_style("set_bold", "Make {what} bold."))
feature("set_italic")(_style("set_italic", "Put {what} in italics."))
feature("set_underline")(_style("set_underline", "Underline {what}."))
feature("clear_formatting")(_style("clear_formatting", "Remove all formatting from {what}."))


@feature("set_font_size")
def set_font_size(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    rng_text, said = _target(b, rng)
    size = pick(rng, (8, 12, 14, 18, 24))
    return b.task(
        f"Set the font size of {said} to {size}.",
        [call("set_font_size", range=rng_text, size=size)],
    )


@feature("set_font_family")
def set_font_family(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    rng_text, said = _target(b, rng)
    font = pick(rng, ("Roboto", "Times New Roman", "Courier New", "Georgia", "Verdana"))
    return b.task(
        f"Change the font of {said} to {font}.",
        [call("set_font_family", range=rng_text, font=font)],
    )


@feature("set_text_color")
def set_text_color(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    rng_text, said = _target(b, rng)
    color = pick(rng, COLOURS)
    return b.task(
        f"Make the text of {said} {color}.", [call("set_text_color", range=rng_text, color=color)]
    )


@feature("set_background_color")
def set_background_color(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    rng_text, said = _target(b, rng)
    color = pick(rng, COLOURS)
    return b.task(
        f"Highlight {said} with a {color} background.",
        [call("set_background_color", range=rng_text, color=color)],
    )


@feature("set_number_format")
def set_number_format(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    col = pick(rng, _numbers(b))
    fmt = pick(rng, ("currency", "percent", "number", "scientific"))
    args: dict[str, Any] = {"range": b.column_range(col), "format": fmt}
    tail = ""
    if rng.random() < 0.5:
        args["decimals"] = pick(rng, (0, 1, 3))
        tail = f" with {args['decimals']} decimals"
    return b.task(
        f"Format the {col} values ({b.column_range(col)}) as {fmt}{tail}.",
        [call("set_number_format", **args)],
    )


@feature("set_horizontal_alignment")
def set_horizontal_alignment(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    rng_text, said = _target(b, rng)
    how = pick(rng, ("left", "center", "right"))
    verb = "Center" if how == "center" else f"Align to the {how}"
    return b.task(
        f"{verb} {said}.", [call("set_horizontal_alignment", range=rng_text, alignment=how)]
    )


@feature("set_text_wrap")
def set_text_wrap(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    rng_text, said = _target(b, rng)
    wrap, words = pick(
        rng,
        (
            ("wrap", "Wrap the text of"),
            ("clip", "Clip the text of"),
            ("overflow", "Let the text of"),
        ),
    )
    end = " overflow into the next cells" if wrap == "overflow" else ""
    return b.task(f"{words} {said}{end}.", [call("set_text_wrap", range=rng_text, wrap=wrap)])


@feature("set_borders")
def set_borders(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    style = pick(rng, ("solid", "dashed", "dotted", "double"))
    return b.task(
        f"Draw {style} borders around every cell of the table (A1:{b.last}{b.n}).",
        [call("set_borders", range=f"A1:{b.last}{b.n}", style=style)],
    )


# -- layout -------------------------------------------------------------------------------------------
@feature("merge_cells")
def merge_cells(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    text = pick(rng, ("Checked by Ana", "Source: head office", "Figures as of Monday"))
    row = b.n + 1
    return b.task(
        f'Write "{text}" in A{row}, the cell below the last row, and merge A{row}:{b.last}{row} '
        "into one cell.",
        [
            call("update_cell", cell=f"A{row}", value=text),
            call("merge_cells", range=f"A{row}:{b.last}{row}"),
        ],
    )


@feature("freeze_rows")
def freeze_rows(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    rows = pick(rng, [k for k in (0, 2, 3) if k != b.sheet.frozen_rows])
    goal = "Unfreeze the top row." if rows == 0 else f"Freeze the top {rows} rows."
    return b.task(goal, [call("freeze_rows", rows=rows)])


@feature("freeze_columns")
def freeze_columns(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    cols = pick(rng, [k for k in (1, 2) if k != b.sheet.frozen_columns])
    goal = "Freeze the first column." if cols == 1 else "Freeze the first two columns."
    return b.task(goal, [call("freeze_columns", columns=cols)])


@feature("set_column_width")
def set_column_width(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    col = pick(rng, b.cols)
    width = pick(rng, (60, 80, 150, 200))
    return b.task(
        f"Make the {col} column (column {b.letter(col)}) {width} pixels wide.",
        [call("set_column_width", width=width, column=b.letter(col))],
    )


@feature("set_row_height")
def set_row_height(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    height = pick(rng, (30, 40, 50))
    if rng.random() < 0.5:
        return b.task(
            f"Make the header row {height} pixels high.",
            [call("set_row_height", height=height, row=1)],
        )
    r, item = b.row_of(rng)
    return b.task(
        f"Set the height of the row of {item} (row {r}) to {height} pixels.",
        [call("set_row_height", height=height, row=r)],
    )


@feature("hide_column")
def hide_column(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    col = pick(rng, b.cols[1:])
    return b.task(
        f"Hide the {col} column (column {b.letter(col)}).",
        [call("hide_column", column=b.letter(col))],
    )


@feature("add_note")
def add_note(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    r, item = b.row_of(rng)
    note = pick(rng, ("Check this", "Confirmed by phone", "Price changes next month"))
    return b.task(
        f'Add the note "{note}" to A{r}, the cell of {item}.',
        [call("add_note", cell=f"A{r}", note=note)],
    )


@feature("clear_note")
def clear_note(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    if "A1" not in b.sheet.notes:
        raise TemplateError("A1 has no note")
    return b.task("Remove the note from cell A1.", [call("clear_note", cell="A1")])
