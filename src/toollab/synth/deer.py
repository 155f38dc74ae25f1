"""DEER's data pipeline (ToolDEER ``generate_tool.py`` + ``generate_dataset.py``).

Two stages:

1. **Examples** (optional, needs a teacher): for each tool (name, description for users,
   description for the model) the teacher devises an API function and 10 distinct
   ``{"query", "call"}`` examples; a second teacher pass checks each example (does the call follow
   the function's format, do its arguments appear in or follow from the query) and keeps it when
   the answer contains "yes".  The result is a ``tool.json`` in DEER's own format.  Without a
   teacher the published examples of the given ``tool.json`` are used.
2. **Decision samples** (no teacher): the tools are shuffled (``random.seed(42)``); the first 900
   are *seen* (train / valid), the other 77 *unseen* (test).  Per pool the (tool, example) pairs
   are flattened and shuffled, the first 60% become **Call** samples and the rest **NoCall**.
   Each sample gets k = 5 candidate tools (:class:`~toollab.retrieval.CandidateSampler`, sample
   ``i`` seeded with ``i``, Call samples first): seen pools mix random : intra-class :
   inter-class = 2 : 1 : 2 in contiguous slices (the slice bounds computed as upstream computes
   them), the test pool is sampled at random; a Call sample missing its gold tool gets it in a
   random slot, a NoCall sample is drawn again until the gold tool is absent.  **NoSearch**
   samples take the first user turn of the first 2000 shuffled conversations of a file the user
   gives.  Seen samples are shuffled and split 90 / 10 into ``train.json`` / ``valid.json``.

The targets use DEER's marker strings verbatim (:data:`CALL_TARGET`, :data:`NOCALL_TARGET`,
:data:`NOSEARCH_TARGET`).  Built from the published ``tool.json`` this reproduces the released
``test.json`` record for record and the released ``valid.json``'s proportions.  Upstream's
``processed.append`` bug (the script stops at its second sample) is not copied, and no training
sample may use an unseen tool or a query of the test split (checked; dropped ones are counted).
"""

from __future__ import annotations

import ast
import asyncio
import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from toollab.data.atomic import check_output_folder, mark_folder
from toollab.data.jsonl import Record, read_records, require_object
from toollab.errors import InputError, UsageError
from toollab.models.base import run_sync
from toollab.retrieval.sampling import CandidateSampler, Mode, ToolClusters
from toollab.schema import Tool
from toollab.synth import options as opt
from toollab.synth.io import write_json_atomic
from toollab.synth.options import check_fields
from toollab.synth.teacher import Reject, Teacher

# -- DEER's strings, verbatim ------------------------------------------------------------------
NOSEARCH_TARGET = (
    "#Begin# Don't need to look up the API Pool, I can answer this question with my own "
    "knowledge. #End#"
)
_POOL = (
    "#Begin# Need to look up the API Pool. #SearchAPI# The API Pool including: {api_cand}, and "
    "the introduction and usage of each API is as follows: {api_intro_usage}"
)
CALL_TARGET = _POOL + " #CallAPI# {call_api} #APIResponse# {api_response} #End#"
NOCALL_TARGET = (
    _POOL + " #NoCallAPI# There is no proper API and I need to answer this question with my own "
    "knowledge. #End#"
)

EXAMPLES_SYSTEM = "You are a highly skilled assistant for tool's query and call generation."
EXAMPLES_PROMPT = """Here is a tool for ChatGPT, which can help it solve users' requests better. The tool's name, the description of users, and the description of ChatGPT are as follows:
The name of tool: "{name}"
The description of users: "{human}"
The description of ChatGPT: "{model}"
Please devise an API function (including potential parameters) to call this tool, and give 10 examples where you would use this tool to answer a user's query and you should tell me what users will say and how to call the API function.
Please ensure that the provided examples are distinct from one another. Feel free to employ various sentence styles, such as instructions or requests, and vary the level of detail as needed.
The format of your answer should be like:
API function: {name}(args1: str, args2: int, ...)
1. {{"query": "xxx", "call": "{name}(args1=xxx, args2=yyy, ...)"}}
2. {{"query": "xxx", "call": "{name}(args1=xxx, args2=yyy, ...)"}}
Note that
(1) the args filled in the call should appear in query or can be inferred from query;
(2) the generated sample with {{}} can be successfully loaded by json.loads().
"""
CHECK_SYSTEM = "You are a highly skilled assistant for checking the quality of generation."
CHECK_PROMPT = """Now, giving the following information:
The API function's format: {api_function}
The user's query: {query}
The user's call: {call}
Please check whether the user's call meets the following conditions:
1. Conform to the call format of the API;
2. The parameters filled in the call appear in query or can be inferred from query;
Please give your answer [YES] or [NO], without additional output.
"""
_FUNCTION = "API function: "
#: answer length of the second-pass check: a verdict is "[YES]" or "[NO]"
CHECK_MAX_TOKENS = 32
_EXAMPLE_START = '{"query": '

