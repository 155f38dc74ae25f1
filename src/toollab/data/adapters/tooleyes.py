"""ToolEyes (Junjie-Ye/ToolEyes): 382 queries over 7 scenarios, tools from the Tool Library.

* ``Test_Data/scenario_data_raw.json``: ``[{query, path, scenario}]``; ``path`` names a folder of
  the library (``ToolEyes/Tool_Library/<cat>/<sub>``) whose ``config_gpt4.json`` lists the
  OpenAI-style tools offered with that query, ``ask_to_user`` and ``finish`` included.
* There are no reference answers: instances have no gold and no decision label.  ToolEyes scores
  a ReAct trace (format alignment, tool reality) and asks a judge for the rest.
* The config JSON is kept verbatim (``metadata["tool_document"]`` = ``json.dumps(config)``, which
  is what the paper's prompt puts in ``{Tool Document}``); ``ask_to_user`` and ``finish`` carry
  ``metadata["control"] = True``.
* The dataset's tool pool is the library's 568 real tool schemas, one per config entry as
  published (``classify_grocery_product`` is listed twice in one file: 567 distinct, 530 distinct
  names); every config file also lists ``ask_to_user`` and ``finish``, counted apart in
  ``details["control_tools"]`` and offered with each query, not in the pool.
"""

from __future__ import annotations

import json
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
from toollab.data.jsonl import Record, read_json, read_records, require_object
from toollab.errors import InputError
from toollab.schema import Instance, Tool

SOURCE = "tooleyes"
RAW_FILE = Path("Test_Data") / "scenario_data_raw.json"
LIBRARY = "Tool_Library"
CONFIG = "config_gpt4.json"
CONTROL_TOOLS = ("ask_to_user", "finish")
SCENARIOS = {
    "TG": "text generation",
    "DU": "data understanding",
    "RS": "real-time search",
    "PL": "personal life",
    "IR": "information retrieval",
    "AM": "application manipulation",
    "FT": "financial transactions",
}


