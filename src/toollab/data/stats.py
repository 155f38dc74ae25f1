"""Counts over a list of instances: what ``toollab data inspect`` reports."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from toollab.schema import Instance, Tool

NONE_KEY = "none"


def _sorted_counts(counter: Counter[str]) -> dict[str, int]:
    return {k: counter[k] for k in sorted(counter)}


def _histogram(counter: Counter[int]) -> dict[str, int]:
    return {str(k): counter[k] for k in sorted(counter)}


def is_nested_instance(inst: Instance) -> bool:
    """A gold call uses an earlier call's output (or the dataset labels it nested)."""
    return inst.category == "nested" or inst.nested


def compute_stats(instances: Iterable[Instance], tools: list[Tool]) -> dict[str, Any]:
    """instances, tools, calls-per-instance histogram, nested count and the breakdowns."""
    n = 0
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
    }
    if by_difficulty:
        out["by_difficulty"] = _sorted_counts(by_difficulty)
    return out
