"""Household activity templates (VirtualHome style).  Each goal has a reference plan and, where
the first walk (or run) to the room is optional, an alternative plan without it.  Only the tools
a plan may need plus a few distractors are offered (the full 40-action API does not fit a small
prompt; SambaNova retrieves 10 API docs for this task).  Every one of the 40 actions is used by
some template; ``Squeeze`` and ``Wipe`` are held out of training (test split only).

``two_chores`` joins two activities in one request; where the first leaves the agent sitting,
lying or asleep, the plan stands it up (``WakeUp``, ``StandUp``) before the second.
"""

from __future__ import annotations

import random

from toollab.envs.base import Environment
from toollab.envs.household import ACTIONS, OBJECTS, OFFERED_TOOLS, HouseholdEnv
from toollab.envs.tasks.common import (
    Goal,
    TemplateError,
    call,
    join_goals,
    masks,
    pick,
)
from toollab.schema import GoldCall

TASKS = HouseholdEnv.tasks
#: tools offered per goal (more when a plan needs more)
N_TOOLS = OFFERED_TOOLS

#: grabbable object -> containers it sensibly goes into
PUT_IN: dict[str, tuple[str, ...]] = {
    "apple": ("fridge", "kitchen_cabinet"),
    "bread": ("fridge", "kitchen_cabinet", "microwave"),
    "knife": ("dishwasher", "kitchen_cabinet"),
    "cup": ("dishwasher", "microwave"),
    "plate": ("dishwasher", "microwave"),
    "sponge": ("kitchen_cabinet",),
    "shoes": ("wardrobe",),
    "towel": ("wardrobe",),
    "pillow": ("wardrobe",),
}
#: grabbable object -> surfaces it sensibly goes onto
PUT_ON: dict[str, tuple[str, ...]] = {
    "book": ("coffee_table", "nightstand", "desk"),
    "newspaper": ("coffee_table", "kitchen_table"),
    "notebook": ("desk", "nightstand"),
    "remote_control": ("coffee_table",),
    "phone": ("desk", "nightstand"),
    "alarm_clock": ("nightstand",),
    "keyboard": ("desk",),
    "cup": ("kitchen_table", "desk", "coffee_table", "sink"),
    "plate": ("kitchen_table", "sink"),
    "apple": ("kitchen_table",),
    "bread": ("kitchen_table",),
    "knife": ("kitchen_table", "sink"),
    "toothbrush": ("bathroom_sink",),
    "toothpaste": ("bathroom_sink",),
}
#: appliances that start switched off
_OFF_APPLIANCES = tuple(
    o for o, (_w, p) in OBJECTS.items() if "switchable" in p and o not in ("radio", "lamp")
)
_ROOM_WORDS = {"living_room": "living room", "home_office": "home office", "tv": "TV"}


def _say(name: str) -> str:
    return _ROOM_WORDS.get(name, name.replace("_", " "))


def _props(prop: str) -> list[str]:
    return [o for o, (_w, p) in OBJECTS.items() if prop in p]


def _room(obj: str) -> str:
    where = OBJECTS[obj][0]
    while where in OBJECTS:
        where = OBJECTS[where][0]
    return where


def _container(obj: str) -> str | None:
    where = OBJECTS[obj][0]
    return where if where in OBJECTS and "openable" in OBJECTS[where][1] else None


def _fetch(obj: str) -> list[GoldCall]:
    """Find an object (opening its closed container first) and grab it."""
    box = _container(obj)
    steps = [call("Find", object=box), call("Open", object=box)] if box else []
    return [*steps, call("Find", object=obj), call("Grab", object=obj)]


def _close_after(obj: str) -> list[GoldCall]:
    box = _container(obj)
    return [call("Close", object=box)] if box else []


def _offer(rng: random.Random, needed: set[str]) -> list[str]:
    """The needed tools plus distractors: N_TOOLS in all (two distractors at least)."""
    others = [a for a in ACTIONS if a not in needed]
    extra = rng.sample(others, max(2, N_TOOLS - len(needed)))
    return [a for a in ACTIONS if a in needed or a in extra]


def _task(
    rng: random.Random,
    query: str,
    plan: list[GoldCall],
    walk_to: str | None = None,
    move: str = "Walk",
) -> Goal:
    """A plan; with ``walk_to`` the reference starts with ``move(room)`` and the alternative
    does not (finding an object takes the agent to its room anyway)."""
    alternatives = []
    if walk_to is not None:
        alternatives = [list(plan)]
        plan = [call(move, object=walk_to), *plan]
    needed = {c.name for c in plan} | {c.name for alt in alternatives for c in alt}
    return Goal(query=query, calls=plan, alternatives=alternatives, tools=_offer(rng, needed))


