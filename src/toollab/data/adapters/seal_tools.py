"""Seal-Tools (fairyshine/Seal-Tools): ``tool.jsonl`` + test files with ``calling`` lists.

* A record is ``{id, query, calling: [{api, parameters, responses}]}``.  ``responses`` labels a
  call's outputs (``"API_call_N"``); a later parameter whose value is such a label is a nested call.
  Gold calls keep the labels as ``outputs`` and the references are linked into :class:`Ref`
  objects, so ``GoldCall.to_seal()`` gives back the upstream ``calling`` exactly (it is also kept
  verbatim in ``metadata["calling"]`` for the ``str()`` comparison of the upstream scorer).
* Tools come from ``tool.jsonl`` and are read as tool pools read them
  (:func:`toollab.tools.formats.seal_to_tool`): Python type names become JSON Schema and
  ``responses`` becomes the tool's ``returns`` object schema (ordered: the n-th label is the
  n-th field).
* The upstream prompt offers an ``api_list`` of 5 tools per query (retrieved: it misses the gold
  tool in 2 in-domain and 3 out-of-domain calls).  The lists are in the prompt files
  ``dataset_for_finetune/<split>.json`` of the upstream dataset folder, not in the jsonl files.
  When those files lie beside the instance files they are read by default, and each instance
  offers exactly its prompt's ``api_list`` (``metadata["gold_not_offered"]`` names gold tools
  the list lacks: the retriever errors of the upstream error analysis); ``-o api_lists=PATH,...``
  names them elsewhere.  Without them an instance offers only the tools its gold calls use,
  which makes tool selection easier than upstream: ``metadata["api_list_available"]`` is then
  false and the dataset carries a :class:`~toollab.data.base.DataNote` saying so and why (no
  prompt files beside the data; the files read do not hold every instance's id; or
  ``-o api_lists=none``, which asks for this setting on purpose, and the note says that).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any, cast

from toollab.data.base import (
    Adapter,
    Dataset,
    as_list,
    as_path,
    check_choices,
    note,
    register_adapter,
    tool_pool,
)
from toollab.data.jsonl import Record, iter_jsonl, read_records, read_text, require_object
from toollab.data.tool_formats import seal_to_tool
from toollab.errors import InputError
from toollab.schema import (
    Decision,
    GoldCall,
    Instance,
    ProtocolFacts,
    Tool,
    ToolCall,
    link_calls,
)

SOURCE = "seal-tools"
TOOL_FILE = "tool.jsonl"
#: files of a Seal-Tools folder that hold no instances
NON_INSTANCE_FILES = {"tool.jsonl", "field.jsonl"}
#: the test files, in the order they are read; other ``*.jsonl`` with ``calling`` follow
MAIN_FILES = ("test_in_domain.jsonl", "test_out_domain.jsonl")
SEAL_LABEL = re.compile(r"^API_call_\d+$")
#: folder of the upstream prompt files (``<split>.json``, with each query's 5-tool ``api_list``)
PROMPT_DIR = "dataset_for_finetune"
#: ``-o api_lists=`` values that ask for the gold tools only
GOLD_ONLY = ("none", "gold")

#: Seal-Tools' protocol: every query is answered with one or more calls.  The call count is not
#: published (``category`` — single / multiple / nested — derives from the gold calls, so it is a
#: reporting label only and never shapes a request)
PROTOCOL = ProtocolFacts(published={"answer": "one or more calls"}, no_call=False)


def tool_from_record(rec: Record) -> Tool:
    """One ``tool.jsonl`` line → :class:`Tool` (raw record in ``metadata["raw"]``)."""
    d = require_object(rec, ("api_name",))
    try:
        tool = seal_to_tool(d)
    except InputError as exc:
        raise rec.error(exc.problem) from exc
    meta: dict[str, Any] = {"raw": d}
    if "example" in d:
        meta["example"] = d["example"]
    return tool.model_copy(update={"metadata": meta})


def read_tools(path: Path) -> dict[str, Tool]:
    tools: dict[str, Tool] = {}
    for rec in iter_jsonl(path):
        tool = tool_from_record(rec)
        if tool.name in tools:
            raise rec.error(f"tool {tool.name!r} is defined twice")
        tools[tool.name] = tool
    return tools


def _has_label(value: Any) -> bool:
    if isinstance(value, str):
        return bool(SEAL_LABEL.match(value))
    if isinstance(value, list):
        return any(_has_label(v) for v in value)
    if isinstance(value, dict):
        return any(_has_label(v) for v in value.values())
    return False


def _unresolved(value: Any, known: set[str]) -> list[str]:
    if isinstance(value, str):
        return [value] if SEAL_LABEL.match(value) and value not in known else []
    if isinstance(value, list):
        return [x for v in value for x in _unresolved(v, known)]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _unresolved(v, known)]
    return []


def difficulty_of(inst_id: str) -> str | None:
    """Upstream splits easy/difficult by the substring ``"easy"`` in the id."""
    if "easy" in inst_id:
        return "easy"
    if "difficult" in inst_id:
        return "difficult"
    return None


def instance_from_record(
    rec: Record, tools: dict[str, Tool], split: str, tool_file: Path
) -> Instance:
    d = require_object(rec, ("id", "query", "calling"))
    calling = d["calling"]
    if not isinstance(calling, list):
        raise rec.error("'calling' must be a list of {api, parameters, responses}")
    calls: list[GoldCall] = []
    offered: list[Tool] = []
    labels: set[str] = set()
    unresolved: list[str] = []
    for i, c in enumerate(calling):
        if not isinstance(c, dict) or "api" not in c:
            raise rec.error(f"call {i} must be an object with 'api', 'parameters', 'responses'")
        name = c["api"]
        params = c.get("parameters") or {}
        responses = c.get("responses") or []
        if not isinstance(name, str):
            raise rec.error(f"call {i}: 'api' must be a tool name (a string)")
        if not isinstance(params, dict):
            raise rec.error(f"call {i} ({name!r}): 'parameters' must be an object")
        if not isinstance(responses, list) or not all(isinstance(r, str) for r in responses):
            raise rec.error(f"call {i} ({name!r}): 'responses' must be a list of labels")
        tool = tools.get(name)
        if tool is None:
            raise rec.error(f"call {i} uses tool {name!r}, which {tool_file} does not define")
        if all(t.name != name for t in offered):
            offered.append(tool)
        outputs = [r for r in responses if isinstance(r, str)]  # checked above
        unresolved.extend(_unresolved(params, labels))
        labels.update(outputs)
        calls.append(GoldCall(name=name, arguments=dict(params), outputs=outputs))
    return_fields = {t.name: t.return_fields for t in offered}
    linked = cast(list[GoldCall], link_calls(cast(list[ToolCall], calls), return_fields))
    nested = any(_has_label(c.get("parameters") or {}) for c in calling if isinstance(c, dict))
    category = "nested" if nested else ("multiple" if len(calls) > 1 else "single")
    if not calls:
        category = "none"
    meta: dict[str, Any] = {
        "calling": calling,
        "difficulty": difficulty_of(str(d["id"])),
        "api_list": None,
        "api_list_available": False,
        "file": str(rec.path),
        "line": rec.line,
    }
    if unresolved:
        meta["unresolved_refs"] = unresolved
    return Instance(
        id=str(d["id"]),
        query=str(d["query"]),
        tools=offered,
        gold=linked,
        decision=Decision.CALL if calls else Decision.NO_CALL,
        source=SOURCE,
        category=category,
        protocol=PROTOCOL,
        split=split,
        metadata=meta,
    )


_API_LIST = re.compile(r"api_list\s*=\s*(\[.*?\])\s*\n\s*task_instruction", re.S)


def read_api_lists(path: Path) -> dict[str, list[Any]]:
    """id → the ``api_list`` of the upstream prompt (``{id, conversations: [human, gpt]}``)."""
    out: dict[str, list[Any]] = {}
    for rec in read_records(path):
        d = require_object(rec, ("id", "conversations"))
        turns = d["conversations"]
        human = (
            next(
                (
                    t.get("value", "")
                    for t in turns
                    if isinstance(t, dict) and t.get("from") == "human"
                ),
                None,
            )
            if isinstance(turns, list)
            else None
        )
        if not isinstance(human, str):
            raise rec.error("no human turn in 'conversations'")
        m = _API_LIST.search(human)
        if not m:
            raise rec.error("the human turn has no 'api_list = [...]' before 'task_instruction'")
        try:
            api_list = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError) as exc:
            raise rec.error(f"api_list is not a Python literal: {exc}") from exc
        if not isinstance(api_list, list):
            raise rec.error("api_list is not a list")
        out[str(d["id"])] = api_list
    return out


def with_api_list(
    inst: Instance, api_list: list[Any], tools: dict[str, Tool], rec: Record
) -> Instance:
    """Offer the prompt's api_list (tool.jsonl definitions where the names match)."""
    offered: list[Tool] = []
    for entry in api_list:
        if not isinstance(entry, dict) or "api_name" not in entry:
            raise rec.error(f"an api_list entry of {inst.id!r} has no 'api_name'")
        known = tools.get(str(entry["api_name"]))
        offered.append(
            known
            if known is not None
            else tool_from_record(Record(entry, rec.path, rec.line, rec.index))
        )
    names = {t.name for t in offered}
    meta = dict(inst.metadata)
    meta["api_list"] = api_list
    meta["api_list_available"] = True
    meta["gold_not_offered"] = [c.name for c in inst.gold if c.name not in names]
    return inst.model_copy(update={"tools": offered, "metadata": meta})


