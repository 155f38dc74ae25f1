"""Programmatic data: goal templates x value pools -> :class:`~toollab.schema.Instance` objects.

SambaNova's "model alignment" data, for toollab's environments, with DEER's three decision
branches:

* **Call** — a generated goal with its gold program (checked to execute);
* **NoCall** — a goal of *another* environment offered with this environment's tools, only if
  none of those tools can serve it (see the capability tags of :mod:`toollab.envs.tasks.common`);
* **NoSearch** — a question the model should answer itself (arithmetic, units, language), with
  ``Instance.answer``.

Splits are by API combination (by goal where the task set says so: WebShop), and validation /
test queries never occur in training (:mod:`toollab.envs.splits`).  The test split covers the tools early: until every held-out tool,
then every tool, has a Call instance, a Call draw that calls none of the missing ones is redrawn
(up to :data:`COVER_TRIES` times; a tool no test combination reaches is given up), so even a
small test split measures the unseen tools and nearly all the others.  No query occurs
twice within one generated split; asking for more instances than the templates can phrase is a
:class:`~toollab.errors.UsageError`.  The same ``(env, split, n, seed, mix)`` always gives the
same instances.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from functools import cache
from typing import Any

from toollab.envs.base import Environment, env_class, env_names
from toollab.envs.splits import (
    Combo,
    api_combo,
    draw,
    is_test_combo,
    is_test_goal,
    query_allowed,
    task_set,
)
from toollab.envs.taskset import Goal, TaskSet, TemplateError
from toollab.errors import UsageError, did_you_mean
from toollab.schema import Decision, Instance
from toollab.schema.measures import api_complexity_score, complexity_distance

SPLITS = ("train", "validation", "test")
#: default shares of Call / NoCall / NoSearch instances
DEFAULT_MIX = (0.8, 0.1, 0.1)
#: draws in a row that may bring nothing new before generation gives up
MAX_FRUITLESS = 3000
#: the most instances one environment's split may be asked for (``n``; docs/input-limits.md):
#: generation holds them in memory and takes about a millisecond each
MAX_INSTANCES = 100_000
#: draws a test-split Call instance may spend looking for a tool the split does not cover yet
COVER_TRIES = 400

__all__ = [
    "DEFAULT_MIX",
    "MAX_INSTANCES",
    "SPLITS",
    "Combo",
    "api_combo",
    "combo_counts",
    "combo_overlap",
    "generate",
    "is_test_combo",
    "loo_complexity",
    "no_search_question",
    "nocall_donors",
    "split_complexity",
    "task_set",
]


def _counts(n: int, mix: Sequence[float]) -> tuple[int, int, int]:
    total = sum(mix)
    if len(mix) != 3 or not all(math.isfinite(m) and m >= 0 for m in mix) or total <= 0:
        raise UsageError(
            f"mix must be three finite, non-negative shares (call, nocall, nosearch) with a "
            f"positive sum, got {list(mix)}"
        )
    no_call = round(n * mix[1] / total)
    no_search = round(n * mix[2] / total)
    return n - no_call - no_search, no_call, no_search


def generate(
    env_name: str,
    split: str = "train",
    n: int = 100,
    seed: int = 0,
    mix: Sequence[float] = DEFAULT_MIX,
) -> list[Instance]:
    """``n`` instances of one environment's ``split``; deterministic in all arguments."""
    if split not in SPLITS:
        raise UsageError(
            f"unknown split {split!r}{did_you_mean(split, list(SPLITS))}; known: {', '.join(SPLITS)}"
        )
    if n < 0:
        raise UsageError(f"n must be >= 0, got {n}")
    if n > MAX_INSTANCES:
        raise UsageError(
            f"n = {n} is more than the {MAX_INSTANCES:,} instances one environment's split may "
            "have (see docs/input-limits.md); generate several files with different seeds"
        )
    ts = task_set(env_name)
    env = env_class(env_name)()
    rng = random.Random(f"{env_name}|{split}|{seed}")
    n_call, n_nocall, n_nosearch = _counts(n, mix)
    kinds = (
        [Decision.CALL] * n_call + [Decision.NO_CALL] * n_nocall + [Decision.NO_SEARCH] * n_nosearch
    )
    rng.shuffle(kinds)
    seen: set[str] = set()
    # test split: the held-out tools first, then the others (see the module docstring)
    stages = [set(ts.held_out_tools), set(env.tool_names)] if split == "test" else []
    out: list[Instance] = []
    for i, kind in enumerate(kinds):
        iid = f"{env_name}-{split}-s{seed}-{i:05d}"
        if kind is Decision.CALL:
            while stages and not stages[0]:
                stages.pop(0)
            missing = stages[0] if stages else set()
            inst = _call_instance(ts, env, rng, split, seed, seen, missing)
            called = {c.name for c in inst.gold}
            if missing and not missing & called:
                stages.pop(0)  # what is still missing, no test combination reached
            for stage in stages:
                stage -= called
        elif kind is Decision.NO_CALL:
            inst = _no_call_instance(env_name, env, rng, split, seen)
        else:
            inst = _no_search_instance(env, rng, split, seen)
        seen.add(inst.query)
        out.append(inst.model_copy(update={"id": iid, "split": split}))
    return out


