"""Train / validation / test splits by API combination.

An API combination is the multiset of tool names a gold program calls (a sorted tuple).  The
test split asks for *recombinations*: programs whose combination of tools never occurs in
training and validation, while each of its tools does (SambaNova ToolBench's "unseen API
combinations").  Environments with *held-out tools* (:attr:`TaskSet.held_out_tools`) also put
every combination that calls one of them into the test split ("unseen API functions"); no other
tool is held out.

How the combinations are assigned (:func:`split_plan`):

1. a fixed probe of the environment's templates lists the combinations they produce and how
   often (independent of the seed);
2. every combination with a held-out tool goes to the test split; single-call combinations stay
   in training (each tool is seen on its own there);
3. among the multi-call combinations, shuffled by the seed, the test split takes first those that
   bring a tool the test split does not cover yet, then any, up to ``test_fraction`` of them, but
   never one whose removal would leave one of its tools without a training combination;
4. a combination the probe did not see is a test combination with probability
   ``test_fraction`` (a stable hash of seed and combination), unless it is a single call.

An environment whose goals all call the same tools (WebShop: search, then clicks) splits by goal
instead (:attr:`TaskSet.goal_split`, :func:`is_test_goal`); it reserves no API combination.

A task set with *held-out templates* (:attr:`TaskSet.held_out_templates`, tabletop's unseen
instruction kinds) is split by template instead (:func:`is_test_goal`): the goals of those
templates are the test split's, every other goal is training's and validation's.

So the reservation depends on the seed: generate the training and the test split *with the same
seed* (``toollab bench`` and ``toollab data generate`` do); other seeds hold out other
combinations, for repeated experiments.

Queries are partitioned too (:func:`is_eval_query`, a stable hash of the query text, the same for
every seed): a share :data:`EVAL_SHARE` of all query texts is reserved for evaluation.  Training
never uses a reserved text; validation uses only reserved texts (its API combinations are the
training ones, so without this it would repeat training queries word for word); the test split's
NoCall goals and NoSearch questions are reserved texts too (its Call queries already differ by
API combination).  So no validation or test query occurs in a training split, whatever the seed
and sizes.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from toollab.envs.base import Environment, env_class, env_names
from toollab.envs.taskset import Goal, TaskSet, TemplateError
from toollab.errors import UsageError
from toollab.schema import GoldCall

Combo = tuple[str, ...]
#: draws of the probe that lists an environment's API combinations
PROBE = 600


def api_combo(calls: Sequence[GoldCall]) -> Combo:
    """The multiset of tool names a program calls, as a sorted tuple."""
    return tuple(sorted(c.name for c in calls))


def task_set(env: str) -> TaskSet:
    """The task set the environment ``env`` declares (:attr:`Environment.tasks`)."""
    ts = env_class(env).tasks
    if ts is None:
        have = [n for n in env_names() if env_class(n).tasks is not None]
        raise UsageError(
            f"environment {env!r} has no goal templates (its class declares no task set); "
            f"environments with templates: {', '.join(have) or 'none'}"
        )
    return ts


def draw(
    ts: TaskSet, env: Environment, rng: random.Random, tries: int = 50
) -> tuple[str, int, Goal]:
    """One template draw: (template name, environment seed, task)."""
    names = sorted(ts.templates)
    weights = [ts.weights.get(n, 1.0) for n in names]
    for _ in range(tries):
        name = rng.choices(names, weights)[0]
        env_seed = rng.randrange(100_000)
        env.reset(env_seed)
        try:
            task = ts.templates[name](rng, env)
        except TemplateError:
            continue
        env.reset(env_seed)
        return name, env_seed, task
    raise RuntimeError(f"{ts.env}: the templates failed {tries} times in a row")


def _stable(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest()[:12], 16)


#: share of all query texts reserved for the validation and test splits (see the module doc)
EVAL_SHARE = 0.25


def is_eval_query(text: str) -> bool:
    """Whether a query text is reserved for evaluation (never used in training)."""
    return _stable(f"query|{text}") % 1000 < round(EVAL_SHARE * 1000)


def query_allowed(split: str, text: str, call: bool) -> bool:
    """Whether ``split`` may use the query ``text`` (``call``: a Call instance's query)."""
    if split == "train":
        return not is_eval_query(text)
    if split == "test" and call:
        return True  # test Call queries are set apart by their API combination
    return is_eval_query(text)


@cache
def probe(env_name: str) -> dict[Combo, int]:
    """How often each API combination came up in a fixed probe of the templates."""
    ts = task_set(env_name)
    env = env_class(env_name)()
    rng = random.Random(f"probe|{env_name}")
    counts: Counter[Combo] = Counter()
    for _ in range(PROBE):
        _name, _seed, task = draw(ts, env, rng)
        counts[api_combo(task.calls)] += 1
    return dict(counts)


@dataclass(frozen=True)
class SplitPlan:
    """Which API combinations of one environment belong to the test split, for one seed."""

    env: str
    seed: int
    held_out: frozenset[str]
    fraction: float
    #: combinations the probe saw
    seen: frozenset[Combo]
    #: the seen combinations reserved for the test split
    test: frozenset[Combo]

    def is_test(self, combo: Combo) -> bool:
        if set(combo) & self.held_out:
            return True
        if combo in self.seen:
            return combo in self.test
        if len(combo) < 2:
            return False
        key = f"{self.env}|{self.seed}|{'+'.join(combo)}"
        return _stable(key) % 1000 < round(self.fraction * 1000)


@cache
def split_plan(env_name: str, seed: int = 0) -> SplitPlan:
    ts = task_set(env_name)
    if ts.goal_split is not None:  # split by goal: no API combination is reserved
        empty: frozenset[Combo] = frozenset()
        return SplitPlan(env_name, seed, frozenset(), 0.0, empty, empty)
    counts = probe(env_name)
    held = frozenset(ts.held_out_tools)
    free = sorted(c for c in counts if not set(c) & held)
    support = Counter(t for c in free for t in set(c))
    multi = [c for c in free if len(c) >= 2]
    random.Random(f"split|{env_name}|{seed}").shuffle(multi)
    # split by template: no combination is reserved (see is_test_goal)
    target = 0 if ts.held_out_templates else round(len(multi) * ts.test_fraction)
    test: set[Combo] = {c for c in counts if set(c) & held}
    chosen: set[Combo] = set()
    covered: set[str] = set()

    def take(c: Combo) -> bool:
        tools = set(c)
        if c in chosen or any(support[t] <= 1 for t in tools):
            return False
        chosen.add(c)
        covered.update(tools)
        for t in tools:
            support[t] -= 1
        return True

    for c in multi:  # first pass: widen the test split's tool coverage
        if len(chosen) < target and not set(c) <= covered:
            take(c)
    for c in multi:
        if len(chosen) >= target:
            break
        take(c)
    return SplitPlan(
        env=env_name,
        seed=seed,
        held_out=held,
        fraction=0.0 if ts.held_out_templates else ts.test_fraction,
        seen=frozenset(counts),
        test=frozenset(test | chosen),
    )


def is_test_combo(env_name: str, combo: Combo, seed: int = 0) -> bool:
    """Whether an API combination belongs to the test split (never to train / validation)."""
    return split_plan(env_name, seed).is_test(combo)


def is_test_goal(
    env_name: str, template: str, calls: Sequence[GoldCall], env_seed: int, seed: int = 0
) -> bool | None:
    """Whether a goal of ``template`` (its gold ``calls``, drawn at environment seed
    ``env_seed``) belongs to the test split (``True``) or to training and validation
    (``False``), under split seed ``seed``; ``None``: to neither (an environment that splits by
    goal discards it).  The environment's own :attr:`TaskSet.goal_split` (WebShop: by target
    product and attribute combination), else its held-out templates
    (:attr:`TaskSet.held_out_templates`, tabletop's unseen instruction kinds), else the
    API-combination rule above."""
    ts = task_set(env_name)
    if ts.goal_split is not None:
        return ts.goal_split(calls, env_seed, seed)
    if ts.held_out_templates:
        return template in ts.held_out_templates
    return split_plan(env_name, seed).is_test(api_combo(calls))