def _prompt_files(api_lists: Any, folder: Path, files: list[Path]) -> list[Path]:
    """The upstream prompt files to take the offered ``api_list`` from: ``api_lists`` when given
    (``none`` = none), else ``dataset_for_finetune/<split>.json`` of each instance file that has
    one beside it."""
    if isinstance(api_lists, str) and api_lists.strip().lower() in GOLD_ONLY:
        return []
    given = as_list(api_lists, "api_lists")
    if given is not None:
        return [p for p in (as_path(v, "api_lists") for v in given) if p is not None]
    found = [folder / PROMPT_DIR / f"{f.stem}.json" for f in files]
    return [p for p in found if p.is_file()]


def _gold_only_note(
    missing: int, total: int, api_lists: Any, prompt_files: list[Path], folder: Path
) -> str:
    """What the ``missing`` instances without an upstream ``api_list`` offer, and why: asked for
    (``-o api_lists=none``), not in the prompt files read, or no prompt files found."""
    what = (
        f"Seal-Tools: {missing} of {total} instances offer only the tools their gold calls use, "
        "not the upstream prompt's 5-tool api_list"
    )
    easier = "tool selection is easier than upstream"
    if isinstance(api_lists, str) and api_lists.strip().lower() in GOLD_ONLY:
        return f"{what}, as asked with -o api_lists={api_lists.strip()}; {easier}."
    if prompt_files:
        read = ", ".join(str(p) for p in prompt_files)
        return (
            f"{what}: their ids are not in the prompt file(s) read ({read}); {easier} for "
            "them. Give the prompt files of every split read with -o api_lists=PATH[,PATH]."
        )
    given = as_list(api_lists, "api_lists")
    where = (
        "no prompt file was given"
        if given is not None
        else f"{PROMPT_DIR}/<split>.json is not beside {folder}"
    )
    return f"{what} ({where}); {easier}. Give the prompt files with -o api_lists=PATH[,PATH]."