def _base(env: Environment, env_seed: int, **kw: Any) -> dict[str, Any]:
    meta = {"env": env.name, "seed": env_seed, **kw.pop("metadata", {})}
    return {"source": f"env:{env.name}", "category": env.scenario, "metadata": meta, **kw}


def _exhausted(env: str, what: str, split: str, have: int) -> UsageError:
    return UsageError(
        f"{env}: the goal templates give no new {what} query for the {split} split after "
        f"{MAX_FRUITLESS} draws ({have} distinct queries so far); ask for fewer instances"
    )


def _call_instance(
    ts: TaskSet,
    env: Environment,
    rng: random.Random,
    split: str,
    seed: int,
    seen: set[str],
    missing: set[str] | frozenset[str] = frozenset(),
) -> Instance:
    """A Call instance of ``split``; when ``missing`` (tools no test instance has called yet) is
    non-empty, the first :data:`COVER_TRIES` draws must call one of them."""
    want_test = split == "test"
    for attempt in range(MAX_FRUITLESS):
        name, env_seed, task = draw(ts, env, rng)
        combo = api_combo(task.calls)
        if is_test_goal(ts.env, name, task.calls, env_seed, seed) is not want_test:
            continue
        if missing and attempt < COVER_TRIES and not missing & set(combo):
            continue
        query = task.text()
        if query in seen or not query_allowed(split, query, call=True):
            continue
        labels = _check_gold(env, env_seed, task, name)
        if _met_by_nothing(env, env_seed, labels):
            continue
        tools = env.tools if task.tools is None else [env.tool(t) for t in task.tools]
        return Instance(
            id="",
            query=query,
            tools=tools,
            gold=task.calls,
            alternatives=task.alternatives,
            decision=Decision.CALL,
            **_base(
                env,
                env_seed,
                metadata={"template": name, "api_combo": list(combo), **task.metadata},
            ),
        )
    raise _exhausted(ts.env, "Call", split, len(seen))


def _check_gold(env: Environment, env_seed: int, task: Goal, template: str) -> list[dict[str, Any]]:
    """Every program executes, and every alternative leaves the gold program's final state;
    returns the programs' final states (the labels)."""
    states: list[dict[str, Any]] = []
    for k, prog in enumerate(task.programs()):
        ex = env.run(list(prog), env_seed)
        if ex.crashed:
            raise RuntimeError(
                f"{env.name} template {template!r}: program {k} does not execute: {ex.error}"
            )
        if states and not env.check(ex.state, [states[0]]).success:
            raise RuntimeError(
                f"{env.name} template {template!r}: alternative {k} ends in another state"
            )
        states.append(ex.state)
    return states


def _met_by_nothing(env: Environment, env_seed: int, labels: list[dict[str, Any]]) -> bool:
    """Whether the empty program already meets the goal (the state is as the goal asks): the
    success check could not tell a model that does nothing from one that does the task."""
    return env.check(env.run([], env_seed).state, labels).success


# -- NoCall ------------------------------------------------------------------------------------------
@cache
def nocall_donors(env_name: str) -> tuple[tuple[str, str], ...]:
    """``(donor environment, template)`` pairs whose goals no tool of ``env_name`` can serve:
    atomic templates of the other environments that lend their goals
    (:attr:`TaskSet.lends_goals`) whose capability tags ``env_name`` does not serve."""
    own = env_class(env_name).tasks
    served = own.capabilities if own is not None else frozenset({env_name})
    out: list[tuple[str, str]] = []
    for donor in env_names():
        ts = env_class(donor).tasks
        if donor == env_name or ts is None or not ts.lends_goals:
            continue
        out.extend((donor, t) for t in ts.atomic if not ts.needs[t] & served)
    return tuple(out)


def _no_call_instance(
    env_name: str, env: Environment, rng: random.Random, split: str, seen: set[str]
) -> Instance:
    own = task_set(env_name)
    donors = nocall_donors(env_name)
    if not donors:
        raise UsageError(f"{env_name}: no other environment has goals its tools cannot serve")
    by_env: dict[str, list[str]] = {}
    for d, t in donors:
        by_env.setdefault(d, []).append(t)
    names = sorted(by_env)
    for _attempt in range(MAX_FRUITLESS):
        donor = names[rng.randrange(len(names))]
        ts = task_set(donor)
        templates = by_env[donor]
        name = rng.choices(templates, [ts.weights.get(t, 1.0) for t in templates])[0]
        denv = _donor_env(donor)
        denv.reset(rng.randrange(100_000))
        try:
            task = ts.templates[name](rng, denv)
        except TemplateError:
            continue
        if task.text() in seen or not query_allowed(split, task.text(), call=False):
            continue
        return Instance(
            id="",
            query=task.text(),
            tools=own.offer(rng, env),
            decision=Decision.NO_CALL,
            answer="None of the available tools can do this.",
            **_base(
                env,
                rng.randrange(100_000),
                metadata={"template": f"nocall:{donor}:{name}", "donor": donor},
            ),
        )
    raise _exhausted(env_name, "NoCall", split, len(seen))


