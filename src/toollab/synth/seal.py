"""Seal-Tools' self-instruct pipeline (``Dataset_Construct/src``), with any teacher.

Stages, each asking the teacher through :class:`~toollab.synth.teacher.Teacher` (cached, retried,
counted by check and reason):

1. **Fields**: pairs of the 45 seed fields are popped at random until fewer than two remain; each
   pair asks for a field list (the first ``[...]`` of the answer, newlines removed, must be a JSON
   list of strings).  Fields named in at least two lists are kept (``min_field_count``).
2. **Subfields** per field (a JSON list of strings; "Weather" is added under "Environment").
   ``--fields field.jsonl`` starts here from given fields and subfields instead, and
   ``--tools tool.jsonl`` at stage 4 with given tools.
3. **Tools** per (field, subfield): the prompt's in-context example is always ``getTemperature``;
   the answer is split on blank lines and the first ``{...}`` of each chunk read as JSON; a tool
   must pass ``api_check`` (six keys, ``required`` within ``parameters``, typed parameters and
   responses, responses not empty) and carry ``field == "Field/Subfield"``; a name whose
   ``difflib`` ``quick_ratio`` with any earlier tool is >= 0.8 is a duplicate.  A subfield stops
   after two rounds that add nothing.  All subfields run a round at once and are de-duplicated in
   subfield order after it, so the result does not depend on which answer comes back first.
4. **Value pools**: a required ``str`` parameter with neither an e.g.-list nor a rule gets a
   teacher-written list of values.
5. **Easy instances**: one per tool, a call with sampled values (``get_api_calling``), the teacher
   writes the task description (the first ``[...]`` after the last "Task description").
6. **Difficult instances**: ``difficult`` times, 100 random tools are offered and the teacher
   selects some (every name must be in the pool); a skeleton with globally numbered responses
   and ``___`` values is filled in by the teacher, which also writes the task; a fill-in is
   rejected when the task mentions ``API_call_`` or a call fails ``api_calling_check``; 3
   attempts.
7. **Fine-tuning prompts**: each instance's top-5 tools from a toollab retriever over the
   generated tools, a missing gold tool overwriting the lowest-ranked non-gold one, in
   ``dataset_for_finetune/<split>.json`` with upstream's human turn and ``repr`` target.

Output, in Seal-Tools' own files: ``tool.jsonl``, ``field.jsonl``, ``<split>.jsonl``,
``dataset_for_finetune/<split>.json``, and ``report.json`` (counts and pass rates).
"""

from __future__ import annotations

import ast
import difflib
import json
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toollab.data.atomic import check_output_folder, mark_folder
from toollab.data.jsonl import read_records, require_object
from toollab.errors import InputError, UsageError
from toollab.models.base import run_sync
from toollab.retrieval import get_retriever
from toollab.retrieval.base import RETRIEVERS
from toollab.synth import seal_prompts as P
from toollab.synth import seal_values as V
from toollab.synth.io import write_json_atomic, write_jsonl_atomic
from toollab.synth.teacher import Reject, Teacher
from toollab.tools.formats import seal_to_tool

_LIST = re.compile(r"\[.+\]")
_OBJECT = re.compile(r"\{.+\}")
_LABEL = re.compile(r"^API_call_\d+$")