#: stage names under which teacher answers are counted
STAGE_EXAMPLES = "deer.examples"
STAGE_CHECK = "deer.check"


@dataclass
class DeerConfig:
    """``generate_dataset.py``'s ``main()`` defaults."""

    seen: int = 900
    call_ratio: float = 0.6
    k: int = 5
    mode: Literal["mix", "random"] = "mix"
    #: random : intra-class : inter-class shares of the seen pools (the paper's 2:1:2)
    mix: tuple[float, float, float] = (0.4, 0.2, 0.4)
    clusters: int = 30
    nosearch: int = 2000
    valid_ratio: float = 0.1
    seed: int = 42
    #: what to do with a cluster smaller than k in intra-class sampling (upstream: it crashes)
    small_cluster: Literal["error", "fill"] = "fill"

    def check(self, n_tools: int) -> None:
        """Each field against its rule (finite, in range: :mod:`toollab.synth.options`), then
        against the pool of ``n_tools`` tools; an :class:`InputError` naming the field."""
        check_fields(
            "DeerConfig",
            {
                "seen": (opt.Seen, self.seen),
                "call_ratio": (opt.Share, self.call_ratio),
                "k": (opt.Candidates, self.k),
                "mode": (opt.Mode, self.mode),
                "mix": (opt.Mix, self.mix),
                "clusters": (opt.Clusters, self.clusters),
                "nosearch": (opt.NoSearchSize, self.nosearch),
                "valid_ratio": (opt.ValidRatio, self.valid_ratio),
                "seed": (opt.Seed, self.seed),
                "small_cluster": (Literal["error", "fill"], self.small_cluster),
            },
        )
        if not 0 < self.seen < n_tools:
            raise UsageError(
                f"--seen must leave unseen tools: got {self.seen} seen of {n_tools} tools"
            )
        if self.k < 1 or self.k > n_tools - self.seen:
            raise UsageError(f"k={self.k} candidates need at least {self.k} unseen tools")
        if self.mode == "mix" and not 0 < self.clusters <= self.seen:
            raise UsageError(f"cannot make {self.clusters} clusters of {self.seen} seen tools")


@dataclass
class DeerTool:
    """One tool of DEER's ``tool.json``."""

    api_name: str
    description_for_human: str
    description_for_model: str = ""
    api_function: str = ""
    example: list[dict[str, Any]] = field(default_factory=list)

    def info(self) -> dict[str, str]:
        """The candidate line's dict, in DEER's key order."""
        return {
            "api_name": self.api_name,
            "description": self.description_for_human,
            "api_function": self.api_function,
        }


# -- reading -------------------------------------------------------------------------------------
def _text_field(rec: Record, d: dict[str, Any], key: str, required: bool = True) -> str:
    value = d.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise rec.error(f"{key!r} must be a string, got {type(value).__name__}")
    if key in ("api_name", "name_for_model") and not value.strip():
        raise rec.error(f"{key!r} is empty")
    return value


