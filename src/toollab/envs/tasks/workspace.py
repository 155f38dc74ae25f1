"""Goal templates of the workspace environment (ToolEyes scenario AM, files).  Its text files
(``notes/todo.txt``) can hold a to-do or shopping list, so it serves the ``todo`` and
``shopping_list`` capabilities of the personal-life goals (they are never its NoCall goals)."""

from __future__ import annotations

import random

from toollab.envs.base import Environment
from toollab.envs.tasks.common import Goal, call, pick
from toollab.envs.workspace import BASE_FILES, WorkspaceEnv

TASKS = WorkspaceEnv.tasks
_FILES = [f for f in BASE_FILES if f.endswith(".txt")]
_NEW = ("notes/meeting.txt", "drafts/poem.txt", "plans/week.txt", "shopping.txt")
_LINES = ("call the plumber", "send the invoice", "walk the dog", "book the dentist", "buy stamps")
_REPLACEMENTS = (
    ("notes/todo.txt", "milk", "oat milk"),
    ("drafts/letter.txt", "Sam", "Alex"),
    ("readme.md", "Project", "Garden Project"),
    ("notes/ideas.txt", "bike", "scooter"),
)


@TASKS.template("create", weight=2)
def create(rng: random.Random, env: Environment) -> Goal:
    path, text = pick(rng, _NEW), pick(rng, _LINES)
    return Goal(
        query=f'Create a file {path} containing "{text}".',
        calls=[call("create_file", path=path, content=text)],
    )


@TASKS.template("append", weight=2)
def append(rng: random.Random, env: Environment) -> Goal:
    path, text = pick(rng, _FILES), pick(rng, _LINES)
    return Goal(
        query=f'Add the line "{text}" to {path}.',
        calls=[call("append_to_file", path=path, content=text)],
    )


@TASKS.template("read")
def read_file(rng: random.Random, env: Environment) -> Goal:
    path = pick(rng, list(BASE_FILES))
    return Goal(
        query=pick(rng, [f"Show me what's in {path}.", f"Read {path} to me."]),
        calls=[call("read_file", path=path)],
    )


@TASKS.template("delete")
def delete(rng: random.Random, env: Environment) -> Goal:
    path = pick(rng, list(BASE_FILES))
    return Goal(query=f"Delete {path}.", calls=[call("delete_file", path=path)])


@TASKS.template("move")
def move(rng: random.Random, env: Environment) -> Goal:
    path = pick(rng, _FILES)
    dst = pick(rng, ["archive/", "old/"]) + path.split("/")[-1]
    return Goal(
        query=f"Move {path} to {dst}.", calls=[call("move_file", source=path, destination=dst)]
    )


@TASKS.template("copy")
def copy(rng: random.Random, env: Environment) -> Goal:
    path = pick(rng, list(BASE_FILES))
    dst = "backup/" + path.split("/")[-1]
    return Goal(
        query=f"Make a backup copy of {path} at {dst}.",
        calls=[call("copy_file", source=path, destination=dst)],
    )


@TASKS.template("mkdir")
def mkdir(rng: random.Random, env: Environment) -> Goal:
    d = pick(rng, ["archive", "photos", "invoices"])
    return Goal(query=f"Create a folder called {d}.", calls=[call("make_directory", path=d)])


@TASKS.template("list")
def list_dir(rng: random.Random, env: Environment) -> Goal:
    d = pick(rng, ["notes", "reports", "drafts"])
    return Goal(query=f"What files are in the {d} folder?", calls=[call("list_directory", path=d)])


@TASKS.template("replace")
def replace(rng: random.Random, env: Environment) -> Goal:
    path, old, new = pick(rng, _REPLACEMENTS)
    return Goal(
        query=f'In {path}, replace "{old}" with "{new}".',
        calls=[call("replace_in_file", path=path, old=old, new=new)],
    )


@TASKS.template("archive", atomic=False)
def archive(rng: random.Random, env: Environment) -> Goal:
    path = pick(rng, _FILES)
    name = path.split("/")[-1]
    return Goal(
        query=f"Create an archive folder and move {path} into it.",
        calls=[
            call("make_directory", path="archive"),
            call("move_file", source=path, destination=f"archive/{name}"),
        ],
        alternatives=[
            [
                call("make_directory", path="archive"),
                call("move_file", source=path, destination="archive"),
            ]
        ],
    )


@TASKS.template("copy_and_edit", atomic=False)
def copy_and_edit(rng: random.Random, env: Environment) -> Goal:
    path, old, new = pick(rng, _REPLACEMENTS)
    stem, dot, ext = path.rpartition(".")
    dst = f"{stem}_v2{dot}{ext}"
    return Goal(
        query=f'Copy {path} to {dst} and, in the copy, replace "{old}" with "{new}".',
        calls=[
            call("copy_file", source=path, destination=dst),
            call("replace_in_file", path=dst, old=old, new=new),
        ],
    )


TASKS.add_composition(weight=4)