@dataclass
class SealConfig:
    split: str = "train"
    #: fields kept when named in at least this many generated lists (upstream: 2)
    min_field_count: int = 2
    max_fields: int | None = None
    max_subfields: int | None = None
    #: rounds without a new tool after which a subfield is done
    empty_rounds: int = 2
    #: a cap on the rounds of one subfield (upstream has none)
    max_rounds: int = 20
    dedup_ratio: float = 0.8
    difficult: int = 1000
    pool_size: int = 100
    top_k: int = 5
    retriever: str = "bm25"
    seed: int = 0

    def check(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", self.split):
            raise UsageError(f"the split name must be a plain file name, got {self.split!r}")
        if self.empty_rounds < 1 or self.max_rounds < 1 or self.top_k < 1 or self.pool_size < 1:
            raise UsageError("rounds, top-k and pool size must be positive")
        if not 0 < self.dedup_ratio <= 1:
            raise UsageError(f"the de-duplication ratio must be in (0, 1], got {self.dedup_ratio}")
        RETRIEVERS.resolve(self.retriever)  # an unknown retriever fails before the teacher starts


# -- answer checks -------------------------------------------------------------------------------
def first_list(text: str, *, join_lines: bool = True) -> str:
    m = _LIST.search(text.replace("\n", "") if join_lines else text)
    if m is None:
        raise Reject("no [...] list")
    return m.group(0)


def string_list(text: str) -> list[str]:
    """Fields / subfields: the first ``[...]`` as a JSON list whose first item is a string."""
    try:
        value = json.loads(first_list(text))
    except json.JSONDecodeError:
        raise Reject("list not JSON") from None
    if not isinstance(value, list) or not value or not isinstance(value[0], str):
        raise Reject("not a list of strings")
    return [v for v in value if isinstance(v, str)]


def api_problem(api: Any, field_subfield: str) -> str | None:
    """Why ``api_check`` (or the field test) refuses a tool, or ``None``."""
    if not isinstance(api, dict):
        return "tool not an object"
    for key in ("api_name", "api_description", "field", "parameters", "required", "responses"):
        if key not in api:
            return f"missing {key}"
    params, required, responses = api["parameters"], api["required"], api["responses"]
    if not isinstance(params, dict) or not isinstance(required, list):
        return "parameters not an object or required not a list"
    if not isinstance(api["api_name"], str) or not api["api_name"]:
        return "api_name not a string"
    if any(r not in params for r in required):
        return "required parameter not in parameters"
    if not isinstance(responses, dict) or not responses:
        return "no responses"
    for group in (params, responses):
        for spec in group.values():
            if not isinstance(spec, dict) or "type" not in spec or "description" not in spec:
                return "parameter or response without type and description"
            if spec["type"] not in P.API_TYPES or not isinstance(spec["description"], str):
                return "type not str, int, float or bool"
    if api["field"] != field_subfield:
        return "field is not field/subfield"
    return None


def parse_tools(text: str, field_subfield: str) -> tuple[list[dict[str, Any]], Counter[str]]:
    """Candidate tools of one answer and the reasons the other chunks were refused."""
    found: list[dict[str, Any]] = []
    problems: Counter[str] = Counter()
    for chunk in re.split(r"\n{2,}", text):
        m = _OBJECT.search(chunk.replace("\n", ""))
        if m is None:
            continue
        try:
            api = json.loads(m.group(0))
        except json.JSONDecodeError:
            problems["tool not JSON"] += 1
            continue
        problem = api_problem(api, field_subfield)
        if problem:
            problems[problem] += 1
        else:
            found.append(api)
    return found, problems


def is_duplicate(name: str, names: Sequence[str], ratio: float) -> bool:
    return any(difflib.SequenceMatcher(None, n, name).quick_ratio() >= ratio for n in names)


def easy_query(text: str) -> str:
    m = _LIST.search(text.split("Task description")[-1])
    if m is None:
        raise Reject("no [task description]")
    query = m.group(0)[1:-1].strip('"').strip("'")
    if not query.strip():
        raise Reject("empty task description")
    return query


def selected_apis(text: str, pool: Sequence[str]) -> list[str]:
    part = text.split("selected_apis")[-1].split("task_description")[0]
    m = _LIST.search(part)
    if m is None:
        raise Reject("no selected_apis list")
    try:
        names = ast.literal_eval(m.group(0))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise Reject("selected_apis not a Python list") from None
    if not isinstance(names, list) or not names:
        raise Reject("empty selection")
    if any(not isinstance(n, str) or n not in pool for n in names):
        raise Reject("selected name not in the pool")
    return names


def calling_problem(call: Any, tools: dict[str, dict[str, Any]]) -> str | None:
    """Why upstream's ``api_calling_check`` refuses a call, or ``None``."""
    if not isinstance(call, dict) or not {"api", "parameters", "responses"} <= set(call):
        return "call without api, parameters, responses"
    spec = tools.get(call["api"]) if isinstance(call["api"], str) else None
    if spec is None:
        return "unknown api"
    params, responses = call["parameters"], call["responses"]
    if not isinstance(params, dict) or not isinstance(responses, list):
        return "parameters not an object or responses not a list"
    if any(r not in params for r in spec["required"]):
        return "required parameter missing"
    for p, value in params.items():
        if p not in spec["parameters"]:
            return "unknown parameter"
        if "API_call_" in str(value) and str(value) in responses:
            return "parameter refers to its own response"
    if len(responses) != len(spec["responses"]):
        return "wrong number of responses"
    return None


def fill_in(text: str, tools: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    flat = text.replace("\n", "")
    m = _LIST.search(flat.split("improved_api_calling")[-1].split("task_description")[0])
    if m is None:
        raise Reject("no improved_api_calling list")
    try:
        calls = json.loads(m.group(0).replace("'", '"'))
    except json.JSONDecodeError:
        raise Reject("improved_api_calling not JSON") from None
    try:
        query = flat.split("task_description")[-1].split("[")[1].split("]")[0]
    except IndexError:
        raise Reject("no task_description") from None
    query = query.strip('"').strip("'")
    if "API_call_" in query:
        raise Reject("task description mentions API_call_")
    if not isinstance(calls, list) or not calls:
        raise Reject("improved_api_calling empty")
    for call in calls:
        problem = calling_problem(call, tools)
        if problem:
            raise Reject(problem)
    return calls, query


def is_nested(calls: Sequence[dict[str, Any]]) -> bool:
    """A parameter equal to an earlier call's ``API_call_k``."""
    earlier: set[str] = set()
    for call in calls:
        if any(isinstance(v, str) and v in earlier for v in call["parameters"].values()):
            return True
        earlier.update(str(r) for r in call["responses"])
    return False


# -- stages -------------------------------------------------------------------------------------
@dataclass
class SealState:
    fields: dict[str, list[str]] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)
    pools: V.Pools = field(default_factory=dict)
    easy: list[dict[str, Any]] = field(default_factory=list)
    difficult: list[dict[str, Any]] = field(default_factory=list)
    notes: Counter[str] = field(default_factory=Counter)


async def make_fields(teacher: Teacher, config: SealConfig, state: SealState) -> None:
    rng = random.Random(f"{config.seed}-fields")
    seeds = list(P.INITIAL_FIELDS)
    pairs: list[tuple[str, str]] = []
    while len(seeds) >= 2:
        a = seeds.pop(rng.randint(0, len(seeds) - 1))
        b = seeds.pop(rng.randint(0, len(seeds) - 1))
        pairs.append((a, b))

    async def one(pair: tuple[str, str]) -> list[str] | None:
        prompt = P.FIELDSET.format(*pair)
        got = await teacher.ask(
            "seal.fields", lambda a: teacher.request_for(prompt, attempt=a), string_list
        )
        return list(dict.fromkeys(got.value)) if got.value else None

    lists = [x for x in await teacher.map("seal.fields", pairs, one) if x]
    counts = Counter(f for x in lists for f in x)
    kept = [f for f in counts if counts[f] >= config.min_field_count]
    if config.max_fields is not None:
        kept = kept[: config.max_fields]
    state.notes["field lists"] = len(lists)
    await make_subfields(teacher, config, state, kept)


async def make_subfields(
    teacher: Teacher, config: SealConfig, state: SealState, fields: list[str]
) -> None:
    async def one(name: str) -> list[str] | None:
        prompt = P.SUBFIELD.format(name)
        got = await teacher.ask(
            "seal.subfields", lambda a: teacher.request_for(prompt, attempt=a), string_list
        )
        return list(dict.fromkeys(got.value)) if got.value else None

    for name, subs in zip(fields, await teacher.map("seal.subfields", fields, one), strict=True):
        if subs is None:
            continue
        if name == "Environment" and "Weather" not in subs:
            subs.append("Weather")
        state.fields[name] = subs[: config.max_subfields] if config.max_subfields else subs


async def make_tools(teacher: Teacher, config: SealConfig, state: SealState) -> None:
    pairs = [(f, s) for f, subs in state.fields.items() for s in subs]
    icl_field = P.INITIAL_API["field"].split("/")
    names = [P.INITIAL_API["api_name"]]
    empty = dict.fromkeys(range(len(pairs)), 0)
    found: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(pairs))}
    for rnd in range(config.max_rounds):
        active = [i for i in range(len(pairs)) if empty[i] < config.empty_rounds]
        if not active:
            break

        async def one(i: int, rnd: int = rnd) -> list[dict[str, Any]]:
            f, s = pairs[i]
            prompt = P.API_GENERATION.format(
                icl_field[0], icl_field[1], json.dumps(P.INITIAL_API), f, s
            )
            # each round is its own question (upstream asks the same prompt again)
            got = await teacher.ask(
                "seal.tools.answers",
                lambda a: teacher.request_for(prompt, attempt=rnd * 100 + a),
                lambda text: parse_tools(text, f"{f}/{s}"),
                attempts=1,
            )
            if got.value is None:
                return []
            apis, problems = got.value
            for reason, n in problems.items():
                teacher.stats.rejected[f"seal.tools: {reason}"] += n
            return apis

        answers = await teacher.map(f"seal.tools round {rnd + 1}", active, one)
        for i, apis in zip(active, answers, strict=True):  # de-duplicated in subfield order
            new = 0
            for api in apis:
                if is_duplicate(api["api_name"], names, config.dedup_ratio):
                    teacher.stats.rejected["seal.tools: duplicate name (quick_ratio >= 0.8)"] += 1
                    continue
                teacher.stats.accepted["seal.tools"] += 1
                names.append(api["api_name"])
                found[i].append(api)
                new += 1
            empty[i] = empty[i] + 1 if new == 0 else empty[i]
        if teacher.down:
            return
    state.tools = [api for i in range(len(pairs)) for api in found[i]]