def _tool_of(rec: Record) -> DeerTool:
    d = require_object(rec)
    if "manifest" in d:  # a ChatGPT plugin manifest record (DEER's own source)
        m = d["manifest"]
        if not isinstance(m, dict):
            raise rec.error("'manifest' must be an object")
        sub = Record(m, rec.path, rec.line, rec.index)
        return DeerTool(
            api_name=_text_field(sub, m, "name_for_model"),
            description_for_human=_text_field(sub, m, "description_for_human"),
            description_for_model=_text_field(sub, m, "description_for_model", False),
        )
    require_object(rec, ("api_name", "description_for_human"))
    examples = d.get("example", [])
    if not isinstance(examples, list):
        raise rec.error("'example' must be a list of {query, call}")
    for i, ex in enumerate(examples):
        if not (
            isinstance(ex, dict)
            and isinstance(ex.get("query"), str)
            and isinstance(ex.get("call"), str)
        ):
            raise rec.error(f"example {i} of {d['api_name']!r} is not {{query: str, call: str}}")
    return DeerTool(
        api_name=_text_field(rec, d, "api_name"),
        description_for_human=_text_field(rec, d, "description_for_human"),
        description_for_model=_text_field(rec, d, "description_for_model", False),
        api_function=_text_field(rec, d, "api_function", False),
        example=[
            dict(ex) for ex in examples if isinstance(ex, dict)
        ],  # checked above; extra keys kept
    )


def read_tools(path: Path) -> list[DeerTool]:
    """DEER's ``tool.json`` (``{api_name, description_for_human, description_for_model,
    api_function, example}``) or ChatGPT plugin manifests (``{manifest: {name_for_model, ...}}``,
    also wrapped as ``{"items": [...]}``); de-duplicated by name, the first kept."""
    records = list(read_records(path))
    if len(records) == 1 and isinstance(records[0].data, dict) and "items" in records[0].data:
        items = records[0].data["items"]
        if not isinstance(items, list):
            raise records[0].error("'items' must be a list of plugin records")
        records = [Record(x, path, records[0].line, i) for i, x in enumerate(items)]
    tools: list[DeerTool] = []
    seen: set[str] = set()
    for rec in records:
        tool = _tool_of(rec)
        if tool.api_name not in seen:
            seen.add(tool.api_name)
            tools.append(tool)
    if not tools:
        raise InputError("no tools in the file", path=path)
    return tools


def read_conversations(path: Path) -> list[str]:
    """The first user turn of each record: FastChat ``{conversations: [{from: human, value}]}``
    (WizardLM evol-instruct), OpenAI ``{messages: [{role: user, content}]}``, ``{query}`` /
    ``{instruction}`` / ``{prompt}`` objects, or plain strings."""
    out: list[str] = []
    for rec in read_records(path):
        out.append(_first_user_turn(rec))
    if not out:
        raise InputError("no conversations in the file", path=path)
    return out


def _first_user_turn(rec: Record) -> str:
    d = rec.data
    if isinstance(d, str) and d.strip():
        return d
    if isinstance(d, dict):
        for key, role_key, roles, text_key in (
            ("conversations", "from", ("human", "user"), "value"),
            ("messages", "role", ("user", "human"), "content"),
        ):
            turns = d.get(key)
            if isinstance(turns, list):
                for t in turns:
                    if isinstance(t, dict) and t.get(role_key) in roles:
                        text = t.get(text_key)
                        if isinstance(text, str) and text.strip():
                            return text
                        break
                raise rec.error(f"the first user turn of {key!r} has no text")
        for key in ("query", "instruction", "prompt", "question"):
            if isinstance(d.get(key), str) and d[key].strip():
                return str(d[key])
    raise rec.error(
        "not a conversation: expected {conversations: [{from: human, value}]}, "
        "{messages: [{role: user, content}]}, {query: ...} or a string"
    )


# -- stage 1: examples by a teacher ----------------------------------------------------------
def parse_examples(text: str, name: str) -> tuple[str, list[dict[str, str]], Counter[str]]:
    """(api_function, examples, line problems) of one answer; :class:`Reject` when its first line
    lacks ``API function: `` (upstream reads only line 1) or no example parses."""
    lines = text.strip().split("\n")
    if _FUNCTION not in lines[0]:
        raise Reject("no 'API function:' first line")
    api_function = lines[0].replace(_FUNCTION, "").strip()
    examples: list[dict[str, str]] = []
    problems: Counter[str] = Counter()
    for line in lines[1:]:
        if _EXAMPLE_START in line and '"call": ' in line:
            try:
                ex = json.loads(line[line.index(_EXAMPLE_START) :])
            except json.JSONDecodeError:
                problems["example line not JSON"] += 1
                continue
            if not (
                isinstance(ex, dict)
                and isinstance(ex.get("query"), str)
                and isinstance(ex.get("call"), str)
            ):
                problems["example without query/call strings"] += 1
                continue
            examples.append({"query": ex["query"], "call": ex["call"]})
        elif len(line) > 3:
            problems["line not an example"] += 1
    if not examples:
        raise Reject("no parsable example")
    return api_function, examples, problems


