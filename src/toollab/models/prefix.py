"""Prefix reuse: evaluate the shared part of prompts once and reuse its KV state.

Two mechanisms work together:

* **Ordering.**  llama.cpp keeps the KV state of the tokens it evaluated last; when the next
  prompt starts with the same tokens only the new suffix is evaluated.  :func:`order_for_reuse`
  sorts requests so that prompts with a common prefix (the same system text and tool docs) run
  one after another.  Sorting the rendered prompts lexicographically is a depth-first walk of
  their prefix tree, so neighbours share the longest possible prefixes.
* **Snapshots.**  When requests alternate between a few different prefixes (an agent switching
  between planner and caller prompts, say), :class:`PrefixStore` keeps the KV state of up to
  ``capacity`` recent prefixes and restores the one that matches best before a prompt is
  evaluated.  It copies only the KV cells of the sequence (no logits), so a snapshot costs about
  the KV size of its tokens.
"""

from __future__ import annotations

import ctypes
import itertools
import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from toollab.models.base import ChatRequest


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def request_key(req: ChatRequest) -> str:
    """A text that orders like the rendered prompt: the raw prompt, or tools then messages."""
    if req.prompt is not None:
        return req.prompt
    parts = [json.dumps(m.get("content"), ensure_ascii=False, default=str) for m in req.messages]
    roles = "".join(str(m.get("role", ""))[:1] for m in req.messages)
    tools = json.dumps([t.name for t in req.tools])
    # the first message (system text with tool docs) dominates the order
    return "\x00".join([*parts[:1], tools, roles, *parts[1:]])


def order_for_reuse(
    requests: Sequence[ChatRequest], render: Callable[[ChatRequest], str] | None = None
) -> list[int]:
    """Indices of ``requests`` in the order that maximizes shared prefixes between neighbours.

    ``render`` gives the text the model actually sees (e.g. the chat-templated prompt); without
    it :func:`request_key` approximates it.  The sort is stable, so equal prompts keep their order.
    Run ``[requests[i] for i in order]`` and put the results back with ``results[order[k]] = out[k]``.
    """
    key = render or request_key
    keys = [key(r) for r in requests]
    return sorted(range(len(requests)), key=lambda i: keys[i])


def shared_prefix_stats(prompts: Sequence[Sequence[int]]) -> dict[str, float]:
    """How many prompt tokens a sequence of prompts shares with its predecessor (for reports)."""
    total = sum(len(p) for p in prompts)
    shared = sum(common_prefix_len(a, b) for a, b in itertools.pairwise(prompts))
    return {
        "tokens": float(total),
        "shared": float(shared),
        "ratio": shared / total if total else 0.0,
    }


@dataclass
class _Snapshot:
    tokens: list[int]
    data: Any  # ctypes uint8 array
    size: int


class PrefixStore:
    """Up to ``capacity`` KV snapshots of earlier prompts, restored when they match best.

    Works on a ``llama_cpp.Llama`` object; callers hold the model lock.  A snapshot is taken only
    when the live KV state is about to be overwritten by a prompt that shares fewer than
    ``min_tokens`` tokens with it, so a run over one shared prefix never copies anything.
    """

    def __init__(self, capacity: int = 4, min_tokens: int = 32) -> None:
        self.capacity = max(1, capacity)
        self.min_tokens = max(1, min_tokens)
        self._items: OrderedDict[tuple[int, ...], _Snapshot] = OrderedDict()
        self.saves = 0
        self.restores = 0

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        self._items.clear()

    def _best(self, tokens: Sequence[int]) -> tuple[_Snapshot | None, int]:
        best: _Snapshot | None = None
        best_len = 0
        for snap in self._items.values():
            n = common_prefix_len(snap.tokens, tokens)
            if n > best_len:
                best, best_len = snap, n
        return best, best_len

    def prepare(self, llm: Any, tokens: Sequence[int]) -> int:
        """Before evaluating ``tokens``: save the live state if it is about to be lost, restore
        the best snapshot if it beats the live state.  Returns the usable prefix length."""
        live = [int(t) for t in llm.input_ids[: llm.n_tokens]]
        live_len = common_prefix_len(live, tokens)
        snap, snap_len = self._best(tokens)
        if snap is not None and snap_len >= self.min_tokens and snap_len > live_len:
            if len(live) >= self.min_tokens and live_len < self.min_tokens:
                self._save(llm, live)
            self._restore(llm, snap)
            return snap_len
        if len(live) >= self.min_tokens and live_len < self.min_tokens:
            self._save(llm, live)
        return live_len

    def _save(self, llm: Any, live: list[int]) -> None:
        import llama_cpp

        key = tuple(live)
        if key in self._items:
            self._items.move_to_end(key)
            return
        ctx = llm._ctx.ctx
        size = int(llama_cpp.llama_state_seq_get_size(ctx, 0))
        if size <= 0:
            return
        buf = (ctypes.c_uint8 * size)()
        n = int(llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0))
        if n <= 0:
            return
        # drop snapshots that are a prefix of this one: the new one serves them too
        for k in [k for k in self._items if len(k) <= len(key) and key[: len(k)] == k]:
            del self._items[k]
        self._items[key] = _Snapshot(live, buf, n)
        self.saves += 1
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def _restore(self, llm: Any, snap: _Snapshot) -> None:
        import llama_cpp

        ctx = llm._ctx.ctx
        llm._ctx.kv_cache_seq_rm(0, 0, -1)
        if int(llama_cpp.llama_state_seq_set_data(ctx, snap.data, snap.size, 0)) == 0:
            llm.reset()  # could not restore: evaluate from scratch
            return
        n = len(snap.tokens)
        llm.input_ids[:n] = snap.tokens
        llm.n_tokens = n
        llm._requires_eval = True
        self._items.move_to_end(tuple(snap.tokens))
        self.restores += 1
