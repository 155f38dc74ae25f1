"""ToolEyes scenario *personal life* (PL): calendar, to-dos, alarms, contacts, shopping list.

A seeded starting state (a few events, to-dos and shopping items); the state is every entry,
keyed so that the order of independent calls does not matter.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from typing import Annotated, Any, ClassVar, Literal

from toollab.envs.base import (
    BAD_VALUE,
    NOT_FOUND,
    EnvError,
    Environment,
    QueryLog,
    register_env,
)
from toollab.envs.taskset import TaskSet
from toollab.tools.decorator import Param, tool

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
PRIORITIES = ("low", "normal", "high")
START_EVENTS = ("Dentist", "Team meeting", "Yoga class", "Lunch with Kim", "Piano lesson")
START_TASKS = ("pay rent", "water the plants", "renew passport", "book flights")
START_ITEMS = ("eggs", "rice", "coffee", "bananas")
#: a "YYYY-MM-DD" date and an "HH:MM" time (24 hours)
IsoDate = Annotated[str, Param(pattern=r"^\d{4}-\d{2}-\d{2}$")]
ClockTime = Annotated[str, Param(pattern=r"^([01]\d|2[0-3]):[0-5]\d$")]


def _date(s: str) -> str:
    try:
        return dt.date.fromisoformat(s).isoformat()
    except ValueError as exc:
        raise EnvError(f"{s!r} is not a real date", BAD_VALUE) from exc


@register_env("personal_life")
class PersonalLifeEnv(Environment):
    description = "Personal organiser: calendar events, to-dos, alarms, contacts, shopping list."
    scenario = "PL"
    #: the split policy of its generated data (the goal templates are in
    #: :mod:`toollab.envs.tasks.personal_life`)
    tasks: ClassVar[TaskSet] = TaskSet(
        "personal_life",
        inverses=(
            ("add_event", "cancel_event"),
            ("add_todo", "complete_todo"),
            ("add_to_shopping_list", "remove_from_shopping_list"),
        ),
        lends_goals=True,
    )

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

    @tool(returns=False)
    def add_event(
        self,
        title: str,
        date: IsoDate,
        time: ClockTime,
        duration_minutes: Annotated[int, Param(minimum=5)] = 60,
    ) -> str:
        """Add a calendar event.

        Args:
            date: YYYY-MM-DD
            time: HH:MM, 24 hours
        """
        d = _date(date)
        self.events[(title.strip().lower(), d)] = {
            "title": title.strip(),
            "date": d,
            "time": time,
            "duration_minutes": duration_minutes,
        }
        return "added"

    @tool(returns=False)
    def cancel_event(self, title: str, date: IsoDate) -> str:
        """Cancel the event with this title on this date.

        Args:
            date: YYYY-MM-DD
        """
        key = (title.strip().lower(), _date(date))
        if key not in self.events:
            raise EnvError(f"no event {title!r} on {date}", NOT_FOUND)
        del self.events[key]
        return "cancelled"

    @tool(returns=False)
    def list_events(self, date: IsoDate) -> dict[str, Any]:
        """The events on a date.

        Args:
            date: YYYY-MM-DD
        """
        d = _date(date)
        evs = sorted((e for e in self.events.values() if e["date"] == d), key=lambda e: e["time"])
        return self.log.add({"kind": "events", "date": d, "events": evs})

    @tool(returns=False)
    def add_todo(self, task: str, priority: Literal["low", "normal", "high"] = "normal") -> str:
        """Add a to-do item."""
        t = task.strip().lower()
        self.todos[t] = {"task": t, "priority": priority, "done": False}
        return "added"

    @tool(returns=False)
    def complete_todo(self, task: str) -> str:
        """Mark a to-do item done."""
        t = task.strip().lower()
        if t not in self.todos:
            raise EnvError(f"no to-do {task!r}", NOT_FOUND)
        self.todos[t]["done"] = True
        return "done"

    @tool(returns=False)
    def set_alarm(
        self,
        time: ClockTime,
        label: str = "Alarm",
        repeat_days: Sequence[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]] = (),
    ) -> str:
        """Set an alarm, optionally repeating on weekdays.

        Args:
            time: HH:MM, 24 hours
        """
        days = [d for d in WEEKDAYS if d in set(repeat_days)]
        self.alarms[time] = {"label": label.strip(), "repeat_days": days}
        return "set"

    @tool(returns=False)
    def add_contact(self, name: str, phone: str) -> str:
        """Save a contact."""
        digits = "".join(ch for ch in phone if ch.isdigit() or ch == "+")
        if len(digits.lstrip("+")) < 5:
            raise EnvError(f"{phone!r} is not a phone number", BAD_VALUE)
        self.contacts[name.strip()] = digits
        return "saved"

    @tool(returns=False)
    def add_to_shopping_list(
        self, item: str, quantity: Annotated[int, Param(minimum=1)] = 1
    ) -> str:
        """Add an item to the shopping list."""
        it = item.strip().lower()
        self.shopping[it] = self.shopping.get(it, 0) + quantity
        return "added"

    @tool(returns=False)
    def remove_from_shopping_list(self, item: str) -> str:
        """Remove an item from the shopping list."""
        it = item.strip().lower()
        if it not in self.shopping:
            raise EnvError(f"{item!r} is not on the shopping list", NOT_FOUND)
        del self.shopping[it]
        return "removed"
