"""Augmentations that need no teacher, each a switch (off by default) and seeded.

* :func:`add_distractors` — top the offered tools up to ``k`` with tools of the same source
  drawn by DEER's sampling strategies (``random``, ``intra``, ``inter`` or ``mix`` 2:1:2 through
  :class:`toollab.retrieval.sampling.CandidateSampler`); the gold tools stay offered.
* :func:`no_call_copies` — for a share of Call instances, a copy with the gold tools removed
  from the offered tools (topped up from the pool when nothing is left): a NoCall whose right
  answer is to call nothing.
* :func:`~toollab.sft.negatives.hard_no_call_copies` — for a share of single-call environment
  instances, a copy offering the gold tool's nearest neighbours among the tools that cannot
  serve the request (Hammer-style irrelevance).
* :func:`reduce_tools` — for a share of Call instances, only the gold calls' tools and 0 to
  ``reduce_extra`` others of the same offer, so that a short list of tools is no cue for
  declining (the hard no-call copies offer 3 to 5 tools).
* :func:`mask_names` — Hammer's function and parameter name masking: random names for every
  offered tool and its top-level parameters, the gold calls renamed consistently, descriptions
  kept, so the model must read them.
* :func:`vary_format` — argument-order and value-format variety: the order of each offered
  tool's parameters is shuffled (the gold arguments follow, as the decoding grammar writes them
  in schema order), and values the query writes verbatim are written differently (``1500`` →
  ``1,500``; ``2024-03-05`` → ``March 5, 2024``) while the gold keeps the canonical value.
* :func:`compose` — single-call instances of one source joined into one request: the same tool
  twice (parallel) or different tools (multiple); kept only where inference admits several
  calls for the result.
"""

from __future__ import annotations

import random
import re
import string
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toollab.errors import UsageError
from toollab.retrieval.sampling import CandidateSampler, ToolClusters
from toollab.schema import Decision, GoldCall, Instance, Ref, Tool
from toollab.sft.negatives import MAX_SIMILARITY, hard_no_call_copies
from toollab.sft.targets import ALLOW_NO_CALL, policy_for

SAMPLING_MODES = ("random", "intra", "inter", "mix")


@dataclass
class AugmentConfig:
    """Every augmentation is off unless set."""

    #: top the offered tools up to this many (0: off)
    distractors: int = 0
    distractor_mode: str = "random"
    #: share of Call instances that also give a NoCall copy without their gold tools
    nocall: float = 0.0
    #: share of single-call instances that also give a hard NoCall copy: the gold tool's
    #: nearest neighbours offered instead of it (:mod:`toollab.sft.negatives`)
    hard_nocall: float = 0.0
    #: share of Call instances offered only their gold tools and a few others
    reduce: float = 0.0
    #: at most this many tools beside the gold ones in a reduced offer (drawn from 0 to it)
    reduce_extra: int = 4
    #: share of instances whose tool and parameter names are masked
    mask: float = 0.0
    #: share of instances given argument-order and value-format variety
    vary: float = 0.0
    #: share of single-call instances composed into several-call instances
    compose: float = 0.0
    #: at most this many instances per composition
    compose_max: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        for key in ("nocall", "hard_nocall", "reduce", "mask", "vary", "compose"):
            value = getattr(self, key)
            if not 0.0 <= value <= 1.0:
                flag = key.replace("_", "-")
                raise UsageError(f"--{flag} is a share between 0 and 1, got {value}")
        if self.distractors < 0:
            raise UsageError(f"--distractors must be >= 0, got {self.distractors}")
        if self.reduce_extra < 0:
            raise UsageError(f"--reduce-extra must be >= 0, got {self.reduce_extra}")
        if self.compose_max < 2:
            raise UsageError(f"--compose-max must be at least 2, got {self.compose_max}")
        if self.distractor_mode not in SAMPLING_MODES:
            raise UsageError(
                f"--distractor-mode {self.distractor_mode!r}: one of {', '.join(SAMPLING_MODES)}"
            )

    @property
    def active(self) -> list[str]:
        out = []
        if self.distractors:
            out.append(f"distractors (k={self.distractors}, {self.distractor_mode})")
        if self.nocall:
            out.append(f"nocall ({self.nocall:g})")
        if self.hard_nocall:
            out.append(
                f"hard nocall ({self.hard_nocall:g}, nearest tools below {MAX_SIMILARITY:g})"
            )
        if self.reduce:
            out.append(f"reduce ({self.reduce:g}, gold tools + 0-{self.reduce_extra})")
        if self.mask:
            out.append(f"mask ({self.mask:g})")
        if self.vary:
            out.append(f"vary ({self.vary:g})")
        if self.compose:
            out.append(f"compose ({self.compose:g}, up to {self.compose_max})")
        return out