def parse_verdict(text: str) -> bool:
    """Upstream's reading: "yes" anywhere keeps the example; otherwise it is dropped, counted as
    "the check said no" or, with neither word (upstream's ``None``), as unclear."""
    low = text.lower()
    if "yes" in low:
        return True
    if "no" in low:
        raise Reject("the check said no")
    raise Reject("verdict neither yes nor no")


async def write_examples(tools: Sequence[DeerTool], teacher: Teacher) -> list[DeerTool]:
    """Stage 1: each tool with its teacher-written API function and checked examples (a tool whose
    answers all fail keeps no examples, as upstream skips it)."""
    problems: Counter[str] = Counter()

    async def one(tool: DeerTool) -> DeerTool:
        prompt = EXAMPLES_PROMPT.format(
            name=tool.api_name, human=tool.description_for_human, model=tool.description_for_model
        )
        answer = await teacher.ask(
            STAGE_EXAMPLES,
            lambda a: teacher.request_for(prompt, system=EXAMPLES_SYSTEM, attempt=a),
            lambda text: parse_examples(text, tool.api_name),
        )
        if answer.value is None:
            return DeerTool(tool.api_name, tool.description_for_human, tool.description_for_model)
        api_function, examples, line_problems = answer.value
        problems.update(line_problems)
        teacher.stats.accepted[f"{STAGE_EXAMPLES}.lines"] += len(examples)

        async def verdict(ex: dict[str, str]) -> bool:
            check_prompt = CHECK_PROMPT.format(
                api_function=api_function, query=ex["query"], call=ex["call"]
            )
            got = await teacher.ask(
                STAGE_CHECK,
                lambda a: teacher.request_for(
                    check_prompt,
                    system=CHECK_SYSTEM,
                    attempt=a,
                    max_tokens=min(CHECK_MAX_TOKENS, teacher.config.max_tokens),
                ),
                parse_verdict,
                attempts=1,
            )
            return bool(got.value)

        keep = await asyncio.gather(*(verdict(ex) for ex in examples))
        return DeerTool(
            tool.api_name,
            tool.description_for_human,
            tool.description_for_model,
            api_function,
            [ex for ex, ok in zip(examples, keep, strict=True) if ok],
        )

    result = await teacher.map(STAGE_EXAMPLES, list(tools), one)
    for reason, n in problems.items():
        teacher.stats.rejected[f"{STAGE_EXAMPLES}.lines: {reason}"] += n
    return result


# -- stage 2: decision samples ---------------------------------------------------------------
def conversation(query: str, target: str) -> dict[str, Any]:
    return {"conversations": [{"from": "human", "value": query}, {"from": "gpt", "value": target}]}


def render(candidates: Sequence[DeerTool], call: str | None) -> str:
    """The gpt turn of a Call (``call`` given) or NoCall sample over ``candidates``."""
    api_cand = [t.api_name for t in candidates]
    intro = "\n" + "\n".join(str(t.info()) for t in candidates)
    if call is None:
        return NOCALL_TARGET.format(api_cand=api_cand, api_intro_usage=intro)
    return CALL_TARGET.format(
        api_cand=api_cand, api_intro_usage=intro, call_api=call, api_response=""
    )


def upstream_slices(n: int, mix: Sequence[float]) -> list[Mode]:
    """Modes of ``n`` samples sliced contiguously as upstream slices them:
    ``[:int(n*a)]``, ``[int(n*a):int(n*(a+b))]``, ``[int(n*(a+b)):]`` (shares normalised)."""
    total = float(sum(mix))
    a, b = mix[0] / total, mix[1] / total
    first, second = int(n * a), int(n * (a + b))
    random_: list[Mode] = ["random"]
    intra: list[Mode] = ["intra"]
    inter: list[Mode] = ["inter"]
    return random_ * first + intra * (second - first) + inter * (n - second)


@dataclass
class DeerBuild:
    """The generated splits and what went into them."""

    train: list[dict[str, Any]]
    valid: list[dict[str, Any]]
    test: list[dict[str, Any]]
    seen: list[str]
    unseen: list[str]
    counts: dict[str, Any] = field(default_factory=dict)


