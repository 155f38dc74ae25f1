"""Where training examples come from: anything the dataset adapters load, an environment's
split, or DEER's published ``tool.json`` query → call examples.

A source is written ``KIND:TARGET[,key=value...]``:

* ``seal-tools:../shared/data/seal-tools/dev.jsonl`` — any adapter format and path; keys other
  than the ones below are the adapter's options (``splits=dev``);
* ``env:weather`` — an environment's split (``split=train`` by default, ``n=200``, ``seed=0``;
  ``calls=2-5`` keeps only the Call instances of the ``n`` generated with 2 to 5 calls); an
  environment whose bench offers retrieved tools (the spreadsheet's 62) offers the top k BM25
  ranks for the query plus any gold tool the ranking missed, as its α-UMi traces do;
* ``deer-examples:../shared/data/deer/tool.json`` — the ~9.4k examples DEER's tools carry,
  one single-call instance each, offering the gold tool (add distractors with the
  ``distractors`` augmentation);

and ``weight=W`` (the source's share when a total is asked for) and ``n=N`` (at most N
instances, taken by a seeded shuffle) apply to every kind.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.data import get_adapter, load_dataset, load_tools
from toollab.data.adapters.deer import PROTOCOL as DEER_PROTOCOL
from toollab.data.pysig import parse_call_text
from toollab.envs.base import env_class
from toollab.envs.generate import generate
from toollab.errors import InputError, UsageError
from toollab.schema import Decision, GoldCall, Instance, Tool

ENV_KIND = "env"
#: largest seed or weight a source may give
MAX_NUMBER = 2**63 - 1
#: largest ``n`` (instances) or call count a source may give
MAX_COUNT = 100_000_000
DEER_EXAMPLES_KIND = "deer-examples"

#: licences of the public sources toollab reads (all Apache-2.0, see ../shared/data/README.md)
LICENCES: dict[str, str] = {
    "seal-tools": "Apache-2.0 (fairyshine/Seal-Tools)",
    "deer": "Apache-2.0 (Ericmututu/ToolDEER)",
    DEER_EXAMPLES_KIND: "Apache-2.0 (Ericmututu/ToolDEER)",
    "bfcl": "Apache-2.0 (ShishirPatil/gorilla)",
    "tooleyes": "Apache-2.0 (Junjie-Ye/ToolEyes)",
    "env": "Apache-2.0 (toollab's generated environments)",
}


@dataclass
class SourceSpec:
    kind: str
    target: str
    weight: float = 1.0
    n: int | None = None
    split: str = "train"
    seed: int = 0
    #: environments: keep only the Call instances with this many calls (low, high)
    calls: tuple[int, int] | None = None
    options: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        if self.kind == ENV_KIND:
            calls = f"/calls={self.calls[0]}-{self.calls[1]}" if self.calls else ""
            return f"env:{self.target}/{self.split}{calls}"
        return f"{self.kind}:{self.target}"


def _number(key: str, value: str, text: str, cast: type, limit: int = MAX_NUMBER) -> Any:
    try:
        out = cast(value)
    except ValueError:
        raise UsageError(f"source {text!r}: {key}={value!r} is not a number") from None
    if cast is float and not math.isfinite(out):
        raise UsageError(f"source {text!r}: {key}={value!r} is not a finite number")
    if out < 0:
        raise UsageError(f"source {text!r}: {key} must be non-negative")
    if out > limit:
        raise UsageError(f"source {text!r}: {key} must be at most {limit:,}")
    return out


def parse_source(text: str) -> SourceSpec:
    """``KIND:TARGET[,key=value...]`` → :class:`SourceSpec` (see the module doc)."""
    kind, sep, rest = text.partition(":")
    if not sep or not kind.strip() or not rest.strip():
        raise UsageError(
            f"source {text!r}: write KIND:TARGET[,key=value...], e.g. env:weather,n=200 or "
            "seal-tools:PATH"
        )
    parts = rest.split(",")
    spec = SourceSpec(kind=kind.strip().lower(), target=parts[0].strip())
    for item in parts[1:]:
        key, eq, value = item.partition("=")
        key, value = key.strip().replace("-", "_"), value.strip()
        if not eq or not key:
            raise UsageError(f"source {text!r}: {item!r} is not key=value")
        if key == "weight":
            spec.weight = _number(key, value, text, float)
        elif key == "n":
            spec.n = _number(key, value, text, int, MAX_COUNT)
        elif key == "seed":
            spec.seed = _number(key, value, text, int)
        elif key == "split":
            spec.split = value
        elif key == "calls" and spec.kind == ENV_KIND:
            spec.calls = _call_range(value, text)
        else:
            spec.options[key] = value
    if spec.kind == ENV_KIND and spec.options:
        raise UsageError(
            f"source {text!r}: an environment takes split=, n=, seed=, weight=, calls= only, not "
            f"{', '.join(sorted(spec.options))}"
        )
    return spec


def _call_range(value: str, text: str) -> tuple[int, int]:
    """``calls=2-5`` (or ``calls=3``) → (2, 5)."""
    lo, _, hi = value.partition("-")
    low = _number("calls", lo.strip(), text, int, MAX_COUNT)
    high = _number("calls", hi.strip(), text, int, MAX_COUNT) if hi.strip() else low
    if low < 1 or high < low:
        raise UsageError(f"source {text!r}: calls={value!r} must be LOW-HIGH with 1 <= LOW <= HIGH")
    return low, high


def _env_instances(spec: SourceSpec) -> list[Instance]:

    if spec.split != "train":
        raise UsageError(
            f"source {spec.label}: only an environment's train split may be exported for "
            "training (validation and test are evaluation data)"
        )
    if spec.n is None:
        raise UsageError(f"source env:{spec.target}: give n=N (the splits are unbounded)")
    out = generate(spec.target, "train", spec.n, spec.seed)
    if spec.calls is not None:
        low, high = spec.calls
        out = [i for i in out if low <= len(i.gold) <= high]
    return offered_as_in_bench(spec.target, out)


def offered_as_in_bench(env: str, instances: list[Instance]) -> list[Instance]:
    """An environment whose bench offers retrieved tools (the spreadsheet's 62) offers each
    instance the top k BM25 ranks for its query, plus the gold tools the ranking missed (a
    demonstration calls only tools it offers); the others are returned as they are."""
    k = env_class(env).retrieved_tools
    if k is None:
        return instances
    from toollab.retrieval.offer import top_k_of_own_tools  # numpy: the [retrieval] extra

    return top_k_of_own_tools(instances, k, lambda i: i.query, keep_gold=True)


def deer_examples(path: Path) -> list[Instance]:
    """DEER ``tool.json``'s ``example: [{query, call}]`` as single-call instances (the gold tool
    offered).  A malformed example is an :class:`InputError` naming the tool and example."""
    file = path / "tool.json" if path.is_dir() else path
    tools = load_tools(file, "deer")
    out: list[Instance] = []
    for tool in tools:
        examples = tool.metadata.get("examples") or []
        if not isinstance(examples, list):
            raise InputError(f"tool {tool.name!r}: 'example' is not a list", path=file)
        for j, ex in enumerate(examples):
            where = f"tool {tool.name!r} example {j}"
            if not isinstance(ex, dict) or not isinstance(ex.get("query"), str):
                raise InputError(f"{where}: needs a 'query' string", path=file)
            if not isinstance(ex.get("call"), str):
                raise InputError(f"{where}: needs a 'call' string", path=file)
            parsed = parse_call_text(ex["call"])
            meta: dict[str, Any] = {"tool_index": j, "call_text": ex["call"]}
            if parsed.problems:
                meta["call_problems"] = list(parsed.problems)
            out.append(
                Instance(
                    id=f"deer-tool-{_slug(tool.name)}-{j}",
                    query=ex["query"],
                    tools=[_bare(tool)],
                    gold=[GoldCall(name=parsed.name, arguments=parsed.arguments)],
                    decision=Decision.CALL,
                    source="deer",
                    protocol=DEER_PROTOCOL,
                    category="tool/Call",
                    split="tool",
                    metadata=meta,
                )
            )
    return out


def _bare(tool: Tool) -> Tool:
    """The tool without its examples (they are training data, not documentation)."""
    meta = {k: v for k, v in tool.metadata.items() if k != "examples"}
    return tool.model_copy(update={"metadata": meta})


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


def load_source(spec: SourceSpec) -> list[Instance]:
    """Every instance of one source (before ``n`` / weights are applied)."""
    if spec.kind == ENV_KIND:
        return _env_instances(spec)
    if spec.kind != DEER_EXAMPLES_KIND and get_adapter(spec.kind).evaluation_only:
        raise UsageError(
            f"source {spec.label}: the {get_adapter(spec.kind).name} format is evaluation data "
            "only and is not exported for training"
        )
    path = Path(spec.target)
    if not path.exists():
        raise UsageError(f"source {spec.label}: {path} does not exist")
    if spec.kind == DEER_EXAMPLES_KIND:
        return deer_examples(path)
    return load_dataset(path, spec.kind, **spec.options).instances


def licence_of(source: str | None) -> str:
    key = (source or "").split(":", 1)[0]
    return LICENCES.get(key, "unknown: check the source's licence")


def take(instances: list[Instance], n: int | None, seed: int, label: str) -> list[Instance]:
    """At most ``n`` instances, a seeded sample in the original order."""
    if n is None or n >= len(instances):
        return list(instances)
    rng = random.Random(f"take|{label}|{seed}")
    keep = sorted(rng.sample(range(len(instances)), n))
    return [instances[i] for i in keep]


def shares(specs: list[SourceSpec], total: int) -> list[int]:
    """How many instances each source gives to a mixture of ``total`` (by weight)."""
    weight = sum(s.weight for s in specs)
    if weight <= 0:
        raise UsageError("the source weights sum to zero")
    raw = [total * s.weight / weight for s in specs]
    counts = [int(r) for r in raw]
    order = sorted(range(len(specs)), key=lambda i: raw[i] - counts[i], reverse=True)
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts
