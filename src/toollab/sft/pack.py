"""SambaNova's all-shot packing (METHODS.md §4.3): one sequence holds the tool docs and several
goal → action pairs of the same environment; the loss covers every action, the docs and the
goals are masked.

Examples are grouped by source and offered tool definitions (the "task": the same docs), taken in their
order, and packed greedily: a pack closes at ``size`` pairs or when the next pair would exceed
``max_tokens``.  Each pair is a user turn and an assistant turn in the model's chat format after
one system prompt, so each action's span is checked exactly as a single example's is.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from toollab.schema import Instance


@dataclass
class Pair:
    """One checked example ready to pack: its prompt messages and its target text."""

    instance: Instance
    messages: list[dict[str, Any]]
    target: str
    meta: dict[str, Any]


def group_key(inst: Instance) -> tuple[str, str]:
    """Source and the exact tool definitions (order included): pairs packed together share one
    system prompt, so their docs must be identical, not just their tool names."""
    return (inst.source or "", json.dumps([t.to_openai() for t in inst.tools], sort_keys=False))


def pack_pairs(
    pairs: Sequence[Pair],
    size: int,
    max_tokens: int,
    measure: Callable[[list[dict[str, Any]]], int],
) -> list[list[Pair]]:
    """Groups of at most ``size`` pairs sharing source and tools, each within ``max_tokens``
    (``measure(messages)`` counts the tokens of a rendered conversation).  A single pair over the
    budget stays alone (it is written as it is, and the card reports its length)."""
    groups: dict[tuple[str, str], list[Pair]] = defaultdict(list)
    order: list[tuple[str, str]] = []
    for p in pairs:
        key = group_key(p.instance)
        if key not in groups:
            order.append(key)
        groups[key].append(p)
    packs: list[list[Pair]] = []
    for key in order:
        current: list[Pair] = []
        for p in groups[key]:
            if current and (
                len(current) >= size or measure(conversation([*current, p])) > max_tokens
            ):
                packs.append(current)
                current = []
            current.append(p)
        if current:
            packs.append(current)
    return packs


def conversation(pack: Sequence[Pair]) -> list[dict[str, Any]]:
    """System prompt of the first pair, then each pair's user turn(s) and assistant target."""
    first = pack[0].messages
    msgs: list[dict[str, Any]] = [m for m in first if m.get("role") == "system"][:1]
    for p in pack:
        msgs.extend(m for m in p.messages if m.get("role") != "system")
        msgs.append({"role": "assistant", "content": p.target})
    return msgs