@TASKS.template("switch_on", weight=2)
def switch_on(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, _OFF_APPLIANCES)
    verb = pick(rng, ["Turn on", "Switch on"])
    return _task(
        rng,
        f"{verb} the {_say(obj)}.",
        [call("Find", object=obj), call("SwitchOn", object=obj)],
        _room(obj),
    )


@TASKS.template("switch_off")
def switch_off(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, ["radio", "lamp"])
    verb = pick(rng, ["Switch off", "Turn off"])
    return _task(
        rng,
        f"{verb} the {obj} in the living room.",
        [call("Find", object=obj), call("SwitchOff", object=obj)],
        "living_room",
    )


@TASKS.template("run_to", weight=0.5)
def run_to(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, _OFF_APPLIANCES)
    room = _room(obj)
    return _task(
        rng,
        f"Run to the {_say(room)} and switch on the {_say(obj)}.",
        [call("Find", object=obj), call("SwitchOn", object=obj)],
        room,
        move="Run",
    )


@TASKS.template("put_in", weight=2)
def put_in(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, sorted(PUT_IN))
    box = pick(rng, PUT_IN[obj])
    plan = [*_fetch(obj), call("Find", object=box)]
    plan += [
        call("Open", object=box),
        call("PutIn", object=obj, target=box),
        call("Close", object=box),
    ]
    return _task(rng, f"Put the {_say(obj)} in the {_say(box)} and close it.", plan)


@TASKS.template("put_on_surface", weight=2)
def put_on_surface(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, sorted(PUT_ON))
    surf = pick(rng, PUT_ON[obj])
    plan = [*_fetch(obj), call("Find", object=surf), call("PutBack", object=obj, target=surf)]
    return _task(rng, f"Put the {_say(obj)} on the {_say(surf)}.", plan)


@TASKS.template("carry")
def carry(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, ["book", "newspaper", "notebook", "pillow", "phone", "apple", "towel"])
    room = pick(
        rng, [r for r in ("bedroom", "kitchen", "living_room", "home_office") if r != _room(obj)]
    )
    plan = [*_fetch(obj), call("Walk", object=room), call("Release", object=obj)]
    return _task(
        rng, f"Carry the {_say(obj)} to the {_say(room)} and put it down on the floor.", plan
    )


@TASKS.template("read")
def read(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, _props("readable"))
    seat = pick(rng, [s for s in _props("sittable") if _room(s) == _room(obj)] or ["sofa"])
    plan = [
        *_fetch(obj),
        call("Find", object=seat),
        call("Sit", object=seat),
        call("Read", object=obj),
    ]
    return _task(rng, f"Sit down on the {_say(seat)} and read the {obj}.", plan, _room(obj))


@TASKS.template("watch_tv")
def watch_tv(rng: random.Random, env: Environment) -> Goal:
    plan = [
        call("Find", object="remote_control"),
        call("Grab", object="remote_control"),
        call("Find", object="tv"),
        call("SwitchOn", object="tv"),
        call("Find", object="sofa"),
        call("Sit", object="sofa"),
        call("Watch", object="tv"),
    ]
    return _task(
        rng,
        pick(rng, ["Watch TV on the sofa.", "Relax on the sofa in front of the TV."]),
        plan,
        "living_room",
    )


@TASKS.template("point_remote")
def point_remote(rng: random.Random, env: Environment) -> Goal:
    plan = [
        call("Find", object="remote_control"),
        call("Grab", object="remote_control"),
        call("Find", object="tv"),
        call("PointAt", object="tv"),
        call("SwitchOn", object="tv"),
    ]
    return _task(rng, "Point the remote control at the TV and switch it on.", plan, "living_room")


@TASKS.template("eat")
def eat(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, _props("eatable"))
    plan = [*_fetch(obj)]
    if "washable" in OBJECTS[obj][1] and rng.random() < 0.5:
        plan = [call("Find", object=obj), call("Wash", object=obj), *plan[-1:]]
        q = f"Wash the {obj} and eat it."
    else:
        q = f"Eat the {obj}."
    return _task(rng, q, [*plan, call("Eat", object=obj)], "kitchen")


@TASKS.template("drink")
def drink(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, _props("drinkable"))
    plan = [*_fetch(obj), *_close_after(obj), call("Drink", object=obj)]
    return _task(
        rng, f"Get the {obj} from the fridge, close the fridge and drink it.", plan, "kitchen"
    )


