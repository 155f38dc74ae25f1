"""The tabletop environment: a seeded scene, its tools, goals judged by predicate, programs run
confined (every way a program can go wrong ends as a crash with its reason, never a hang), the
oracle scoring 1.0 through the bench API, and splits by instruction kind."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from toollab.envs import get_env
from toollab.envs.base import BAD_VALUE, NOT_FOUND, PRECONDITION, UNKNOWN_TOOL, label_programs
from toollab.envs.generate import generate
from toollab.envs.splits import is_test_goal, task_set
from toollab.envs.tabletop import GOAL_KEY, TabletopEnv
from toollab.envs.tabletop_program import (
    MEMORY_LIMIT,
    PROGRAM_ERROR,
    REFUSED,
    SYNTAX,
    TIME_LIMIT,
    check_program,
    policy_sandbox,
    run_policy,
)
from toollab.envs.tabletop_scene import (
    CORNERS,
    PLACES,
    InCorners,
    Inside,
    Line,
    Near,
    Scene,
    Stacked,
    TabletopGoal,
    Unmoved,
)
from toollab.errors import ToolExecutionError
from toollab.eval.metrics.environment import Judge
from toollab.schema import Decision, GoldCall, Instance, ToolCall
from toollab.schema.record import ExecutionRecord
from toollab.sft.guard import LeakageGuard
from toollab.tools.sandbox import SandboxError

HELD_OUT = {
    "different_corners",
    "mismatched_bowls",
    "stack_on_place",
    "offset_from_bowl",
    "line_up",
}


def _call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def _env(seed: int = 0) -> TabletopEnv:
    env = get_env("tabletop", seed)
    assert isinstance(env, TabletopEnv)
    return env


def _blocks(env: TabletopEnv) -> list[str]:
    return [t.name for t in env.scene.blocks()]


def _bowls(env: TabletopEnv) -> list[str]:
    return [t.name for t in env.scene.bowls()]


def _program(code: str, seed: int = 0) -> tuple[bool, str | None, str | None, float]:
    env = _env(seed)
    t0 = time.monotonic()
    ex = env.run([_call("run_program", code=code)], seed)
    return ex.crashed, ex.reason, ex.error, time.monotonic() - t0


# -- the scene ---------------------------------------------------------------------------------------
def test_the_scene_is_seeded_and_objects_never_overlap() -> None:
    for seed in range(40):
        a, b = Scene.generate(seed), Scene.generate(seed)
        assert a.to_json() == b.to_json() and a.state() == b.state()
        assert 2 <= len(a.blocks()) <= 4 and 2 <= len(a.bowls()) <= 4
        things = list(a.things.values())
        for i, t in enumerate(things):
            assert t.on is None and 0.2 <= t.x <= 0.8 and 0.2 <= t.y <= 0.8
            for u in things[i + 1 :]:
                assert ((t.x - u.x) ** 2 + (t.y - u.y) ** 2) ** 0.5 >= 0.15
    assert len({str(Scene.generate(s).to_json()) for s in range(40)}) == 40
    assert _env(3).state() == _env(3).state() != _env(4).state()
    scene = Scene.generate(7)
    assert Scene.from_json(scene.to_json()).state() == scene.state()
    with pytest.raises(ValueError, match="scene row"):
        Scene.from_json([["red block", "block"]])


# -- the tools ---------------------------------------------------------------------------------------
def test_perception_tools() -> None:
    env = _env(1)
    names = env.execute(_call("get_obj_names"))
    assert names == env.scene.names() and all(n.endswith((" block", " bowl")) for n in names)
    block = _blocks(env)[0]
    assert env.execute(_call("get_obj_pos", obj=block)) == env.scene.things[block].pos
    assert env.execute(_call("get_obj_pos", obj="top left corner")) == [0.1, 0.9]
    assert env.execute(_call("is_obj_visible", obj=block)) is True
    assert env.execute(_call("is_obj_visible", obj="silver block")) is False
    ex = env.run([_call("get_obj_pos", obj="silver block")])
    assert ex.crashed and ex.reason == NOT_FOUND and "objects:" in (ex.error or "")
    assert env.run([_call("say", message="done")]).observations == ["done"]


def test_put_first_on_second_stacks_fills_bowls_and_refuses_what_cannot_be_done() -> None:
    env = _env(2)
    b1, b2 = _blocks(env)[:2]
    bowl = _bowls(env)[0]
    ex = env.run([_call("put_first_on_second", obj=b1, target=bowl)])
    assert not ex.crashed and ex.state[f"{b1}.on"] == bowl
    assert ex.state[f"{b1}.pos"] == env.scene.things[bowl].pos
    # a second block put in the same bowl lands on the first one: still in the bowl
    env.run([_call("put_first_on_second", obj=b1, target=bowl),
             _call("put_first_on_second", obj=b2, target=bowl)])  # fmt: skip
    assert env.scene.things[b2].on == b1 and env.scene.supports(b2) == [b1, bowl]
    assert not env.scene.visible(b1) and env.scene.visible(b2) and env.scene.visible(bowl)
    # a point inside a bowl's footprint lands in the bowl; a free point on the table
    x, y = env.scene.things[bowl].pos
    env.run([_call("put_first_on_second", obj=b1, target=[x + 0.03, y])])
    assert env.scene.things[b1].on == bowl
    env.run([_call("put_first_on_second", obj=b1, target=[0.95, 0.05])])
    assert env.scene.things[b1].pos == [0.95, 0.05] and env.scene.things[b1].on is None
    refused = {
        "covered": ([_call("put_first_on_second", obj=b1, target=b2),
                     _call("put_first_on_second", obj=b2, target="middle")], PRECONDITION),
        "bowl": ([_call("put_first_on_second", obj=bowl, target=b1)], BAD_VALUE),
        "itself": ([_call("put_first_on_second", obj=b1, target=b1)], BAD_VALUE),
        "off the table": ([_call("put_first_on_second", obj=b1, target=[1.5, 0.5])], BAD_VALUE),
        "unknown": ([_call("put_first_on_second", obj="silver block", target=bowl)], NOT_FOUND),
        "unknown place": ([_call("put_first_on_second", obj=b1, target="the moon")], NOT_FOUND),
        "schema": ([_call("put_first_on_second", obj=b1, target=[0.5])], "bad_arguments"),
        "tool": ([_call("teleport", obj=b1)], UNKNOWN_TOOL),
    }  # fmt: skip
    for what, (calls, reason) in refused.items():
        ex = env.run(calls)
        assert ex.crashed and ex.reason == reason, (what, ex.error)


def test_run_program_changes_the_scene_and_mixes_with_plain_calls() -> None:
    env = _env(5)
    blocks = _blocks(env)
    code = (
        "blocks = [n for n in get_obj_names() if n.endswith(' block')]\n"
        "for i in range(1, len(blocks)):\n"
        "    put_first_on_second(blocks[i], blocks[i - 1])\n"
        "say('stacked %d' % len(blocks))\n"
    )
    ex = env.run([_call("put_first_on_second", obj=blocks[0], target="top left corner"),
                  _call("run_program", code=code)])  # fmt: skip
    assert not ex.crashed, ex.error
    assert ex.observations[1]["said"] == [f"stacked {len(blocks)}"]
    assert len(ex.observations[1]["actions"]) == len(blocks) - 1
    scene = env.scene
    assert Stacked(objs=blocks).holds(scene)
    assert all(Near(obj=b, pos=list(PLACES["top left corner"])).holds(scene) for b in blocks)


# -- programs that go wrong ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("code", "reason", "words"),
    [
        ("import os\nos.listdir('/')", REFUSED, "cannot import"),
        ("from os import path", REFUSED, "cannot import"),
        ("f = open('/etc/passwd')\nsay(f.read())", REFUSED, "open is not available"),
        ("say(().__class__.__bases__)", REFUSED, "cannot reach the attribute '__"),
        ("x = __builtins__", REFUSED, "__builtins__"),
        ("eval('1 + 1')", REFUSED, "eval is not available"),
        ("for i in range(3) say(i)", SYNTAX, "does not parse"),
        ("x = 'a' * 5000\n" * 1, None, None),
    ],
)
def test_programs_are_checked_before_they_run(
    code: str, reason: str | None, words: str | None
) -> None:
    crashed, why, error, seconds = _program(code)
    assert crashed is (reason is not None) and why == reason, error
    if words is not None:
        assert words in (error or "")
        assert seconds < 1.0  # refused statically, before the sandbox
    with pytest.raises(ToolExecutionError, match="at most"):
        check_program("say(1)\n" * 1000)


@pytest.mark.parametrize(
    ("code", "reason", "words"),
    [
        ("while True:\n    pass", TIME_LIMIT, "CPU time limit"),
        ("x = [0] * (10 ** 10)", MEMORY_LIMIT, "memory"),
        ("xs = []\nwhile True:\n    xs.append('x' * 100000)", MEMORY_LIMIT, "memory"),
        (
            "say(1)\nraise ValueError('no bowl here')",
            PROGRAM_ERROR,
            "ValueError: no bowl here (line 2)",
        ),
        ("blocks = get_obj_names()\nsay(blocks[99])", PROGRAM_ERROR, "IndexError"),
        ("say(missing_name)", PROGRAM_ERROR, "NameError"),
        ("put_first_on_second('silver block', 'middle')", NOT_FOUND, "silver block"),
        ("for i in range(100):\n    put_first_on_second(get_obj_names()[0], 'middle')", None, None),
    ],
)
def test_programs_that_loop_allocate_or_raise_crash_with_their_reason(
    code: str, reason: str | None, words: str | None
) -> None:
    crashed, why, error, seconds = _program(code)
    assert crashed and seconds < 20.0, (error, seconds)  # stopped, never a hang
    if reason is not None:
        assert why == reason and words in (error or ""), error
    else:  # a bowl cannot be picked up, or the action budget runs out
        assert why in (BAD_VALUE, PROGRAM_ERROR), error


def test_the_sandbox_checks_the_program_again_inside() -> None:
    """run_policy refuses an import even when called without the parent's check."""
    with pytest.raises(SandboxError) as info:
        policy_sandbox().run_callable(run_policy, "import socket", Scene.generate(0).to_json())
    assert info.value.exc_type == "EnvError" and "cannot import" in str(info.value)


