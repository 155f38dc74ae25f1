"""The tabletop world: coloured blocks and bowls on a 2-D table, and goals judged by predicate.

The table is 1 m x 1 m, seen from above: ``x`` runs from the left edge (0) to the right edge
(1), ``y`` from the bottom edge (0) to the top edge (1).  A :class:`Scene` holds every object's
position and what it rests on (the table, a bowl, or another block); it is generated from a seed
(:meth:`Scene.generate`: two to four blocks and two to four bowls, never overlapping, inside the
middle of the table) and changed only by :meth:`Scene.put` (pick a block up, place it on an
object, a named place or a point).  A block lands on top of whatever is at the place it is put:
inside a bowl, on the topmost block of a stack.  Positions are rounded to the millimetre, so the
same program always leaves the same scene.

A tabletop instruction ("stack all the blocks", "put the blocks in the bowls with matching
colours") is met by many scenes, so its goal is a list of :data:`Condition` predicates over the
final scene (:class:`TabletopGoal`), not one final state: every object the instruction names must
end where it asks, and every other block must stay where it was.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from toollab.envs.base import BAD_VALUE, NOT_FOUND, PRECONDITION, EnvError
from toollab.errors import did_you_mean

COLOURS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "gray")
BLOCK, BOWL = "block", "bowl"
#: the named places a block may be put on (metres from the bottom-left corner)
PLACES: dict[str, tuple[float, float]] = {
    "top left corner": (0.1, 0.9),
    "top right corner": (0.9, 0.9),
    "bottom left corner": (0.1, 0.1),
    "bottom right corner": (0.9, 0.1),
    "top side": (0.5, 0.9),
    "bottom side": (0.5, 0.1),
    "left side": (0.1, 0.5),
    "right side": (0.9, 0.5),
    "middle": (0.5, 0.5),
}
CORNERS = ("top left corner", "top right corner", "bottom left corner", "bottom right corner")
SIDES = ("top side", "bottom side", "left side", "right side")
#: footprint radius: a point within it is on the object
RADIUS = {BLOCK: 0.025, BOWL: 0.07}
#: how close to a target position an object must end to count as there
TOLERANCE = 0.03
#: objects of a generated scene lie within this band of each axis, at least GAP apart
_BAND, _GAP = (0.22, 0.78), 0.15


def _mm(v: float) -> float:
    return round(float(v) + 0.0, 3)


@dataclass
class Thing:
    """One object on the table: its kind and colour, its position, what it rests on."""

    name: str
    kind: str
    colour: str
    x: float
    y: float
    #: the object it rests on directly; ``None``: the table
    on: str | None = None

    @property
    def pos(self) -> list[float]:
        return [self.x, self.y]


class Scene:
    """Blocks and bowls on the table (see the module docs)."""

    def __init__(self, things: Sequence[Thing]) -> None:
        self.things: dict[str, Thing] = {t.name: t for t in things}

    # -- making and copying ------------------------------------------------------------------
    @classmethod
    def generate(cls, seed: int) -> Scene:
        """The scene an environment seeded with ``seed`` starts from (deterministic): two to
        four blocks of different colours and two to four bowls of different colours, where a
        bowl often has the colour of a block."""
        rng = random.Random(f"tabletop:{seed}")
        n_blocks, n_bowls = rng.randint(2, 4), rng.randint(2, 4)
        blocks = rng.sample(COLOURS, n_blocks)
        bowls: list[str] = []
        while len(bowls) < n_bowls:
            pool = blocks if rng.random() < 0.6 else COLOURS
            colour = pool[rng.randrange(len(pool))]
            if colour not in bowls:
                bowls.append(colour)
        kinds = [(c, BLOCK) for c in blocks] + [(c, BOWL) for c in bowls]
        rng.shuffle(kinds)
        spots: list[tuple[float, float]] = []
        while len(spots) < len(kinds):
            p = (_mm(rng.uniform(*_BAND)), _mm(rng.uniform(*_BAND)))
            if all(math.dist(p, q) >= _GAP for q in spots):
                spots.append(p)
        return cls(
            [Thing(f"{c} {k}", k, c, x, y) for (c, k), (x, y) in zip(kinds, spots, strict=True)]
        )

    def copy(self) -> Scene:
        return Scene([Thing(**vars(t)) for t in self.things.values()])

    def to_json(self) -> list[list[object]]:
        """The scene as JSON rows ``[name, kind, colour, x, y, on]`` (what crosses into the
        sandbox and back)."""
        return [[t.name, t.kind, t.colour, t.x, t.y, t.on] for t in self.things.values()]

    @classmethod
    def from_json(cls, rows: object) -> Scene:
        """The scene :meth:`to_json` wrote; :class:`ValueError` for anything else."""
        if not isinstance(rows, list):
            raise ValueError("a scene is a list of rows")
        things = []
        for row in rows:
            if not (isinstance(row, list) and len(row) == 6):
                raise ValueError(f"a scene row is [name, kind, colour, x, y, on], got {row!r}")
            name, kind, colour, x, y, on = row
            if not (isinstance(name, str) and kind in (BLOCK, BOWL) and isinstance(colour, str)):
                raise ValueError(f"bad scene row {row!r}")
            if not (isinstance(x, int | float) and isinstance(y, int | float)):
                raise ValueError(f"bad position in scene row {row!r}")
            if on is not None and not isinstance(on, str):
                raise ValueError(f"bad support in scene row {row!r}")
            things.append(Thing(name, str(kind), colour, float(x), float(y), on))
        return cls(things)

    # -- perception --------------------------------------------------------------------------
    def names(self) -> list[str]:
        return list(self.things)

    def blocks(self) -> list[Thing]:
        return [t for t in self.things.values() if t.kind == BLOCK]

    def bowls(self) -> list[Thing]:
        return [t for t in self.things.values() if t.kind == BOWL]

    def thing(self, name: str) -> Thing:
        key = name.strip().lower() if isinstance(name, str) else name
        if key in self.things:
            return self.things[key]
        raise EnvError(
            f"no object {name!r} on the table{did_you_mean(str(name), self.names())}; "
            f"objects: {', '.join(self.names())}",
            NOT_FOUND,
        )

    def position(self, name: str) -> list[float]:
        """An object's or a named place's ``[x, y]``."""
        key = name.strip().lower()
        if key in PLACES and key not in self.things:
            return list(PLACES[key])
        if key not in self.things:
            known = [*self.names(), *PLACES]
            raise EnvError(
                f"no object or place {name!r}{did_you_mean(name, known)}; objects: "
                f"{', '.join(self.names())}; places: {', '.join(PLACES)}",
                NOT_FOUND,
            )
        return self.things[key].pos

    def above(self, name: str) -> Thing | None:
        """The object resting directly on ``name``, if any."""
        return next((t for t in self.things.values() if t.on == name), None)

    def visible(self, name: str) -> bool:
        """On the table and not covered by a block (a bowl stays visible around its blocks)."""
        t = self.things.get(name.strip().lower())
        return t is not None and (t.kind == BOWL or self.above(t.name) is None)

    def supports(self, name: str) -> list[str]:
        """What ``name`` rests on, down to the table: ``["green block", "blue bowl"]``."""
        out: list[str] = []
        t = self.things[name]
        while t.on is not None and t.on not in out:
            out.append(t.on)
            t = self.things[t.on]
        return out

    def top_at(self, name: str) -> Thing:
        """The topmost object of the stack standing on ``name`` (``name`` itself when clear)."""
        t = self.things[name]
        seen = {t.name}
        while (up := self.above(t.name)) is not None and up.name not in seen:
            seen.add(up.name)
            t = up
        return t

    def at_point(self, x: float, y: float, moving: str) -> Thing | None:
        """The object whose footprint holds the point (a block before a bowl), ``moving``
        excepted."""
        hits = [
            t
            for t in self.things.values()
            if t.name != moving and math.dist((x, y), (t.x, t.y)) <= RADIUS[t.kind]
        ]
        hits.sort(key=lambda t: (t.kind != BLOCK, math.dist((x, y), (t.x, t.y))))
        return hits[0] if hits else None

    # -- action ------------------------------------------------------------------------------
    def put(self, first: str, second: str | Sequence[float]) -> str:
        """Pick up the block ``first`` and place it on ``second``: an object (it lands on the
        top of what stands there), a named place or an ``[x, y]`` point on the table.  Returns
        what it now rests on (``"table"`` for the table)."""
        block = self.thing(first)
        if block.kind != BLOCK:
            raise EnvError(f"only blocks can be picked up, not the {block.name}", BAD_VALUE)
        covering = self.above(block.name)
        if covering is not None:
            raise EnvError(
                f"cannot pick up the {block.name}: the {covering.name} is on top of it",
                PRECONDITION,
            )
        if isinstance(second, str):
            key = second.strip().lower()
            if key in self.things:
                if key == block.name:
                    raise EnvError(f"cannot put the {block.name} on itself", BAD_VALUE)
                base = self.top_at(key)
                return self._land(block, base.x, base.y, base if base is not block else None)
            x, y = self.position(second)
        else:
            if len(second) != 2 or not all(isinstance(v, int | float) for v in second):
                raise EnvError(f"a point is [x, y], got {list(second)!r}", BAD_VALUE)
            x, y = float(second[0]), float(second[1])
            if not (0.0 <= x <= 1.0 and 0.0 <= y <= 1.0):
                raise EnvError(
                    f"[{x:g}, {y:g}] is off the table (x and y run from 0 to 1)", BAD_VALUE
                )
        under = self.at_point(x, y, block.name)
        if under is not None:
            under = self.top_at(under.name)
        return self._land(block, x if under is None else under.x, y if under is None else under.y,
                          under)  # fmt: skip

    def _land(self, block: Thing, x: float, y: float, on: Thing | None) -> str:
        block.x, block.y, block.on = _mm(x), _mm(y), None if on is None else on.name
        return "table" if on is None else on.name

    # -- outcome -----------------------------------------------------------------------------
    def state(self) -> dict[str, object]:
        """Every object's position and support (``"red block.on": "blue bowl"``)."""
        out: dict[str, object] = {}
        for t in sorted(self.things.values(), key=lambda t: t.name):
            out[f"{t.name}.pos"] = t.pos
            out[f"{t.name}.on"] = t.on or "table"
        return out

    def near(self, name: str, pos: Sequence[float], tol: float = TOLERANCE) -> bool:
        t = self.things.get(name)
        return t is not None and math.dist((t.x, t.y), (pos[0], pos[1])) <= tol + 1e-9