async def make_pools(teacher: Teacher, state: SealState) -> None:
    wanted = [(t, p, d) for t in state.tools for p, d in V.needs_pool(t).items()]

    def values(text: str) -> list[Any]:
        try:
            got = json.loads(first_list(text, join_lines=False))
        except json.JSONDecodeError:
            raise Reject("list not JSON") from None
        if not isinstance(got, list) or not got:
            raise Reject("empty or not a list")
        return got

    async def one(item: tuple[dict[str, Any], str, str]) -> list[Any] | None:
        prompt = P.API_PARAM.format(item[2])
        got = await teacher.ask(
            "seal.values", lambda a: teacher.request_for(prompt, attempt=a), values
        )
        return got.value

    for (t, p, _), pool in zip(wanted, await teacher.map("seal.values", wanted, one), strict=True):
        if pool:
            state.pools.setdefault(t["api_name"], {})[p] = pool


async def make_easy(teacher: Teacher, config: SealConfig, state: SealState) -> None:
    async def one(tool: dict[str, Any]) -> dict[str, Any] | None:
        rng = random.Random(f"{config.seed}-easy-{tool['api_name']}")
        try:
            calls = [V.calling(rng, tool, state.pools) for _ in range(teacher.config.attempts)]
        except V.NoValue:
            state.notes["easy: a required parameter has no value"] += 1
            return None
        got = await teacher.ask(
            "seal.easy",
            lambda a: teacher.request_for(P.EASY_CASE.format(str(calls[a])), attempt=a),
            easy_query,
        )
        if got.value is None:
            return None
        return {"query": got.value, "calling": [V.with_responses(calls[got.attempts - 1], tool)]}

    state.easy = [x for x in await teacher.map("seal.easy", state.tools, one) if x]


