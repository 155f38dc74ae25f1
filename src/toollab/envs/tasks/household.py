"""Household activity templates (VirtualHome style).  Each goal has a reference plan and, where
the walk to the room is optional, an alternative plan without it.  Only the tools a plan may need
plus a few distractors are offered (the full 40-action API does not fit a small prompt; SambaNova
retrieves 10 API docs for this task).  ``Squeeze`` and ``Wipe`` are held out of training."""

from __future__ import annotations

import random

from toollab.envs.base import Environment
from toollab.envs.household import ACTIONS, OBJECTS
from toollab.envs.tasks.common import Task, TaskSet, call, pick
from toollab.schema import GoldCall

TASKS = TaskSet("household", held_out_tools=("Squeeze", "Wipe"))
N_TOOLS = 10


def _props(prop: str) -> list[str]:
    return [o for o, (_w, p) in OBJECTS.items() if prop in p]


def _room(obj: str) -> str:
    where = OBJECTS[obj][0]
    while where in OBJECTS:
        where = OBJECTS[where][0]
    return where


def _fetch(obj: str) -> list[GoldCall]:
    """Find an object (opening its closed container first) and grab it."""
    where = OBJECTS[obj][0]
    steps = []
    if where in OBJECTS and "openable" in OBJECTS[where][1]:
        steps += [call("Find", object=where), call("Open", object=where)]
    return [*steps, call("Find", object=obj), call("Grab", object=obj)]


def _close_after(obj: str) -> list[GoldCall]:
    where = OBJECTS[obj][0]
    return (
        [call("Close", object=where)]
        if where in OBJECTS and "openable" in OBJECTS[where][1]
        else []
    )


def _task(rng: random.Random, query: str, plan: list[GoldCall], walk_to: str | None = None) -> Task:
    """A plan; with ``walk_to`` the reference starts with Walk(room) and the alternative does not."""
    alternatives = []
    if walk_to is not None:
        alternatives = [list(plan)]
        plan = [call("Walk", object=walk_to), *plan]
    needed = sorted({c.name for c in plan} | {c.name for alt in alternatives for c in alt})
    others = [a for a in ACTIONS if a not in needed]
    extra = rng.sample(others, max(0, N_TOOLS - len(needed)))
    tools = [a for a in ACTIONS if a in set(needed) | set(extra)]
    return Task(query=query, calls=plan, alternatives=alternatives, tools=tools)


@TASKS.template("switch_on", weight=2)
def switch_on(rng: random.Random, env: Environment) -> Task:
    obj = pick(rng, [o for o in _props("switchable") if o not in ("radio", "lamp")])
    return _task(
        rng,
        f"Turn on the {obj.replace('_', ' ')}.",
        [call("Find", object=obj), call("SwitchOn", object=obj)],
        _room(obj),
    )


@TASKS.template("switch_off")
def switch_off(rng: random.Random, env: Environment) -> Task:
    obj = pick(rng, ["radio", "lamp"])
    return _task(
        rng,
        f"Switch off the {obj}.",
        [call("Find", object=obj), call("SwitchOff", object=obj)],
        "living_room",
    )


@TASKS.template("put_in", weight=2)
def put_in(rng: random.Random, env: Environment) -> Task:
    obj = pick(rng, [o for o in _props("grabbable") if OBJECTS[o][0] not in OBJECTS])
    box = pick(rng, _props("container"))
    plan = [*_fetch(obj), call("Find", object=box)]
    if "openable" in OBJECTS[box][1]:
        plan += [
            call("Open", object=box),
            call("PutIn", object=obj, target=box),
            call("Close", object=box),
        ]
    else:
        plan.append(call("PutIn", object=obj, target=box))
    return _task(
        rng, f"Put the {obj.replace('_', ' ')} in the {box.replace('_', ' ')} and close it.", plan
    )


@TASKS.template("put_on_surface")
def put_on_surface(rng: random.Random, env: Environment) -> Task:
    obj = pick(rng, [o for o in _props("grabbable") if OBJECTS[o][0] not in OBJECTS])
    surf = pick(rng, _props("surface"))
    plan = [*_fetch(obj), call("Find", object=surf), call("PutBack", object=obj, target=surf)]
    return _task(rng, f"Put the {obj.replace('_', ' ')} on the {surf.replace('_', ' ')}.", plan)