def _is_instance_file(path: Path) -> bool:
    """A ``*.jsonl`` whose first record has a ``calling`` list."""
    text = read_text(path)
    for line in text.splitlines():
        if line.strip():
            return '"calling"' in line
    return False


def _instance_files(folder: Path) -> list[Path]:
    files = [folder / f for f in MAIN_FILES if (folder / f).is_file()]
    for p in sorted(folder.glob("*.jsonl")):
        if p.name in NON_INSTANCE_FILES or p.name in MAIN_FILES:
            continue
        if _is_instance_file(p):
            files.append(p)
    return files


@register_adapter
class SealToolsAdapter(Adapter):
    name = "seal-tools"
    default_template = "seal"
    aliases = ("seal", "sealtools")
    description = "Seal-Tools: tool.jsonl + test_in_domain/test_out_domain.jsonl (nested calls)"

    def load(
        self,
        path: Path,
        *,
        tools: str | Path | None = None,
        splits: Any = None,
        api_lists: Any = None,
    ) -> Dataset:
        """``path``: the Seal-Tools folder or one instance file; ``tools``: tool.jsonl elsewhere;
        ``splits``: file stems to read (e.g. ``dev`` or ``test_in_domain``; default: the two test
        splits where the folder has them, else every instance file); ``api_lists``: upstream prompt
        files (``dataset_for_finetune/test_*.json``, comma-separated) whose 5-tool ``api_list``
        becomes each instance's offered tools (default: those beside the instance files;
        ``none``: offer only the gold tools)."""
        folder = path if path.is_dir() else path.parent
        tool_file = as_path(tools, "tools") or folder / TOOL_FILE
        if not tool_file.is_file():
            raise InputError(f"no {TOOL_FILE} here; give its path with -o tools=PATH", path=folder)
        files = _instance_files(path) if path.is_dir() else [path]
        wanted = as_list(splits, "splits")
        if wanted is not None:
            check_choices(wanted, [f.stem for f in files], "split")
            files = [f for f in files if f.stem in wanted]
        elif any(f.name in MAIN_FILES for f in files):
            # the evaluation default: the test splits; dev and other files when named
            files = [f for f in files if f.name in MAIN_FILES]
        if not files:
            raise InputError("no Seal-Tools instance files (*.jsonl with 'calling')", path=path)
        tool_map = read_tools(tool_file)
        prompt_files = _prompt_files(api_lists, folder, files)
        offered_lists: dict[str, list[Any]] = {}
        for pf in prompt_files:
            offered_lists.update(read_api_lists(pf))
        instances: list[Instance] = []
        per_file: dict[str, int] = {}
        for f in files:
            n0 = len(instances)
            for rec in iter_jsonl(f):
                inst = instance_from_record(rec, tool_map, f.stem, tool_file)
                if inst.id in offered_lists:
                    inst = with_api_list(inst, offered_lists[inst.id], tool_map, rec)
                instances.append(inst)
            per_file[f.name] = len(instances) - n0
        with_list = sum(1 for i in instances if i.metadata["api_list_available"])
        missed = sum(len(i.metadata.get("gold_not_offered") or []) for i in instances)
        notes: list[str] = []
        if with_list < len(instances):
            missing = len(instances) - with_list
            notes.append(
                note(_gold_only_note(missing, len(instances), api_lists, prompt_files, folder))
            )
        return Dataset(
            name=folder.name if path.is_dir() else path.stem,
            format=self.name,
            instances=instances,
            tools=tool_pool(tool_map.values()),
            path=path,
            options={
                "tools": str(tool_file),
                "splits": wanted,
                "api_lists": [str(p) for p in prompt_files],
            },
            details={
                "tool_file": str(tool_file),
                "files": per_file,
                "offered_tools": {
                    "upstream api_list": with_list,
                    "gold tools only": len(instances) - with_list,
                },
                "prompt_files": [str(p) for p in prompt_files],
                "gold_calls_not_offered": missed,
            },
            notes=notes,
        )

    def load_tools(self, path: Path, **options: Any) -> list[Tool]:
        tool_file = as_path(options.get("tools"), "tools")
        if tool_file is None:
            tool_file = path / TOOL_FILE if path.is_dir() else path
        return list(read_tools(tool_file).values())
