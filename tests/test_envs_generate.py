"""Programmatic data: gold programs succeed, perturbations fail for the right reason, splits do not
leak API combinations, the same seed gives the same data."""

from __future__ import annotations

import pytest

from toollab.envs import env_names, get_env
from toollab.envs.base import ORDER, UNKNOWN_TOOL
from toollab.envs.generate import (
    api_combo,
    combo_overlap,
    generate,
    is_test_combo,
    split_complexity,
)
from toollab.envs.tasks import TASKSETS
from toollab.errors import UsageError
from toollab.schema import Decision, GoldCall, Instance

ALL = env_names()


def _score(inst: Instance, program: list[GoldCall]) -> tuple[bool, float, str | None]:
    env = get_env(inst.metadata["env"])
    seed = inst.metadata["seed"]
    ex = env.run(list(program), seed)
    if ex.crashed:
        return False, 0.0, ex.reason
    labels = env.label_states([list(inst.gold), *[list(a) for a in inst.alternatives]], seed)
    res = env.check(ex.state, labels)
    return res.success, res.f1, None


@pytest.mark.parametrize("name", ALL)
def test_gold_programs_succeed_in_every_split(name: str) -> None:
    for split in ("train", "validation", "test"):
        for inst in generate(name, split, 25, seed=11):
            assert inst.source == f"env:{name}" and inst.split == split
            if inst.decision is Decision.CALL:
                assert inst.gold and {c.name for c in inst.gold} <= set(inst.tool_names)
                for prog in [inst.gold, *inst.alternatives]:
                    ok, f1, reason = _score(inst, prog)
                    assert ok and f1 == 1.0, (inst.id, inst.query, reason)
            else:
                assert not inst.gold and inst.answer


def _perturb_value(call: GoldCall) -> GoldCall | None:
    """The call with one wrong value (text first: a wrong number can be harmless, e.g. a limit
    above the number of hits)."""
    items = sorted(call.arguments.items(), key=lambda kv: not isinstance(kv[1], str))
    for key, value in items:
        if isinstance(value, bool):
            new: object = not value
        elif isinstance(value, int | float):
            new = value + 7
        elif isinstance(value, str):
            new = "zz" + value
        else:
            continue
        return call.model_copy(update={"arguments": {**call.arguments, key: new}})
    return None


@pytest.mark.parametrize("name", ALL)
def test_perturbed_programs_fail(name: str) -> None:
    checked = 0
    for inst in generate(name, "train", 30, seed=5, mix=(1, 0, 0)):
        gold = list(inst.gold)
        unknown = [*gold[:1], GoldCall(name="made_up_function"), *gold[1:]]
        ok, _f1, reason = _score(inst, unknown)
        assert not ok and reason == UNKNOWN_TOOL
        for i, call in enumerate(gold):
            changed = _perturb_value(call)
            if changed is None:
                continue
            ok, f1, reason = _score(inst, [*gold[:i], changed, *gold[i + 1 :]])
            # a wrong value either changes the final state or makes a call fail
            assert not ok and (f1 < 1.0 or reason is not None), (inst.query, changed)
            checked += 1
            break
    assert checked >= 10


def test_wrong_value_lowers_dict_f1_and_bad_order_crashes_with_the_ordering_reason() -> None:
    for name in ("home_search", "trip_booking"):
        for inst in generate(name, "train", 15, seed=2, mix=(1, 0, 0)):
            gold = list(inst.gold)
            ok, f1, reason = _score(inst, [gold[1], gold[0], *gold[2:]])
            assert not ok and reason == ORDER
            loc = next(i for i, c in enumerate(gold) if "location" in c.arguments)
            wrong = gold[loc].model_copy(update={"arguments": {"location": "Nowhere"}})
            ok, f1, reason = _score(inst, [*gold[:loc], wrong, *gold[loc + 1 :]])
            assert reason is None and not ok and 0 < f1 < 1


@pytest.mark.parametrize("name", ALL)
def test_no_api_combination_of_the_test_split_in_training(name: str) -> None:
    train = generate(name, "train", 120, seed=0)
    val = generate(name, "validation", 60, seed=0)
    test = generate(name, "test", 60, seed=0)
    assert not combo_overlap(train, test) and not combo_overlap(val, test)
    held = set(TASKSETS[name].held_out_tools)
    for inst in train + val:
        if inst.gold:
            assert not is_test_combo(name, api_combo(inst.gold))
            assert not held & {c.name for c in inst.gold}
    for inst in test:
        if inst.gold:
            assert is_test_combo(name, api_combo(inst.gold))
    cx_test = split_complexity(name, test, train)
    cx_train = split_complexity(name, train, train)
    assert cx_test is not None and cx_train is not None and cx_test > cx_train


def test_held_out_tools_appear_in_test() -> None:
    for name in ("home_search", "trip_booking", "household", "spreadsheet"):
        held = set(TASKSETS[name].held_out_tools)
        used = {c.name for inst in generate(name, "test", 120, seed=0) for c in inst.gold}
        assert held & used, name


def test_same_seed_same_data_other_seed_other_data() -> None:
    for name in ("home_search", "spreadsheet", "favourites", "workspace"):
        a = [i.model_dump_json() for i in generate(name, "train", 20, seed=3)]
        b = [i.model_dump_json() for i in generate(name, "train", 20, seed=3)]
        c = [i.model_dump_json() for i in generate(name, "train", 20, seed=4)]
        assert a == b and a != c


def test_decision_branches() -> None:
    insts = generate("weather", "train", 50, seed=1, mix=(0.6, 0.2, 0.2))
    by = {d: [i for i in insts if i.decision is d] for d in Decision}
    assert (
        len(by[Decision.CALL]) == 30
        and len(by[Decision.NO_CALL]) == 10
        and len(by[Decision.NO_SEARCH]) == 10
    )
    weather_tools = {t.name for t in get_env("weather").tools}
    for inst in by[Decision.NO_CALL]:
        assert set(inst.tool_names) == weather_tools and not inst.metadata["template"].endswith(
            "weather"
        )
    for inst in by[Decision.NO_SEARCH]:
        assert inst.answer and inst.query.endswith("?")


def test_bad_generation_arguments() -> None:
    with pytest.raises(UsageError, match="did you mean 'test'"):
        generate("weather", "tset", 3)
    with pytest.raises(UsageError):
        generate("weather", "train", 3, mix=(1, 1))
    with pytest.raises(UsageError, match="did you mean"):
        generate("wether", "train", 3)
