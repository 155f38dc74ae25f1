"""Round trip: every gold call of every dataset adapter, rendered by every template that can
express it, parses back to the same calls (name + arguments; Seal also outputs; Refs by label)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from toollab.data import load_dataset
from toollab.parsing import ParseStatus
from toollab.schema import Instance, Ref, ToolCall
from toollab.templates import DeerTemplate, SealTemplate, Template, get_template

TEMPLATES = ["json", "seal", "python", "react", "hermes", "deer"]


def norm(value: Any) -> Any:
    """Comparable form: references by label, tuples as lists."""
    if isinstance(value, Ref):
        return value.label
    if isinstance(value, dict):
        return {k: norm(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [norm(v) for v in value]
    return value


def call_view(calls: Sequence[ToolCall], outputs: bool) -> list[Any]:
    return [(c.name, norm(c.arguments), list(c.outputs) if outputs else None) for c in calls]


@pytest.fixture(scope="module")
def instances(shared_data: Path) -> dict[str, list[Instance]]:
    seal = load_dataset(shared_data / "seal-tools", "seal-tools").instances
    bfcl = load_dataset(shared_data / "bfcl", "bfcl").instances
    deer = load_dataset(shared_data / "deer", "deer").instances
    return {"seal-tools": seal, "bfcl": bfcl, "deer": deer}


def render(tpl: Template, inst: Instance) -> str:
    if isinstance(tpl, DeerTemplate):
        return tpl.render_calls(list(inst.gold), tools=inst.tools)
    return tpl.render_calls(list(inst.gold))


def test_adapters_cover_the_expected_gold(instances: dict[str, list[Instance]]) -> None:
    seal_splits = Counter(i.split for i in instances["seal-tools"] if i.gold)
    assert seal_splits["test_in_domain"] == 700 and seal_splits["test_out_domain"] == 654
    cats = Counter(i.category for i in instances["bfcl"] if i.gold)
    assert cats == {
        "simple_python": 400,
        "multiple": 200,
        "parallel": 200,
        "parallel_multiple": 200,
    }
    deer_calls = Counter(i.split for i in instances["deer"] if i.gold)
    assert deer_calls["test"] == 445 and deer_calls["valid"] == 526


@pytest.mark.parametrize("name", TEMPLATES)
def test_roundtrip(name: str, instances: dict[str, list[Instance]]) -> None:
    templates: list[Template] = [get_template(name)]
    if name == "seal":
        templates.append(SealTemplate(literal="python"))
    checked = 0
    failures: list[str] = []
    for tpl in templates:
        outputs = tpl.carries_outputs
        for source, items in instances.items():
            for inst in items:
                gold = list(inst.gold)
                if not gold or not tpl.can_express(gold):
                    continue
                checked += 1
                text = render(tpl, inst)
                res = tpl.parse(text)
                if res.status is not ParseStatus.CALLS:
                    failures.append(f"{source} {inst.id}: {res.status.value} {res.error}\n{text}")
                elif call_view(res.calls, outputs) != call_view(gold, outputs):
                    failures.append(
                        f"{source} {inst.id}: {call_view(res.calls, outputs)} != "
                        f"{call_view(gold, outputs)}\n{text}"
                    )
    assert checked > 0
    assert not failures, f"{len(failures)}/{checked} failed, first:\n" + "\n".join(failures[:3])


@pytest.mark.parametrize("name", TEMPLATES)
def test_no_call_roundtrip(name: str) -> None:
    tpl = get_template(name)
    res = tpl.parse(tpl.render_answer("I cannot help with that."))
    assert res.status is ParseStatus.NO_CALL, (res, tpl.render_answer("I cannot help with that."))


def test_deer_chains_reproduce_the_gold(instances: dict[str, list[Instance]]) -> None:
    """DeerTemplate.render_chain rebuilds DEER's gold chains (training targets) exactly."""
    tpl = DeerTemplate()
    total = 0
    verbatim_diff: list[str] = []
    pool_diff: list[str] = []
    call_diff: list[str] = []
    for inst in instances["deer"]:
        chain = inst.metadata.get("gold_chain")
        if not isinstance(chain, str):
            continue
        total += 1
        if tpl.render_chain(inst) != chain:
            verbatim_diff.append(inst.id)
        canonical = tpl.render_chain(inst, verbatim=False)
        sep = " #CallAPI# " if " #CallAPI# " in chain else " #NoCallAPI# "
        if canonical.split(sep)[0] != chain.split(sep)[0]:
            pool_diff.append(inst.id)
        elif canonical != chain:
            call_diff.append(inst.id)
    assert total == 743 + 1065
    assert not verbatim_diff, f"{len(verbatim_diff)} chains differ, e.g. {verbatim_diff[:5]}"
    assert not pool_diff, f"{len(pool_diff)} API pools differ, e.g. {pool_diff[:5]}"
    # the canonical f(a='x') spelling differs only where DEER's own call text is irregular
    assert len(call_diff) <= 0.02 * total, call_diff[:10]