async def make_difficult(teacher: Teacher, config: SealConfig, state: SealState) -> None:
    by_name = {t["api_name"]: t for t in state.tools}

    async def one(i: int) -> dict[str, Any] | None:
        rng = random.Random(f"{config.seed}-difficult-{i}")
        n = min(config.pool_size, len(state.tools))
        pools = [rng.sample(range(len(state.tools)), n) for _ in range(teacher.config.attempts)]

        def pool_prompt(a: int) -> Any:
            api_pool = [
                {state.tools[j]["api_name"]: state.tools[j]["api_description"]} for j in pools[a]
            ]
            return teacher.request_for(P.API_SELECTION.format(str(api_pool)), attempt=a)

        current = [0]  # the attempt being checked: each attempt offers its own pool

        def make(a: int) -> Any:
            current[0] = a
            return pool_prompt(a)

        def check_pick(text: str) -> list[str]:
            return selected_apis(text, [state.tools[j]["api_name"] for j in pools[current[0]]])

        picked = await teacher.ask("seal.selection", make, check_pick)
        if picked.value is None:
            return None
        chosen = [by_name[n] for n in picked.value]
        skeletons: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []
        try:
            for _ in range(3):
                skeleton = V.calling_list(rng, chosen, state.pools)
                for call in skeleton:
                    call["parameters"] = dict.fromkeys(call["parameters"], "___")
                specs = json.loads(json.dumps(chosen))
                for spec in specs:
                    for p, ps in spec["parameters"].items():
                        if "(e.g." not in ps["description"] and p in spec["required"]:
                            value = V.param_value(rng, spec, p, state.pools)
                            ps["description"] += f" (e.g., {value})"
                skeletons.append((specs, skeleton))
        except V.NoValue:
            state.notes["difficult: a required parameter has no value"] += 1
            return None

        def fill_prompt(a: int) -> Any:
            specs, skeleton = skeletons[a]
            text = P.DIFFICULT_FILLIN.format(str(specs), str(skeleton).replace("'___'", "___"))
            return teacher.request_for(text, attempt=a)

        filled = await teacher.ask(
            "seal.difficult", fill_prompt, lambda text: fill_in(text, by_name), attempts=3
        )
        if filled.value is None:
            return None
        calls, query = filled.value
        return {"query": query, "calling": calls}

    if not state.tools:
        return
    done = await teacher.map("seal.difficult", list(range(config.difficult)), one)
    state.difficult = [x for x in done if x]


