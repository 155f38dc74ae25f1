"""Goal templates: the building blocks of the programmatic ("model alignment") data.

A template is a function ``(rng, env) -> Task``: it draws values from the environment's value
pools (and, where the goal refers to the world, from the environment's seeded initial state),
phrases a goal and writes the gold program.  Each environment's templates live in a
:class:`TaskSet` in ``toollab.envs.tasks.<env>``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from toollab.envs.base import Environment
from toollab.schema import GoldCall


@dataclass
class Task:
    """One generated goal with its gold program."""

    query: str
    calls: list[GoldCall]
    #: other programs that are equally correct
    alternatives: list[list[GoldCall]] = field(default_factory=list)
    #: the tools to offer (names); None = every tool of the environment
    tools: list[str] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


Maker = Callable[[random.Random, Environment], Task]
T = TypeVar("T")


def call(tool: str, /, **arguments: Any) -> GoldCall:
    """A gold call; ``arguments`` may include a parameter called ``name``."""
    return GoldCall(name=tool, arguments=arguments)


@dataclass
class TaskSet:
    """The templates of one environment and its split policy."""

    env: str
    #: tools that appear only in the test split (the paper's "unseen API functions")
    held_out_tools: tuple[str, ...] = ()
    #: fraction of API combinations reserved for the test split
    test_fraction: float = 0.25
    templates: dict[str, Maker] = field(default_factory=dict)
    #: relative sampling weight per template (default 1)
    weights: dict[str, float] = field(default_factory=dict)

    def template(self, name: str, weight: float = 1.0) -> Callable[[Maker], Maker]:
        def deco(fn: Maker) -> Maker:
            self.templates[name] = fn
            self.weights[name] = weight
            return fn

        return deco


def pick(rng: random.Random, options: Sequence[T]) -> T:
    return options[rng.randrange(len(options))]


def join_and(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def money(v: float) -> str:
    return f"${v:,.0f}" if float(v).is_integer() else f"${v:,.2f}"


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


def say_date(rng: random.Random, iso: str) -> str:
    """A date as a person might write it (the gold keeps ``iso``)."""
    y, m, d = (int(x) for x in iso.split("-"))
    return pick(
        rng,
        [
            f"{MONTH_NAMES[m - 1]} {d}, {y}",
            f"{y}/{m:02d}/{d:02d}",
            iso,
            f"{MONTH_NAMES[m - 1][:3]} {d} {y}",
        ],
    )
