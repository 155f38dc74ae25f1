"""Spreadsheet goal templates of the workbook tools, part 2: sheets, named and protected ranges,
filters, conditional formats, data validation and charts (see
:mod:`toollab.envs.tasks.spreadsheet_ranges` for how they are joined)."""

from __future__ import annotations

import random

from toollab.envs.base import Environment
from toollab.envs.spreadsheet_model import NOTES_SHEET, START_CHART, START_NAMED
from toollab.envs.tasks.common import Goal, TemplateError, call, pick
from toollab.envs.tasks.spreadsheet_ranges import COLOURS, Book, feature

_NEW_SHEETS = ("Summary", "Q3", "Budget", "Suppliers", "Plan")
_HEADERS = (("Region", "Revenue"), ("Month", "Target", "Actual"), ("Item", "Owner"))


def _other(b: Book, rng: random.Random, *, hidden: bool | None = None) -> str:
    """A sheet other than the data sheet (visible or hidden as asked)."""
    titles = [
        s.title for s in b.named if s is not b.sheet and (hidden is None or s.hidden == hidden)
    ]
    if not titles:
        raise TemplateError("no such sheet")
    return pick(rng, titles)


def _fresh(b: Book, rng: random.Random) -> str:
    names = [t for t in _NEW_SHEETS if not b.book.has_sheet(t)]
    if not names:
        raise TemplateError("every new sheet name is taken")
    return pick(rng, names)


# -- sheets -------------------------------------------------------------------------------------------
@feature("add_sheet")
def add_sheet(rng: random.Random, env: Environment) -> Goal:
    b = Book(env, any_sheet=True)
    title, headers = _fresh(b, rng), list(pick(rng, _HEADERS))
    return b.task(
        f"Add a new sheet named {title} with the headers {', '.join(headers)}.",
        [call("add_sheet", title=title, headers=headers)],
    )


@feature("rename_sheet")
def rename_sheet(rng: random.Random, env: Environment) -> Goal:
    b = Book(env, any_sheet=True)
    old = pick(rng, [b.title, *(s.title for s in b.named if s.title == NOTES_SHEET)])
    new = _fresh(b, rng)
    return b.task(
        f"Rename the {old} sheet to {new}.", [call("rename_sheet", title=old, new_title=new)]
    )


@feature("delete_sheet")
def delete_sheet(rng: random.Random, env: Environment) -> Goal:
    b = Book(env, any_sheet=True)
    title = _other(b, rng)
    return b.task(f"Delete the {title} sheet.", [call("delete_sheet", title=title)])


@feature("duplicate_sheet")
def duplicate_sheet(rng: random.Random, env: Environment) -> Goal:
    b = Book(env, any_sheet=True)
    new = _fresh(b, rng)
    return b.task(
        f"Make a copy of the {b.title} sheet named {new}.",
        [call("duplicate_sheet", title=b.title, new_title=new)],
    )


