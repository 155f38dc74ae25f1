"""Goal templates: the building blocks of the programmatic ("model alignment") data.

A template is a function ``(rng, env) -> Goal``: it draws values from the environment's value
pools (and, where the goal refers to the world, from the environment's current state), phrases a
goal and writes the gold program.  An environment declares its :class:`TaskSet` in its class
(:attr:`toollab.envs.base.Environment.tasks`: the split policy and what its tools serve); its
templates fill it (``@Env.tasks.template(...)``, for the built-ins in ``toollab.envs.tasks.<env>``).

*Atomic* templates phrase one self-contained goal.  :meth:`TaskSet.add_composition` adds a
template that joins two atomic goals of different tools into one request ("… Also, …"): the
second goal is drawn from the state the first program leaves, so the joint program is executable
and its text stays true.  A joint goal is discarded when it can be met without doing one of its
parts (:func:`masks`: e.g. an event added and then cancelled leaves the calendar as it was, so
doing nothing would pass), and a goal is never joined with its own undo
(:attr:`TaskSet.inverses`).  All dates of one joint request are written in one style.
Compositions are where the test split's unseen API combinations come from.

*Capabilities* keep NoCall instances honest: a template declares the capability tags its goal
needs (by default just its own environment's name) and an environment serves the tags of its own
templates plus :attr:`TaskSet.also_serves`.  A goal is lent to another environment as a NoCall
query only if none of its tags is served there (e.g. currency conversion is served by both
``finance`` and ``realtime_search``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, TypeVar

from toollab.envs.base import Environment
from toollab.schema import GoldCall, Tool


@dataclass
class Goal:
    """One generated goal with its gold program."""

    #: the request
    query: str
    calls: list[GoldCall]
    #: other programs that are equally correct
    alternatives: list[list[GoldCall]] = field(default_factory=list)
    #: the tools to offer (names); None = every tool of the environment
    tools: list[str] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    #: material shown before the request (the spreadsheet's sheet); empty for most goals
    context: str = ""
    #: the programs of the goals a composition joins, in order (empty: one goal, ``calls``)
    part_calls: list[list[GoldCall]] = field(default_factory=list)

    def text(self) -> str:
        """The instance query: ``context``, then ``Task: <request>`` when there is a context."""
        return f"{self.context}\nTask: {self.query}" if self.context else self.query

    def programs(self) -> list[list[GoldCall]]:
        return [list(self.calls), *[list(a) for a in self.alternatives]]


Maker = Callable[[random.Random, Environment], Goal]
#: a goal-level split policy (:attr:`TaskSet.goal_split`)
GoalSplit = Callable[[Sequence[GoldCall], int, int], bool | None]
T = TypeVar("T")


def call(tool: str, /, **arguments: Any) -> GoldCall:
    """A gold call; ``arguments`` may include a parameter called ``name``."""
    return GoldCall(name=tool, arguments=arguments)


class TemplateError(RuntimeError):
    """A template could not produce a goal for the drawn state (the draw is repeated)."""


@dataclass
class TaskSet:
    """The templates of one environment, its split policy and what its tools can serve."""

    env: str
    #: tools that appear only in the test split (the paper's "unseen API functions")
    held_out_tools: tuple[str, ...] = ()
    #: templates (instruction kinds) that appear only in the test split; when given, the split
    #: is by template, not by API combination (tabletop: unseen instructions)
    held_out_templates: tuple[str, ...] = ()
    #: fraction of the multi-call API combinations reserved for the test split
    test_fraction: float = 0.3
    templates: dict[str, Maker] = field(default_factory=dict)
    #: relative sampling weight per template (default 1)
    weights: dict[str, float] = field(default_factory=dict)
    #: template -> capability tags its goal needs (default: the environment's name)
    needs: dict[str, frozenset[str]] = field(default_factory=dict)
    #: templates that phrase one self-contained goal (composable, lendable as NoCall goals)
    atomic: list[str] = field(default_factory=list)
    #: capability tags the environment's tools serve beyond its own templates' needs
    also_serves: frozenset[str] = frozenset()
    #: (tool, the tool that undoes it) pairs: a composition never joins a call with its undo on
    #: the same thing (an event added, then cancelled)
    inverses: tuple[tuple[str, str], ...] = ()
    #: its atomic goals may be lent to other environments as NoCall queries (off for goals too
    #: long to serve there, and by default: lending changes the other environments' data)
    lends_goals: bool = False
    #: how many of the environment's tools a NoCall / NoSearch request offers (a sample, in the
    #: environment's tool order); ``None``: every tool
    offered_tools: int | None = None
    #: a split by goal instead of by API combination (:func:`toollab.envs.splits.is_test_goal`):
    #: ``(gold calls, environment seed, split seed)`` -> ``True`` for a test goal, ``False`` for a
    #: training / validation goal, ``None`` for a goal of neither (never generated); ``None``:
    #: the API-combination split
    goal_split: GoalSplit | None = None

    def template(
        self, name: str, weight: float = 1.0, needs: Iterable[str] = (), atomic: bool = True
    ) -> Callable[[Maker], Maker]:
        def deco(fn: Maker) -> Maker:
            self.templates[name] = fn
            self.weights[name] = weight
            self.needs[name] = frozenset(needs) or frozenset({self.env})
            if atomic:
                self.atomic.append(name)
            return fn

        return deco

    def offer(self, rng: random.Random, env: Environment) -> list[Tool]:
        """The tools a request without a call of its own offers (NoCall, NoSearch):
        :attr:`offered_tools` of them drawn with ``rng``, or all of them."""
        if self.offered_tools is None:
            return env.tools
        names = env.tool_names
        return sorted(rng.sample(env.tools, self.offered_tools), key=lambda t: names.index(t.name))

    @property
    def capabilities(self) -> frozenset[str]:
        """Every capability tag the environment's tools serve."""
        out = {self.env, *self.also_serves}
        for tags in self.needs.values():
            out |= tags
        return frozenset(out)

    def add_composition(self, weight: float, name: str = "two_goals", three: float = 0.0) -> None:
        """Register a template joining two atomic goals of different tools (see module doc);
        with probability ``three`` a third goal joins them (for environments with few tools)."""

        def make(rng: random.Random, env: Environment) -> Goal:
            with one_date_style(rng):
                task = compose(self, rng, env)
                if rng.random() < three:
                    task = compose(self, rng, env, first=task)
            return task

        self.templates[name] = make
        self.weights[name] = weight
        self.needs[name] = frozenset().union(*(self.needs[a] for a in self.atomic))


