"""Goal templates of the personal-life environment (ToolEyes scenario PL): calendar, to-dos,
alarms, contacts and the shopping list."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toollab.envs.base import Environment
from toollab.envs.personal_life import PersonalLifeEnv
from toollab.envs.tasks.common import Goal, call, date_style, pick, say_date

TASKS = PersonalLifeEnv.tasks
_EVENTS = ("Coffee with Jo", "Gym", "Book club", "Parent-teacher meeting", "Car service", "Haircut")
_CHORES = ("clean the garage", "call grandma", "file taxes", "fix the bike")
#: shopping item -> how a quantity of it is said
_ITEMS = {
    "milk": "cartons of milk",
    "apples": "apples",
    "bread": "loaves of bread",
    "cheese": "packs of cheese",
    "tomatoes": "tomatoes",
    "pasta": "packs of pasta",
}


def _pl(env: Environment) -> PersonalLifeEnv:
    if not isinstance(env, PersonalLifeEnv):
        raise TypeError("personal-life templates need a PersonalLifeEnv")
    return env


def _day(rng: random.Random, env: PersonalLifeEnv) -> str:
    return (env.today + dt.timedelta(days=rng.randint(1, 20))).isoformat()


def _time(rng: random.Random) -> str:
    return f"{rng.randint(8, 19):02d}:{pick(rng, ['00', '30'])}"


@TASKS.template("event", weight=2)
def event(rng: random.Random, env: Environment) -> Goal:
    e = _pl(env)
    title, d, t = pick(rng, _EVENTS), _day(rng, e), _time(rng)
    args: dict[str, Any] = {"title": title, "date": d, "time": t}
    extra = ""
    if rng.random() < 0.4:
        args["duration_minutes"] = rng.choice([30, 90, 120])
        extra = f" for {args['duration_minutes']} minutes"
    return Goal(
        query=f'Put "{title}" in my calendar on {say_date(rng, d)} at {t}{extra}.',
        calls=[call("add_event", **args)],
    )


@TASKS.template("cancel")
def cancel(rng: random.Random, env: Environment) -> Goal:
    ev = pick(rng, sorted(f"{v['title']}|{v['date']}" for v in _pl(env).events.values()))
    title, d = ev.split("|")
    return Goal(
        query=f'Cancel "{title}" on {say_date(rng, d)}.',
        calls=[call("cancel_event", title=title, date=d)],
    )


@TASKS.template("todo", weight=2, needs=("todo",))
def todo(rng: random.Random, env: Environment) -> Goal:
    task = pick(rng, _CHORES)
    pr = pick(rng, ["low", "normal", "high"])
    args: dict[str, Any] = {"task": task, **({} if pr == "normal" else {"priority": pr})}
    word = "" if pr == "normal" else f" with {pr} priority"
    return Goal(query=f"Add '{task}' to my to-do list{word}.", calls=[call("add_todo", **args)])


@TASKS.template("complete", needs=("todo",))
def complete(rng: random.Random, env: Environment) -> Goal:
    task = pick(rng, sorted(t for t, v in _pl(env).todos.items() if not v["done"]))
    return Goal(
        query=f"I finished '{task}', tick it off my to-do list.",
        calls=[call("complete_todo", task=task)],
    )


@TASKS.template("alarm", weight=2)
def alarm(rng: random.Random, env: Environment) -> Goal:
    t = f"{rng.randint(5, 9):02d}:{pick(rng, ['00', '15', '30', '45'])}"
    args: dict[str, Any] = {"time": t}
    text = f"Set an alarm for {t}"
    if rng.random() < 0.5:
        days = pick(rng, ["weekdays", "weekends"])
        args["repeat_days"] = (
            ["mon", "tue", "wed", "thu", "fri"] if days == "weekdays" else ["sat", "sun"]
        )
        text += f" on {days}"
    if rng.random() < 0.4:
        args["label"] = pick(rng, ["Run", "Meds", "Work"])
        text += f' labelled "{args["label"]}"'
    return Goal(query=text + ".", calls=[call("set_alarm", **args)])


@TASKS.template("contact")
def contact(rng: random.Random, env: Environment) -> Goal:
    name = pick(rng, ["Rosa Diaz", "Ken Ito", "Ada Obi", "Leo Park"])
    phone = f"+1{rng.randint(200, 999)}{rng.randint(1000000, 9999999)}"
    return Goal(
        query=f"Save {name}'s number, {phone}, to my contacts.",
        calls=[call("add_contact", name=name, phone=phone)],
    )


@TASKS.template("shopping_add", weight=2, needs=("shopping_list",))
def shopping_add(rng: random.Random, env: Environment) -> Goal:
    item = pick(rng, sorted(_ITEMS))
    n = rng.randint(1, 4)
    what = item if n == 1 else f"{n} {_ITEMS[item]}"
    return Goal(
        query=f"Add {what} to the shopping list.",
        calls=[call("add_to_shopping_list", item=item, **({} if n == 1 else {"quantity": n}))],
    )


@TASKS.template("shopping_remove", needs=("shopping_list",))
def shopping_remove(rng: random.Random, env: Environment) -> Goal:
    item = pick(rng, sorted(_pl(env).shopping))
    return Goal(
        query=f"Take {item} off my shopping list.",
        calls=[call("remove_from_shopping_list", item=item)],
    )


@TASKS.template("agenda")
def agenda(rng: random.Random, env: Environment) -> Goal:
    d = pick(rng, sorted({v["date"] for v in _pl(env).events.values()}))
    return Goal(
        query=f"What's on my calendar on {say_date(rng, d)}?", calls=[call("list_events", date=d)]
    )


@TASKS.template("plan_evening", atomic=False)
def plan_evening(rng: random.Random, env: Environment) -> Goal:
    e = _pl(env)
    d = _day(rng, e)
    item = pick(rng, sorted(_ITEMS))
    return Goal(
        query=f'Schedule "Dinner party" on {say_date(rng, d)} at 19:00 and add {item} to my shopping list.',
        calls=[
            call("add_event", title="Dinner party", date=d, time="19:00"),
            call("add_to_shopping_list", item=item),
        ],
    )


@TASKS.template("reschedule", atomic=False)
def reschedule(rng: random.Random, env: Environment) -> Goal:
    e = _pl(env)
    ev = pick(rng, sorted((v["title"], v["date"], v["time"]) for v in e.events.values()))
    title, d, t = ev
    new = (dt.date.fromisoformat(d) + dt.timedelta(days=rng.randint(1, 7))).isoformat()
    style = date_style(rng)
    return Goal(
        query=f'Move "{title}" from {say_date(rng, d, style)} to {say_date(rng, new, style)}, same time.',
        calls=[
            call("cancel_event", title=title, date=d),
            call("add_event", title=title, date=new, time=t),
        ],
    )


TASKS.add_composition(weight=4)