@TASKS.template("pour")
def pour(rng: random.Random, env: Environment) -> Goal:
    drink_ = pick(rng, _props("pourable"))
    plan = [
        *_fetch(drink_),
        call("Find", object="kitchen_cabinet"),
        call("Open", object="kitchen_cabinet"),
        call("Find", object="cup"),
        call("PourInto", object=drink_, target="cup"),
    ]
    return _task(rng, f"Pour some {drink_} into a cup from the cabinet.", plan, "kitchen")


@TASKS.template("cut")
def cut(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, _props("cuttable"))
    plan = [
        call("Find", object="knife"),
        call("Grab", object="knife"),
        call("Find", object=obj),
        call("Cut", object=obj),
    ]
    return _task(rng, f"Cut the {obj} with the knife.", plan, "kitchen")


@TASKS.template("sleep")
def sleep(rng: random.Random, env: Environment) -> Goal:
    plan = [call("Find", object="bed"), call("Lie", object="bed"), call("Sleep")]
    return _task(
        rng, pick(rng, ["Go to sleep in bed.", "Lie down in bed and fall asleep."]), plan, "bedroom"
    )


@TASKS.template("nap")
def nap(rng: random.Random, env: Environment) -> Goal:
    plan = [
        call("Find", object="sofa"),
        call("Lie", object="sofa"),
        call("Sleep"),
        call("WakeUp"),
        call("StandUp"),
        call("Find", object="tv"),
        call("SwitchOn", object="tv"),
    ]
    return _task(
        rng, "Take a nap on the sofa, then wake up, get up and turn on the TV.", plan, "living_room"
    )


@TASKS.template("sit_then_lamp")
def sit_then_lamp(rng: random.Random, env: Environment) -> Goal:
    plan = [
        call("Find", object="sofa"),
        call("Sit", object="sofa"),
        call("StandUp"),
        call("Find", object="lamp"),
        call("SwitchOff", object="lamp"),
    ]
    return _task(
        rng,
        "Sit on the sofa for a while, then stand up and switch off the lamp.",
        plan,
        "living_room",
    )


@TASKS.template("get_dressed")
def get_dressed(rng: random.Random, env: Environment) -> Goal:
    if rng.random() < 0.5:
        plan = [*_fetch("shirt"), *_close_after("shirt"), call("PutOn", object="shirt")]
        return _task(
            rng,
            "Take a shirt from the wardrobe, close the wardrobe and put the shirt on.",
            plan,
            "bedroom",
        )
    plan = [*_fetch("shoes"), call("PutOn", object="shoes")]
    return _task(rng, "Put on your shoes.", plan, "bedroom")


@TASKS.template("take_off_shoes")
def take_off_shoes(rng: random.Random, env: Environment) -> Goal:
    room = pick(rng, ["kitchen", "living_room", "home_office"])
    plan = [
        *_fetch("shoes"),
        call("PutOn", object="shoes"),
        call("Walk", object=room),
        call("TakeOff", object="shoes"),
        call("Release", object="shoes"),
    ]
    return _task(
        rng,
        f"Put on the shoes, walk to the {_say(room)}, then take them off and leave them there.",
        plan,
    )


@TASKS.template("shower")
def shower(rng: random.Random, env: Environment) -> Goal:
    plan = [
        call("Find", object="shower"),
        call("SwitchOn", object="shower"),
        call("SwitchOff", object="shower"),
        call("Find", object="towel"),
        call("Grab", object="towel"),
        call("PutOn", object="towel"),
    ]
    return _task(
        rng, "Turn the shower on and off again, then wrap yourself in the towel.", plan, "bathroom"
    )


@TASKS.template("work")
def work(rng: random.Random, env: Environment) -> Goal:
    plan = [
        call("Find", object="computer"),
        call("SwitchOn", object="computer"),
        call("Find", object="chair"),
        call("Sit", object="chair"),
        call("Type", object="computer"),
    ]
    return _task(
        rng,
        pick(rng, ["Switch on the computer, sit down and type.", "Sit at the computer and type."]),
        plan,
        "home_office",
    )


@TASKS.template("restart")
def restart(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, [o for o in _props("pluggable") if o in _OFF_APPLIANCES])
    plan = [
        call("Find", object=obj),
        call("PlugOut", object=obj),
        call("PlugIn", object=obj),
        call("SwitchOn", object=obj),
    ]
    return _task(
        rng, f"Unplug the {_say(obj)}, plug it back in and switch it on.", plan, _room(obj)
    )


@TASKS.template("unplug")
def unplug(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, _props("pluggable"))
    return _task(
        rng,
        f"Unplug the {_say(obj)}.",
        [call("Find", object=obj), call("PlugOut", object=obj)],
        _room(obj),
    )


