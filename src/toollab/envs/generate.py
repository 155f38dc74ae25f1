"""Programmatic data: goal templates x value pools -> :class:`~toollab.schema.Instance` objects.

SambaNova's "model alignment" data, for toollab's environments, with DEER's three decision
branches:

* **Call** — a generated goal with its gold program (checked to execute);
* **NoCall** — a goal of *another* environment offered with this environment's tools (no tool fits);
* **NoSearch** — a question the model should answer itself (arithmetic, units, language), with
  ``Instance.answer``.

Splits: an API combination is the multiset of tool names a gold program calls.  The test split
uses only combinations reserved for it (a fixed fraction of each environment's combinations,
chosen by a stable hash, plus every combination containing one of the environment's held-out
tools); training and validation never use them.  The same ``(env, split, n, seed)`` always gives
the same instances.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Sequence
from functools import cache
from typing import Any

from toollab.envs.base import Environment, env_class, env_names
from toollab.envs.tasks import TASKSETS
from toollab.envs.tasks.common import Task, TaskSet
from toollab.errors import UsageError, did_you_mean
from toollab.schema import Decision, GoldCall, Instance

SPLITS = ("train", "validation", "test")
#: default shares of Call / NoCall / NoSearch instances
DEFAULT_MIX = (0.8, 0.1, 0.1)
_PROBE = 400
#: environments whose goals are too long to serve as NoCall queries elsewhere
_NOT_DONORS = {"spreadsheet"}

Combo = tuple[str, ...]


def api_combo(calls: Sequence[GoldCall]) -> Combo:
    """The multiset of tool names a program calls, as a sorted tuple."""
    return tuple(sorted(c.name for c in calls))


def _stable(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest()[:12], 16)


def task_set(env: str) -> TaskSet:
    if env not in TASKSETS:
        raise UsageError(
            f"no goal templates for environment {env!r}{did_you_mean(env, list(TASKSETS))}"
        )
    return TASKSETS[env]


def _draw(ts: TaskSet, env: Environment, rng: random.Random) -> tuple[str, int, Task]:
    names = sorted(ts.templates)
    weights = [ts.weights.get(n, 1.0) for n in names]
    name = rng.choices(names, weights)[0]
    env_seed = rng.randrange(100_000)
    env.reset(env_seed)
    return name, env_seed, ts.templates[name](rng, env)


@cache
def _combo_plan(env_name: str) -> tuple[frozenset[Combo], frozenset[Combo]]:
    """(every combination seen in a fixed probe, the ones reserved for the test split)."""
    ts = task_set(env_name)
    env = env_class(env_name)()
    rng = random.Random(f"probe|{env_name}")
    seen: set[Combo] = set()
    for _ in range(_PROBE):
        _name, _seed, task = _draw(ts, env, rng)
        seen.add(api_combo(task.calls))
    free = sorted(
        (c for c in seen if not set(c) & set(ts.held_out_tools)),
        key=lambda c: _stable(f"{env_name}|{'+'.join(c)}"),
    )
    k = max(1, round(len(free) * ts.test_fraction)) if len(free) > 1 else 0
    return frozenset(seen), frozenset(free[:k])


def is_test_combo(env_name: str, combo: Combo) -> bool:
    """Whether an API combination belongs to the test split (never to train / validation)."""
    ts = task_set(env_name)
    if set(combo) & set(ts.held_out_tools):
        return True
    seen, test = _combo_plan(env_name)
    if combo in seen:
        return combo in test
    return _stable(f"{env_name}|{'+'.join(combo)}") % 4 == 0


def _counts(n: int, mix: Sequence[float]) -> tuple[int, int, int]:
    total = sum(mix)
    if len(mix) != 3 or total <= 0 or any(m < 0 for m in mix):
        raise UsageError(
            f"mix must be three non-negative shares (call, nocall, nosearch), got {list(mix)}"
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
    ts = task_set(env_name)
    env = env_class(env_name)()
    rng = random.Random(f"{env_name}|{split}|{seed}")
    n_call, n_nocall, n_nosearch = _counts(n, mix)
    kinds = (
        [Decision.CALL] * n_call + [Decision.NO_CALL] * n_nocall + [Decision.NO_SEARCH] * n_nosearch
    )
    rng.shuffle(kinds)
    seen: set[str] = set()
    out: list[Instance] = []
    for i, kind in enumerate(kinds):
        iid = f"{env_name}-{split}-s{seed}-{i:05d}"
        if kind is Decision.CALL:
            inst = _call_instance(ts, env, rng, split, seen)
        elif kind is Decision.NO_CALL:
            inst = _no_call_instance(env_name, env, rng, seen)
        else:
            inst = _no_search_instance(env, rng, seen)
        out.append(inst.model_copy(update={"id": iid, "split": split}))
    return out


def _base(env: Environment, env_seed: int, **kw: Any) -> dict[str, Any]:
    meta = {"env": env.name, "seed": env_seed, **kw.pop("metadata", {})}
    return {"source": f"env:{env.name}", "category": env.scenario, "metadata": meta, **kw}


def _call_instance(
    ts: TaskSet, env: Environment, rng: random.Random, split: str, seen: set[str]
) -> Instance:
    want_test = split == "test"
    for _attempt in range(2000):
        name, env_seed, task = _draw(ts, env, rng)
        combo = api_combo(task.calls)
        if is_test_combo(ts.env, combo) != want_test:
            continue
        key = f"{env_seed}|{task.query}" if "\nTask:" in task.query else task.query
        if key in seen and _attempt < 40:
            continue
        seen.add(key)
        _check_gold(env, env_seed, task, name)
        tools = env.tools if task.tools is None else [env.tool(t) for t in task.tools]
        return Instance(
            id="",
            query=task.query,
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
    raise UsageError(f"{ts.env}: could not draw a {split} instance (no template fits the split)")


def _check_gold(env: Environment, env_seed: int, task: Task, template: str) -> None:
    for k, prog in enumerate([task.calls, *task.alternatives]):
        ex = env.run(list(prog), env_seed)
        if ex.crashed:
            raise RuntimeError(
                f"{env.name} template {template!r}: program {k} does not execute: {ex.error}"
            )


def _no_call_instance(
    env_name: str, env: Environment, rng: random.Random, seen: set[str]
) -> Instance:
    donors = [e for e in env_names() if e != env_name and e in TASKSETS and e not in _NOT_DONORS]
    donor = donors[rng.randrange(len(donors))]
    denv = env_class(donor)()
    _name, _dseed, task = _draw(TASKSETS[donor], denv, rng)
    env_seed = rng.randrange(100_000)
    seen.add(task.query)
    return Instance(
        id="",
        query=task.query,
        tools=env.tools if env.name != "household" else _household_tools(rng),
        decision=Decision.NO_CALL,
        answer="None of the available tools can do this.",
        **_base(env, env_seed, metadata={"template": f"nocall:{donor}"}),
    )


def _household_tools(rng: random.Random) -> list[Any]:
    from toollab.envs.tasks.household import N_TOOLS

    env = env_class("household")()
    return sorted(rng.sample(env.tools, N_TOOLS), key=lambda t: env.tool_names.index(t.name))


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


def _no_search_instance(env: Environment, rng: random.Random, seen: set[str]) -> Instance:
    for _ in range(50):
        q, a = no_search_question(rng)
        if q not in seen:
            break
    seen.add(q)
    tools = env.tools if env.name != "household" else _household_tools(rng)
    return Instance(
        id="",
        query=q,
        tools=tools,
        decision=Decision.NO_SEARCH,
        answer=a,
        **_base(env, rng.randrange(100_000), metadata={"template": "nosearch"}),
    )


# -- API complexity --------------------------------------------------------------------------------
def split_complexity(
    env_name: str, tests: Sequence[Instance], examples: Sequence[Instance]
) -> float | None:
    """SambaNova's API complexity score of ``tests`` against ``examples`` (Call instances only)."""
    from toollab.eval.metrics.execution import api_complexity_score

    t = [[c.name for c in inst.gold] for inst in tests if inst.gold]
    e = [[c.name for c in inst.gold] for inst in examples if inst.gold]
    if not t or not e:
        return None
    return round(api_complexity_score(t, e, len(env_class(env_name)().tools)), 3)


def combo_overlap(a: Sequence[Instance], b: Sequence[Instance]) -> set[Combo]:
    """API combinations (of Call instances) found in both sets."""
    ca = {api_combo(i.gold) for i in a if i.gold}
    cb = {api_combo(i.gold) for i in b if i.gold}
    return ca & cb


def combo_counts(instances: Sequence[Instance]) -> Counter[Combo]:
    return Counter(api_combo(i.gold) for i in instances if i.gold)
