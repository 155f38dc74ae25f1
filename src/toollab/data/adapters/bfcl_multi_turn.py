"""BFCL v4's executable multi-turn categories: ``BFCL_v4_multi_turn_<category>.json``.

A folder (or one question file) of BFCL data holding ``BFCL_v4_multi_turn_{base, miss_func,
miss_param, long_context}.json`` with their answers in ``possible_answer/``.  The function docs
of each backend class are BFCL's ``multi_turn_func_doc/`` (beside the questions, else the copy
installed with ``bfcl-eval``, the ``[bfcl]`` extra: the docs describe its classes).  As BFCL's
loader does (``populate_test_cases_with_predefined_functions``), an entry offers the docs of its
``involved_classes`` at the start, except the functions ``missed_function`` holds back; those are
offered at their turn.

Each entry becomes one :class:`Instance`: ``tools`` the functions offered at the start (the docs
verbatim in ``metadata["raw"]``; the ``python`` template appends BFCL's language note as BFCL
does), ``messages`` the user messages in order, ``metadata["bfcl_multi_turn"]`` the episode's
inputs (:class:`~toollab.data.bfcl_multi_turn.EpisodeInputs`), ``metadata["ground_truth"]`` the
call strings per turn and ``gold`` the same calls in order (positional arguments named after the
doc's parameters), ``metadata["gold_turns"]`` the number of gold calls per turn.  The format is
evaluation only: ``toollab data sft`` refuses it.

A missing field, an unknown class, a function no involved class has, a ground truth that is not
one list of Python call strings per turn, or a held-out turn with a user message is an
:class:`InputError` naming the file, line and entry id.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from toollab.data.adapters.bfcl import (
    ANSWER_DIR,
    QUESTION_FILE,
    convert_schema,
    tool_from_doc,
)
from toollab.data.base import Adapter, Dataset, as_list, as_path, check_choices, register_adapter
from toollab.data.base import tool_pool as pool_of
from toollab.data.bfcl_multi_turn import (
    GOLD_TURNS,
    GROUND_TRUTH,
    KEY,
    CallSyntaxError,
    EpisodeInputs,
    parse_call,
)
from toollab.data.jsonl import Record, read_records, require_object
from toollab.errors import InputError, UsageError
from toollab.schema import Decision, GoldCall, Instance, ProtocolFacts, Tool
from toollab.schema.json import JsonObject

SOURCE = "bfcl-multi-turn"
FUNC_DOC_DIR = "multi_turn_func_doc"
#: the backend classes of the four multi-turn categories, with their doc files (BFCL's
#: ``MULTI_TURN_FUNC_DOC_FILE_MAPPING``; web search and memory belong to the agentic categories)
CLASS_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
INSTALL_HINT = "install the [bfcl] extra: pip install --no-deps bfcl-eval==2026.3.23"


def installed_doc_dir() -> Path:
    """``multi_turn_func_doc/`` of the installed ``bfcl-eval``."""
    try:
        import bfcl_eval  # optional extra: only this format needs it
    except ImportError:
        raise UsageError(
            f"the bfcl-multi-turn format needs BFCL's package: {INSTALL_HINT}"
        ) from None
    return Path(bfcl_eval.__file__).parent / "data" / FUNC_DOC_DIR


@cache
def _docs_of(path: Path) -> tuple[dict[str, Any], ...]:
    docs = []
    for rec in read_records(path):
        d = require_object(rec, ("name",))
        docs.append(d)
    return tuple(docs)


def class_docs(doc_dir: Path, cls: str) -> list[dict[str, Any]]:
    """The function docs of one backend class (fresh copies)."""
    return json.loads(json.dumps(_docs_of(doc_dir / CLASS_DOC_FILES[cls])))


def doc_tool(doc: JsonObject) -> Tool:
    """One BFCL function doc as a tool (the doc verbatim in ``metadata["raw"]``)."""
    schema = convert_schema(doc.get("parameters")) if doc.get("parameters") else None
    if isinstance(schema, dict):
        schema.setdefault("properties", {})
        schema.setdefault("required", [])
    return Tool.build(
        name=str(doc["name"]),
        description=str(doc.get("description") or ""),
        parameters=schema,
        metadata={"raw": doc},
    )


def _kwargs(
    name: str, args: list[Any], kwargs: dict[str, Any], doc: dict[str, Any]
) -> dict[str, Any]:
    """Positional ground-truth arguments named after the doc's parameters, in order."""
    params = list((doc.get("parameters") or {}).get("properties") or {})
    if len(args) > len(params):
        raise ValueError(f"{name}: {len(args)} positional arguments, the doc has {len(params)}")
    return {**dict(zip(params, args, strict=False)), **kwargs}