@TASKS.template("read")
def read(rng: random.Random, env: Environment) -> Task:
    obj = pick(rng, _props("readable"))
    seat = pick(rng, [s for s in _props("sittable") if _room(s) == _room(obj)] or ["sofa"])
    plan = [
        *_fetch(obj),
        call("Find", object=seat),
        call("Sit", object=seat),
        call("Read", object=obj),
    ]
    return _task(rng, f"Sit down and read the {obj}.", plan, _room(obj))


@TASKS.template("watch_tv")
def watch_tv(rng: random.Random, env: Environment) -> Task:
    plan = [
        call("Find", object="remote_control"),
        call("Grab", object="remote_control"),
        call("Find", object="tv"),
        call("SwitchOn", object="tv"),
        call("Find", object="sofa"),
        call("Sit", object="sofa"),
        call("Watch", object="tv"),
    ]
    return _task(rng, pick(rng, ["Watch TV.", "Relax in front of the TV."]), plan, "living_room")


@TASKS.template("eat")
def eat(rng: random.Random, env: Environment) -> Task:
    obj = pick(rng, _props("eatable"))
    plan = [*_fetch(obj)]
    if "washable" in OBJECTS[obj][1] and rng.random() < 0.5:
        plan = [call("Find", object=obj), call("Wash", object=obj), *plan[-1:]]
        q = f"Wash the {obj} and eat it."
    else:
        q = f"Eat the {obj}."
    return _task(rng, q, [*plan, call("Eat", object=obj)], "kitchen")


@TASKS.template("drink")
def drink(rng: random.Random, env: Environment) -> Task:
    obj = pick(rng, _props("drinkable"))
    plan = [*_fetch(obj), *_close_after(obj), call("Drink", object=obj)]
    return _task(rng, f"Get the {obj} from the fridge and drink it.", plan, "kitchen")


@TASKS.template("cut")
def cut(rng: random.Random, env: Environment) -> Task:
    obj = pick(rng, _props("cuttable"))
    plan = [
        call("Find", object="knife"),
        call("Grab", object="knife"),
        call("Find", object=obj),
        call("Cut", object=obj),
    ]
    return _task(rng, f"Cut the {obj} with the knife.", plan, "kitchen")


@TASKS.template("sleep")
def sleep(rng: random.Random, env: Environment) -> Task:
    plan = [call("Find", object="bed"), call("Lie", object="bed"), call("Sleep")]
    return _task(rng, pick(rng, ["Go to sleep.", "Go to bed and fall asleep."]), plan, "bedroom")


@TASKS.template("get_dressed")
def get_dressed(rng: random.Random, env: Environment) -> Task:
    plan = [*_fetch("shirt"), call("PutOn", object="shirt"), *_close_after("shirt")]
    return _task(rng, "Take a shirt from the wardrobe and put it on.", plan, "bedroom")


@TASKS.template("work")
def work(rng: random.Random, env: Environment) -> Task:
    plan = [
        call("Find", object="computer"),
        call("SwitchOn", object="computer"),
        call("Find", object="chair"),
        call("Sit", object="chair"),
        call("Type", object="computer"),
    ]
    return _task(
        rng,
        pick(rng, ["Work on the computer.", "Sit at the computer and type."]),
        plan,
        "home_office",
    )


@TASKS.template("clean")
def clean(rng: random.Random, env: Environment) -> Task:
    obj = pick(rng, [o for o in _props("washable") if OBJECTS[o][0] not in OBJECTS])
    verb = pick(rng, ["Wash", "Rinse", "Scrub", "Wipe"])
    return _task(
        rng,
        f"{verb} the {obj.replace('_', ' ')}.",
        [call("Find", object=obj), call(verb, object=obj)],
        _room(obj),
    )


@TASKS.template("brush_teeth")
def brush_teeth(rng: random.Random, env: Environment) -> Task:
    plan = [
        call("Find", object="toothbrush"),
        call("Grab", object="toothbrush"),
        call("Find", object="toothpaste"),
        call("Grab", object="toothpaste"),
        call("Squeeze", object="toothpaste"),
        call("Rinse", object="toothbrush"),
    ]
    return _task(rng, "Brush your teeth.", plan, "bathroom")


@TASKS.template("greet")
def greet(rng: random.Random, env: Environment) -> Task:
    return _task(
        rng,
        "Go and say hello to mom.",
        [call("Find", object="mom"), call("Greet", object="mom")],
        "living_room",
    )


@TASKS.template("open_window")
def open_window(rng: random.Random, env: Environment) -> Task:
    obj = pick(rng, ["window", "curtains"])
    return _task(
        rng, f"Open the {obj}.", [call("Find", object=obj), call("Open", object=obj)], _room(obj)
    )
