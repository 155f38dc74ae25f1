"""Tabletop manipulation (Code as Policies; SambaNova ToolBench, Appendix A.8): coloured blocks and
bowls on a 2-D table, moved by a program, judged by whether the final scene meets the instruction.

The world is :mod:`toollab.envs.tabletop_scene`.  The tools are the perception and action
functions of Code as Policies — ``get_obj_names``, ``get_obj_pos``, ``is_obj_visible``,
``put_first_on_second`` — with ``say``, and ``run_program``: a short Python program that calls
those functions (loops, arithmetic on positions) and runs confined, with nothing else in scope
(:mod:`toollab.envs.tabletop_program`).  So a plain call program and a code program both work, and
mix: the scene a program leaves is the next call's scene.  The state is every object's position
and what it rests on.

Since many scenes meet an instruction ("stack all the blocks", in any order), an instance's goal
(``metadata["goal"]``, a :class:`~toollab.envs.tabletop_scene.TabletopGoal`) is what an outcome
is judged against (:meth:`TabletopEnv.labels_of`), by predicate (:meth:`TabletopEnv.check`):
success when every condition holds; F1 from the share of the asked conditions met and of the
blocks kept in place.  An instance without a goal (a conversation's reference) is judged by its
label programs' final states, as every environment's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar

from pydantic import ValidationError

from toollab.envs.base import CheckResult, Environment, register_env
from toollab.envs.tabletop_program import execute_program
from toollab.envs.tabletop_scene import Scene, TabletopGoal, scene_of_state
from toollab.envs.taskset import TaskSet
from toollab.schema import Instance
from toollab.tools.decorator import Param, tool

#: the key of a label that is a goal, not a final state (see :meth:`TabletopEnv.labels_of`)
GOAL_KEY = "goal"


@register_env("tabletop")
class TabletopEnv(Environment):
    description = (
        "A robot arm over a table of coloured blocks and bowls: look at the scene, pick and place "
        "blocks, or run a short Python program that does."
    )
    scenario = "AM"
    #: split by instruction kind: the held-out templates are the test split's (goal templates:
    #: :mod:`toollab.envs.tasks.tabletop`)
    tasks: ClassVar[TaskSet] = TaskSet(
        "tabletop",
        held_out_templates=(
            "different_corners",
            "mismatched_bowls",
            "stack_on_place",
            "offset_from_bowl",
            "line_up",
        ),
    )
    #: room for every gold program of the test split in the json template (at most 147 tokens
    #: with seed 0; SambaNova gives Tabletop 256)
    max_tokens = 160

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.scene = Scene.generate(seed)
        self.said: list[str] = []

    def state(self) -> dict[str, object]:
        return self.scene.state()

    # -- judging by predicate ------------------------------------------------------------------
    def labels_of(self, instance: Instance) -> list[dict[str, object]]:
        """The instance's goal when it has one (judged by :meth:`check`), else the final states
        of its label programs."""
        goal = instance.metadata.get(GOAL_KEY)
        if goal is None:
            return super().labels_of(instance)
        return [{GOAL_KEY: TabletopGoal.model_validate(goal).model_dump(mode="json")}]

    def check(
        self, state: Mapping[str, object], labels: Sequence[Mapping[str, object]]
    ) -> CheckResult:
        """A goal label: success when the final scene meets every condition, F1 from the share
        of the asked conditions met (recall) and of the blocks kept in place (precision,
        :meth:`TabletopGoal.prf`); a state label: dict-F1, as every environment's.  The best
        label is kept."""
        goals = [(i, lab[GOAL_KEY]) for i, lab in enumerate(labels) if GOAL_KEY in lab]
        if not goals:
            return super().check(state, labels)
        best = super().check(state, [lab for lab in labels if GOAL_KEY not in lab])
        scene = scene_of_state(dict(state))
        for i, raw in goals:
            try:
                goal = TabletopGoal.model_validate(raw)
            except ValidationError:
                continue
            p, r, f = goal.prf(scene)
            if best.label is None or f > best.f1:
                unmet = goal.conditions if scene is None else goal.unmet(scene)
                best = CheckResult(
                    success=not unmet,
                    precision=p,
                    recall=r,
                    f1=f,
                    label=i,
                    details={"unmet": [c.model_dump(mode="json") for c in unmet]},
                )
        return best

    # -- tools ----------------------------------------------------------------------------------
    @tool
    def get_obj_names(self) -> list[str]:
        """The names of the objects on the table, e.g. 'red block', 'blue bowl'."""
        return self.scene.names()

    @tool
    def get_obj_pos(self, obj: str) -> list[float]:
        """The [x, y] position in metres of an object or a named place.

        The table spans x 0 (left edge) to 1 (right edge) and y 0 (bottom edge) to 1 (top edge).

        Args:
            obj: An object name ('red block') or a place ('top left corner', 'left side',
                'middle').
        """
        return self.scene.position(obj)

    @tool
    def is_obj_visible(self, obj: str) -> bool:
        """Whether an object is on the table and not covered by a block.

        Args:
            obj: An object name, e.g. 'red block'.
        """
        return self.scene.visible(obj)

    @tool(returns=False)
    def put_first_on_second(
        self,
        obj: str,
        target: str | Annotated[list[float], Param(minItems=2, maxItems=2)],
    ) -> str:
        """Pick up a block and place it on an object, a place or an [x, y] point.

        A block lands on top of what is there: inside a bowl, on top of a stack.

        Args:
            obj: The block to pick up, e.g. 'red block'.
            target: An object ('blue bowl'), a place (corners, sides, 'middle') or [x, y] in
                metres.
        """
        return self.scene.put(obj, target)

    @tool(returns=False)
    def say(self, message: str) -> str:
        """Say something to the user.

        Args:
            message: What to say.
        """
        self.said.append(message)
        return message

    @tool(returns=False)
    def run_program(self, code: str) -> dict[str, Any]:
        """Run a short Python program over the scene.

        It may call get_obj_names, get_obj_pos, is_obj_visible, put_first_on_second and say,
        and plain builtins (len, range, sorted, zip, min, max, ...); no imports, files or
        network.  It leaves the scene changed.

        Args:
            code: The Python program.
        """
        self.scene, outcome = execute_program(code, self.scene)
        self.said.extend(outcome.said)
        return {"said": outcome.said, "actions": outcome.actions}