def _entry(rec: Record, arec: Record, category: str, doc_dir: Path) -> Instance:
    d = require_object(rec, ("id",))
    inst_id = str(d["id"])

    def bad(problem: str) -> InputError:
        return InputError(problem, path=rec.path, line=rec.line, where=f"entry {inst_id!r}")

    missing = [k for k in ("question", "initial_config", "involved_classes") if k not in d]
    if missing:
        raise bad(
            "missing field" + ("s " if len(missing) > 1 else " ") + ", ".join(map(repr, missing))
        )

    raw_classes = d["involved_classes"]
    if not isinstance(raw_classes, list) or not raw_classes:
        raise bad("'involved_classes' must be a non-empty list of class names")
    classes = [c for c in raw_classes if isinstance(c, str)]
    if len(classes) != len(raw_classes):
        raise bad("'involved_classes' must be a non-empty list of class names")
    for cls in classes:
        if cls not in CLASS_DOC_FILES:
            raise bad(
                f"unknown class {cls!r}; BFCL's multi-turn classes: {', '.join(CLASS_DOC_FILES)}"
            )
    if not isinstance(d["initial_config"], dict):
        raise bad("'initial_config' must be an object (class name → initial state)")
    question = d["question"]
    if not isinstance(question, list) or not question:
        raise bad("'question' must be a non-empty list of turns")
    docs = [doc for cls in classes for doc in class_docs(doc_dir, cls)]
    by_name = {doc["name"]: doc for doc in docs}
    missed_raw = d.get("missed_function") or {}
    if not isinstance(missed_raw, dict):
        raise bad("'missed_function' must be an object (turn index → function names)")
    missed: dict[str, list[dict[str, Any]]] = {}
    for key, names in missed_raw.items():
        if not str(key).isdigit() or int(key) >= len(question):
            raise bad(f"missed_function: {key!r} is not a turn of the entry")
        if not isinstance(names, list) or not all(
            isinstance(n, str) and n in by_name for n in names
        ):
            raise bad(f"missed_function[{key!r}]: must list functions of the involved classes")
        missed[str(key)] = [by_name[str(n)] for n in names]
    held = {n for docs_ in missed.values() for n in (doc["name"] for doc in docs_)}
    turns: list[list[dict[str, Any]]] = []
    for i, turn in enumerate(question):
        if not isinstance(turn, list) or not all(
            isinstance(m, dict) and isinstance(m.get("content"), str) for m in turn
        ):
            raise bad(f"question[{i}] must be a list of messages with 'role' and 'content'")
        messages_i = [dict(m) for m in turn if isinstance(m, dict)]
        users = [m for m in messages_i if m.get("role") == "user"]
        if str(i) in missed:
            if turn:
                raise bad(f"question[{i}]: a turn that offers held-out functions has no message")
        elif len(users) != 1:
            raise bad(f"question[{i}] must hold one user message, not {len(users)}")
        turns.append(messages_i)
    raw_truth = require_object(arec, ("id", "ground_truth"))["ground_truth"]
    if not isinstance(raw_truth, list) or not all(
        isinstance(t, list) and all(isinstance(c, str) for c in t) for t in raw_truth
    ):
        raise bad(
            f"ground truth ({arec.path}:{arec.line}) must be one list of call strings per turn"
        )
    truth = [[str(c) for c in t] for t in raw_truth if isinstance(t, list)]
    if len(truth) != len(turns):
        raise bad(f"the ground truth has {len(truth)} turns, the question {len(turns)}")
    gold: list[GoldCall] = []
    for t, calls in enumerate(truth):
        for c in calls:
            try:
                name, args, kwargs = parse_call(c)
                if name not in by_name:
                    raise CallSyntaxError(f"{name!r} is no function of {', '.join(classes)}")
                gold.append(
                    GoldCall(name=name, arguments=_kwargs(name, args, kwargs, by_name[name]))
                )
            except (CallSyntaxError, ValueError) as exc:
                raise bad(f"ground truth turn {t}: {c!r}: {exc}") from None
    inputs = EpisodeInputs(
        turns=turns,
        initial_config=d["initial_config"],
        involved_classes=list(classes),
        missed_function=missed,
        long_context="long_context" in category,
    )
    tools = [tool_from_doc(doc, rec) for doc in docs if doc["name"] not in held]
    messages = [m for t in turns for m in t if m.get("role") == "user"]
    extra = {
        k: v
        for k, v in d.items()
        if k not in ("id", "question", "initial_config", "involved_classes", "missed_function")
    }
    return Instance(
        id=inst_id,
        query=str(messages[0]["content"]) if messages else "",
        messages=messages,
        tools=tools,
        gold=gold,
        decision=Decision.CALL,
        source=SOURCE,
        category=category,
        # the category is published; a step may hold any number of calls, or none
        protocol=ProtocolFacts(published={"category": category}),
        split="test",
        metadata={
            KEY: inputs.model_dump(mode="json"),
            GROUND_TRUTH: truth,
            GOLD_TURNS: [len(t) for t in truth],
            "file": str(rec.path),
            "line": rec.line,
            **({"extra": extra} if extra else {}),
        },
    )