def _samples(tools: Sequence[DeerTool], rng: random.Random) -> list[dict[str, str]]:
    flat = [
        {"api_name": t.api_name, "query": ex["query"], "call": ex["call"]}
        for t in tools
        for ex in t.example
    ]
    rng.shuffle(flat)
    return flat


def _decisions(
    tools: Sequence[DeerTool],
    samples: list[dict[str, str]],
    config: DeerConfig,
    mode: Literal["mix", "random"],
    clusters: ToolClusters | None,
    counts: Counter[str],
) -> list[dict[str, Any]]:
    pool = [Tool.build(name=t.api_name, description=t.description_for_human) for t in tools]
    sampler = CandidateSampler(
        pool, clusters=clusters, k=config.k, small_cluster=config.small_cluster
    )
    by_name = {t.api_name: t for t in tools}
    n_call = int(len(samples) * config.call_ratio)
    out: list[dict[str, Any]] = []
    for is_call, part in ((True, samples[:n_call]), (False, samples[n_call:])):
        modes = upstream_slices(len(part), config.mix if mode == "mix" else (1.0, 0.0, 0.0))
        for sample, m in zip(part, modes, strict=True):
            picked = sampler.sample(
                sample["api_name"], m, with_gold=is_call, rng=np.random.RandomState(len(out))
            )
            cands = [by_name[t.name] for t in picked]
            out.append(
                conversation(sample["query"], render(cands, sample["call"] if is_call else None))
            )
            counts[f"{'Call' if is_call else 'NoCall'}/{m}"] += 1
    return out


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def build(
    tools: Sequence[DeerTool],
    config: DeerConfig | None = None,
    nosearch: Sequence[str] = (),
    clusters: ToolClusters | None = None,
    exclude_queries: Sequence[str] = (),
) -> DeerBuild:
    """Stage 2 (no teacher): the decision samples of ``tools``.  ``clusters`` (fitted on the seen
    tools, in their shuffled order) is fitted here when the mix needs it and none is given;
    ``exclude_queries`` (e.g. DEER's released test set) never enter train / valid."""
    config = config or DeerConfig()
    config.check(len(tools))
    rng = random.Random(config.seed)
    shuffled = list(tools)
    rng.shuffle(shuffled)
    seen, unseen = shuffled[: config.seen], shuffled[config.seen :]
    counts: Counter[str] = Counter()
    seen_samples = _samples(seen, rng)
    if config.mode == "mix" and clusters is None:
        try:
            import sklearn.cluster  # noqa: F401
        except ImportError:
            raise UsageError(
                "the mix of intra- and inter-class candidates clusters the tools with "
                "scikit-learn and an embedding model: install toollab's [dense] extra, or "
                "use --mode random"
            ) from None
        clusters = ToolClusters.fit(
            [Tool.build(name=t.api_name, description=t.description_for_human) for t in seen],
            m=config.clusters,
            seed=42,
            texts=[t.description_for_human for t in seen],
        )
    data = _decisions(seen, seen_samples, config, config.mode, clusters, counts)
    test_counts: Counter[str] = Counter()
    test = _decisions(unseen, _samples(unseen, rng), config, "random", None, test_counts)
    queries = list(nosearch)
    rng.shuffle(queries)
    for q in queries[: config.nosearch]:
        data.append(conversation(q, NOSEARCH_TARGET))
    counts["NoSearch"] = min(len(queries), config.nosearch)
    rng.shuffle(data)
    n_train = int(len(data) * (1.0 - config.valid_ratio))
    train, valid = data[:n_train], data[n_train:]
    banned = {_norm(r["conversations"][0]["value"]) for r in test} | {
        _norm(q) for q in exclude_queries
    }
    dropped = Counter[str]()
    kept: dict[str, list[dict[str, Any]]] = {}
    for name, split in (("train", train), ("valid", valid)):
        kept[name] = []
        for r in split:
            if _norm(r["conversations"][0]["value"]) in banned:
                dropped[name] += 1
            else:
                kept[name].append(r)
    result = DeerBuild(
        kept["train"],
        kept["valid"],
        test,
        [t.api_name for t in seen],
        [t.api_name for t in unseen],
    )
    result.counts = {
        "seen_samples": dict(sorted(counts.items())),
        "test_samples": dict(sorted(test_counts.items())),
        "splits": {"train": len(result.train), "valid": len(result.valid), "test": len(test)},
        "dropped_test_queries": dict(dropped),
        "small_clusters": sorted(
            n for n in (clusters.sizes() if clusters is not None else []) if n < config.k
        ),
    }
    return result