@dataclass
class AugmentReport:
    applied: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)


def _rng(cfg: AugmentConfig, what: str) -> random.Random:
    return random.Random(f"{what}|{cfg.seed}")


def _tagged(inst: Instance, tag: str, **update: Any) -> Instance:
    meta = dict(update.pop("metadata", inst.metadata))
    meta["augmented"] = [*meta.get("augmented", []), tag]
    return inst.model_copy(update={**update, "metadata": meta})


def tool_pools(
    instances: Sequence[Instance], held_out: set[tuple[str, str]]
) -> dict[str, list[Tool]]:
    """Distinct tools (first definition of a name wins) per source, held-out tools (as
    ``(source, name)``) left out."""
    pools: dict[str, dict[str, Tool]] = defaultdict(dict)
    for inst in instances:
        src = inst.source or ""
        for t in inst.tools:
            if (src, t.name) not in held_out:
                pools[src].setdefault(t.name, t)
    return {k: list(v.values()) for k, v in pools.items()}


# -- distractors ---------------------------------------------------------------------------------
class _Samplers:
    """One DEER candidate sampler per source pool (clusters fitted only when a mode needs them)."""

    def __init__(self, pools: dict[str, list[Tool]], cfg: AugmentConfig) -> None:
        self.pools, self.cfg = pools, cfg
        self._made: dict[str, Any] = {}

    def get(self, source: str) -> Any:

        if source not in self._made:
            pool = self.pools.get(source, [])
            if len(pool) < self.cfg.distractors:
                self._made[source] = None
            else:
                clusters = None
                if self.cfg.distractor_mode != "random":
                    try:
                        clusters = ToolClusters.fit(pool, m=min(30, max(2, len(pool) // 10)))
                    except ImportError as exc:
                        raise UsageError(
                            f"--distractor-mode {self.cfg.distractor_mode} clusters the tools and "
                            f"needs the dense extra (pip install 'toollab[dense]'): {exc}"
                        ) from exc
                self._made[source] = CandidateSampler(
                    pool,
                    clusters,
                    k=self.cfg.distractors,
                    seed=self.cfg.seed,
                    small_cluster="fill",
                )
        return self._made[source]


def add_distractors(
    instances: list[Instance], pools: dict[str, list[Tool]], cfg: AugmentConfig, rep: AugmentReport
) -> list[Instance]:

    if not cfg.distractors:
        return instances
    samplers = _Samplers(pools, cfg)
    with_gold = [bool(i.gold) for i in instances]
    modes = CandidateSampler.modes_for(
        with_gold,
        "mix" if cfg.distractor_mode == "mix" else cfg.distractor_mode,  # type: ignore[arg-type]
    )
    out: list[Instance] = []
    for n, (inst, mode) in enumerate(zip(instances, modes, strict=True)):
        offered = {t.name for t in inst.tools}
        if len(offered) >= cfg.distractors:
            out.append(inst)
            continue
        sampler = samplers.get(inst.source or "")
        anchor = inst.gold[0].name if inst.gold else (inst.tools[0].name if inst.tools else None)
        if sampler is None or anchor is None or anchor not in sampler._index:
            rep.skipped["distractors: pool too small or tool not in it"] += 1
            out.append(inst)
            continue
        drawn = sampler.sample(anchor, mode, True, np.random.RandomState(cfg.seed + n))
        tools = list(inst.tools)
        for t in drawn:
            if len(tools) >= cfg.distractors:
                break
            if t.name not in offered:
                tools.append(t)
                offered.add(t.name)
        random.Random(f"distractors|{cfg.seed}|{n}").shuffle(tools)
        rep.applied[f"distractors ({mode})"] += 1
        out.append(_tagged(inst, f"distractors:{mode}", tools=tools))
    return out


# -- NoCall by removing the gold tool -------------------------------------------------------------
def no_call_copies(
    instances: list[Instance], pools: dict[str, list[Tool]], cfg: AugmentConfig, rep: AugmentReport
) -> list[Instance]:
    if not cfg.nocall:
        return instances
    rng = _rng(cfg, "nocall")
    out = list(instances)
    for inst in instances:
        if not inst.gold or rng.random() >= cfg.nocall:
            continue
        gold = {c.name for c in inst.gold}
        tools = [t for t in inst.tools if t.name not in gold]
        if not tools:
            pool = [t for t in pools.get(inst.source or "", []) if t.name not in gold]
            if not pool:
                rep.skipped["nocall: no other tool to offer"] += 1
                continue
            want = max(1, min(len(inst.tools), len(pool)))
            tools = rng.sample(pool, want)
        meta = {**inst.metadata, ALLOW_NO_CALL: True, "removed_tools": sorted(gold)}
        copy = inst.model_copy(
            update={
                "id": f"{inst.id}~nocall",
                "tools": tools,
                "gold": [],
                "alternatives": [],
                "decision": Decision.NO_CALL,
                "answer": None,
                "metadata": meta,
            }
        )
        rep.applied["nocall"] += 1
        out.append(_tagged(copy, "nocall"))
    return out


# -- reduced tool sets ---------------------------------------------------------------------------
def reduce_tools(
    instances: list[Instance], cfg: AugmentConfig, rep: AugmentReport
) -> list[Instance]:
    """A seeded share of the Call instances that offer more tools than their gold calls use,
    offered only the gold calls' tools and 0 to ``reduce_extra`` others of their own offer
    (uniformly many, drawn at random), in a shuffled order.  An alternative program that needs a
    tool no longer offered is dropped with it.  The instance is replaced, not copied: the share
    moves examples from long tool lists to short ones."""
    if not cfg.reduce:
        return instances
    rng = _rng(cfg, "reduce")
    out: list[Instance] = []
    for inst in instances:
        gold = {c.name for c in inst.gold}
        others = [t for t in inst.tools if t.name not in gold]
        if inst.decision != Decision.CALL or not gold or not others or rng.random() >= cfg.reduce:
            out.append(inst)
            continue
        keep = gold | {
            t.name for t in rng.sample(others, rng.randint(0, min(cfg.reduce_extra, len(others))))
        }
        tools = [t for t in inst.tools if t.name in keep]
        if len(tools) == len(inst.tools):
            out.append(inst)
            continue
        rng.shuffle(tools)
        alternatives = [a for a in inst.alternatives if all(c.name in keep for c in a)]
        rep.applied["reduce"] += 1
        out.append(_tagged(inst, "reduce", tools=tools, alternatives=alternatives))
    return out


# -- name masking (Hammer) ---------------------------------------------------------------------
def _random_name(rng: random.Random, prefix: str, used: set[str]) -> str:
    while True:
        name = prefix + "".join(rng.choices(string.ascii_lowercase + string.digits, k=6))
        if name not in used:
            used.add(name)
            return name


def mask_instance(inst: Instance, rng: random.Random) -> Instance:
    """Random tool and parameter names, consistently in the tools and the gold calls."""
    used: set[str] = set()
    fn_map = {t.name: _random_name(rng, "func_", used) for t in inst.tools}
    for c in [*inst.gold, *(c for alt in inst.alternatives for c in alt)]:
        fn_map.setdefault(c.name, _random_name(rng, "func_", used))
    arg_maps: dict[str, dict[str, str]] = {}
    tools = []
    for t in inst.tools:
        amap = {p: _random_name(rng, "arg_", used) for p in t.properties}
        arg_maps[t.name] = amap
        params = dict(t.parameters)
        if isinstance(params.get("properties"), dict):
            params["properties"] = {amap[k]: v for k, v in params["properties"].items()}
        if isinstance(params.get("required"), list):
            params["required"] = [amap.get(r, r) for r in params["required"]]
        tools.append(t.model_copy(update={"name": fn_map[t.name], "parameters": params}))

    def rename(calls: Sequence[GoldCall]) -> list[GoldCall]:
        out = []
        for c in calls:
            amap = arg_maps.get(c.name, {})
            args = {amap.get(k, k): v for k, v in c.arguments.items()}
            out.append(c.model_copy(update={"name": fn_map[c.name], "arguments": args}))
        return out

    return _tagged(
        inst,
        "mask",
        tools=tools,
        gold=rename(inst.gold),
        alternatives=[rename(a) for a in inst.alternatives],
        metadata={**inst.metadata, "name_map": fn_map},
    )


def mask_names(instances: list[Instance], cfg: AugmentConfig, rep: AugmentReport) -> list[Instance]:
    if not cfg.mask:
        return instances
    rng = _rng(cfg, "mask")
    out = []
    for inst in instances:
        if rng.random() < cfg.mask and inst.tools:
            rep.applied["mask"] += 1
            out.append(mask_instance(inst, rng))
        else:
            out.append(inst)
    return out


# -- argument order and value formats ----------------------------------------------------------
_MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip
_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")


def _reformat(value: Any) -> str | None:
    """Another way to write a value in a query, or ``None``."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 1000:
        return f"{value:,}"
    if isinstance(value, str):
        m = _ISO_DATE.match(value)
        if m and 1 <= int(m.group(2)) <= 12 and 1 <= int(m.group(3)) <= 31:
            return f"{_MONTHS[int(m.group(2)) - 1]} {int(m.group(3))}, {m.group(1)}"
    return None


def vary_instance(inst: Instance, rng: random.Random) -> tuple[Instance, int]:
    """(varied instance, number of values rewritten in the query)."""
    tools = []
    for t in inst.tools:
        props = t.parameters.get("properties")
        if isinstance(props, dict) and len(props) > 1:
            keys = list(props)
            rng.shuffle(keys)
            params = {**t.parameters, "properties": {k: props[k] for k in keys}}
            t = t.model_copy(update={"parameters": params})
        tools.append(t)
    order = {t.name: list(t.properties) for t in tools}
    gold = []
    for c in inst.gold:
        keys = order.get(c.name, [])
        args = {k: c.arguments[k] for k in keys if k in c.arguments}
        args.update({k: v for k, v in c.arguments.items() if k not in args})
        gold.append(c.model_copy(update={"arguments": args}))
    query = inst.query
    rewritten = 0
    for c in inst.gold:
        for v in c.arguments.values():
            if isinstance(v, Ref):
                continue
            other = _reformat(v)
            text = str(v)
            pattern = re.compile(rf"(?<![\w.,]){re.escape(text)}(?![\w]|[.,]\d)")
            if other is not None and len(pattern.findall(query)) == 1:
                query = pattern.sub(other, query)
                rewritten += 1
    update: dict[str, Any] = {"tools": tools, "gold": gold}
    if rewritten and not inst.messages:
        update["query"] = query
    else:
        rewritten = 0
    return _tagged(inst, "vary", **update), rewritten


def vary_format(
    instances: list[Instance], cfg: AugmentConfig, rep: AugmentReport
) -> list[Instance]:
    if not cfg.vary:
        return instances
    rng = _rng(cfg, "vary")
    out = []
    for inst in instances:
        if rng.random() < cfg.vary and inst.tools:
            varied, n = vary_instance(inst, rng)
            rep.applied["vary: parameter order"] += 1
            if n:
                rep.applied["vary: query values rewritten"] += n
            out.append(varied)
        else:
            out.append(inst)
    return out


# -- composition ---------------------------------------------------------------------------------
def _join(queries: Sequence[str]) -> str:
    parts = []
    for q in queries:
        q = q.strip()
        if q and q[-1] not in ".?!":
            q += "."
        parts.append(q)
    return " Also, ".join([parts[0], *(p[0].lower() + p[1:] if p else p for p in parts[1:])])


def compose_instances(parts: Sequence[Instance], n: int) -> Instance | None:
    """Several single-call instances as one request, or ``None`` when their tools clash."""
    tools: dict[str, Tool] = {}
    for p in parts:
        for t in p.tools:
            if t.name in tools and tools[t.name] != t:
                return None
            tools.setdefault(t.name, t)
    gold = [c.model_copy(update={"id": None, "outputs": []}) for p in parts for c in p.gold]
    names = {c.name for c in gold}
    kind = "parallel" if len(names) == 1 else "multiple"
    first = parts[0]
    meta = {**first.metadata, "composed_of": [p.id for p in parts], "composition": kind}
    return _tagged(
        first,
        f"compose:{kind}",
        id=f"composed-{n:05d}",
        query=_join([p.query for p in parts]),
        messages=[],
        tools=list(tools.values()),
        gold=gold,
        alternatives=[],
        decision=Decision.CALL,
        category=kind,
        metadata=meta,
    )


def compose(instances: list[Instance], cfg: AugmentConfig, rep: AugmentReport) -> list[Instance]:
    """Add composed instances (a share ``cfg.compose`` of the single-call instances)."""
    if not cfg.compose:
        return instances
    rng = _rng(cfg, "compose")
    by_source: dict[str, list[Instance]] = defaultdict(list)
    for inst in instances:
        if len(inst.gold) == 1 and not inst.messages and not inst.gold[0].refs:
            by_source[inst.source or ""].append(inst)
    out = list(instances)
    made = 0
    for source in sorted(by_source):
        singles = by_source[source]
        want = round(len(singles) * cfg.compose)
        for _ in range(want):
            k = rng.randint(2, cfg.compose_max)
            if len(singles) < k:
                break
            parts = rng.sample(singles, k)
            composed = compose_instances(parts, made)
            if composed is None:
                rep.skipped["compose: same tool name, different definitions"] += 1
                continue
            policy = policy_for(composed)
            if policy.max_calls is not None and policy.max_calls < len(composed.gold):
                rep.skipped[f"compose: {source or '-'} is answered with one call"] += 1
                continue
            made += 1
            rep.applied[f"compose: {composed.category}"] += 1
            out.append(composed)
    return out


def augment(
    instances: list[Instance],
    cfg: AugmentConfig,
    held_out: set[tuple[str, str]],
    pool_from: Sequence[Instance] | None = None,
) -> tuple[list[Instance], AugmentReport]:
    """Every active augmentation, in a fixed order: compose, nocall, hard nocall, distractors,
    reduce, vary, mask.

    Distractors and NoCall replacements are drawn from the tools of ``pool_from`` (default: the
    instances themselves), per source, held-out tools left out."""
    rep = AugmentReport()
    pools = tool_pools(instances if pool_from is None else pool_from, held_out)
    out = compose(instances, cfg, rep)
    out = no_call_copies(out, pools, cfg, rep)
    out = hard_no_call_copies(out, cfg.hard_nocall, cfg.seed, rep.applied, rep.skipped)
    out = add_distractors(out, pools, cfg, rep)
    out = reduce_tools(out, cfg, rep)
    out = vary_format(out, cfg, rep)
    out = mask_names(out, cfg, rep)
    return out, rep
