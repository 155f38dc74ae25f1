"""ToolEyes scenario *personal life* (PL): calendar, to-dos, alarms, contacts, shopping list.

A seeded starting state (a few events, to-dos and shopping items); the state is every entry,
keyed so that the order of independent calls does not matter.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from toollab.envs.base import (
    BAD_VALUE,
    NOT_FOUND,
    EnvError,
    Environment,
    QueryLog,
    make_tool,
    register_env,
)
from toollab.schema import Tool

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
PRIORITIES = ("low", "normal", "high")
START_EVENTS = ("Dentist", "Team meeting", "Yoga class", "Lunch with Kim", "Piano lesson")
START_TASKS = ("pay rent", "water the plants", "renew passport", "book flights")
START_ITEMS = ("eggs", "rice", "coffee", "bananas")
_DATE = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$", "description": "YYYY-MM-DD"}
_TIME = {
    "type": "string",
    "pattern": r"^([01]\d|2[0-3]):[0-5]\d$",
    "description": "HH:MM, 24 hours",
}


def _date(s: str) -> str:
    try:
        return dt.date.fromisoformat(s).isoformat()
    except ValueError as exc:
        raise EnvError(f"{s!r} is not a real date", BAD_VALUE) from exc


@register_env("personal_life")
class PersonalLifeEnv(Environment):
    description = "Personal organiser: calendar events, to-dos, alarms, contacts, shopping list."
    scenario = "PL"

    def build_tools(self) -> list[Tool]:
        title = {"title": {"type": "string"}}
        return [
            make_tool(
                "add_event",
                "Add a calendar event.",
                {
                    **title,
                    "date": _DATE,
                    "time": _TIME,
                    "duration_minutes": {"type": "integer", "minimum": 5, "default": 60},
                },
                ["title", "date", "time"],
            ),
            make_tool(
                "cancel_event",
                "Cancel the event with this title on this date.",
                {**title, "date": _DATE},
                ["title", "date"],
            ),
            make_tool("list_events", "The events on a date.", {"date": _DATE}, ["date"]),
            make_tool(
                "add_todo",
                "Add a to-do item.",
                {
                    "task": {"type": "string"},
                    "priority": {"type": "string", "enum": list(PRIORITIES), "default": "normal"},
                },
                ["task"],
            ),
            make_tool(
                "complete_todo", "Mark a to-do item done.", {"task": {"type": "string"}}, ["task"]
            ),
            make_tool(
                "set_alarm",
                "Set an alarm, optionally repeating on weekdays.",
                {
                    "time": _TIME,
                    "label": {"type": "string", "default": "Alarm"},
                    "repeat_days": {
                        "type": "array",
                        "items": {"type": "string", "enum": list(WEEKDAYS)},
                        "default": [],
                    },
                },
                ["time"],
            ),
            make_tool(
                "add_contact",
                "Save a contact.",
                {"name": {"type": "string"}, "phone": {"type": "string"}},
                ["name", "phone"],
            ),
            make_tool(
                "add_to_shopping_list",
                "Add an item to the shopping list.",
                {
                    "item": {"type": "string"},
                    "quantity": {"type": "integer", "minimum": 1, "default": 1},
                },
                ["item"],
            ),
            make_tool(
                "remove_from_shopping_list",
                "Remove an item from the shopping list.",
                {"item": {"type": "string"}},
                ["item"],
            ),
        ]

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        rng = random.Random(f"personal:{seed}")
        day0 = dt.date(2024, 5, 1) + dt.timedelta(days=seed % 20)
        self.today = day0
        self.events: dict[tuple[str, str], dict[str, Any]] = {}
        for i, title in enumerate(rng.sample(START_EVENTS, 3)):
            d = (day0 + dt.timedelta(days=i + 1)).isoformat()
            self.events[(title.lower(), d)] = {
                "title": title,
                "date": d,
                "time": f"{9 + 2 * i:02d}:00",
                "duration_minutes": 60,
            }
        self.todos = {
            t: {"task": t, "priority": "normal", "done": False} for t in rng.sample(START_TASKS, 2)
        }
        self.alarms: dict[str, dict[str, Any]] = {}
        self.contacts: dict[str, str] = {}
        self.shopping = {it: 1 for it in rng.sample(START_ITEMS, 2)}
        self.log = QueryLog()

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for ev in self.events.values():
            out[f"event:{ev['date']} {ev['time']}"] = (
                f"{ev['title']} ({ev['duration_minutes']} min)"
            )
        for t in self.todos.values():
            out[f"todo:{t['task']}"] = f"{t['priority']}{' done' if t['done'] else ''}"
        for time, a in self.alarms.items():
            out[f"alarm:{time}"] = f"{a['label']} {','.join(a['repeat_days'])}".strip()
        for name, phone in self.contacts.items():
            out[f"contact:{name}"] = phone
        for item, qty in self.shopping.items():
            out[f"shopping:{item}"] = qty
        out.update(self.log.flat("query."))
        return out

    def do_add_event(self, title: str, date: str, time: str, duration_minutes: int) -> str:
        d = _date(date)
        self.events[(title.strip().lower(), d)] = {
            "title": title.strip(),
            "date": d,
            "time": time,
            "duration_minutes": duration_minutes,
        }
        return "added"

    def do_cancel_event(self, title: str, date: str) -> str:
        key = (title.strip().lower(), _date(date))
        if key not in self.events:
            raise EnvError(f"no event {title!r} on {date}", NOT_FOUND)
        del self.events[key]
        return "cancelled"

    def do_list_events(self, date: str) -> dict[str, Any]:
        d = _date(date)
        evs = sorted((e for e in self.events.values() if e["date"] == d), key=lambda e: e["time"])
        return self.log.add({"kind": "events", "date": d, "events": evs})

    def do_add_todo(self, task: str, priority: str) -> str:
        t = task.strip().lower()
        self.todos[t] = {"task": t, "priority": priority, "done": False}
        return "added"

    def do_complete_todo(self, task: str) -> str:
        t = task.strip().lower()
        if t not in self.todos:
            raise EnvError(f"no to-do {task!r}", NOT_FOUND)
        self.todos[t]["done"] = True
        return "done"

    def do_set_alarm(self, time: str, label: str, repeat_days: list[str]) -> str:
        days = [d for d in WEEKDAYS if d in set(repeat_days)]
        self.alarms[time] = {"label": label.strip(), "repeat_days": days}
        return "set"

    def do_add_contact(self, name: str, phone: str) -> str:
        digits = "".join(ch for ch in phone if ch.isdigit() or ch == "+")
        if len(digits.lstrip("+")) < 5:
            raise EnvError(f"{phone!r} is not a phone number", BAD_VALUE)
        self.contacts[name.strip()] = digits
        return "saved"

    def do_add_to_shopping_list(self, item: str, quantity: int) -> str:
        it = item.strip().lower()
        self.shopping[it] = self.shopping.get(it, 0) + quantity
        return "added"

    def do_remove_from_shopping_list(self, item: str) -> str:
        it = item.strip().lower()
        if it not in self.shopping:
            raise EnvError(f"{item!r} is not on the shopping list", NOT_FOUND)
        del self.shopping[it]
        return "removed"