def test_the_sandbox_overhead_per_program_is_small() -> None:
    _program("say(1)")  # the sandbox process starts once
    t0 = time.monotonic()
    for _ in range(5):
        assert not _program("say(get_obj_names())")[0]
    assert (time.monotonic() - t0) / 5 < 0.5


# -- goals by predicate -------------------------------------------------------------------------------
def test_predicates() -> None:
    env = _env(8)
    scene = env.scene.copy()
    blocks, bowls = _blocks(env), _bowls(env)
    assert not Stacked(objs=blocks).holds(scene)
    for below, above in reversed(list(itertools.pairwise(blocks))):  # the other way up
        scene.put(below, above)
    assert Stacked(objs=blocks).holds(scene)
    scene = env.scene.copy()
    scene.put(blocks[0], bowls[0])
    scene.put(blocks[1], bowls[0])
    assert Inside(obj=blocks[1], containers=[bowls[0]]).holds(scene)
    assert not Inside(obj=blocks[1], containers=[bowls[1]]).holds(scene)
    assert not Stacked(objs=blocks[:2]).holds(env.scene)
    original = env.scene.things[blocks[-1]]
    assert Unmoved(obj=original.name, pos=original.pos).holds(scene)
    scene = env.scene.copy()
    for b, c in zip(blocks, CORNERS, strict=False):
        scene.put(b, c)
    assert InCorners(objs=blocks).holds(scene)
    scene.put(blocks[1], CORNERS[0])  # two blocks in one corner
    assert not InCorners(objs=blocks).holds(scene)
    scene = env.scene.copy()
    for i, b in enumerate(blocks):
        scene.put(b, [0.2 + 0.2 * i, 0.9])
    assert Line(objs=blocks, axis="horizontal").holds(scene)
    assert not Line(objs=blocks, axis="vertical").holds(scene)