_CONNECTORS = ("Also, ", "After that, ", "Next, ")


def lower_first(text: str) -> str:
    """Lower-case a sentence's first letter unless the first word is ``I`` or an acronym."""
    first = text.split(" ", 1)[0]
    if first in ("I", "I'm", "I'd", "I've") or (len(first) > 1 and first[:2].isupper()):
        return text
    return text[:1].lower() + text[1:]


def join_goals(rng: random.Random, first: str, second: str) -> str:
    """Two requests as one message: ``first`` then a connector and ``second``."""
    return f"{first} {pick(rng, _CONNECTORS)}{lower_first(second)}"


def compose(
    ts: TaskSet, rng: random.Random, env: Environment, first: Goal | None = None, tries: int = 30
) -> Goal:
    """Two atomic goals of different tools in one request (or ``first`` and one more atomic
    goal); the second is drawn from the state the first program leaves.  ``env`` is back in its
    initial state (``env.seed``) afterwards."""
    seed = env.seed
    names = sorted(ts.atomic)
    weights = [ts.weights.get(n, 1.0) for n in names]
    given = first
    for _ in range(tries):
        a, b = rng.choices(names, weights, k=2)
        if a == b and given is None:
            continue
        env.reset(seed)
        if given is None:
            try:
                first = ts.templates[a](rng, env)
            except TemplateError:
                continue
        assert first is not None
        if env.run(first.calls, seed).crashed:
            continue
        try:
            second = ts.templates[b](rng, env)
        except TemplateError:
            continue
        if {c.name for c in first.calls} & {c.name for c in second.calls}:
            continue
        if undoes(ts.inverses, first.calls, second.calls):
            continue
        programs = [p + q for p in first.programs() for q in second.programs()]
        parts = [*(first.part_calls or [first.calls]), second.calls]
        if any(env.run(p, seed).crashed for p in programs) or masks(env, seed, parts, programs):
            continue
        env.reset(seed)
        return Goal(
            query=join_goals(rng, first.query, second.query),
            calls=programs[0],
            alternatives=programs[1:],
            context=first.context,
            metadata={"parts": [*first.metadata.get("parts", [a]), b]},
            part_calls=[list(p) for p in parts],
        )
    env.reset(seed)
    raise TemplateError(f"{ts.env}: no two composable goals found in {tries} tries")


def masks(
    env: Environment,
    seed: int,
    parts: Sequence[Sequence[GoldCall]],
    programs: Sequence[Sequence[GoldCall]],
) -> bool:
    """Whether a joint goal can be met without doing all of its parts: the empty program or the
    programs of any proper subset of ``parts`` (in order) reach the final state of one of the
    label ``programs`` (the joint program and its alternatives).  Then success would not check
    every part — a line added to a file the next goal deletes, an event added and then
    cancelled (the calendar ends as it started, so doing nothing passes)."""
    labels = [env.run(list(p), seed).state for p in programs]
    for size in range(len(parts)):
        for subset in combinations(parts, size):
            ex = env.run([c for part in subset for c in part], seed)
            if not ex.crashed and env.check(ex.state, labels).success:
                return True
    return False


def undoes(
    inverses: Sequence[tuple[str, str]], first: Sequence[GoldCall], second: Sequence[GoldCall]
) -> bool:
    """Whether a call of one goal is the undo (``inverses``) of a call of the other on the same
    thing: every text value of the undo call is also a text value of the call it undoes."""
    pairs = {frozenset(p) for p in inverses}
    for a in first:
        for b in second:
            if a.name == b.name or frozenset((a.name, b.name)) not in pairs:
                continue
            do, undo = (a, b) if (a.name, b.name) in inverses else (b, a)
            said = set(_texts(undo.arguments))
            if said and said <= set(_texts(do.arguments)):
                return True
    return False


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value.strip().lower()
    elif isinstance(value, dict):
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _texts(v)


def pick(rng: random.Random, options: Sequence[T]) -> T:
    return options[rng.randrange(len(options))]


#: the date style of the query being phrased (set for a joint request: one style for all parts)
_STYLE: ContextVar[int | None] = ContextVar("toollab_date_style", default=None)


@contextmanager
def one_date_style(rng: random.Random) -> Iterator[int]:
    """Within the block every date is written in one style (drawn now), whichever goal
    template phrases it: the parts of a joint request read as one message."""
    style = _STYLE.get()
    if style is not None:  # already inside a joint request
        yield style
        return
    style = rng.randrange(4)
    token = _STYLE.set(style)
    try:
        yield style
    finally:
        _STYLE.reset(token)


def date_style(rng: random.Random) -> int:
    """One way of writing dates, to use for every date of one query (the joint request's style
    inside :func:`one_date_style`)."""
    style = _STYLE.get()
    return rng.randrange(4) if style is None else style
