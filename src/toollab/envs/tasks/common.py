"""Phrasing helpers of the goal templates (see :mod:`toollab.envs.taskset` for what a template
and a task set are); the task set names are re-exported for the template modules."""

from __future__ import annotations

import random

from toollab.envs.taskset import (
    Goal,
    Maker,
    TaskSet,
    TemplateError,
    call,
    compose,
    date_style,
    join_goals,
    lower_first,
    masks,
    one_date_style,
    pick,
    undoes,
)

__all__ = [
    "MONTH_NAMES",
    "Goal",
    "Maker",
    "TaskSet",
    "TemplateError",
    "article",
    "call",
    "compose",
    "date_style",
    "join_and",
    "join_goals",
    "lower_first",
    "masks",
    "money",
    "one_date_style",
    "pick",
    "plural",
    "say_date",
    "undoes",
    "with_article",
]


def join_and(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def article(word: str) -> str:
    """``a`` or ``an`` before ``word`` (by its first sound, for the words the templates use)."""
    w = word.strip().lower()
    digits = w[: len(w) - len(w.lstrip("0123456789"))]
    if digits:  # as said aloud: "an 8-character", "an 11-day", "an 18-inch", "a 10-day"
        eleven = digits[:2] in ("11", "18") and len(digits) % 3 == 2
        return "an" if digits[0] == "8" or eleven else "a"
    if w.startswith(("hour", "honest", "heir")):
        return "an"
    if w.startswith(("uni", "use", "uu", "one", "eu")):
        return "a"
    return "an" if w[:1] in "aeiou" else "a"


def with_article(phrase: str) -> str:
    return f"{article(phrase)} {phrase}"


def money(v: float) -> str:
    return f"${v:,.0f}" if float(v).is_integer() else f"${v:,.2f}"


def plural(n: int | float, word: str, many: str | None = None) -> str:
    """``1 bedroom``, ``2 bedrooms`` (``many`` for irregular plurals)."""
    return f"{n:g} {word if n == 1 else (many or word + 's')}"


MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def say_date(rng: random.Random, iso: str, style: int | None = None) -> str:
    """A date as a person might write it (the gold keeps ``iso``); pass the same ``style`` for
    every date of one query."""
    y, m, d = (int(x) for x in iso.split("-"))
    forms = (
        f"{MONTH_NAMES[m - 1]} {d}, {y}",
        f"{y}/{m:02d}/{d:02d}",
        iso,
        f"{MONTH_NAMES[m - 1][:3]} {d} {y}",
    )
    return forms[date_style(rng) if style is None else style]
