"""DEER (Ericmututu/ToolDEER): decision chains, the plugin tool pool and the baseline sets.

* ``test.json`` / ``valid.json``: FastChat conversations ``[{from: human}, {from: gpt}]``.  The gpt
  turn is the gold decision chain with the markers ``#Begin#``, ``#SearchAPI#`` (followed by the
  5-tool API pool: a list of names and one Python-dict line per tool), ``#CallAPI# NAME(args)``,
  ``#NoCallAPI#``, ``#APIResponse#`` and ``#End#``.  The markers give the decision
  (NoSearch / NoCall / Call), the pool gives the offered tools, the ``#CallAPI#`` text the gold
  call.  The whole chain is kept (``answer`` and ``metadata["gold_chain"]``) for the DEER scorer,
  which teacher-forces the gold pool.
* ``tool.json``: 977 tools ``{api_name, description_for_human, description_for_model,
  api_function, example}`` (:func:`toollab.data.load_tools`, or ``data inspect`` on the file).
* ``baselines/tool_bench.json``, ``baselines/tool_corpus.json``: ``{query, api_unique,
  api_list (5 tools, ToolBench parameter lists), api_label, is_call}``.  A call is right when its
  name is in ``api_label``, so every label is a gold alternative.

Each instance's category is ``"<file>/<decision>"`` (``test/Call``, ``valid/NoSearch``,
``tool_bench/NoCall``, ...), so ``data inspect`` breaks the data down as it is published.
Python-literal text is read with :func:`ast.literal_eval` only; nothing is evaluated.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from toollab.data.base import (
    Adapter,
    Dataset,
    as_list,
    check_choices,
    offer_tools,
    register_adapter,
    tool_pool,
)
from toollab.data.jsonl import JSON_ERRORS, Record, read_records, require_object
from toollab.data.pysig import parse_call_text, parse_signature
from toollab.data.tool_formats import deer_to_tool
from toollab.data.types import TOOLBENCH_TYPES, object_schema, type_schema
from toollab.errors import InputError, ToolSchemaError
from toollab.parsing.deer import BEGIN, CALL, END, NO_CALL, RESPONSE, SEARCH
from toollab.schema import Decision, GoldCall, Instance, ProtocolFacts, Tool

SOURCE = "deer"
TOOL_FILE = "tool.json"
CHAIN_FILES = ("test.json", "valid.json")
BASELINE_DIR = "baselines"
_POOL_NAMES = re.compile(r"\[(.*?)\]", re.S)

#: DEER's protocol: a chain makes at most one call, whatever the instance (and the decision —
#: NoSearch, NoCall or Call — is the model's to make)
PROTOCOL = ProtocolFacts(published={"chain": "at most one call"}, max_calls=1)


def decision_of(chain: str) -> Decision:
    """NoSearch / NoCall / Call from the markers of a gold chain."""
    if CALL in chain:
        return Decision.CALL
    if NO_CALL in chain:
        return Decision.NO_CALL
    return Decision.NO_SEARCH


def category_of(split: str, decision: Decision) -> str:
    """``"<file>/<decision>"``, e.g. ``"test/Call"``: the breakdown the DEER data is published in
    (test: 445 Call, 298 NoCall; valid: 526 Call, 346 NoCall, 193 NoSearch)."""
    return f"{split}/{decision.value}"


def _literal(text: str, rec: Record, what: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise rec.error(f"{what} is not a Python literal: {exc}") from exc


def tool_from_signature(
    name: str, description: str, api_function: str, meta: dict[str, Any], rec: Record
) -> Tool:
    sig = parse_signature(api_function)
    meta = {"api_function": api_function, **meta}
    if sig.skipped:
        meta["signature_skipped"] = sig.skipped
    try:
        return Tool.build(
            name=name, description=description, parameters=sig.parameters, metadata=meta
        )
    except InputError as exc:
        raise rec.error(exc.problem) from exc


def parse_pool(
    chain: str, rec: Record, cache: dict[str, Tool] | None = None
) -> tuple[list[str], list[Tool]]:
    """The names list and the tools of the ``#SearchAPI#`` section (``cache``: pool line → tool,
    shared across the chains of a file since pools repeat)."""
    section = chain.split(SEARCH, 1)[1]
    for marker in (CALL, NO_CALL, END):
        section = section.split(marker, 1)[0]
    head, _, body = section.partition("\n")
    m = _POOL_NAMES.search(head)
    names = _literal(m.group(0), rec, "the API Pool name list") if m else []
    if not isinstance(names, list):
        raise rec.error("the API Pool name list is not a list")
    tools: list[Tool] = []
    for line in body.split("\n"):
        line = line.strip()
        if not line:
            continue
        if cache is not None and line in cache:
            tools.append(cache[line])
            continue
        d = _literal(line, rec, "an API Pool entry")
        if not isinstance(d, dict) or "api_name" not in d:
            raise rec.error(f"an API Pool entry has no 'api_name': {line[:80]!r}")
        tool = tool_from_signature(
            str(d["api_name"]),
            str(d.get("description", "")),
            str(d.get("api_function", d["api_name"])),
            {"raw": d},
            rec,
        )
        if cache is not None:
            cache[line] = tool
        tools.append(tool)
    return [str(n) for n in names], tools


def gold_call_text(chain: str) -> str:
    text = chain.split(CALL, 1)[1]
    for marker in (RESPONSE, END):
        text = text.split(marker, 1)[0]
    return text.strip()


def instance_from_chain(
    rec: Record, inst_id: str, split: str, cache: dict[str, Tool] | None = None
) -> Instance:
    d = require_object(rec, ("conversations",))
    raw_turns = d["conversations"]
    if not isinstance(raw_turns, list) or not all(isinstance(t, dict) for t in raw_turns):
        raise rec.error("'conversations' must be a list of {from, value}")
    turns = [t for t in raw_turns if isinstance(t, dict)]
    human = [str(t.get("value", "")) for t in turns if t.get("from") in ("human", "user")]
    gpt = [str(t.get("value", "")) for t in turns if t.get("from") in ("gpt", "assistant")]
    if not human or not gpt:
        raise rec.error("a DEER chain needs a human turn and a gpt turn")
    chain = gpt[-1]
    if BEGIN not in chain:
        raise rec.error(f"the gold chain has no {BEGIN} marker")
    decision = decision_of(chain)
    meta: dict[str, Any] = {"gold_chain": chain, "file": str(rec.path), "line": rec.line}
    tools: list[Tool] = []
    if SEARCH in chain:
        names, tools = parse_pool(chain, rec, cache)
        meta["api_pool"] = names
    elif decision is not Decision.NO_SEARCH:
        raise rec.error(f"the chain decides without {SEARCH}")
    gold: list[GoldCall] = []
    if decision is Decision.CALL:
        text = gold_call_text(chain)
        parsed = parse_call_text(text)
        meta["gold_call_text"] = text
        meta["gold_call_parse"] = parsed.method
        if parsed.problems:
            meta["gold_call_problems"] = parsed.problems
        gold = [GoldCall(name=parsed.name, arguments=parsed.arguments)]
    if len(turns) > 2:
        meta["conversations"] = turns
    return Instance(
        id=inst_id,
        query=human[0],
        tools=tools,
        gold=gold,
        decision=decision,
        answer=chain,
        source=SOURCE,
        protocol=PROTOCOL,
        category=category_of(split, decision),
        split=split,
        metadata=meta,
    )


# -- baselines (ToolBench / ToolAlpaca-derived call / no-call sets) ---------------------------


def _toolbench_parameters(params: Any, rec: Record, tool: str) -> dict[str, Any]:
    """ToolBench ``[{name, type, description, default}]`` (or a JSON string of a dict) → schema."""
    if isinstance(params, str):
        try:
            params = json.loads(params) if params.strip() else {}
        except JSON_ERRORS:
            params = _literal(params, rec, f"parameters of {tool!r}")
    props: dict[str, Any] = {}
    if isinstance(params, dict):
        if "properties" in params:
            return object_schema(params.get("properties") or {}, params.get("required") or [])
        params = [{"name": k, **(v if isinstance(v, dict) else {})} for k, v in params.items()]
    if not isinstance(params, list):
        raise rec.error(f"parameters of {tool!r} must be a list or an object")
    for p in params:
        if not isinstance(p, dict) or "name" not in p:
            raise rec.error(f"a parameter of {tool!r} has no name")
        schema = type_schema(p.get("type"), TOOLBENCH_TYPES, fold_case=True)
        if p.get("description"):
            schema["description"] = p["description"]
        if "default" in p:
            schema["default"] = p["default"]
        props[str(p["name"])] = schema
    # the flattened lists do not say which parameters were required
    return object_schema(props, [])


def instance_from_baseline(rec: Record, inst_id: str, split: str) -> Instance:
    d = require_object(rec, ("query", "api_list", "api_label", "is_call"))
    api_list = d["api_list"]
    labels = d["api_label"]
    if not isinstance(api_list, list) or not isinstance(labels, list):
        raise rec.error("'api_list' and 'api_label' must be lists")
    tools: list[Tool] = []
    for a in api_list:
        if not isinstance(a, dict) or not isinstance(a.get("name"), str):
            raise rec.error("each api_list entry needs a 'name' (a string)")
        try:
            tools.append(
                Tool.build(
                    name=a["name"],
                    description=a.get("description") or "",
                    parameters=_toolbench_parameters(a.get("parameters"), rec, str(a["name"])),
                    metadata={"raw": a},
                )
            )
        except InputError as exc:
            raise rec.error(exc.problem) from exc
    is_call = bool(d["is_call"])
    gold: list[GoldCall] = []
    alternatives: list[list[GoldCall]] = []
    if is_call:
        offered = {t.name for t in tools}
        ordered = [lb for lb in labels if lb in offered] + [
            lb for lb in labels if lb not in offered
        ]
        calls = [[GoldCall(name=str(lb))] for lb in ordered]
        if calls:
            gold, alternatives = calls[0], calls[1:]
    return Instance(
        id=inst_id,
        query=str(d["query"]),
        tools=tools,
        gold=gold,
        alternatives=alternatives,
        decision=Decision.CALL if is_call else Decision.NO_CALL,
        source=SOURCE,
        protocol=PROTOCOL,
        category=category_of(split, Decision.CALL if is_call else Decision.NO_CALL),
        split=split,
        metadata={
            "api_label": labels,
            "api_unique": d.get("api_unique"),
            "file": str(rec.path),
            "line": rec.line,
        },
    )


def tool_from_pool_record(rec: Record) -> Tool:
    """One ``tool.json`` record (:func:`~toollab.data.tool_formats.deer_to_tool`)."""
    d = require_object(rec, ("api_name", "api_function"))
    try:
        return deer_to_tool(d)
    except ToolSchemaError as exc:
        raise rec.error(exc.problem) from exc


# -- where a query came from: the deployable mode --------------------------------------------


def index_examples(tools: list[Tool]) -> dict[str, tuple[str, str]]:
    """Query → (tool name, call text) of the ``tool.json`` examples DEER built its samples from
    (the first tool listing a query wins)."""
    out: dict[str, tuple[str, str]] = {}
    for tool in tools:
        for ex in tool.metadata.get("examples") or []:
            if isinstance(ex, dict) and isinstance(ex.get("query"), str):
                out.setdefault(ex["query"], (tool.name, str(ex.get("call", ""))))
    return out


def with_source_call(inst: Instance, examples: dict[str, tuple[str, str]]) -> Instance:
    """A chain that looks up the pool, with ``metadata["source_tool"]`` / ``["source_call"]``:
    the tool and call of the ``tool.json`` example its query is (a NoCall sample's too, whose
    pool lacks that tool), when the example is known."""
    hit = examples.get(inst.query)
    if hit is None or inst.label() is Decision.NO_SEARCH or "api_label" in inst.metadata:
        return inst
    meta = {**inst.metadata, "source_tool": hit[0], "source_call": hit[1]}
    return inst.model_copy(update={"metadata": meta})


def deployable(inst: Instance, tools: list[Tool]) -> Instance:
    """DEER's deployable mode: the candidates are what a retriever found, so the right decision
    follows them: a call (the query's own example call) when its tool is among them, no call
    when it is not.  The gold chain (its pool is the dataset's candidates) is dropped; the
    ``deer`` scorer rebuilds the chain it checks against from the decision and the call."""
    offered = offer_tools(inst, tools)
    tool, call = inst.metadata.get("source_tool"), inst.metadata.get("source_call")
    if not isinstance(tool, str) or not isinstance(call, str):
        return offered
    meta = {
        k: v
        for k, v in offered.metadata.items()
        if k not in ("gold_chain", "gold_call_text", "gold_call_parse", "gold_call_problems")
    }
    meta["api_pool"] = [t.name for t in tools]
    meta["dataset_decision"] = inst.label().value
    meta["source_offered"] = tool in meta["api_pool"]
    if meta["source_offered"]:
        parsed = parse_call_text(call)
        meta["gold_call_text"] = call
        gold = [GoldCall(name=parsed.name, arguments=parsed.arguments)]
        decision = Decision.CALL
    else:
        gold, decision = [], Decision.NO_CALL
    meta["gold_not_offered"] = []  # a left-out tool makes "no call" right: not a miss
    split = inst.split or "deployable"
    return offered.model_copy(
        update={
            "gold": gold,
            "decision": decision,
            "answer": None,
            "category": category_of(split, decision),
            "metadata": meta,
        }
    )


# -- files ------------------------------------------------------------------------------------


def _kind(first: Any) -> str:
    if isinstance(first, dict):
        if "conversations" in first:
            return "chains"
        if "api_list" in first and "is_call" in first:
            return "baseline"
        if "api_function" in first and "api_name" in first:
            return "tools"
    return "unknown"


def read_file(path: Path) -> tuple[str, list[Instance], list[Tool]]:
    """(kind, instances, tools) of one DEER file, whatever it holds."""
    records = list(read_records(path))
    kind = _kind(records[0].data) if records else "chains"
    instances: list[Instance] = []
    tools: list[Tool] = []
    split = path.stem
    cache: dict[str, Tool] = {}
    for rec in records:
        inst_id = f"{split}-{rec.index}"
        if kind == "chains":
            instances.append(instance_from_chain(rec, inst_id, split, cache))
        elif kind == "baseline":
            instances.append(instance_from_baseline(rec, inst_id, split))
        elif kind == "tools":
            tools.append(tool_from_pool_record(rec))
        else:
            raise rec.error(
                "not a DEER file: expected chains {conversations}, baseline items "
                "{query, api_list, api_label, is_call} or tools {api_name, api_function}"
            )
    return kind, instances, tools


def _available(folder: Path) -> dict[str, Path]:
    """split name → file, chains first, then the baselines."""
    out: dict[str, Path] = {}
    for name in CHAIN_FILES:
        if (folder / name).is_file():
            out[Path(name).stem] = folder / name
    for p in sorted(folder.glob("*.json")):
        if p.name != TOOL_FILE and p.stem not in out:
            out[p.stem] = p
    for sub in (folder / BASELINE_DIR, folder / BASELINE_DIR / "data"):
        for p in sorted(sub.glob("*.json")) if sub.is_dir() else []:
            out.setdefault(p.stem, p)
    return out


@register_adapter
class DeerAdapter(Adapter):
    name = "deer"
    default_template = "deer"
    default_agent = "deer"
    aliases = ("tooldeer",)
    description = "DEER: test/valid decision chains, tool.json pool, baselines/ call/no-call sets"

    def load(self, path: Path, *, splits: Any = None) -> Dataset:
        """``path``: the DEER folder or one file; ``splits``: file stems to read from the folder
        (default ``test,valid``; also ``tool_bench``, ``tool_corpus``)."""
        if path.is_dir():
            available = _available(path)
            wanted = as_list(splits, "splits")
            if wanted is None:
                wanted = [s for s in ("test", "valid") if s in available] or list(available)
            check_choices(wanted, list(available), "split")
            files = [available[s] for s in wanted]
            pool_file = path / TOOL_FILE
        else:
            wanted = None
            files = [path]
            pool_file = None
        if not files:
            raise InputError("no DEER files (test.json, valid.json, baselines/*.json)", path=path)
        instances: list[Instance] = []
        tools: list[Tool] = []
        per_file: dict[str, int] = {}
        for f in files:
            kind, part, ftools = read_file(f)
            instances.extend(part)
            tools.extend(ftools)
            per_file[f.name] = len(part) if kind != "tools" else len(ftools)
        if pool_file is not None and pool_file.is_file():
            tools.extend(read_file(pool_file)[2])
        if any("gold_chain" in i.metadata for i in instances):
            # where each query came from (the deployable mode's answer key)
            examples = index_examples(tools)
            beside = path.parent / TOOL_FILE
            if not examples and path.is_file() and beside.is_file():  # a chain file alone:
                examples = index_examples(read_file(beside)[2])  # its tool.json, not pooled
            instances = [with_source_call(i, examples) for i in instances]
        parse_methods: dict[str, int] = {}
        for inst in instances:
            method = inst.metadata.get("gold_call_parse")
            if method:
                parse_methods[method] = parse_methods.get(method, 0) + 1
        details: dict[str, Any] = {"files": per_file}
        if parse_methods:
            details["gold_call_parse"] = parse_methods
        return Dataset(
            name=path.name if path.is_dir() else path.stem,
            format=self.name,
            instances=instances,
            tools=tool_pool([*tools, *(t for i in instances for t in i.tools)]),
            path=path,
            options={"splits": wanted},
            details=details,
        )

    def offered(self, instance: Instance, tools: list[Tool]) -> Instance:
        """Retrieval in the loop is DEER's deployable mode (:func:`deployable`)."""
        return deployable(instance, tools)

    def load_tools(self, path: Path, **options: Any) -> list[Tool]:
        """``tool.json`` (or the folder holding it) → the tool pool."""
        file = path / TOOL_FILE if path.is_dir() else path
        kind, instances, tools = read_file(file)
        if kind != "tools":
            return tool_pool(t for i in instances for t in i.tools)
        return tools