# -- fine-tuning prompts ------------------------------------------------------------------------
def finetune_records(
    instances: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]], config: SealConfig
) -> list[dict[str, Any]]:
    """``dataset_for_finetune``: top-k retrieved tools (padded at random when the retriever
    finds fewer), gold injected over the lowest-ranked non-gold ones, retriever order kept; the
    target is the ``repr`` of the calling list."""
    if not tools:
        return []
    retriever = get_retriever(config.retriever)
    pool = [seal_to_tool(t) for t in tools]
    retriever.index(pool)
    by_name = {t["api_name"]: t for t in tools}
    out = []
    for inst in instances:
        hits = [h.name for h in retriever.retrieve(inst["query"], config.top_k)]
        gold = list(dict.fromkeys(c["api"] for c in inst["calling"]))
        names = list(dict.fromkeys(hits))[: config.top_k]
        if len(names) < config.top_k:  # BM25 finds only tools sharing a word: pad at random
            rest = [t["api_name"] for t in tools if t["api_name"] not in names]
            rng = random.Random(f"{config.seed}-offered-{inst['id']}")
            names += rng.sample(rest, min(len(rest), config.top_k - len(names)))
        for g in gold:
            if g in names:
                continue
            if len(names) < config.top_k:
                names.append(g)
                continue
            for j in range(len(names) - 1, -1, -1):
                if names[j] not in gold:
                    names[j] = g
                    break
        api_list = [by_name[n] for n in names]
        human = P.FINETUNE.format(api_list=str(api_list), query=inst["query"])
        out.append(
            {
                "id": inst["id"],
                "conversations": [
                    {"from": "human", "value": human},
                    {"from": "gpt", "value": str(inst["calling"])},
                ],
            }
        )
    return out


async def _nothing() -> None:
    return None


# -- input, output, the whole run -------------------------------------------------------------
def read_fields(path: Path) -> dict[str, list[str]]:
    """Seal-Tools' ``field.jsonl``: one ``{"Field": ["Subfield", ...]}`` object per line."""
    out: dict[str, list[str]] = {}
    for rec in read_records(path):
        d = require_object(rec)
        for name, subs in d.items():
            if not isinstance(subs, list) or not all(isinstance(s, str) for s in subs):
                raise rec.error(f"the subfields of {name!r} must be a list of strings")
            out[name] = [s for s in subs if isinstance(s, str)]  # checked above
    if not out:
        raise InputError("no fields in the file", path=path)
    return out


def read_tools(path: Path) -> list[dict[str, Any]]:
    """Seal-Tools' ``tool.jsonl``; every tool must pass ``api_check`` (against its own field)."""
    tools: list[dict[str, Any]] = []
    for rec in read_records(path):
        d = require_object(rec)
        problem = api_problem(d, str(d.get("field")))
        if problem:
            raise rec.error(f"not a Seal-Tools tool: {problem}")
        tools.append(d)
    if not tools:
        raise InputError("no tools in the file", path=path)
    return tools


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def read_queries(path: Path) -> set[str]:
    """Queries of Seal-Tools instance files (``{query}`` lines): kept out of the output."""
    out: set[str] = set()
    for rec in read_records(path):
        d = require_object(rec, ("query",))
        out.add(_norm(str(d["query"])))
    return out


