"""The retriever interface: ``retrieve(query, k)`` → ranked tools with scores.

Every retriever indexes a list of :class:`~toollab.schema.Tool` once and answers queries with
:class:`Hit` lists, best first.  Behaviour on awkward input is defined here, once:

* an empty pool → :class:`~toollab.errors.InputError` ("the tool pool is empty");
* the same tool listed twice (same name, category, description and parameters) is indexed once;
* different tools sharing a name (ToolEyes: ``timezone`` of ``Competition/API_BASKETBALL`` and
  of ``Competition/API_F1``) are all indexed, each under a *key* that tells it apart
  (:func:`pool_keys`): the name when it is unique, else ``category/name``, and
  ``category/name#n`` (``n`` = order in the pool) where one category holds several; every
  :class:`Hit` carries its key and :attr:`Retriever.shared_names` lists the names concerned;
* the DEER candidate sampler keys tools by name and refuses a pool with duplicate names
  (:func:`check_pool`, naming them);
* ``k`` larger than the pool → every tool, ranked (no error); ``k < 1`` or a ``k`` that is not
  an integer (``True`` included) → :class:`UsageError`;
* a query that is not a string (``None``) → :class:`UsageError`;
* BM25 returns only tools that share a word with the query (possibly none);
* a tool without a description is indexed by its name and parameter names (it can still be
  found), and :attr:`Retriever.undocumented` lists such tools so callers can warn.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from toollab.data.base import tool_pool
from toollab.errors import InputError, UsageError
from toollab.registry import Registry
from toollab.schema import Tool

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z0-9]+")


def split_identifier(name: str) -> str:
    """``getWeatherByCity`` / ``get_weather_by_city`` / ``weather.get`` → ``get weather by city``."""
    spaced = _CAMEL.sub(" ", name)
    return " ".join(w.lower() for w in _WORD.findall(spaced))


def tool_text(tool: Tool) -> str:
    """The text a tool is indexed by: name words, description, parameter names and docs."""
    parts = [split_identifier(tool.name), tool.description.strip()]
    for pname, spec in tool.properties.items():
        desc = spec.get("description", "") if isinstance(spec, dict) else ""
        parts.append(f"{split_identifier(pname)} {desc}".strip())
    return ". ".join(p for p in parts if p)


def top_k(scores: np.ndarray, k: int) -> list[tuple[int, float]]:
    """Indices and scores of the k largest entries of a 1-D array, best first."""
    if k >= scores.shape[0]:
        idx = np.argsort(-scores, kind="stable")
    else:
        part = np.argpartition(-scores, k - 1)[:k]
        idx = part[np.argsort(-scores[part], kind="stable")]
    return [(int(i), float(scores[i])) for i in idx[:k]]


@dataclass(frozen=True)
class Hit:
    tool: Tool
    score: float
    rank: int
    #: the tool's key in the pool: its name, qualified when other tools share it (pool_keys)
    key: str = ""

    @property
    def name(self) -> str:
        return self.tool.name


def check_pool(tools: Sequence[Tool]) -> list[Tool]:
    """A pool whose tool names are unique (what a name-keyed user such as the candidate sampler
    needs); an :class:`InputError` naming the duplicates otherwise."""
    tools = list(tools)
    if not tools:
        raise InputError("the tool pool is empty: nothing to retrieve from")
    counts = Counter(t.name for t in tools)
    dupes = sorted(n for n, c in counts.items() if c > 1)
    if dupes:
        shown = ", ".join(repr(d) for d in dupes[:5]) + (" ..." if len(dupes) > 5 else "")
        raise InputError(
            f"the tool pool has {len(dupes)} duplicate tool name(s): {shown}; names must be unique"
        )
    return tools


def pool_keys(tools: Sequence[Tool]) -> list[str]:
    """One key per tool, unique in the pool: the tool's name when no other tool has it, else
    ``category/name`` (the name alone without a category), with ``#n`` appended (n = 1, 2, …
    in pool order) where that still repeats."""
    counts = Counter(t.name for t in tools)
    first = [
        t.name if counts[t.name] == 1 or not t.category else f"{t.category}/{t.name}" for t in tools
    ]
    repeats = Counter(first)
    seen: Counter[str] = Counter()
    out = []
    for key in first:
        if repeats[key] > 1:
            seen[key] += 1
            key = f"{key}#{seen[key]}"
        out.append(key)
    return out


def keyed_pool(tools: Sequence[Tool], *, dedupe: bool = True) -> tuple[list[Tool], list[str]]:
    """The pool to index (the same tool listed twice kept once, with ``dedupe``) and its keys."""

    pool = tool_pool(tools) if dedupe else list(tools)
    if not pool:
        raise InputError("the tool pool is empty: nothing to retrieve from")
    return pool, pool_keys(pool)


def check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UsageError(f"k must be a positive integer, got {k!r}")
    return k


def check_queries(queries: Sequence[str]) -> list[str]:
    if isinstance(queries, str):
        raise UsageError("retrieve_many takes a list of queries, got one string")
    bad = [(i, q) for i, q in enumerate(queries) if not isinstance(q, str)]
    if bad:
        i, q = bad[0]
        raise UsageError(f"a query must be a string; query {i} is {type(q).__name__} {q!r}")
    return list(queries)


class Retriever(ABC):
    """Index once, then :meth:`retrieve` many times."""

    name: str = ""

    def __init__(self) -> None:
        self.tools: list[Tool] = []
        #: each tool's key (its name unless other tools share it; see :func:`pool_keys`)
        self.keys: list[str] = []
        self.undocumented: list[str] = []

    def index(self, tools: Sequence[Tool]) -> Retriever:
        self._set_pool(*keyed_pool(tools))
        self._build([tool_text(t) for t in self.tools])
        return self

    def _set_pool(self, tools: list[Tool], keys: list[str]) -> None:
        self.tools, self.keys = tools, keys
        self.undocumented = [
            k for t, k in zip(tools, keys, strict=True) if not t.description.strip()
        ]

    @property
    def shared_names(self) -> list[str]:
        """Names that several different tools of the pool have (their keys are qualified)."""
        return sorted({t.name for t, k in zip(self.tools, self.keys, strict=True) if k != t.name})

    @abstractmethod
    def _build(self, texts: list[str]) -> None:
        """Build the index over one text per tool."""

    @abstractmethod
    def _search(self, queries: list[str], k: int) -> list[list[tuple[int, float]]]:
        """For each query, (tool index, score) pairs, best first, at most ``k``."""

    def retrieve(self, query: str, k: int = 5) -> list[Hit]:
        if not isinstance(query, str):
            raise UsageError(f"the query must be a string, got {type(query).__name__} {query!r}")
        return self.retrieve_many([query], k)[0]

    def retrieve_many(self, queries: Sequence[str], k: int = 5) -> list[list[Hit]]:
        if not self.tools:
            raise InputError("the retriever has no index: call index(tools) first")
        k = min(check_k(k), len(self.tools))
        results = self._search(check_queries(queries), k)
        return [
            [Hit(self.tools[i], float(s), r + 1, self.keys[i]) for r, (i, s) in enumerate(res)]
            for res in results
        ]


#: retriever factories ``(**options) -> Retriever``; plugins: ``retriever:NAME`` entry points
RETRIEVERS: Registry[Callable[..., Retriever]] = Registry(
    "retriever", builtins=("toollab.retrieval",)
)


def register_retriever(name: str) -> Callable[[Callable[..., Retriever]], Callable[..., Retriever]]:
    """Decorator: register a retriever factory (a class or a function taking the options)."""
    return RETRIEVERS.decorator(name)


def retriever_names() -> list[str]:
    return RETRIEVERS.names()


def get_retriever(name: str, **options: Any) -> Retriever:
    return RETRIEVERS.get(name)(**options)