def _instance(template: str, split: str = "train", seed: int = 0) -> Instance:
    for inst in generate("tabletop", split, 60, seed=seed, mix=(1, 0, 0)):
        if inst.metadata["template"] == template:
            return inst
    raise AssertionError(f"no {template} instance")


def _judge(inst: Instance, calls: list[ToolCall]) -> tuple[bool, float, str | None]:
    env = _env()
    ex = env.run(calls, inst.metadata["seed"])
    if ex.crashed:
        return False, 0.0, ex.reason
    verdict = Judge().verdict(ExecutionRecord(state=ex.state), inst)
    return verdict.success, verdict.f1, None


def test_any_scene_that_meets_the_instruction_succeeds() -> None:
    inst = _instance("stack_all")
    blocks = [c.arguments["obj"] for c in inst.gold]
    env = _env()
    env.reset(inst.metadata["seed"])
    names = _blocks(env)
    # the gold stacks in scene order; the reverse order is another right answer
    reverse = [_call("put_first_on_second", obj=a, target=b)
               for a, b in reversed(list(itertools.pairwise(names)))]  # fmt: skip
    assert _judge(inst, reverse)[:2] == (True, 1.0)
    assert _judge(inst, list(inst.gold))[:2] == (True, 1.0)
    assert _judge(inst, list(inst.alternatives[0]))[:2] == (True, 1.0)
    # a half-made stack meets part of the goal; nothing done meets none of the stack
    ok, f1, _ = _judge(inst, list(inst.gold)[:1])
    assert (blocks and not ok and f1 < 1.0) or len(names) == 2
    assert _judge(inst, []) == (False, 0.0, None)  # doing nothing meets nothing asked
    # the labels are the goal, read from the instance
    labels = env.labels_of(inst)
    assert labels == [{GOAL_KEY: inst.metadata[GOAL_KEY]}]
    assert TabletopGoal.model_validate(labels[0][GOAL_KEY]).conditions


