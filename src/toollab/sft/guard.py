"""Leakage guard: training examples never come from what toollab evaluates on.

An export names the evaluation sets it must stay clear of; by default BFCL (every category),
the Seal-Tools test splits (``test_in_domain``, ``test_out_domain``), DEER's test set with its
unseen tools, and the environments' test splits.  An example is dropped when

* its normalised query (lower case, punctuation and spacing folded) equals an evaluation query;
* its query is nearly one (``difflib`` ratio over the words >= ``near``, default 0.9), or is close
  (ratio >= ``near_same_tools``, default 0.75) with the same set of gold tools;
* it offers or calls one of DEER's unseen tools (every tool of DEER's test pools: the test
  candidates are drawn from the 77 unseen tools only, METHODS.md §1.2) — tool names are
  matched within the same source only (DEER's ``search`` is not an environment's ``search``);
* it is an environment instance whose API combination is a test combination of the evaluation
  seeds, whose goal is not a training goal (environments that split by goal, WebShop), or
  whose query text is reserved for evaluation (``toollab.envs.splits``).

Near matches are found through an inverted index of word bigrams (bigrams common to more than
:data:`MAX_POSTING` evaluation queries are not indexed), so a check costs a few ratio
computations, not one per evaluation query.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.data import load_dataset
from toollab.envs.base import instance_seed
from toollab.envs.splits import api_combo, is_eval_query, is_test_goal, task_set
from toollab.errors import UsageError
from toollab.schema import Instance

#: the evaluation sets guarded against by default (plus the environments' test splits)
DEFAULT_GUARDS: tuple[str, ...] = ("bfcl", "seal-tools", "deer")
#: how each named evaluation set is read: adapter options, whether its tools are held out
GUARD_SOURCES: dict[str, dict[str, Any]] = {
    "bfcl": {"format": "bfcl", "options": {}, "held_out_tools": False},
    "seal-tools": {
        "format": "seal-tools",
        "options": {"splits": "test_in_domain,test_out_domain"},
        "held_out_tools": False,
    },
    "deer": {"format": "deer", "options": {"splits": "test"}, "held_out_tools": True},
}
#: bigrams shared by more evaluation queries than this are too common to find near matches by
MAX_POSTING = 300

_NON_WORD = re.compile(r"[^0-9a-z]+")


def normalise(text: str) -> str:
    return _NON_WORD.sub(" ", text.lower()).strip()


def _bigrams(words: Sequence[str]) -> set[str]:
    if len(words) < 2:
        return set(words)
    return {f"{a} {b}" for a, b in itertools.pairwise(words)}


@dataclass
class EvalSet:
    """One evaluation set: its queries, their gold tool sets, its held-out tools."""

    name: str
    queries: list[str] = field(default_factory=list)
    tool_sets: list[frozenset[str]] = field(default_factory=list)
    held_out_tools: set[str] = field(default_factory=set)
    #: the ``Instance.source`` its held-out tools belong to (names are only unique per source)
    source: str | None = None
    path: str | None = None

    @classmethod
    def from_instances(
        cls,
        name: str,
        instances: Iterable[Instance],
        *,
        held_out_tools: bool = False,
        path: str | None = None,
    ) -> EvalSet:
        out = cls(name, path=path)
        for inst in instances:
            out.source = out.source or inst.source
            for text in _texts(inst):
                out.queries.append(text)
                out.tool_sets.append(frozenset(c.name for c in inst.gold))
            if held_out_tools:
                out.held_out_tools.update(t.name for t in inst.tools)
                out.held_out_tools.update(c.name for c in inst.gold)
        return out


def _texts(inst: Instance) -> list[str]:
    """The user texts of an instance (its query, and every user turn of a conversation)."""
    texts = [inst.query] if inst.query else []
    for m in inst.messages:
        if m.get("role") == "user" and isinstance(m.get("content"), str):
            texts.append(m["content"])
    return list(dict.fromkeys(texts))


def load_eval_set(name: str, path: Path) -> EvalSet:
    """A named evaluation set (``bfcl``, ``seal-tools``, ``deer``) read from ``path``."""

    how = GUARD_SOURCES.get(name)
    if how is None:
        raise UsageError(
            f"unknown guard {name!r}; known: {', '.join(GUARD_SOURCES)} (env test splits are "
            "always guarded)"
        )
    if not path.exists():
        raise UsageError(f"--guard {name}={path}: the path does not exist")
    ds = load_dataset(path, how["format"], **how["options"])
    return EvalSet.from_instances(
        name, ds.instances, held_out_tools=how["held_out_tools"], path=str(path)
    )


class LeakageGuard:
    """Says why an instance must not be trained on (``None`` when it may)."""

    def __init__(
        self,
        sets: Sequence[EvalSet],
        *,
        near: float = 0.9,
        near_same_tools: float = 0.75,
        env_seeds: Sequence[int] = (0,),
        guard_envs: bool = True,
    ) -> None:
        self.sets = list(sets)
        self.near = near
        self.near_same_tools = near_same_tools
        self.env_seeds = tuple(env_seeds)
        self.guard_envs = guard_envs
        self._norm: list[str] = []
        self._owner: list[int] = []
        self._tools: list[frozenset[str]] = []
        self._exact: dict[str, int] = {}
        #: (source, tool name) → the evaluation set that holds the tool out
        self.held_out: dict[tuple[str, str], str] = {}
        for k, s in enumerate(self.sets):
            for q, tools in zip(s.queries, s.tool_sets, strict=True):
                n = normalise(q)
                if not n:
                    continue
                self._exact.setdefault(n, len(self._norm))
                self._norm.append(n)
                self._owner.append(k)
                self._tools.append(tools)
            for t in s.held_out_tools:
                self.held_out.setdefault((s.source or "", t), s.name)
        df: Counter[str] = Counter()
        self._words = [n.split() for n in self._norm]
        grams = [_bigrams(w) for w in self._words]
        for g in grams:
            df.update(g)
        self._index: dict[str, list[int]] = {}
        for i, g in enumerate(grams):
            for b in g:
                if df[b] <= MAX_POSTING:
                    self._index.setdefault(b, []).append(i)

    @property
    def size(self) -> int:
        return len(self._norm)

    def reason(self, inst: Instance) -> tuple[str, str] | None:
        """(guard name, reason) when the instance leaks evaluation data."""
        src = inst.source or ""
        for t in [*(x.name for x in inst.tools), *(c.name for c in inst.gold)]:
            if (src, t) in self.held_out:
                return self.held_out[(src, t)], f"uses a held-out tool ({t})"
        env = _env_of(inst)
        if env is not None and self.guard_envs:
            env_why = self._env_reason(env, inst)
            if env_why is not None:
                return f"env:{env}", env_why
        gold_tools = frozenset(c.name for c in inst.gold)
        for text in _texts(inst):
            found = self._text_reason(normalise(text), gold_tools)
            if found is not None:
                return found
        return None

    def _env_reason(self, env: str, inst: Instance) -> str | None:

        if inst.gold:
            combo = api_combo(list(inst.gold))
            template = str(inst.metadata.get("template", ""))
            for seed in self.env_seeds:
                verdict = is_test_goal(env, template, list(inst.gold), instance_seed(inst), seed)
                if verdict is False:
                    continue
                if verdict is None:
                    return f"not a training goal (seed {seed})"
                if task_set(env).held_out_templates:
                    return f"test instruction kind ({template})"
                return f"test API combination ({'+'.join(combo)}, seed {seed})"
        if is_eval_query(inst.query):
            return "query text reserved for evaluation"
        return None

    def _text_reason(self, text: str, gold_tools: frozenset[str]) -> tuple[str, str] | None:
        if not text:
            return None
        hit = self._exact.get(text)
        if hit is not None:
            return self.sets[self._owner[hit]].name, "same query"
        shared: Counter[int] = Counter()
        words = text.split()
        grams = _bigrams(words)
        for b in grams:
            shared.update(self._index.get(b, ()))
        if not shared:
            return None
        best: tuple[float, int] | None = None
        for i, _n in shared.most_common(20):
            matcher = difflib.SequenceMatcher(None, words, self._words[i], autojunk=False)
            if matcher.real_quick_ratio() < self.near_same_tools:
                continue
            if matcher.quick_ratio() < self.near_same_tools:
                continue
            ratio = matcher.ratio()
            if (
                ratio >= self.near
                or (ratio >= self.near_same_tools and gold_tools and gold_tools == self._tools[i])
            ) and (best is None or ratio > best[0]):
                best = (ratio, i)
        if best is None:
            return None
        ratio, i = best
        same_tools = gold_tools and gold_tools == self._tools[i] and ratio < self.near
        what = "near query with the same tools" if same_tools else "near query"
        return self.sets[self._owner[i]].name, f"{what} (ratio {ratio:.2f})"


def _env_of(inst: Instance) -> str | None:
    src = inst.source or ""
    if not src.startswith("env:"):
        return None
    return src.split(":", 1)[1]


def resolve_guards(
    given: Sequence[str], root: Path | None, unguarded: Sequence[str]
) -> list[tuple[str, Path]]:
    """The (name, path) of every evaluation set to guard against.

    ``given``: ``NAME=PATH`` items; ``root``: a folder holding ``bfcl/``, ``seal-tools/``,
    ``deer/`` for the defaults not given; ``unguarded``: defaults skipped on purpose.  A default
    with no path and not skipped is a :class:`UsageError` (an export is never unguarded by
    accident)."""
    out: dict[str, Path] = {}
    for item in given:
        name, eq, value = item.partition("=")
        name = name.strip().lower()
        if not eq or not name or not value.strip():
            raise UsageError(f"--guard takes NAME=PATH, got {item!r}")
        if name not in GUARD_SOURCES:
            raise UsageError(
                f"--guard {item!r}: unknown set {name!r}; known: {', '.join(GUARD_SOURCES)}"
            )
        out[name] = Path(value.strip())
    for name in unguarded:
        if name not in GUARD_SOURCES:
            raise UsageError(
                f"--unguarded {name!r}: unknown set; known: {', '.join(GUARD_SOURCES)}"
            )
    for name in DEFAULT_GUARDS:
        if name in out or name in unguarded:
            continue
        if root is not None and (root / name).exists():
            out[name] = root / name
            continue
        raise UsageError(
            f"the leakage guard needs the {name} evaluation set: give --guard {name}=PATH, "
            f"--guard-root DIR (holding {name}/) or skip it on purpose with --unguarded {name}"
        )
    return list(out.items())