def instances(state: SealState, split: str, banned: set[str]) -> list[dict[str, Any]]:
    """``<split>.jsonl`` records, easy first, ids numbered by position as upstream's files."""
    out: list[dict[str, Any]] = []
    for kind, items in (("easy", state.easy), ("difficult", state.difficult)):
        for item in items:
            if _norm(item["query"]) in banned:
                state.notes["dropped: query of an excluded file"] += 1
                continue
            out.append({"id": f"{split}-{kind}-{len(out)}", **item})
    return out


def output_files(split: str) -> tuple[str, ...]:
    """The files a run of ``split`` writes into its output folder
    (:func:`toollab.data.atomic.check_output_folder`)."""
    return (
        "tool.jsonl",
        "field.jsonl",
        f"{split}.jsonl",
        f"dataset_for_finetune/{split}.json",
        "report.json",
    )


def run(
    out: Path,
    teacher: Teacher,
    config: SealConfig | None = None,
    fields_path: Path | None = None,
    exclude_paths: Sequence[Path] = (),
    tools_path: Path | None = None,
    max_tools: int | None = None,
    *,
    force: bool = False,
) -> dict[str, Any]:
    """Every stage, then the files; the report (written as ``report.json`` too).  A teacher that
    goes down writes the report with ``"complete": false`` and raises
    :class:`~toollab.synth.teacher.TeacherDown`; a re-run resumes from the cache.  A file of
    :func:`output_files` already in ``out`` that toollab did not write is refused before any
    work unless ``force``."""
    config = config or SealConfig()
    config.check()
    check_output_folder(out, output_files(config.split), force=force)
    state = SealState()
    banned: set[str] = set()
    for p in exclude_paths:
        banned |= read_queries(p)
    given = read_fields(fields_path) if fields_path is not None else None
    given_tools = read_tools(tools_path)[:max_tools] if tools_path is not None else None

    async def stages() -> str | None:
        if given_tools is not None:  # start at the value pools with these tools
            state.tools = given_tools
            for t in given_tools:
                f, _, sub = str(t["field"]).partition("/")
                subs = state.fields.setdefault(f, [])
                if sub not in subs:
                    subs.append(sub)
        elif given is None:
            await make_fields(teacher, config, state)
        else:
            names = list(given)[: config.max_fields] if config.max_fields else list(given)
            state.fields = {
                n: given[n][: config.max_subfields] if config.max_subfields else given[n]
                for n in names
            }
        for name, stage in (
            (
                "tools",
                lambda: make_tools(teacher, config, state) if given_tools is None else _nothing(),
            ),
            ("value pools", lambda: make_pools(teacher, state)),
            ("easy instances", lambda: make_easy(teacher, config, state)),
            ("difficult instances", lambda: make_difficult(teacher, config, state)),
        ):
            if teacher.down:
                return name
            await stage()
        return "difficult instances" if teacher.down else None

    failed_at = run_sync(stages())
    records = instances(state, config.split, banned)
    nested = sum(is_nested(r["calling"]) for r in records)
    report: dict[str, Any] = {
        "pipeline": "seal-tools",
        "teacher": teacher.name,
        "config": asdict(config),
        "complete": failed_at is None,
        "counts": {
            "fields": len(state.fields),
            "subfields": sum(len(v) for v in state.fields.values()),
            "tools": len(state.tools),
            "value_pools": sum(len(v) for v in state.pools.values()),
            "easy": len(state.easy),
            "difficult": len(state.difficult),
            "nested": nested,
            "instances": len(records),
        },
        "notes": dict(state.notes),
        "teacher_stats": teacher.stats.to_dict(),
    }
    mark_folder(out)
    if failed_at is not None:
        write_json_atomic(out / "report.json", report, indent=2)
        teacher.check_alive(failed_at)
    write_jsonl_atomic(out / "tool.jsonl", state.tools)
    write_jsonl_atomic(out / "field.jsonl", [{k: v} for k, v in state.fields.items()])
    write_jsonl_atomic(out / f"{config.split}.jsonl", records)
    write_json_atomic(
        out / "dataset_for_finetune" / f"{config.split}.json",
        finetune_records(records, state.tools, config),
        indent=2,
        final_newline=False,
    )
    write_json_atomic(out / "report.json", report, indent=2)
    return report
