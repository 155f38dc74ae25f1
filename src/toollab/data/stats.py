"""Counts over a list of instances: what ``toollab data inspect`` reports."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from toollab.data.types import tool_unknown_types
from toollab.schema import Instance, Tool

NONE_KEY = "none"
#: how many places of unknown type names ``data inspect`` lists
MAX_PLACES = 20


def _sorted_counts(counter: Counter[str]) -> dict[str, int]:
    return {k: counter[k] for k in sorted(counter)}


def _histogram(counter: Counter[int]) -> dict[str, int]:
    return {str(k): counter[k] for k in sorted(counter)}


def is_nested_instance(inst: Instance) -> bool:
    """A gold call uses an earlier call's output (or the dataset labels it nested)."""
    return inst.category == "nested" or inst.nested


def unknown_types(tools: Iterable[Tool]) -> dict[str, Any]:
    """Type names toollab does not know in the tools' schemas, found as ``toollab tools
    validate`` finds them (:func:`~toollab.data.types.tool_unknown_types`), each distinct
    tool once (:func:`~toollab.data.base.tool_pool`):
    ``{"count", "names": {name: places}, "places": ["tool 'x': parameters.properties.y: 'strng'"]}``."""
    # imported here: toollab.data.base imports this module
    from toollab.data.base import tool_pool

    names: Counter[str] = Counter()
    places: list[str] = []
    for t in tool_pool(tools):
        for path, name in tool_unknown_types(t):
            names[name] += 1
            if len(places) < MAX_PLACES:
                places.append(f"tool {t.name!r}: {path}: {name!r}")
    return {"count": sum(names.values()), "names": _sorted_counts(names), "places": places}


def compute_stats(instances: Iterable[Instance], tools: list[Tool]) -> dict[str, Any]:
    """instances, tools, calls-per-instance histogram, nested count, the breakdowns and the
    unknown type names of the pool's and the offered tools."""
    n = 0
    offered: list[Tool] = []
    calls: Counter[int] = Counter()
    by_category: Counter[str] = Counter()
    by_decision: Counter[str] = Counter()
    by_split: Counter[str] = Counter()
    by_difficulty: Counter[str] = Counter()
    nested = 0
    gold_calls = 0
    tools_offered = 0
    for inst in instances:
        n += 1
        calls[len(inst.gold)] += 1
        gold_calls += len(inst.gold)
        tools_offered += len(inst.tools)
        offered.extend(inst.tools)
        by_category[inst.category or NONE_KEY] += 1
        by_decision[inst.decision.value if inst.decision is not None else NONE_KEY] += 1
        by_split[inst.split or NONE_KEY] += 1
        difficulty = inst.metadata.get("difficulty")
        if isinstance(difficulty, str):
            by_difficulty[difficulty] += 1
        if is_nested_instance(inst):
            nested += 1
    out: dict[str, Any] = {
        "instances": n,
        "tools": len(tools),
        "gold_calls": gold_calls,
        "calls_per_instance": _histogram(calls),
        "mean_tools_offered": round(tools_offered / n, 3) if n else 0.0,
        "nested": nested,
        "by_category": _sorted_counts(by_category),
        "by_decision": _sorted_counts(by_decision),
        "by_split": _sorted_counts(by_split),
        "unknown_types": unknown_types([*tools, *offered]),
    }
    if by_difficulty:
        out["by_difficulty"] = _sorted_counts(by_difficulty)
    return out
