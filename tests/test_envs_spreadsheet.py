"""The spreadsheet workbook: each tool group acts on a real workbook and is judged by the final
state, the workbook's other facts enter the state only when they change, every workbook tool has
a multi-call goal, and ``toollab bench`` offers each request the tools BM25 retrieves for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from toollab.envs import env_class, get_env
from toollab.envs.base import BAD_ARGUMENTS, BAD_VALUE, NOT_FOUND, Environment
from toollab.envs.generate import generate
from toollab.envs.spreadsheet import SpreadsheetEnv
from toollab.envs.tasks.spreadsheet_ranges import FEATURES
from toollab.eval.bench import bench_tasks
from toollab.schema import ToolCall

c = ToolCall
#: the tools of the one-sheet environment (their schemas are recorded in the tools fixture)
CELL_TOOLS = {
    "update_cell", "write_formula", "sort_rows", "add_row", "delete_row", "add_column",
    "delete_column", "rename_column", "add_computed_column", "filter_rows",
}  # fmt: skip


def _run(*calls: ToolCall, seed: int = 0) -> dict[str, object]:
    ex = get_env("spreadsheet").run(list(calls), seed)
    assert not ex.crashed, ex.error
    return ex.state


def _reason(*calls: ToolCall) -> str | None:
    return get_env("spreadsheet").run(list(calls), 0).reason


def test_sixty_tools_in_one_registered_class() -> None:
    env = get_env("spreadsheet")
    assert type(env) is SpreadsheetEnv and env_class("spreadsheet") is SpreadsheetEnv
    assert len(env.tools) >= 60
    assert env.tool_names[:10] == [
        "update_cell", "write_formula", "sort_rows", "add_row", "delete_row", "add_column",
        "delete_column", "rename_column", "add_computed_column", "filter_rows",
    ]  # fmt: skip
    # each tool group is its own module, none over 800 lines
    src = Path(__file__).parents[1] / "src" / "toollab" / "envs"
    for path in [*src.glob("spreadsheet*.py"), *(src / "tasks").glob("spreadsheet*.py")]:
        assert len(path.read_text(encoding="utf-8").splitlines()) < 800, path.name


def test_the_untouched_workbook_has_the_one_sheet_state() -> None:
    state = _run()
    assert set(state) == {"shape"} | {k for k in state if k[0].isalpha() and k[1:].isdigit()}
    # an old program's state: cells and shape only
    assert set(_run(c(name="sort_rows", arguments={"column": "Cost"}))) == set(state)


def test_range_tools() -> None:
    env = get_env("spreadsheet")
    n = env.book.data.n_rows
    state = _run(c(name="set_values", arguments={"range": "B2", "values": [[1, 2], [3, 4]]}))
    assert (state["B2"], state["C2"], state["B3"], state["C3"]) == (1, 2, 3, 4)
    state = _run(c(name="clear_range", arguments={"range": f"B2:B{n}"}))
    assert all(state[f"B{r}"] == "" for r in range(2, n + 1))
    state = _run(c(name="copy_range", arguments={"source": "A2:D2", "destination": f"A{n + 1}"}))
    assert state["shape"][0] == n + 1 and state[f"A{n + 1}"] == state["A2"]
    state = _run(c(name="move_range", arguments={"source": "A2:D2", "destination": f"A{n + 1}"}))
    assert state["A2"] == "" and state[f"A{n + 1}"] == _run()["A2"]
    state = _run(
        c(name="sort_range", arguments={"range": f"A2:D{n}", "column": "C", "ascending": False})
    )
    values = [state[f"C{r}"] for r in range(2, n + 1)]
    assert values == sorted(values, reverse=True)
    assert _run(c(name="fill_range", arguments={"range": "D2:D3", "value": 7}))["D3"] == 7
    before = _run()["C2"]
    state = _run(c(name="scale_range", arguments={"range": "C2", "factor": 1.5}))
    assert state["C2"] == round(before * 1.5, 2)
    state = _run(c(name="insert_rows", arguments={"count": 2, "row": 3}))
    assert state["shape"][0] == n + 2 and state["A3"] == state["A4"] == ""
    state = _run(c(name="append_rows", arguments={"values": [["goat", 1, 2, 3]]}))
    assert state[f"A{n + 1}"] == "goat"
    first = str(_run()["A2"])
    state = _run(c(name="find_replace", arguments={"find": first, "replacement": "X"}))
    assert state["A2"] == "X"
    assert _reason(c(name="clear_range", arguments={"range": "A1:B1"})) == BAD_VALUE
    assert _reason(c(name="fill_range", arguments={"range": "Z2", "value": 1})) == BAD_VALUE
    assert _reason(c(name="copy_range", arguments={"source": "2", "destination": "A1"})) == (
        BAD_ARGUMENTS
    )


def test_format_and_layout_tools() -> None:
    state = _run(
        c(name="set_italic", arguments={"range": "A2:B2"}),
        c(name="set_background_color", arguments={"range": "A2", "color": "yellow"}),
        c(name="set_number_format", arguments={"range": "C2", "format": "currency"}),
        c(name="clear_formatting", arguments={"range": "A1"}),
        c(name="freeze_rows", arguments={"rows": 2}),
        c(name="set_column_width", arguments={"width": 150, "column": "B"}),
        c(name="hide_column", arguments={"column": "D"}),
        c(name="clear_note", arguments={"cell": "A1"}),
        c(name="add_note", arguments={"cell": "B3", "note": "check"}),
    )
    title = get_env("spreadsheet").book.data.title
    assert state[f"{title}!A2.italic"] is True and state[f"{title}!B2.italic"] is True
    assert state[f"{title}!A2.background"] == "yellow"
    assert state[f"{title}!C2.number_format"] == "currency" and state[f"{title}!C2.decimals"] == 2
    assert state[f"{title}!A1.bold"] is None  # the header's bold is gone
    assert state[f"{title}.frozen_rows"] == 2 and state[f"{title}.width.B"] == 150
    assert state[f"{title}.hidden_columns"] == ["D"]
    assert state[f"{title}!A1.note"] is None and state[f"{title}!B3.note"] == "check"
    n = get_env("spreadsheet").book.data.n_rows
    merged = _run(c(name="merge_cells", arguments={"range": "B2:C2"}))
    assert merged[f"{title}.merges"] == ["B2:C2"] and merged["C2"] == ""
    assert _reason(c(name="merge_cells", arguments={"range": "A1:B1"})) == BAD_VALUE
    assert _reason(c(name="set_font_size", arguments={"range": "A1", "size": 99})) == (
        BAD_ARGUMENTS
    )
    assert _reason(c(name="hide_column", arguments={"column": "Z"})) == BAD_VALUE
    assert n > 2


def test_sheet_tools_and_the_active_sheet() -> None:
    state = _run(
        c(name="add_sheet", arguments={"title": "Plan", "headers": ["Month", "Target"]}),
        c(name="select_sheet", arguments={"title": "Plan"}),
        c(name="append_rows", arguments={"values": [["May", 10]]}),
        c(name="rename_sheet", arguments={"title": "Notes", "new_title": "Memo"}),
        c(name="unhide_sheet", arguments={"title": "Archive"}),
        c(name="move_sheet", arguments={"title": "Archive", "position": 1}),
        c(name="set_tab_color", arguments={"title": "Plan", "color": "green"}),
    )
    title = get_env("spreadsheet").book.data.title
    assert state["sheets"] == ["Archive", title, "Memo", "Plan"]
    assert state["Plan!A2"] == "May" and state["Plan!B2"] == 10 and state["Plan.shape"] == [2, 2]
    assert state["Archive.hidden"] is False and state["Plan.tab_color"] == "green"
    assert state["Notes!A1"] is None and state["Memo!A1"] == "Note"  # the sheet moved name
    dup = _run(c(name="duplicate_sheet", arguments={"title": title, "new_title": "Copy"}))
    assert dup["sheets"] == [title, "Copy", "Notes", "Archive"] and dup["Copy!A2"] == dup["A2"]
    gone = _run(c(name="delete_sheet", arguments={"title": title}))
    assert "shape" not in gone and gone["sheets"] == ["Notes", "Archive"]
    assert _reason(c(name="delete_sheet", arguments={"title": "Nope"})) == NOT_FOUND
    assert _reason(c(name="add_sheet", arguments={"title": "Notes", "headers": ["x"]})) == (
        BAD_VALUE
    )
    assert _reason(c(name="hide_sheet", arguments={"title": title}), c(name="hide_sheet", arguments={"title": "Notes"})) == BAD_VALUE  # fmt: skip


def test_named_protected_rule_and_chart_tools() -> None:
    title = get_env("spreadsheet").book.data.title
    state = _run(
        c(name="add_named_range", arguments={"name": "Prices", "range": "C2:C4"}),
        c(name="delete_named_range", arguments={"name": "Items"}),
        c(name="protect_range", arguments={"range": "B2:B3", "description": "locked"}),
        c(name="set_basic_filter", arguments={"range": "A1:B4"}),
        c(name="clear_conditional_formats", arguments={}),
        c(
            name="add_conditional_format",
            arguments={"range": "C2:C4", "condition": ">", "value": 10, "color": "green"},
        ),
        c(name="clear_data_validation", arguments={"range": "B2"}),
        c(name="set_list_validation", arguments={"range": "A2:A3", "values": ["x", "y"]}),
        c(name="set_number_validation", arguments={"range": "D2:D3", "minimum": 0, "maximum": 9}),
        c(name="set_chart_title", arguments={"title": "Overview", "new_title": "Costs"}),
        c(name="add_chart", arguments={"title": "Stock", "chart_type": "pie", "range": "A1:D3"}),
    )
    assert state["named.Prices"] == f"{title}!C2:C4" and state["named.Items"] is None
    assert state[f"protected.{title}!B2:B3"] == "locked"
    assert state[f"{title}.filter"] == "A1:B4"
    assert state[f"{title}.conditional"] == [["C2:C4", ">", 10, "green"]]
    assert state[f"{title}!A2:A3.validation"] == "one of x, y"
    assert state[f"{title}!D2:D3.validation"] == "number between 0 and 9"
    assert state["chart.Overview"] is None and state["chart.Costs"][1] == "column"
    assert state["chart.Stock"] == [title, "pie", "A1:D3"]
    cleared = _run(c(name="clear_basic_filter", arguments={}))
    assert cleared[f"{title}.filter"] is None
    assert _reason(c(name="clear_basic_filter", arguments={}), c(name="clear_basic_filter", arguments={})) == NOT_FOUND  # fmt: skip
    assert _reason(c(name="delete_chart", arguments={"title": "Nope"})) == NOT_FOUND
    assert _reason(c(name="set_basic_filter", arguments={"range": "A2:B4"})) == BAD_VALUE


def test_judged_by_the_final_workbook() -> None:
    env = get_env("spreadsheet")
    gold = [
        ToolCall(name="set_bold", arguments={"range": "A2:D2"}),
        ToolCall(name="hide_sheet", arguments={"title": "Notes"}),
    ]
    labels = env.label_states([gold], 0)
    same = env.run(list(reversed(gold)), 0)  # another order, the same workbook
    assert env.check(same.state, labels).success
    half = env.run(gold[:1], 0)
    res = env.check(half.state, labels)
    assert not res.success and 0 < res.f1 < 1
    wrong = env.run([gold[0], ToolCall(name="hide_sheet", arguments={"title": "Archive"})], 0)
    assert not env.check(wrong.state, labels).success


def test_every_workbook_tool_has_a_multi_call_goal() -> None:
    """Every tool beyond the cell tools is called by a multi-call gold program, and the gold
    programs succeed while one perturbed call fails."""
    env = get_env("spreadsheet")
    tools = set(env.tool_names) - CELL_TOOLS
    assert {c.name for name in FEATURES.atomic for c in _goal_calls(name, env)} >= tools
    multi: set[str] = set()
    data = [
        *generate("spreadsheet", "train", 300, seed=0, mix=(1, 0, 0)),
        *generate("spreadsheet", "test", 80, seed=0, mix=(1, 0, 0)),
    ]
    for inst in data:
        if len(inst.gold) > 1:
            multi |= {g.name for g in inst.gold}
    assert tools <= multi, sorted(tools - multi)


def _goal_calls(name: str, env: Environment) -> list[ToolCall]:
    import random

    from toollab.envs.taskset import TemplateError

    rng = random.Random(name)
    for seed in range(40):
        env.reset(seed)
        try:
            goal = FEATURES.templates[name](rng, env)
        except TemplateError:
            continue
        ex = env.run(list(goal.calls), seed)
        assert not ex.crashed, (name, ex.error)
        return [ToolCall(name=g.name, arguments=dict(g.arguments)) for g in goal.calls]
    raise AssertionError(f"template {name} gave no goal")


def test_bench_offers_the_retrieved_tools() -> None:
    """The environment asks for 8 retrieved tools; the bench task carries a retriever, the other
    environments' tasks do not."""
    assert SpreadsheetEnv.retrieved_tools == 8 and Environment.retrieved_tools is None
    sheet, weather = bench_tasks(["spreadsheet", "weather"], limit=4)
    assert (sheet.retriever, sheet.k) == ("bm25", 8)
    assert weather.retriever is None and weather.k is None


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_the_offer_holds_the_request_s_tools() -> None:
    """BM25 over the 62 tool documents, queried with each request, finds most gold tools."""
    from toollab.retrieval.offer import ToolOffer

    insts = [i for i in generate("spreadsheet", "test", 30, seed=0, mix=(1, 0, 0))]
    offer = ToolOffer.build("bm25", 8, instances=insts)
    offered = offer.offer(insts)
    assert all(len(i.tools) <= 8 for i in offered)
    gold = [(g.name, {t.name for t in i.tools}) for i in offered for g in i.gold]
    recall = sum(name in names for name, names in gold) / len(gold)
    assert recall >= 0.6, recall