@cache
def _donor_env(name: str) -> Environment:
    return env_class(name)()


# -- NoSearch ------------------------------------------------------------------------------------------
_UNITS = [
    ("minutes", "hours", 60),
    ("seconds", "minutes", 60),
    ("centimeters", "meters", 100),
    ("grams", "kilograms", 1000),
    ("months", "years", 12),
    ("days", "weeks", 7),
]
_PLURALS = {
    "mouse": "mice",
    "child": "children",
    "foot": "feet",
    "person": "people",
    "tooth": "teeth",
    "goose": "geese",
    "leaf": "leaves",
    "knife": "knives",
}
_OPPOSITES = {
    "hot": "cold",
    "early": "late",
    "empty": "full",
    "ancient": "modern",
    "rough": "smooth",
    "generous": "stingy",
    "shallow": "deep",
    "noisy": "quiet",
}


def no_search_question(rng: random.Random) -> tuple[str, str]:
    """A question the model should answer itself, and its answer."""
    kind = rng.randrange(4)
    if kind == 0:
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        op = rng.choice(["plus", "minus", "times"])
        val = a + b if op == "plus" else a - b if op == "minus" else a * b
        return f"What is {a} {op} {b}?", str(val)
    if kind == 1:
        small, big, k = _UNITS[rng.randrange(len(_UNITS))]
        m = rng.randint(2, 9)
        return f"How many {small} are in {m} {big}?", str(m * k)
    if kind == 2:
        w = rng.choice(sorted(_PLURALS))
        return f"What is the plural of '{w}'?", _PLURALS[w]
    w = rng.choice(sorted(_OPPOSITES))
    return f"What is the opposite of '{w}'?", _OPPOSITES[w]


def _no_search_instance(
    env: Environment, rng: random.Random, split: str, seen: set[str]
) -> Instance:
    for _attempt in range(MAX_FRUITLESS):
        q, a = no_search_question(rng)
        if q in seen or not query_allowed(split, q, call=False):
            continue
        tools = task_set(env.name).offer(rng, env)
        return Instance(
            id="",
            query=q,
            tools=tools,
            decision=Decision.NO_SEARCH,
            answer=a,
            **_base(env, rng.randrange(100_000), metadata={"template": "nosearch"}),
        )
    raise _exhausted(env.name, "NoSearch", split, len(seen))


# -- API complexity --------------------------------------------------------------------------------
def _programs(instances: Sequence[Instance]) -> list[list[str]]:
    return [[c.name for c in inst.gold] for inst in instances if inst.gold]


def split_complexity(
    env_name: str, tests: Sequence[Instance], examples: Sequence[Instance]
) -> float | None:
    """SambaNova's API complexity score S(T, X, D) of ``tests`` against the demonstration
    examples ``examples`` (Call instances only; D = the environment's tools)."""

    t, e = _programs(tests), _programs(examples)
    if not t or not e:
        return None
    return round(api_complexity_score(t, e, len(env_class(env_name).declared_tools())), 3)


def loo_complexity(env_name: str, instances: Sequence[Instance]) -> float | None:
    """The API complexity score of a split against *itself, leaving each case out*: the mean
    over its Call instances t of the minimum d(t, e) over the split's other Call instances e.

    This is what a training split's score means: how far each training case is from the rest
    of the training data (a case never counts as its own demonstration; another case with the
    same API combination does).  ``None`` with fewer than two Call instances.
    """

    progs = _programs(instances)
    if len(progs) < 2:
        return None
    size = len(env_class(env_name).declared_tools())
    keys = [tuple(sorted(p)) for p in progs]
    distinct = sorted(set(keys))
    # the distance depends only on the two combinations: compute each pair once
    dist = {(a, b): complexity_distance(list(a), list(b), size) for a in distinct for b in distinct}
    multiplicity = Counter(keys)
    total = 0.0
    for k in keys:
        total += min(dist[(k, e)] for e in distinct if e != k or multiplicity[e] > 1)
    return round(total / len(keys), 3)


def combo_overlap(a: Sequence[Instance], b: Sequence[Instance]) -> set[Combo]:
    """API combinations (of Call instances) found in both sets."""
    ca = {api_combo(i.gold) for i in a if i.gold}
    cb = {api_combo(i.gold) for i in b if i.gold}
    return ca & cb


def combo_counts(instances: Sequence[Instance]) -> Counter[Combo]:
    return Counter(api_combo(i.gold) for i in instances if i.gold)
