"""Goal templates of the ``tabletop`` environment: Code as Policies' instruction kinds.

Each template reads the seeded scene, phrases an instruction after the scene's object list
(``objects = ['red block', ...]``, as SambaNova's Tabletop prompts show it), writes the goal as
predicates on the final scene (:class:`~toollab.envs.tabletop_scene.TabletopGoal`, in the
instance's ``metadata["goal"]``) and two programs that meet it: plain ``put_first_on_second``
calls and a ``run_program`` policy.  The gold program is the plain one where the object list is
enough, the policy where the instruction needs perception (the block closest to a bowl, the
second block from the left, a point beside a bowl).  Every block the instruction does not
concern must stay where it was.

Eight kinds are seen in training; five are the test split's only (Code as Policies' *unseen*
instructions, :attr:`~toollab.envs.taskset.TaskSet.held_out_templates`): blocks in different
corners, blocks in bowls of mismatched colours, a stack on a place, a block placed at a distance
from a bowl, blocks in a line.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from typing import Literal

from toollab.envs.base import EnvError, Environment
from toollab.envs.tabletop import GOAL_KEY, TabletopEnv
from toollab.envs.tabletop_program import run_policy
from toollab.envs.tabletop_scene import (
    CORNERS,
    PLACES,
    SIDES,
    Condition,
    InCorners,
    Inside,
    Line,
    Near,
    OnTop,
    Scene,
    Stacked,
    TabletopGoal,
    Thing,
    Unmoved,
)
from toollab.envs.tasks.common import Goal, TemplateError, call, pick
from toollab.schema import GoldCall

TASKS = TabletopEnv.tasks

_BLOCKS = "blocks = [n for n in get_obj_names() if n.endswith(' block')]\n"


def _scene(env: Environment) -> Scene:
    if not isinstance(env, TabletopEnv):
        raise TypeError("tabletop templates need a TabletopEnv")
    return env.scene.copy()


def _put(obj: str, target: str | list[float]) -> GoldCall:
    return call("put_first_on_second", obj=obj, target=target)


def _goal(
    scene: Scene,
    query: str,
    conditions: list[Condition],
    moved: Sequence[str],
    plain: list[GoldCall],
    code: str,
    *,
    code_first: bool = False,
) -> Goal:
    """The goal: ``conditions`` plus every block outside ``moved`` unmoved; the gold program
    (``plain`` or the ``code`` policy) and the other as an alternative.  Both are run here and
    must meet the goal; a goal the scene already meets is no goal.  A :class:`TemplateError`
    (draw another) when either cannot run in this scene or misses the goal there: the scene a
    conversation's earlier turns left (blocks stacked, a block in a bowl) is not always one the
    template's programs expect; ``tests/test_env_tabletop.py`` checks that fresh scenes give
    goals."""
    kept: list[Condition] = [
        Unmoved(obj=t.name, pos=t.pos, on=t.on) for t in scene.blocks() if t.name not in moved
    ]
    goal = TabletopGoal(conditions=[*conditions, *kept])
    if all(goal.met(scene)):
        raise TemplateError("the scene already meets the goal")
    after = scene.copy()
    try:
        for c in plain:
            after.put(str(c.arguments["obj"]), c.arguments["target"])
    except EnvError as exc:
        raise TemplateError(f"the plain program cannot run in this scene: {exc}") from exc
    outcome = run_policy(code, scene.to_json())
    if outcome["error"]:
        raise TemplateError(f"the policy cannot run in this scene: {outcome['error']}")
    coded = Scene.from_json(outcome["scene"])
    for name, final in (("plain program", after), ("policy", coded)):
        if goal.unmet(final):
            raise TemplateError(f"the {name} of {query!r} misses {goal.unmet(final)} here")
    programs = [plain, [call("run_program", code=code)]]
    if code_first:
        programs.reverse()
    return Goal(
        query=query,
        calls=programs[0],
        alternatives=[programs[1]],
        context=f"objects = {scene.names()!r}",
        metadata={GOAL_KEY: goal.model_dump(mode="json")},
    )


def _where(thing: Thing) -> str:
    return "in" if thing.kind == "bowl" else "on"


# -- seen instruction kinds ---------------------------------------------------------------------------
@TASKS.template("block_on_object", weight=2)
def block_on_object(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    block = pick(rng, s.blocks())
    target = pick(rng, [t for t in s.things.values() if t.name != block.name])
    query = pick(
        rng,
        (
            f"Pick up the {block.name} and place it {_where(target)} the {target.name}.",
            f"Put the {block.name} {_where(target)} the {target.name}.",
            f"Place the {block.name} {_where(target)} the {target.name}.",
        ),
    )
    cond: Condition = (
        Inside(obj=block.name, containers=[target.name])
        if target.kind == "bowl"
        else OnTop(obj=block.name, base=target.name)
    )
    return _goal(
        s,
        query,
        [cond],
        [block.name],
        [_put(block.name, target.name)],
        f"put_first_on_second({block.name!r}, {target.name!r})\n",
    )


@TASKS.template("block_to_place")
def block_to_place(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    block = pick(rng, s.blocks())
    place = pick(rng, [*CORNERS, *SIDES])
    query = pick(
        rng,
        (
            f"Move the {block.name} to the {place}.",
            f"Put the {block.name} on the {place}.",
            f"Pick up the {block.name} and place it on the {place}.",
        ),
    )
    return _goal(
        s,
        query,
        [Near(obj=block.name, pos=list(PLACES[place]))],
        [block.name],
        [_put(block.name, place)],
        f"put_first_on_second({block.name!r}, {place!r})\n",
    )


@TASKS.template("stack_all")
def stack_all(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    names = [b.name for b in s.blocks()]
    query = pick(
        rng,
        (
            "Stack all the blocks.",
            "Stack the blocks on top of each other.",
            "Make one stack of all the blocks.",
        ),
    )
    return _goal(
        s,
        query,
        [Stacked(objs=names)],
        names,
        [_put(b, a) for a, b in itertools.pairwise(names)],
        _BLOCKS
        + "for i in range(1, len(blocks)):\n    put_first_on_second(blocks[i], blocks[i - 1])\n",
    )


@TASKS.template("blocks_on_place")
def blocks_on_place(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    names = [b.name for b in s.blocks()]
    place = pick(rng, [*CORNERS, *SIDES])
    query = pick(rng, (f"Put all the blocks on the {place}.", f"Move every block to the {place}."))
    return _goal(
        s,
        query,
        [Near(obj=n, pos=list(PLACES[place])) for n in names],
        names,
        [_put(n, place) for n in names],
        _BLOCKS + f"for b in blocks:\n    put_first_on_second(b, {place!r})\n",
    )


@TASKS.template("blocks_in_bowl")
def blocks_in_bowl(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    names = [b.name for b in s.blocks()]
    bowl = pick(rng, s.bowls()).name
    query = pick(rng, (f"Put the blocks in the {bowl}.", f"Put all the blocks in the {bowl}."))
    return _goal(
        s,
        query,
        [Inside(obj=n, containers=[bowl]) for n in names],
        names,
        [_put(n, bowl) for n in names],
        _BLOCKS + f"for b in blocks:\n    put_first_on_second(b, {bowl!r})\n",
    )


@TASKS.template("matching_bowls")
def matching_bowls(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    pairs = [(b.name, f"{b.colour} bowl") for b in s.blocks() if f"{b.colour} bowl" in s.things]
    if not pairs:
        raise TemplateError("no block has a bowl of its colour")
    query = pick(
        rng,
        (
            "Put the blocks in the bowls with matching colors.",
            "Put each block in the bowl of the same color.",
        ),
    )
    return _goal(
        s,
        query,
        [Inside(obj=b, containers=[w]) for b, w in pairs],
        [b for b, _ in pairs],
        [_put(b, w) for b, w in pairs],
        "names = get_obj_names()\n"
        "for b in [n for n in names if n.endswith(' block')]:\n"
        "    bowl = b.replace(' block', ' bowl')\n"
        "    if bowl in names:\n"
        "        put_first_on_second(b, bowl)\n",
    )


@TASKS.template("nearest_to_bowl")
def nearest_to_bowl(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    bowl = pick(rng, s.bowls())
    ranked = sorted(s.blocks(), key=lambda b: math.dist(b.pos, bowl.pos))
    if (
        len(ranked) > 1
        and math.dist(ranked[1].pos, bowl.pos) - math.dist(ranked[0].pos, bowl.pos) < 0.03
    ):
        raise TemplateError("no clearly closest block")
    place = pick(rng, [*CORNERS, *SIDES])
    block = ranked[0].name
    return _goal(
        s,
        f"Pick up the block closest to the {bowl.name} and place it on the {place}.",
        [Near(obj=block, pos=list(PLACES[place]))],
        [block],
        [_put(block, place)],
        f"target = get_obj_pos({bowl.name!r})\n" + _BLOCKS + "def dist(n):\n"
        "    p = get_obj_pos(n)\n"
        "    return (p[0] - target[0]) ** 2 + (p[1] - target[1]) ** 2\n"
        f"put_first_on_second(min(blocks, key=dist), {place!r})\n",
        code_first=True,
    )


_NTH = ("first", "second", "third")
#: side -> (coordinate, from the largest)
_FROM = {"left": (0, False), "right": (0, True), "bottom": (1, False), "top": (1, True)}


@TASKS.template("nth_from_side")
def nth_from_side(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    side = pick(rng, sorted(_FROM))
    axis, reverse = _FROM[side]
    ranked = sorted(s.blocks(), key=lambda b: b.pos[axis], reverse=reverse)
    coords = sorted(b.pos[axis] for b in ranked)
    if any(b - a < 0.03 for a, b in itertools.pairwise(coords)):
        raise TemplateError("two blocks too close along the axis")
    k = rng.randrange(min(len(ranked), len(_NTH)))
    place = pick(rng, [*CORNERS, *SIDES])
    block = ranked[k].name
    return _goal(
        s,
        f"Pick up the {_NTH[k]} block from the {side} and place it on the {place}.",
        [Near(obj=block, pos=list(PLACES[place]))],
        [block],
        [_put(block, place)],
        _BLOCKS
        + f"blocks = sorted(blocks, key=lambda n: get_obj_pos(n)[{axis}], reverse={reverse})\n"
        f"put_first_on_second(blocks[{k}], {place!r})\n",
        code_first=True,
    )


# -- unseen instruction kinds (the test split's) ----------------------------------------------------------
@TASKS.template("different_corners")
def different_corners(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    names = [b.name for b in s.blocks()]
    query = pick(
        rng, ("Put all the blocks in different corners.", "Put each block in a different corner.")
    )
    return _goal(
        s,
        query,
        [InCorners(objs=names)],
        names,
        [_put(n, c) for n, c in zip(names, CORNERS, strict=False)],
        _BLOCKS
        + f"corners = {list(CORNERS)!r}\n"
        + "for b, c in zip(blocks, corners):\n    put_first_on_second(b, c)\n",
    )


@TASKS.template("mismatched_bowls")
def mismatched_bowls(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    bowls = s.bowls()
    pairs = []
    for b in s.blocks():
        other = [w.name for w in bowls if w.colour != b.colour]
        if not other:
            raise TemplateError("a block has no bowl of another colour")
        pairs.append((b.name, other))
    query = pick(
        rng,
        (
            "Put the blocks in the bowls with mismatched colors.",
            "Put each block in a bowl of a different color.",
        ),
    )
    return _goal(
        s,
        query,
        [Inside(obj=b, containers=ws) for b, ws in pairs],
        [b for b, _ in pairs],
        [_put(b, ws[0]) for b, ws in pairs],
        "names = get_obj_names()\n"
        "bowls = [n for n in names if n.endswith(' bowl')]\n"
        "for b in [n for n in names if n.endswith(' block')]:\n"
        "    other = [w for w in bowls if w.split()[0] != b.split()[0]]\n"
        "    put_first_on_second(b, other[0])\n",
    )


@TASKS.template("stack_on_place")
def stack_on_place(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    names = [b.name for b in s.blocks()]
    place = pick(rng, [*CORNERS, *SIDES])
    return _goal(
        s,
        pick(
            rng,
            (
                f"Stack all the blocks on the {place}.",
                f"Make a stack of the blocks on the {place}.",
            ),
        ),
        [Stacked(objs=names), *(Near(obj=n, pos=list(PLACES[place])) for n in names)],
        names,
        [_put(names[0], place), *(_put(b, a) for a, b in itertools.pairwise(names))],
        _BLOCKS
        + f"put_first_on_second(blocks[0], {place!r})\n"
        + "for i in range(1, len(blocks)):\n    put_first_on_second(blocks[i], blocks[i - 1])\n",
    )


#: direction -> unit offset
_DIRECTIONS = {"left": (-1, 0), "right": (1, 0), "top": (0, 1), "bottom": (0, -1)}


@TASKS.template("offset_from_bowl")
def offset_from_bowl(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    block, bowl = pick(rng, s.blocks()), pick(rng, s.bowls())
    direction = pick(rng, sorted(_DIRECTIONS))
    cm = pick(rng, (10, 15, 20))
    dx, dy = _DIRECTIONS[direction]
    sign_x = "+" if dx > 0 else "-"
    sign_y = "+" if dy > 0 else "-"
    x_expr = "pos[0]" if dx == 0 else f"pos[0] {sign_x} {cm / 100:g}"
    y_expr = "pos[1]" if dy == 0 else f"pos[1] {sign_y} {cm / 100:g}"
    pos = bowl.pos
    point = [
        pos[0] + dx * cm / 100 if dx >= 0 else pos[0] - cm / 100,
        pos[1] + dy * cm / 100 if dy >= 0 else pos[1] - cm / 100,
    ]
    if not all(0.05 <= v <= 0.95 for v in point) or s.at_point(point[0], point[1], block.name):
        raise TemplateError("the point is off the table or taken")
    target = [round(v, 3) for v in point]
    where = (
        "above"
        if direction == "top"
        else "below"
        if direction == "bottom"
        else f"to the {direction} of"
    )
    return _goal(
        s,
        f"Pick up the {block.name} and place it {cm} cm {where} the {bowl.name}.",
        [Near(obj=block.name, pos=target)],
        [block.name],
        [_put(block.name, target)],
        f"pos = get_obj_pos({bowl.name!r})\n"
        f"put_first_on_second({block.name!r}, [{x_expr}, {y_expr}])\n",
        code_first=True,
    )


@TASKS.template("line_up")
def line_up(rng: random.Random, env: Environment) -> Goal:
    s = _scene(env)
    names = [b.name for b in s.blocks()]
    axis: Literal["horizontal", "vertical"] = "horizontal" if rng.random() < 0.5 else "vertical"
    if axis == "horizontal":
        points = [[round(0.2 + 0.2 * i, 3), 0.9] for i in range(len(names))]
        expr = "[0.2 + 0.2 * i, 0.9]"
    else:
        points = [[0.9, round(0.2 + 0.2 * i, 3)] for i in range(len(names))]
        expr = "[0.9, 0.2 + 0.2 * i]"
    return _goal(
        s,
        pick(
            rng, (f"Put all the blocks in a {axis} line.", f"Line the blocks up in a {axis} line.")
        ),
        [Line(objs=names, axis=axis)],
        names,
        [_put(n, p) for n, p in zip(names, points, strict=True)],
        _BLOCKS + f"for i, b in enumerate(blocks):\n    put_first_on_second(b, {expr})\n",
    )