def load_file(qfile: Path, category: str, answer_dir: Path, doc_dir: Path) -> list[Instance]:
    afile = answer_dir / qfile.name
    if not afile.is_file():
        raise InputError(f"no ground-truth file for {category!r} (expected {afile})", path=qfile)
    answers: dict[str, Record] = {}
    for arec in read_records(afile):
        answers[str(require_object(arec, ("id", "ground_truth"))["id"])] = arec
    out = []
    for rec in read_records(qfile):
        d = require_object(rec, ("id",))
        answer = answers.get(str(d["id"]))
        if answer is None:
            raise rec.error(f"entry {d['id']!r}: no ground truth in {afile}")
        out.append(_entry(rec, answer, category, doc_dir))
    return out


@register_adapter
class BFCLMultiTurnAdapter(Adapter):
    name = "bfcl-multi-turn"
    default_template = "python"
    default_agent = "bfcl-multi-turn"
    evaluation_only = True
    description = (
        "BFCL v4 multi-turn: BFCL_v4_multi_turn_<category>.json + possible_answer/, executed on "
        "BFCL's backend classes (needs the [bfcl] extra)"
    )

    def load(
        self,
        path: Path,
        *,
        categories: Any = None,
        answers: str | Path | None = None,
        func_docs: str | Path | None = None,
    ) -> Dataset:
        """``path``: a BFCL data folder or one multi-turn question file; ``categories``: restrict
        (comma list, e.g. ``base,miss_func``); ``answers``: the possible_answer folder when it is
        not beside the questions; ``func_docs``: BFCL's ``multi_turn_func_doc`` folder."""
        if path.is_dir():
            folder = path
            files: dict[str, Path] = {}
            for p in sorted(path.glob("BFCL_v*_multi_turn_*.json")):
                m = QUESTION_FILE.match(p.name)
                if m:
                    files.setdefault(m.group(2), p)
        else:
            m = QUESTION_FILE.match(path.name)
            if not m or not m.group(2).startswith("multi_turn_"):
                raise InputError(
                    "not a BFCL multi-turn file (BFCL_v<N>_multi_turn_<category>.json)", path=path
                )
            folder = path.parent
            files = {m.group(2): path}
        if not files:
            raise InputError(
                "no BFCL multi-turn files (BFCL_v<N>_multi_turn_<category>.json)", path=path
            )
        wanted = as_list(categories, "categories")
        if wanted is not None:
            wanted = [w if w.startswith("multi_turn_") else f"multi_turn_{w}" for w in wanted]
            check_choices(wanted, list(files), "category")
            files = {c: f for c, f in files.items() if c in wanted}
        answer_dir = as_path(answers, "answers") or folder / ANSWER_DIR
        doc_dir = as_path(func_docs, "func_docs") or (
            folder / FUNC_DOC_DIR if (folder / FUNC_DOC_DIR).is_dir() else installed_doc_dir()
        )
        for cls, fname in CLASS_DOC_FILES.items():
            if not (doc_dir / fname).is_file():
                raise InputError(f"no function docs of {cls} ({fname})", path=doc_dir)
        instances: list[Instance] = []
        for category, qfile in files.items():
            instances.extend(load_file(qfile, category, answer_dir, doc_dir))
        return Dataset(
            name=folder.name if path.is_dir() else path.stem,
            format=self.name,
            instances=instances,
            tools=pool_of(t for inst in instances for t in inst.tools),
            path=path,
            options={"categories": wanted, "answers": str(answer_dir)},
            details={
                "files": {c: f.name for c, f in files.items()},
                "answers": str(answer_dir),
                "func_docs": str(doc_dir),
            },
        )