def test_perturbed_programs_fail_for_the_right_reason() -> None:
    inst = _instance("blocks_in_bowl")
    gold = list(inst.gold)
    env = _env(inst.metadata["seed"])
    bowl = gold[0].arguments["target"]
    other = next(b for b in _bowls(env) if b != bowl)
    # another bowl: runs, but the blocks are not where the goal wants them
    wrong = [c.model_copy(update={"arguments": {**c.arguments, "target": other}}) for c in gold]
    ok, f1, reason = _judge(inst, wrong)
    assert reason is None and not ok and f1 < 1.0
    # a block name that is not on the table: refused
    typo = [gold[0].model_copy(update={"arguments": {"obj": "silver block", "target": bowl}})]
    assert _judge(inst, typo) == (False, 0.0, NOT_FOUND)
    # a block the instruction does not concern must stay put
    for inst in generate("tabletop", "train", 60, seed=1, mix=(1, 0, 0)):
        if inst.metadata["template"] != "block_on_object":
            continue
        env.reset(inst.metadata["seed"])
        moved, target = inst.gold[0].arguments["obj"], inst.gold[0].arguments["target"]
        others = [b for b in _blocks(env) if b not in (moved, target)]
        if others:
            bystander = others[0]
            break
    extra = [*inst.gold, _call("put_first_on_second", obj=bystander, target="bottom left corner")]
    ok, f1, reason = _judge(inst, extra)
    assert reason is None and not ok and f1 < 1  # the asked part is done: precision is lost
    # a program for another corner
    inst = _instance("block_to_place")
    place = inst.gold[0].arguments["target"]
    elsewhere = next(c for c in CORNERS if c != place)
    code = f"put_first_on_second({inst.gold[0].arguments['obj']!r}, {elsewhere!r})"
    ok, f1, reason = _judge(inst, [_call("run_program", code=code)])
    assert reason is None and not ok


