"""BFCL (Berkeley Function-Calling Leaderboard) question files with their possible answers.

* ``BFCL_v4_<category>.json``: JSON lines ``{id, question: [[{role, content}]], function: [...]}``.
* ``possible_answer/BFCL_v4_<category>.json``: ``{id, ground_truth: [{fn: {param: [values]}}]}``,
  where ``""`` among the values means the parameter may be omitted.
* Irrelevance categories have no answer file: the right answer is no call.

Each function doc becomes a :class:`Tool` (BFCL types → JSON Schema, the doc verbatim in
``metadata["raw"]``).  Each ground-truth entry becomes a :class:`GoldCall` whose ``acceptable``
holds the possible-answer lists verbatim and whose ``arguments`` hold the first acceptable value
that is not ``""``.  The raw ``function`` list and ``ground_truth`` stay in the instance metadata
so the AST checker can run on exactly the upstream inputs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from toollab.data.base import (
    Adapter,
    Dataset,
    as_list,
    as_path,
    check_choices,
    register_adapter,
    tool_pool,
)
from toollab.data.jsonl import Record, read_records, require_object
from toollab.data.types import BFCL_LOSSY, BFCL_TYPES, ORIGINAL_TYPE
from toollab.errors import InputError
from toollab.schema import Decision, GoldCall, Instance, ProtocolFacts, Tool
from toollab.schema.json import JsonValue

SOURCE = "bfcl"
QUESTION_FILE = re.compile(r"^BFCL_(v\d+)_(.+)\.json$")
ANSWER_DIR = "possible_answer"
#: the order categories are read in (others follow alphabetically)
CATEGORY_ORDER = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")


def protocol_facts(category: str) -> ProtocolFacts:
    """What BFCL publishes for every instance of a category file: the file's category, which
    fixes the answer shape for every model on the leaderboard (one call in ``simple*`` and
    ``multiple``, several in ``parallel*``; no call is the answer in the relevance files)."""
    return ProtocolFacts(
        published={"category": category},
        max_calls=None if "parallel" in category else 1,
        no_call="relevance" in category,
    )


def convert_schema(spec: Any) -> Any:
    """A BFCL parameter schema → JSON Schema (recursively; other keys kept as they are)."""
    if not isinstance(spec, dict):
        return spec
    out: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "type" and isinstance(value, str):
            mapped = BFCL_TYPES.get(value, value)
            if value not in BFCL_TYPES:
                out[ORIGINAL_TYPE] = value
            elif mapped is not None:
                out["type"] = mapped
            if value in BFCL_LOSSY:
                out[ORIGINAL_TYPE] = value
        elif key == "properties" and isinstance(value, dict):
            out[key] = {k: convert_schema(v) for k, v in value.items()}
        elif key == "items":
            out[key] = convert_schema(value)
        else:
            out[key] = value
    return out


def tool_from_doc(doc: Any, rec: Record) -> Tool:
    if not isinstance(doc, dict) or "name" not in doc:
        raise rec.error("each entry of 'function' must be an object with a 'name'")
    params = doc.get("parameters")
    if params is not None and not isinstance(params, dict):
        raise rec.error(f"function {doc['name']!r}: 'parameters' must be an object")
    schema = convert_schema(params) if params else None
    if isinstance(schema, dict):
        schema.setdefault("properties", {})
        schema.setdefault("required", [])
    try:
        return Tool.build(
            name=doc["name"],
            description=doc.get("description") or "",
            parameters=schema,
            metadata={"raw": doc},
        )
    except InputError as exc:
        raise rec.error(exc.problem) from exc


def canonical_value(value: Any) -> Any:
    """The plain value a possible-answer entry stands for.

    A dict-valued answer is itself ``{key: [acceptable...]}`` (BFCL's ``dict_checker``) and a
    list of such dicts is checked position by position, so they are unwrapped to the first
    acceptable value per key; keys whose only option is ``""`` (may be omitted) are left out.
    """
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, options in value.items():
            if not isinstance(options, list):
                out[k] = options
                continue
            first = next((o for o in options if o != ""), None)
            if first is not None or None in options:
                out[k] = canonical_value(first)
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [canonical_value(v) for v in value]
    return value


def gold_from_ground_truth(
    ground_truth: Any, rec: Record, declared: dict[str, set[str]] | None = None
) -> list[GoldCall]:
    """``[{fn: {param: [acceptable]}}]`` → gold calls.

    ``arguments`` hold the first non-``""`` acceptable value of each parameter (unwrapped, see
    :func:`canonical_value`); a parameter the function doc does not declare is left out when it
    may be omitted (upstream's checker would reject it as unexpected).  ``acceptable`` keeps the
    lists verbatim for the scorer.
    """
    if not isinstance(ground_truth, list):
        raise rec.error("'ground_truth' must be a list")
    gold: list[GoldCall] = []
    for i, entry in enumerate(ground_truth):
        if not isinstance(entry, dict) or len(entry) != 1:
            raise rec.error(f"ground_truth[{i}] must be one {{function: {{param: [values]}}}}")
        ((name, params),) = entry.items()
        if not isinstance(params, dict):
            raise rec.error(f"ground_truth[{i}] ({name!r}): parameters must be an object")
        known = (declared or {}).get(name)
        args: dict[str, Any] = {}
        acceptable: dict[str, list[Any]] = {}
        for param, values in params.items():
            if not isinstance(values, list):
                raise rec.error(
                    f"ground_truth[{i}] ({name!r}): acceptable values of {param!r} must be a list"
                )
            acceptable[param] = values
            if known is not None and param not in known and "" in values:
                continue
            for v in values:
                if v != "":
                    args[param] = canonical_value(v)
                    break
        gold.append(GoldCall(name=name, arguments=args, acceptable=acceptable))
    return gold


def _query(question: JsonValue, rec: Record) -> tuple[str, list[dict[str, Any]]]:
    """The user message of the first turn, and every message of every turn."""
    if not isinstance(question, list) or not question:
        raise rec.error("'question' must be a non-empty list of turns")
    raw_turns = [t if isinstance(t, list) else [t] for t in question]
    if not all(isinstance(m, dict) and "role" in m for t in raw_turns for m in t):
        raise rec.error("each message of 'question' must be an object with 'role'")
    turns = [[m for m in t if isinstance(m, dict)] for t in raw_turns]
    messages: list[dict[str, Any]] = [m for t in turns for m in t]
    first_users = [m for m in turns[0] if m.get("role") == "user"]
    users = first_users or [m for m in messages if m.get("role") == "user"]
    query = str(users[-1].get("content", "")) if users else ""
    return query, messages


def language_of(category: str) -> str:
    if "java" in category and "javascript" not in category:
        return "java"
    if "javascript" in category:
        return "javascript"
    return "python"


def question_files(folder: Path) -> dict[str, Path]:
    """category → question file, in the canonical order."""
    found: dict[str, Path] = {}
    for p in sorted(folder.glob("BFCL_v*_*.json")):
        m = QUESTION_FILE.match(p.name)
        if m:
            found.setdefault(m.group(2), p)
    order = [c for c in CATEGORY_ORDER if c in found] + sorted(
        c for c in found if c not in CATEGORY_ORDER
    )
    return {c: found[c] for c in order}


def _answer_map(path: Path) -> dict[str, Record]:
    out: dict[str, Record] = {}
    for rec in read_records(path):
        d = require_object(rec, ("id", "ground_truth"))
        out[str(d["id"])] = rec
    return out


def load_category(category: str, qfile: Path, answer_dir: Path) -> list[Instance]:
    afile = answer_dir / qfile.name
    no_answer = "irrelevance" in category or "relevance" in category
    answers: dict[str, Record] | None = None
    if afile.is_file():
        answers = _answer_map(afile)
    elif not no_answer:
        raise InputError(
            f"no possible-answer file for category {category!r} (expected {afile})", path=qfile
        )
    instances: list[Instance] = []
    for rec in read_records(qfile):
        d = require_object(rec, ("id", "question", "function"))
        inst_id = str(d["id"])
        query, messages = _query(d["question"], rec)
        docs = d["function"]
        if not isinstance(docs, list):
            raise rec.error("'function' must be a list of function docs")
        tools = [tool_from_doc(doc, rec) for doc in docs]
        meta: dict[str, Any] = {
            "function": docs,
            "question": d["question"],
            "language": language_of(category),
            "file": str(qfile),
            "line": rec.line,
        }
        gold: list[GoldCall] = []
        decision = Decision.NO_CALL if "irrelevance" in category else Decision.CALL
        if answers is not None:
            arec = answers.get(inst_id)
            if arec is None:
                raise rec.error(f"no possible answer for {inst_id!r} in {afile}")
            ground_truth = arec.data["ground_truth"]
            meta["ground_truth"] = ground_truth
            if ground_truth and all(isinstance(g, dict) for g in ground_truth):
                declared = {t.name: set(t.properties) for t in tools}
                gold = gold_from_ground_truth(ground_truth, arec, declared)
        extra = {k: v for k, v in d.items() if k not in ("id", "question", "function")}
        if extra:
            meta["extra"] = extra
        instances.append(
            Instance(
                id=inst_id,
                query=query,
                messages=messages,
                tools=tools,
                gold=gold,
                decision=decision,
                source=SOURCE,
                category=category,
                protocol=protocol_facts(category),
                split="test",
                metadata=meta,
            )
        )
    return instances


@register_adapter
class BFCLAdapter(Adapter):
    name = "bfcl"
    default_template = "python"
    aliases = ("gorilla", "berkeley")
    description = (
        "BFCL v4: BFCL_v4_<category>.json + possible_answer/ (AST categories, irrelevance)"
    )

    def load(
        self, path: Path, *, categories: Any = None, answers: str | Path | None = None
    ) -> Dataset:
        """``path``: the BFCL data folder or one question file; ``categories``: restrict (comma list);
        ``answers``: the possible_answer folder when it is not beside the questions."""
        if path.is_dir():
            files = question_files(path)
            folder = path
        else:
            m = QUESTION_FILE.match(path.name)
            if not m:
                raise InputError("not a BFCL question file (BFCL_v<N>_<category>.json)", path=path)
            files = {m.group(2): path}
            folder = path.parent
        if not files:
            raise InputError("no BFCL question files (BFCL_v<N>_<category>.json)", path=path)
        wanted = as_list(categories, "categories")
        if wanted is not None:
            check_choices(wanted, list(files), "category")
            files = {c: f for c, f in files.items() if c in wanted}
        answer_dir = as_path(answers, "answers") or folder / ANSWER_DIR
        instances: list[Instance] = []
        per_cat: dict[str, int] = {}
        for category, qfile in files.items():
            part = load_category(category, qfile, answer_dir)
            per_cat[category] = len(part)
            instances.extend(part)
        return Dataset(
            name=folder.name if path.is_dir() else path.stem,
            format=self.name,
            instances=instances,
            tools=tool_pool(t for inst in instances for t in inst.tools),
            path=path,
            options={"categories": wanted, "answers": str(answer_dir)},
            details={"files": {c: f.name for c, f in files.items()}, "answers": str(answer_dir)},
        )