@TASKS.template("furniture")
def furniture(rng: random.Random, env: Environment) -> Goal:
    verb, obj, text = pick(
        rng,
        [
            ("Push", "sofa", "Push the sofa against the wall."),
            ("Pull", "chair", "Pull the chair out from the desk."),
            ("Move", "coffee_table", "Move the coffee table aside."),
            ("Push", "chair", "Push the chair under the desk."),
            ("Move", "sofa", "Move the sofa closer to the window."),
        ],
    )
    return _task(rng, text, [call("Find", object=obj), call(verb, object=obj)], _room(obj))


@TASKS.template("clean")
def clean(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, [o for o in _props("washable") if _container(o) is None])
    verb = pick(rng, ["Wash", "Rinse", "Scrub", "Wipe"])
    return _task(
        rng,
        f"{verb} the {_say(obj)}.",
        [call("Find", object=obj), call(verb, object=obj)],
        _room(obj),
    )


@TASKS.template("brush_teeth")
def brush_teeth(rng: random.Random, env: Environment) -> Goal:
    plan = [
        call("Find", object="toothbrush"),
        call("Grab", object="toothbrush"),
        call("Find", object="toothpaste"),
        call("Grab", object="toothpaste"),
        call("Squeeze", object="toothpaste"),
        call("Rinse", object="toothbrush"),
    ]
    return _task(rng, "Brush your teeth.", plan, "bathroom")


@TASKS.template("squeeze")
def squeeze(rng: random.Random, env: Environment) -> Goal:
    obj, text = pick(
        rng,
        [("sponge", "Squeeze out the sponge."), ("pillow", "Fluff the pillow by squeezing it.")],
    )
    return _task(rng, text, [call("Find", object=obj), call("Squeeze", object=obj)], _room(obj))


@TASKS.template("greet")
def greet(rng: random.Random, env: Environment) -> Goal:
    if rng.random() < 0.5:
        plan = [call("Find", object="mom"), call("Greet", object="mom")]
        return _task(rng, "Go and say hello to mom.", plan, "living_room")
    plan = [call("Find", object="mom"), call("TurnTo", object="mom"), call("Greet", object="mom")]
    return _task(rng, "Turn towards mom and greet her.", plan, "living_room")


@TASKS.template("check")
def check(rng: random.Random, env: Environment) -> Goal:
    verb, obj, text = pick(
        rng,
        [
            ("LookAt", "mirror", "Look at yourself in the bathroom mirror."),
            ("LookAt", "window", "Look out of the living room window."),
            ("Touch", "stove", "Touch the stove to check whether it is warm."),
            ("Touch", "radio", "Touch the radio in the living room."),
        ],
    )
    return _task(rng, text, [call("Find", object=obj), call(verb, object=obj)], _room(obj))


@TASKS.template("open_window")
def open_window(rng: random.Random, env: Environment) -> Goal:
    obj = pick(rng, ["window", "curtains"])
    return _task(
        rng,
        f"Open the {obj} in the {_say(_room(obj))}.",
        [call("Find", object=obj), call("Open", object=obj)],
        _room(obj),
    )


@TASKS.template("two_chores", weight=8, atomic=False)
def two_chores(rng: random.Random, env: Environment) -> Goal:
    """Two atomic activities in one request; the agent gets up in between where needed."""
    if not isinstance(env, HouseholdEnv):
        raise TypeError("household templates need a HouseholdEnv")
    names = sorted(TASKS.atomic)
    weights = [TASKS.weights[n] for n in names]
    a, b = rng.choices(names, weights, k=2)
    if a == b:
        raise TemplateError("the same activity twice")
    first, second = TASKS.templates[a](rng, env), TASKS.templates[b](rng, env)
    ex = env.run(first.calls, env.seed)
    between: list[GoldCall] = []
    if env.agent["asleep"]:
        between.append(call("WakeUp"))
    if env.agent["posture"] != "standing":
        between.append(call("StandUp"))
    programs = [
        p + between + q
        for p in [first.calls, *first.alternatives]
        for q in [second.calls, *second.alternatives]
    ]
    if (
        ex.crashed
        or any(env.run(p, env.seed).crashed for p in programs)
        or masks(env, env.seed, [first.calls, second.calls], programs)
    ):
        raise TemplateError("the two activities do not fit together")
    env.reset(env.seed)
    needed = {c.name for p in programs for c in p}
    return Goal(
        query=join_goals(rng, first.query, second.query),
        calls=programs[0],
        alternatives=programs[1:],
        tools=_offer(rng, needed),
        metadata={"parts": [a, b]},
    )
