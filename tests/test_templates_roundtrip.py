"""Round trip: every gold call of every dataset adapter, rendered by every template, parses back
to the same calls (name + arguments; Seal also outputs; references by label).

Formats that make one call per assistant turn (ReAct, DEER) write a multi-call gold as one turn
per call, as they do at inference; each turn is parsed on its own.  What a format truly cannot
write is an explicit exception: its reason comes from ``Template.inexpressible`` and the count of
each (template, reason kind) is asserted, so nothing is skipped silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from toollab.data import load_dataset
from toollab.parsing import ParseStatus
from toollab.schema import Instance, Ref, ToolCall
from toollab.templates import ChatTemplate, DeerTemplate, SealTemplate, Template, get_template
from toollab.templates.chat_template import HERMES_TOOLS_CHAT_TEMPLATE

TEMPLATES = ["json", "seal", "python", "react", "hermes", "deer", "chat"]

#: gold call lists a template cannot write, by template and kind of reason.  Python call syntax
#: (the ``python`` and ``deer`` formats) needs identifiers: Seal-Tools has 6 gold lists calling
#: ``createIn-AppMessage`` / ``requestFirst Aid Assistance``, and DEER's ToolBench baseline names
#: its tools "<API>-<endpoint>" with spaces and dashes (120 of its gold calls and 138 of the
#: alternative calls it also accepts).  Every other template writes every gold list.
EXCEPTIONS: dict[str, Counter[tuple[str, str]]] = {
    "python": Counter({("seal-tools", "tool name"): 6, ("deer-baselines", "tool name"): 258}),
    "deer": Counter({("seal-tools", "tool name"): 6, ("deer-baselines", "tool name"): 258}),
}


def kind(reason: str) -> str:
    """The kind of an ``inexpressible`` reason: its first two words (``tool name`` ...)."""
    return " ".join(reason.split()[:2])


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
    baselines = load_dataset(
        shared_data / "deer", "deer", splits="tool_bench,tool_corpus"
    ).instances
    return {"seal-tools": seal, "bfcl": bfcl, "deer": deer, "deer-baselines": baselines}


def gold_lists(inst: Instance) -> list[list[ToolCall]]:
    """Every gold call list of an instance: the gold and each acceptable alternative."""
    return [list(calls) for calls in (inst.gold, *inst.alternatives) if calls]


def make(name: str) -> list[Template]:
    if name == "seal":
        return [get_template("seal"), SealTemplate(literal="python")]
    if name == "chat":  # a tool-aware chat template writes the calls itself
        tpl = ChatTemplate(chat_template=HERMES_TOOLS_CHAT_TEMPLATE)
        assert tpl.supports_tools
        return [tpl]
    return [get_template(name)]


def turns(tpl: Template, inst: Instance, calls: list[ToolCall]) -> list[str]:
    if isinstance(tpl, DeerTemplate):
        return tpl.render_turns(calls, tools=inst.tools)
    return tpl.render_turns(calls)


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
    baseline_calls = Counter(i.split for i in instances["deer-baselines"] if i.gold)
    assert sum(baseline_calls.values()) == 195
    multi = sum(len(i.gold) > 1 for items in instances.values() for i in items)
    assert multi > 1400  # Seal-Tools multiple/nested and BFCL parallel*: many multi-call golds


@pytest.mark.parametrize("name", TEMPLATES)
def test_roundtrip(name: str, instances: dict[str, list[Instance]]) -> None:
    checked = 0
    multi_turn = 0
    exceptions: Counter[tuple[str, str]] = Counter()
    failures: list[str] = []
    for tpl in make(name):
        outputs = tpl.carries_outputs
        for source, items in instances.items():
            for inst in items:
                for gold in gold_lists(inst):
                    reason = tpl.inexpressible(gold)
                    if reason is not None:
                        exceptions[(source, kind(reason))] += 1
                        continue
                    checked += 1
                    texts = turns(tpl, inst, gold)
                    assert len(texts) == len(tpl.split_turns(gold))
                    multi_turn += len(texts) > 1
                    parsed: list[ToolCall] = []
                    for text in texts:
                        res = tpl.parse(text)
                        if res.status is not ParseStatus.CALLS:
                            failures.append(
                                f"{source} {inst.id}: {res.status.value} {res.error}\n{text}"
                            )
                            break
                        parsed.extend(res.calls)
                    else:
                        if call_view(parsed, outputs) != call_view(gold, outputs):
                            failures.append(
                                f"{source} {inst.id}: {call_view(parsed, outputs)} != "
                                f"{call_view(gold, outputs)}\n" + "\n---\n".join(texts)
                            )
    assert not failures, f"{len(failures)}/{checked} failed, first:\n" + "\n".join(failures[:3])
    assert exceptions == EXCEPTIONS.get(name, Counter()), exceptions
    total = sum(len(gold_lists(i)) for items in instances.values() for i in items)
    per_template = len(make(name))
    assert checked + sum(exceptions.values()) == total * per_template
    one_step = make(name)[0].max_calls == 1
    assert (multi_turn > 1400) if one_step else multi_turn == 0


@pytest.mark.parametrize("name", TEMPLATES)
def test_no_call_roundtrip(name: str) -> None:
    tpl = make(name)[0]
    res = tpl.parse(tpl.render_answer("I cannot help with that."))
    assert res.status is ParseStatus.NO_CALL, (res, tpl.render_answer("I cannot help with that."))


def test_one_turn_per_call_formats() -> None:
    calls = [ToolCall(name="f", arguments={"x": 1}), ToolCall(name="g", arguments={})]
    react = get_template("react")
    assert not react.can_express(calls)  # not in one turn ...
    assert react.inexpressible(calls) is None  # ... but in two
    assert [c.name for t in react.render_turns(calls) for c in react.parse(t).calls] == ["f", "g"]
    assert get_template("json").split_turns(calls) == [calls]
    bad = [ToolCall(name="a-b", arguments={})]
    assert "not a (dotted) Python identifier" in (get_template("python").inexpressible(bad) or "")
    assert get_template("json").inexpressible(bad) is None
    assert get_template("json").inexpressible([]) == "no calls to write"


def test_keywords_are_not_python_names() -> None:
    """``f(class='a')`` does not parse: a keyword (Seal-Tools' ``addClass`` has a ``class``
    parameter) is inexpressible in Python call syntax, tool name parts included; soft keywords
    (``match``, ``case``, ``type``) are names and round-trip."""
    add_class = [ToolCall(name="addClass", arguments={"element": ".container", "class": "active"})]
    dotted = [ToolCall(name="lib.from.get", arguments={})]
    for name in ("python", "deer"):
        tpl = get_template(name)
        assert tpl.inexpressible(add_class) == (
            "argument name 'class' of 'addClass' is a Python keyword"
        )
        assert tpl.inexpressible(dotted) == "tool name 'lib.from.get' has a Python keyword in it"
        assert tpl.inexpressible([ToolCall(name="None", arguments={})]) is not None
    json_tpl = get_template("json")
    assert json_tpl.inexpressible(add_class) is None
    assert call_view(json_tpl.parse(json_tpl.render_turns(add_class)[0]).calls, False) == (
        call_view(add_class, False)
    )
    soft = [ToolCall(name="match", arguments={"case": 1, "type": "x", "_": [True]})]
    python = get_template("python")
    assert python.inexpressible(soft) is None
    (text,) = python.render_turns(soft)
    assert call_view(python.parse(text).calls, False) == call_view(soft, False)


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