def test_without_a_goal_an_instance_is_judged_by_its_label_programs() -> None:
    inst = _instance("block_to_place")
    bare = inst.model_copy(update={"metadata": {"env": "tabletop", "seed": inst.metadata["seed"]}})
    env = _env()
    assert env.labels_of(bare) == env.label_states(label_programs(bare), inst.metadata["seed"])
    assert _judge(bare, list(inst.gold))[0] is True
    assert _judge(bare, list(inst.alternatives[0]))[0] is True


# -- data, splits, oracle ------------------------------------------------------------------------------
def test_gold_programs_and_policies_meet_their_goals() -> None:
    for split in ("train", "test"):
        for inst in generate("tabletop", split, 30, seed=4, mix=(1, 0, 0)):
            assert inst.query.startswith("objects = [")
            for program in (inst.gold, *inst.alternatives):
                assert _judge(inst, list(program))[:2] == (True, 1.0), (inst.query, program)
            kinds = {c.name for p in (inst.gold, *inst.alternatives) for c in p}
            assert "run_program" in kinds and "put_first_on_second" in kinds


def test_splits_hold_out_instruction_kinds() -> None:
    ts = task_set("tabletop")
    assert set(ts.held_out_templates) == HELD_OUT and set(ts.templates) > HELD_OUT
    train = generate("tabletop", "train", 150, seed=0)
    val = generate("tabletop", "validation", 40, seed=0)
    test = generate("tabletop", "test", 60, seed=0)
    kinds = {s: {i.metadata["template"] for i in d if i.decision is Decision.CALL}
             for s, d in (("train", train), ("validation", val), ("test", test))}  # fmt: skip
    assert kinds["test"] == HELD_OUT
    assert not (kinds["train"] | kinds["validation"]) & HELD_OUT
    assert kinds["train"] == set(ts.templates) - HELD_OUT
    assert not {i.query for i in train} & {i.query for i in val + test}
    assert all(is_test_goal("tabletop", t, [], 0) for t in HELD_OUT)
    # the leakage guard drops a test instruction kind from a training export
    guard = LeakageGuard([])
    call = next(i for i in test if i.decision is Decision.CALL)
    assert guard.reason(call) == (
        "env:tabletop",
        f"test instruction kind ({call.metadata['template']})",
    )
    assert all(guard.reason(i) is None for i in train)


def test_the_oracle_scores_one_through_the_bench_api(tmp_path: Path) -> None:
    from toollab.eval.bench import run_bench

    result = run_bench(model="oracle", envs=["tabletop"], limit=10, out=tmp_path / "bench")
    (row,) = result.envs
    assert row.env == "tabletop" and row.n == 10 and row.n_call >= 6
    assert row.success == 1.0 and row.crash_rate == 0.0 and row.decision_acc == 1.0
    assert row.tool_f1 == 1.0 and row.param_f1 == 1.0


def test_labels_that_do_not_execute_are_an_error_in_the_data() -> None:
    inst = _instance("block_to_place")
    broken = inst.model_copy(
        update={"gold": [GoldCall(name="put_first_on_second", arguments={"obj": "x", "target": "y"})],
                "metadata": {"env": "tabletop", "seed": 0}}
    )  # fmt: skip
    with pytest.raises(ToolExecutionError, match="label program 0 does not execute"):
        _env().labels_of(broken)