# -- goals -------------------------------------------------------------------------------------------
class _Cond(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Inside(_Cond):
    """``obj`` is in one of ``containers`` (directly or on blocks standing in it)."""

    kind: Literal["inside"] = "inside"
    obj: str
    containers: list[str]

    def holds(self, scene: Scene) -> bool:
        return obj_ok(scene, self.obj) and bool(
            set(scene.supports(self.obj)) & set(self.containers)
        )


class OnTop(_Cond):
    """``obj`` rests directly on ``base``."""

    kind: Literal["on"] = "on"
    obj: str
    base: str

    def holds(self, scene: Scene) -> bool:
        return obj_ok(scene, self.obj) and scene.things[self.obj].on == self.base


class Near(_Cond):
    """``obj`` is within ``tol`` of ``pos``."""

    kind: Literal["near"] = "near"
    obj: str
    pos: list[float]
    tol: float = TOLERANCE

    def holds(self, scene: Scene) -> bool:
        return scene.near(self.obj, self.pos, self.tol)


class Stacked(_Cond):
    """``objs`` form one stack (any order)."""

    kind: Literal["stacked"] = "stacked"
    objs: list[str]

    def holds(self, scene: Scene) -> bool:
        if not all(obj_ok(scene, o) for o in self.objs):
            return False
        members = set(self.objs)
        bottoms = [o for o in self.objs if scene.things[o].on not in members]
        carried = [scene.things[o].on for o in self.objs if scene.things[o].on in members]
        return len(bottoms) == 1 and len(carried) == len(set(carried))


class Unmoved(_Cond):
    """``obj`` is still where it was, on what it was on."""

    kind: Literal["unmoved"] = "unmoved"
    obj: str
    pos: list[float]
    on: str | None = None

    def holds(self, scene: Scene) -> bool:
        return scene.near(self.obj, self.pos, 1e-6) and scene.things[self.obj].on == self.on


class Line(_Cond):
    """``objs`` stand on the table in one horizontal (same ``y``) or vertical (same ``x``) line,
    at least ``gap`` apart."""

    kind: Literal["line"] = "line"
    objs: list[str]
    axis: Literal["horizontal", "vertical"]
    gap: float = 0.06

    def holds(self, scene: Scene) -> bool:
        if not all(obj_ok(scene, o) and scene.things[o].on is None for o in self.objs):
            return False
        along, across = (0, 1) if self.axis == "horizontal" else (1, 0)
        ps = [scene.things[o].pos for o in self.objs]
        if max(p[across] for p in ps) - min(p[across] for p in ps) > TOLERANCE:
            return False
        xs = sorted(p[along] for p in ps)
        return all(b - a >= self.gap for a, b in itertools.pairwise(xs))


class InCorners(_Cond):
    """Each of ``objs`` is in a corner of the table, no two in the same corner."""

    kind: Literal["corners"] = "corners"
    objs: list[str]

    def holds(self, scene: Scene) -> bool:
        used: set[str] = set()
        for o in self.objs:
            corner = next((c for c in CORNERS if scene.near(o, PLACES[c], 0.05)), None)
            if corner is None or corner in used:
                return False
            used.add(corner)
        return True


def obj_ok(scene: Scene, name: str) -> bool:
    return name in scene.things


Condition = Annotated[
    Inside | OnTop | Near | Stacked | Unmoved | Line | InCorners, Field(discriminator="kind")
]


class TabletopGoal(BaseModel):
    """An instruction's goal: every condition must hold in the final scene."""

    model_config = ConfigDict(extra="forbid")

    conditions: list[Condition]

    def met(self, scene: Scene) -> list[bool]:
        return [c.holds(scene) for c in self.conditions]

    def unmet(self, scene: Scene) -> list[Condition]:
        return [c for c in self.conditions if not c.holds(scene)]

    def prf(self, scene: Scene | None) -> tuple[float, float, float]:
        """dict-F1's reading of a goal: recall = the share of the asked conditions that hold,
        precision = the share of the blocks to keep in place that stayed (1 when none);
        doing nothing meets no asked condition and scores 0."""
        asked = [c for c in self.conditions if not isinstance(c, Unmoved)]
        kept = [c for c in self.conditions if isinstance(c, Unmoved)]
        if scene is None:
            return 0.0, 0.0, 0.0
        r = sum(c.holds(scene) for c in asked) / len(asked) if asked else 1.0
        p = sum(c.holds(scene) for c in kept) / len(kept) if kept else 1.0
        return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def scene_of_state(state: object) -> Scene | None:
    """The scene a :meth:`Scene.state` dict describes (objects' colours and kinds from their
    names), or ``None`` when ``state`` is not one."""
    if not isinstance(state, dict):
        return None
    things = []
    for key, pos in state.items():
        if not (isinstance(key, str) and key.endswith(".pos")):
            continue
        name = key[: -len(".pos")]
        on = state.get(f"{name}.on")
        colour, _, kind = name.rpartition(" ")
        if kind not in (BLOCK, BOWL) or not isinstance(on, str):
            return None
        if not (isinstance(pos, list) and len(pos) == 2):
            return None
        if not all(isinstance(v, int | float) for v in pos):
            return None
        things.append(
            Thing(name, kind, colour, float(pos[0]), float(pos[1]), None if on == "table" else on)
        )
    if not things or any(t.on is not None and t.on not in {u.name for u in things} for t in things):
        return None
    return Scene(things)
