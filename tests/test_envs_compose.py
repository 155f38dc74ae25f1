"""Composed goals ("… Also, …"): every part leaves a trace the success check sees, no goal is
joined with its own undo, one date style per request, values derived by an earlier part stay
consistent."""

from __future__ import annotations

import random
import re
from itertools import combinations

import pytest

from toollab.envs import env_names, get_env
from toollab.envs.generate import generate
from toollab.envs.splits import task_set
from toollab.envs.tasks.common import MONTH_NAMES, Goal, TemplateError
from toollab.schema import Decision

ALL = env_names()
COMPOSING = [n for n in ALL if "two_goals" in task_set(n).templates]


def _draws(name: str, template: str, k: int, salt: str = "") -> list[tuple[int, Goal]]:
    ts, env = task_set(name), get_env(name)
    rng = random.Random(f"compose|{name}|{template}|{salt}")
    out = []
    for _ in range(k):
        seed = rng.randrange(100_000)
        env.reset(seed)
        try:
            out.append((seed, ts.templates[template](rng, env)))
        except TemplateError:
            continue
    return out


def _passes(name: str, seed: int, program: list, task: Goal) -> bool:  # type: ignore[type-arg]
    env = get_env(name)
    labels = [env.run(list(p), seed).state for p in task.programs()]
    ex = env.run(program, seed)
    return not ex.crashed and env.check(ex.state, labels).success


@pytest.mark.parametrize("name", COMPOSING)
def test_no_part_of_a_composed_goal_can_be_skipped(name: str) -> None:
    """Doing nothing, or only some of the parts, never meets a composed goal (e.g. "Put 'Book
    club' in my calendar … Also, cancel 'Book club'" would pass with the empty program)."""
    tasks = _draws(name, "two_goals", 300)
    assert len(tasks) >= 250
    for seed, task in tasks:
        assert not _passes(name, seed, [], task), task.query
        parts = task.part_calls
        assert len(parts) == len(task.metadata["parts"]) >= 2
        assert [c for p in parts for c in p] == task.calls
        for size in range(1, len(parts)):
            for subset in combinations(parts, size):
                program = [c for p in subset for c in p]
                assert not _passes(name, seed, program, task), (task.query, subset)


def test_no_generated_call_instance_is_met_by_the_empty_program() -> None:
    n = 0
    for name in ALL:
        env = get_env(name)
        for seed in range(4):
            for split in ("train", "validation", "test"):
                for inst in generate(name, split, 30, seed, mix=(1, 0, 0)):
                    assert inst.decision is Decision.CALL
                    s = inst.metadata["seed"]
                    labels = env.label_states([inst.gold, *inst.alternatives], s)
                    assert not env.check(env.run([], s).state, labels).success, inst.query
                    n += 1
    assert n == len(ALL) * 4 * 3 * 30


def test_a_goal_is_never_joined_with_its_undo() -> None:
    from toollab.envs.tasks.common import call, undoes

    undo_pairs = {n: task_set(n).inverses for n in ("personal_life", "spreadsheet", "workspace")}
    for name, inverses in undo_pairs.items():
        assert inverses, name
        for _seed, task in _draws(name, "two_goals", 300, "undo"):
            first, *rest = task.part_calls
            for later in rest:
                assert not undoes(inverses, first, later), task.query
                first = first + later
    # the rule itself: same thing -> an undo; another thing -> not
    inv = (("add_event", "cancel_event"),)
    add = [call("add_event", title="Book club", date="2024-05-02", time="10:00")]
    assert undoes(inv, add, [call("cancel_event", title="Book club", date="2024-05-02")])
    assert undoes(inv, [call("cancel_event", title="Book club", date="2024-05-02")], add)
    assert not undoes(inv, add, [call("cancel_event", title="Gym", date="2024-05-02")])


_STYLES = (
    re.compile(rf"\b({'|'.join(MONTH_NAMES)}) \d{{1,2}}, \d{{4}}"),
    re.compile(r"\b\d{4}/\d{2}/\d{2}\b"),
    re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
    re.compile(rf"\b({'|'.join(m[:3] for m in MONTH_NAMES)}) \d{{1,2}} \d{{4}}\b"),
)


def test_a_composed_request_writes_every_date_in_one_style() -> None:
    """ "Put "Gym" in my calendar on 2024-05-25 … Also, cancel "Book club" on 2024/05/27" mixed
    two styles; personal_life is the composing environment whose goals say dates."""
    mixed, two_dates = [], 0
    for _seed, task in _draws("personal_life", "two_goals", 400, "dates"):
        found = [i for i, rx in enumerate(_STYLES) for _m in rx.finditer(task.query)]
        two_dates += len(found) >= 2
        if len(set(found)) > 1:
            mixed.append(task.query)
    assert not mixed, mixed[:3]
    assert two_dates >= 15


def test_a_column_computed_by_an_earlier_goal_stays_consistent() -> None:
    """ "Add a column Monthly salary equal to Salary divided by 12. Next, add a row for Ivo …":
    the new row's Monthly salary is its Salary / 12, and no later goal edits a cell a computed
    column depends on."""
    from toollab.envs.spreadsheet import evaluate, norm_value
    from toollab.envs.tasks.spreadsheet import _COMPUTED

    env = get_env("spreadsheet")
    checked = new_rows = 0
    for seed, task in _draws("spreadsheet", "two_goals", 1500, "derived"):
        made = [c for c in task.calls if c.name == "add_computed_column"]
        if not made or made[0] is task.calls[-1]:
            continue
        new_rows += task.calls[-1].name == "add_row"
        env.run(task.calls, seed)
        df = env.df
        for c in made:
            col, expr = c.arguments["column"], c.arguments["expression"]
            # a later goal may rename a column: the values stay, the names follow
            now: dict[str, str] = {}
            for later in task.calls[task.calls.index(c) + 1 :]:
                if later.name == "rename_column":
                    old, new = later.arguments["column"], later.arguments["new_name"]
                    now = {k: (new if v == old else v) for k, v in now.items()}
                    now.setdefault(old, new)
            col = now.get(col, col)
            gone = {x.arguments["column"] for x in task.calls if x.name == "delete_column"}
            if col not in df.columns or any(re.search(rf"\b{re.escape(g)}\b", expr) for g in gone):
                continue  # the column, or one it was computed from, was removed afterwards
            for i in range(len(df)):
                row = {str(k): norm_value(df.at[i, k]) for k in df.columns}
                if "" in row.values():  # a formula written below the last row
                    continue
                value = evaluate(expr, lambda n, row=row, now=now: row[now.get(n, n)])  # type: ignore[misc]
                assert row[col] == norm_value(value), (task.query, i)
            checked += 1
    assert checked >= 30 and new_rows >= 5
    assert all(len(v) == 3 for v in _COMPUTED.values())