class _Library:
    """Reads each ``config_gpt4.json`` once."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()  # the folder holding Tool_Library
        self._cache: dict[Path, tuple[list[Any], list[Tool]]] = {}

    def config(self, folder: Path) -> tuple[list[Any], list[Tool]]:
        folder = folder.resolve()
        if folder not in self._cache:
            path = folder / CONFIG
            raw = read_json(path)
            if not isinstance(raw, list):
                raise InputError("a tool config must be a JSON list of functions", path=path)
            category = self._category(folder)
            tools = []
            for i, fn in enumerate(raw):
                try:
                    tool = Tool.from_openai(fn)
                except InputError as exc:
                    raise InputError(exc.problem, path=path, where=f"function {i}") from exc
                meta = dict(tool.metadata)
                meta["config"] = str(path)
                if tool.name in CONTROL_TOOLS:
                    meta["control"] = True
                tools.append(tool.model_copy(update={"category": category, "metadata": meta}))
            self._cache[folder] = (raw, tools)
        return self._cache[folder]

    def _category(self, folder: Path) -> str | None:
        try:
            return folder.relative_to(self.root / LIBRARY).as_posix()
        except ValueError:
            return None

    def resolve(self, record_path: str, rec: Record) -> Path:
        rel = record_path.strip().strip("/")
        if rel.startswith("ToolEyes/"):
            rel = rel[len("ToolEyes/") :]
        folder = self.root / rel
        if not (folder / CONFIG).is_file():
            raise rec.error(f"tool folder {record_path!r} has no {CONFIG} (looked in {folder})")
        return folder

    def all_configs(self) -> list[Path]:
        lib = self.root / LIBRARY
        return sorted(p.parent for p in lib.glob(f"**/{CONFIG}")) if lib.is_dir() else []


def _locate(path: Path, library: Path | None) -> tuple[Path, Path]:
    """(the raw scenario file, the folder holding Tool_Library)."""
    if path.is_dir():
        raw = path / RAW_FILE
        if not raw.is_file():
            raise InputError(f"no {RAW_FILE} in the ToolEyes folder", path=path)
        root = path
    else:
        raw = path
        root = path.parent.parent if path.parent.name == RAW_FILE.parent.name else path.parent
    if library is not None:
        root = library.parent if library.name == LIBRARY else library
    if not (root / LIBRARY).is_dir():
        raise InputError(f"no {LIBRARY} folder; give it with -o library=PATH", path=root)
    return raw, root


def library_details(lib: _Library) -> dict[str, Any]:
    """What ``data inspect`` shows beside the headline count of real tool schemas."""
    entries = [t for folder in lib.all_configs() for t in lib.config(folder)[1]]
    real = [t for t in entries if not t.metadata.get("control")]
    control: dict[str, int] = {}
    for t in entries:
        if t.metadata.get("control"):
            control[t.name] = control.get(t.name, 0) + 1
    distinct = tool_pool(real)
    return {
        "config_files": len(lib.all_configs()),
        "real_tools": len(real),
        "control_tools": control,
        "distinct_tools": len(distinct),
        "distinct_tool_names": len({t.name for t in real}),
        "tool_entries": len(entries),
        "gold": "none (ToolEyes has no reference answers)",
    }


@register_adapter
class ToolEyesAdapter(Adapter):
    name = "tooleyes"
    #: the paper's prompt for open-source models (five demonstrations); ``-t react`` is its
    #: zero-shot prompt for the others
    default_template = "react-5shot"
    default_agent = "react"
    #: the tools are real web APIs: answered offline by the simulated tool server
    default_tool_server = "sim"
    aliases = ("tool-eyes",)
    description = "ToolEyes: Test_Data/scenario_data_raw.json + Tool_Library/**/config_gpt4.json"

    def load(
        self, path: Path, *, scenarios: Any = None, library: str | Path | None = None
    ) -> Dataset:
        """``path``: the ToolEyes folder or the raw scenario file; ``scenarios``: restrict
        (e.g. ``TG,PL``); ``library``: the Tool_Library folder when it is elsewhere."""
        raw_file, root = _locate(path, as_path(library, "library"))
        lib = _Library(root)
        wanted = as_list(scenarios, "scenarios")
        if wanted is not None:
            check_choices(wanted, list(SCENARIOS), "scenario")
        counters: dict[str, int] = {}
        instances: list[Instance] = []
        for rec in read_records(raw_file):
            d = require_object(rec, ("query", "path", "scenario"))
            scenario = str(d["scenario"])
            k = counters.get(scenario, 0)
            counters[scenario] = k + 1
            if wanted is not None and scenario not in wanted:
                continue
            folder = lib.resolve(str(d["path"]), rec)
            raw, tools = lib.config(folder)
            instances.append(
                Instance(
                    id=f"{scenario}-{k}",
                    query=str(d["query"]),
                    tools=tools,
                    source=SOURCE,
                    category=scenario,
                    split="test",
                    reference=False,  # ToolEyes publishes no gold answers
                    metadata={
                        "path": d["path"],
                        "tool_document": json.dumps(raw),
                        "control_tools": [t.name for t in tools if t.name in CONTROL_TOOLS],
                        "scenario_name": SCENARIOS.get(scenario),
                        "file": str(rec.path),
                        "line": rec.line,
                    },
                )
            )
        pool = self._pool(lib)
        return Dataset(
            name=root.name,
            format=self.name,
            instances=instances,
            tools=pool,
            path=path,
            options={"scenarios": wanted, "library": str(root / LIBRARY)},
            details=library_details(lib),
        )

    def _pool(self, lib: _Library) -> list[Tool]:
        """Every real tool entry of the library (one per schema of a config file, as published;
        ``ask_to_user`` and ``finish`` are left out: they are control actions, not tools)."""
        return [
            t
            for folder in lib.all_configs()
            for t in lib.config(folder)[1]
            if not t.metadata.get("control")
        ]

    def load_tools(self, path: Path, **options: Any) -> list[Tool]:
        """Every real tool of the library (``path``: the ToolEyes folder or its Tool_Library)."""
        root = path.parent if path.name == LIBRARY else path
        if not (root / LIBRARY).is_dir():
            raise InputError(f"no {LIBRARY} folder", path=path)
        return self._pool(_Library(root))