@feature("select_sheet")
def select_sheet(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    if NOTES_SHEET not in {s.title for s in b.named}:
        raise TemplateError("no Notes sheet")
    note = pick(rng, ("Order more stock", "Call the supplier", "Review in June", "Send the report"))
    return b.task(
        f'Go to the {NOTES_SHEET} sheet and add the row "{note}" below its last row.',
        [call("select_sheet", title=NOTES_SHEET), call("append_rows", values=[[note]])],
        [
            [
                call("select_sheet", title=NOTES_SHEET),
                call("add_row", values={"Note": note}),
            ]
        ],
    )


@feature("move_sheet")
def move_sheet(rng: random.Random, env: Environment) -> Goal:
    b = Book(env, any_sheet=True)
    titles = [s.title for s in b.book.sheets]
    title = pick(rng, [t for t in titles[1:] if t in {s.title for s in b.named}] or [""])
    if not title:
        raise TemplateError("no sheet to move")
    return b.task(
        f"Move the {title} sheet to the first tab position.",
        [call("move_sheet", title=title, position=1)],
    )


@feature("hide_sheet")
def hide_sheet(rng: random.Random, env: Environment) -> Goal:
    b = Book(env, any_sheet=True)
    title = _other(b, rng, hidden=False)
    return b.task(f"Hide the {title} sheet.", [call("hide_sheet", title=title)])


@feature("unhide_sheet")
def unhide_sheet(rng: random.Random, env: Environment) -> Goal:
    b = Book(env, any_sheet=True)
    title = _other(b, rng, hidden=True)
    return b.task(f"Show the hidden {title} sheet again.", [call("unhide_sheet", title=title)])


@feature("set_tab_color")
def set_tab_color(rng: random.Random, env: Environment) -> Goal:
    b = Book(env, any_sheet=True)
    title = pick(rng, [s.title for s in b.named])
    color = pick(rng, COLOURS)
    return b.task(
        f"Colour the tab of the {title} sheet {color}.",
        [call("set_tab_color", title=title, color=color)],
    )


# -- named and protected ranges -------------------------------------------------------------------------
@feature("add_named_range")
def add_named_range(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    col = pick(rng, b.cols[1:])
    name = col.replace(" ", "_") + pick(rng, ("_values", "_list", "_data"))
    if name.lower() in {n.lower() for n in b.book.named_ranges}:
        raise TemplateError("the name is taken")
    return b.task(
        f"Name the range of the {col} values ({b.column_range(col)}) {name}.",
        [call("add_named_range", name=name, range=b.column_range(col))],
    )


@feature("delete_named_range")
def delete_named_range(rng: random.Random, env: Environment) -> Goal:
    b = Book(env, any_sheet=True)
    if START_NAMED not in b.book.named_ranges:
        raise TemplateError("the named range is gone")
    return b.task(
        f"Delete the named range {START_NAMED}.", [call("delete_named_range", name=START_NAMED)]
    )


@feature("protect_range")
def protect_range(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    col = pick(rng, b.cols[1:])
    why = pick(rng, ("Finance only", "Do not edit", "Locked for review"))
    return b.task(
        f'Protect the {col} values ({b.column_range(col)}) with the description "{why}".',
        [call("protect_range", range=b.column_range(col), description=why)],
    )


# -- filters, conditional formats, validation ------------------------------------------------------------
@feature("set_basic_filter")
def set_basic_filter(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    last = pick(rng, b.cols[1:-1] or b.cols[1:])
    target = f"A1:{b.letter(last)}{b.n}"
    if target == b.sheet.basic_filter:
        raise TemplateError("already filtered so")
    return b.task(
        f"Set the sheet's filter on columns A to {b.letter(last)} ({target}).",
        [call("set_basic_filter", range=target)],
    )


@feature("clear_basic_filter")
def clear_basic_filter(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    if b.sheet.basic_filter is None:
        raise TemplateError("no filter")
    return b.task(
        pick(rng, ("Turn off the filter on the sheet.", "Remove the sheet's filter.")),
        [call("clear_basic_filter")],
    )


@feature("add_conditional_format")
def add_conditional_format(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    if not b.numeric:
        raise TemplateError("no numeric column")
    col = pick(rng, b.numeric)
    j = b.cols.index(col)
    values = sorted(r[j] for r in b.rows)
    cut = values[len(values) // 2]
    op, words = pick(rng, ((">", "above"), ("<", "below"), (">=", "at least")))
    color = pick(rng, COLOURS)
    return b.task(
        f"Highlight the {col} values ({b.column_range(col)}) {words} {cut} in {color}.",
        [
            call(
                "add_conditional_format",
                range=b.column_range(col),
                condition=op,
                value=cut,
                color=color,
            )
        ],
    )


@feature("clear_conditional_formats")
def clear_conditional_formats(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    if not b.sheet.conditional:
        raise TemplateError("no rules")
    return b.task(
        "Remove all conditional formatting rules from the sheet.",
        [call("clear_conditional_formats")],
    )


@feature("set_list_validation")
def set_list_validation(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    col = b.cols[0]
    allowed = sorted({str(r[0]) for r in b.rows})
    return b.task(
        f"Allow only the values {', '.join(allowed)} in the {col} column "
        f"({b.column_range(col)}), as a dropdown.",
        [call("set_list_validation", range=b.column_range(col), values=allowed)],
    )


@feature("set_number_validation")
def set_number_validation(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    if not b.numeric:
        raise TemplateError("no numeric column")
    col = pick(rng, b.numeric)
    hi = pick(rng, (100, 1000, 100000))
    return b.task(
        f"Only allow numbers from 0 to {hi} in the {col} column ({b.column_range(col)}).",
        [call("set_number_validation", range=b.column_range(col), minimum=0, maximum=hi)],
    )


@feature("clear_data_validation")
def clear_data_validation(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    if not b.sheet.validation:
        raise TemplateError("no validation")
    target = f"B2:B{b.n}"
    return b.task(
        f"Remove the data validation from column B ({target}).",
        [call("clear_data_validation", range=target)],
    )


# -- charts --------------------------------------------------------------------------------------------
@feature("add_chart")
def add_chart(rng: random.Random, env: Environment) -> Goal:
    b = Book(env)
    if not b.numeric:
        raise TemplateError("no numeric column")
    col = pick(rng, b.numeric)
    kind = pick(rng, ("column", "bar", "line", "pie"))
    title = f"{col} by {b.cols[0]}"
    if title.lower() in {n.lower() for n in b.book.charts}:
        raise TemplateError("the title is taken")
    L = b.letter(col)
    return b.task(
        f'Add a {kind} chart titled "{title}" of the {b.cols[0]} and {col} columns '
        f"(A1:A{b.n} and {L}1:{L}{b.n}; use the range A1:{L}{b.n}).",
        [call("add_chart", title=title, chart_type=kind, range=f"A1:{L}{b.n}")],
    )


@feature("delete_chart")
def delete_chart(rng: random.Random, env: Environment) -> Goal:
    b = Book(env, any_sheet=True)
    if START_CHART not in b.book.charts:
        raise TemplateError("the chart is gone")
    return b.task(f"Delete the {START_CHART} chart.", [call("delete_chart", title=START_CHART)])


@feature("set_chart_title")
def set_chart_title(rng: random.Random, env: Environment) -> Goal:
    b = Book(env, any_sheet=True)
    if START_CHART not in b.book.charts:
        raise TemplateError("the chart is gone")
    new = pick(rng, (f"{b.title} at a glance", f"{b.title} summary", "Key figures"))
    return b.task(
        f'Retitle the {START_CHART} chart "{new}".',
        [call("set_chart_title", title=START_CHART, new_title=new)],
    )