def leaks(result: DeerBuild) -> dict[str, int]:
    """Training samples that offer an unseen tool or ask a test query (0 and 0 by construction)."""
    unseen = set(result.unseen)
    test_q = {_norm(r["conversations"][0]["value"]) for r in result.test}
    pool_names = re.compile(r"The API Pool including: (\[.*?\]), and")
    out = {"unseen_tool": 0, "test_query": 0}
    for r in [*result.train, *result.valid]:
        target = r["conversations"][1]["value"]
        m = pool_names.search(target)
        if m and unseen & set(ast.literal_eval(m.group(1))):
            out["unseen_tool"] += 1
        if _norm(r["conversations"][0]["value"]) in test_q:
            out["test_query"] += 1
    return out


#: the files a run writes into its output folder (:func:`toollab.data.atomic.check_output_folder`)
OUTPUT_FILES = ("tool.json", "train.json", "valid.json", "test.json", "split.json", "report.json")


def write(out: Path, result: DeerBuild, tools: Sequence[DeerTool], report: dict[str, Any]) -> None:
    """``train.json``, ``valid.json``, ``test.json`` and ``tool.json`` in DEER's format, the seen /
    unseen split and the report; each file written atomically, the data files byte for byte as
    upstream's ``json.dump(..., indent=4, ensure_ascii=False)`` writes them.  The folder is
    marked as toollab's (:func:`toollab.data.atomic.mark_folder`) first."""
    mark_folder(out)
    write_json_atomic(out / "tool.json", [asdict(t) for t in tools], final_newline=False)
    write_json_atomic(out / "train.json", result.train, final_newline=False)
    write_json_atomic(out / "valid.json", result.valid, final_newline=False)
    write_json_atomic(out / "test.json", result.test, final_newline=False)
    write_json_atomic(out / "split.json", {"seen": result.seen, "unseen": result.unseen}, indent=2)
    write_json_atomic(out / "report.json", report, indent=2)


def run(
    tools_path: Path,
    out: Path,
    config: DeerConfig | None = None,
    teacher: Teacher | None = None,
    nosearch_path: Path | None = None,
    exclude_paths: Sequence[Path] = (),
    limit: int | None = None,
    *,
    force: bool = False,
) -> dict[str, Any]:
    """The whole pipeline: read, (teacher) examples, decision samples, write; the report.

    With a teacher that goes down mid-run the report is written with ``"complete": false`` and
    :class:`~toollab.synth.teacher.TeacherDown` is raised; nothing else is written.  A file of
    :data:`OUTPUT_FILES` already in ``out`` that toollab did not write is refused before any
    work unless ``force``."""
    config = config or DeerConfig()
    check_output_folder(out, OUTPUT_FILES, force=force)
    tools = read_tools(tools_path)
    if limit is not None:
        tools = tools[:limit]
    config.check(len(tools))
    nosearch = read_conversations(nosearch_path) if nosearch_path is not None else []
    exclude = [q for p in exclude_paths for q in read_conversations(p)]
    report: dict[str, Any] = {
        "pipeline": "deer",
        "source": str(tools_path),
        "config": asdict(config),
        "tools": len(tools),
        "published_examples": sum(len(t.example) for t in tools),
    }
    if teacher is not None:
        report["teacher"] = teacher.name
        tools = run_sync(write_examples(tools, teacher))
        report["teacher_stats"] = teacher.stats.to_dict()
        report["teacher_examples"] = sum(len(t.example) for t in tools)
        if teacher.down:
            report["complete"] = False
            mark_folder(out)
            write_json_atomic(out / "report.json", report, indent=2)
            teacher.check_alive("example writing")
    result = build(tools, config, nosearch, exclude_queries=exclude)
    report["complete"] = True
    report["nosearch_source"] = str(nosearch_path) if nosearch_path else None
    report["counts"] = result.counts
    report["leaks"] = leaks(result)
    write(out, result, tools, report)
    return report
