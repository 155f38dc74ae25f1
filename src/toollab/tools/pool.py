"""A tool pool: tool name → schema and (optionally) the Python callable that implements it.

Pool files are JSON Lines (one tool per line), a ``.json`` or ``.yaml`` file holding a list of
tools, or a Python module of ``@tool`` functions (see :mod:`toollab.tools.sources`).  Each record
may be written in any format :func:`toollab.tools.formats.tool_from_record` reads (toollab, OpenAI,
bare function dict, Seal-Tools).  :func:`validate_file` reports *every* problem
of a file with its line; :meth:`ToolPool.load` raises :class:`PoolFileError` when there is any.
:meth:`ToolPool.save` writes toollab's own format atomically (a crash never leaves half a file).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from toollab.data.atomic import write_text_atomic
from toollab.data.jsonl import Scanned, read_text, scan_array, scan_lines
from toollab.errors import InputError, ToolSchemaError, UnknownToolError, UsageError, did_you_mean
from toollab.schema import Tool, ToolCall
from toollab.tools.decorator import ToolFunction
from toollab.tools.formats import FORMATS, record_format, tool_from_record, tool_to_record
from toollab.tools.sources import (
    YAML_SUFFIXES,
    Record,
    python_tools,
    scan_python_tools,
    yaml_records,
)
from toollab.tools.validation import (
    check_tool_schema,
    tool_warnings,
    validate_arguments,
    validate_call,
)

ERROR: Literal["error"] = "error"
WARNING: Literal["warning"] = "warning"
#: the problem a pool file without a single tool record gets
EMPTY_FILE = "the file holds no tools"


@dataclass(frozen=True)
class Problem:
    """One problem of a pool file: where it is and what is wrong.

    An ``error`` makes the tool (or the file) unusable; a ``warning`` is usable but probably
    not meant (an unknown type name, which leaves the value unchecked)."""

    path: str
    line: int | None
    problem: str
    tool: str | None = None
    #: position (1-based) of the tool in a JSON-list file
    item: int | None = None
    severity: Literal["error", "warning"] = "error"

    @property
    def is_error(self) -> bool:
        return self.severity == ERROR

    def format(self) -> str:
        loc = self.path if self.line is None else f"{self.path}:{self.line}"
        if self.item is not None:
            loc += f" (item {self.item})"
        what = f"tool {self.tool!r}: " if self.tool else ""
        return f"{loc}: {what}{self.problem}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "line": self.line,
            "tool": self.tool,
            "problem": self.problem,
            "severity": self.severity,
        }
        if self.item is not None:
            out["item"] = self.item
        return out


class PoolFileError(ToolSchemaError):
    """A pool file has problems; ``problems`` lists all of them, the message names the first."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        first = problems[0]
        more = (
            f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
            if len(problems) > 1
            else ""
        )
        what = f"tool {first.tool!r}: " if first.tool else ""
        super().__init__(
            f"{what}{first.problem}{more}",
            path=first.path,
            line=first.line,
            where=f"item {first.item}" if first.item is not None else None,
        )


@dataclass
class PoolEntry:
    """A registered tool: the schema plus, when it can be executed, its implementation."""

    tool: Tool
    fn: Callable[..., Any] | None = None
    is_async: bool = False
    sandboxed: bool = False
    parallel: bool = True
    timeout: float | None = None

    @property
    def executable(self) -> bool:
        return self.fn is not None


def _records(path: Path, text: str) -> Iterator[Record]:
    """One :data:`~toollab.tools.sources.Record` per tool record of a JSON pool file's text."""
    if path.suffix.lower() == ".json" and text.lstrip().startswith("["):
        return _malformed(scan_array(text))
    if path.suffix.lower() == ".json" and text.strip():
        try:
            whole = json.loads(text)
        except (ValueError, RecursionError):  # reported record by record below
            whole = None
        if isinstance(whole, dict) and isinstance(whole.get("tools"), list):
            return _malformed(scan_array(text, text.index('"tools"'), whole=False))
    return _malformed(scan_lines(text))


def _malformed(scanned: Iterable[Scanned]) -> Iterator[Record]:
    for line, item, value, problem in scanned:
        yield line, item, value, None if problem is None else f"malformed JSON: {problem}"


def _record_name(record: Any) -> str | None:
    if not isinstance(record, dict):
        return None
    for key in ("name", "api_name"):
        if isinstance(record.get(key), str) and record[key].strip():
            return str(record[key])
    fn = record.get("function")
    if isinstance(fn, dict) and isinstance(fn.get("name"), str) and fn["name"].strip():
        return str(fn["name"])
    return None


def check_format(fmt: str | None) -> str | None:
    """``fmt`` if it is a known record format (or ``None``/``"auto"``), else :class:`UsageError`."""
    if fmt is None or fmt == "auto":
        return None
    if fmt not in FORMATS:
        raise UsageError(
            f"unknown format {fmt!r}; choose one of auto, {', '.join(FORMATS)}"
            + did_you_mean(fmt, FORMATS)
        )
    return fmt


def read_pool_file(
    path: str | Path, *, fmt: str | None = None, import_python: bool = False
) -> tuple[list[tuple[int, Tool]], list[Problem]]:
    """Every tool of a pool file with its line, and every problem found on the way.

    ``fmt`` (``toollab``, ``openai``, ``seal-tools``) requires every JSON/YAML record to be in that
    format; ``None`` or ``"auto"`` accepts any.  A ``.py`` file is only read, not run: its
    syntax and its ``@tool`` functions are found without importing it, and a warning says their
    schemas were not built; with ``import_python=True`` it is imported (its code runs) and its
    ``@tool`` functions are the tools (see :mod:`toollab.tools.sources`).  Problems include
    warnings (``severity="warning"``, e.g. an unknown type name); a file without any tool is an
    error."""
    found, problems = _read(path, fmt, import_python=import_python)
    return [(line, t) for line, t, _ in found], problems


def _read(
    path: str | Path, fmt: str | None, *, import_python: bool = True
) -> tuple[list[tuple[int, Tool, ToolFunction | None]], list[Problem]]:
    fmt = check_format(fmt)
    p = Path(path)
    shown = str(path)
    if not p.exists():
        return [], [Problem(shown, None, "no such file")]
    if p.is_dir():
        return [], [Problem(shown, None, "is a directory, not a tool pool file")]
    if not p.is_file():  # a FIFO would block forever
        return [], [Problem(shown, None, "not a regular file (a pipe or a device?)")]
    if p.suffix.lower() == ".py":
        if not import_python:
            return [], [
                Problem(shown, line, problem, severity=severity)
                for line, problem, severity in scan_python_tools(p)
            ]
        return _read_python(p, shown)
    try:
        text = read_text(p)
    except InputError as exc:
        return [], [Problem(shown, None, exc.problem)]
    records = yaml_records(text) if p.suffix.lower() in YAML_SUFFIXES else _records(p, text)
    tools, problems = _check_records(shown, records, fmt)
    if not tools and not problems:
        problems.append(Problem(shown, None, EMPTY_FILE))
    return [(line, t, None) for line, t in tools], problems


def _read_python(
    p: Path, shown: str
) -> tuple[list[tuple[int, Tool, ToolFunction | None]], list[Problem]]:
    found, failures = python_tools(p)
    problems = [Problem(shown, line, problem) for line, problem in failures]
    out: list[tuple[int, Tool, ToolFunction | None]] = []
    first: dict[str, int] = {}
    for line, tf in found:
        reasons = check_tool_schema(tf.tool)
        problems.extend(Problem(shown, line, r, tf.tool.name) for r in reasons)
        problems.extend(
            Problem(shown, line, w, tf.tool.name, severity=WARNING) for w in tool_warnings(tf.tool)
        )
        if tf.tool.name in first:
            problems.append(
                Problem(
                    shown,
                    line,
                    f"duplicate tool name {tf.tool.name!r} (line {first[tf.tool.name]} and line {line})",
                    tf.tool.name,
                )
            )
            continue
        first[tf.tool.name] = line
        if not reasons:
            out.append((line, tf.tool, tf))
    return out, problems


def _where(line: int | None, item: int | None) -> str:
    if item is None:
        return f"line {line}"
    return f"item {item} on line {line}"


def _check_records(
    shown: str, records: Iterable[Record], fmt: str | None = None
) -> tuple[list[tuple[int, Tool]], list[Problem]]:
    tools: list[tuple[int, Tool]] = []
    problems: list[Problem] = []
    first: dict[str, str] = {}
    for line, item, record, problem in records:
        if problem is not None:
            problems.append(Problem(shown, line, problem, item=item))
            continue
        name = _record_name(record)
        try:
            if fmt is not None and record_format(record) != fmt:
                raise ToolSchemaError(
                    f"expected a tool in {fmt} format, found {record_format(record)} format"
                )
            tool = tool_from_record(record)
        except ToolSchemaError as exc:
            problems.append(Problem(shown, line, exc.problem, name, item))
            continue
        except (ValueError, TypeError) as exc:  # pydantic's validation of odd field values
            problems.append(Problem(shown, line, str(exc).splitlines()[0], name, item))
            continue
        reasons = check_tool_schema(tool)
        problems.extend(Problem(shown, line, r, tool.name, item) for r in reasons)
        problems.extend(
            Problem(shown, line, w, tool.name, item, WARNING) for w in tool_warnings(tool)
        )
        here = _where(line, item)
        if tool.name in first:
            problems.append(
                Problem(
                    shown,
                    line,
                    f"duplicate tool name {tool.name!r} ({first[tool.name]} and {here})",
                    tool.name,
                    item,
                )
            )
            continue
        first[tool.name] = here
        if not reasons:
            tools.append((line or 0, tool))
    return tools, problems


def validate_file(
    path: str | Path, *, fmt: str | None = None, import_python: bool = False
) -> list[Problem]:
    """Every problem of a pool file, warnings included (``[]`` when it is clean); a ``.py``
    file is imported (run) only with ``import_python=True``."""
    return read_pool_file(path, fmt=fmt, import_python=import_python)[1]


class ToolPool:
    """Tools by name, each with an optional implementation.

    ``parallel=False`` makes the executor run this pool's calls one at a time.
    """

    def __init__(self, tools: Iterable[Tool | ToolFunction] = (), *, parallel: bool = True) -> None:
        self._entries: dict[str, PoolEntry] = {}
        self.parallel = parallel
        #: warnings found when the pool was loaded from a file
        self.warnings: list[Problem] = []
        for t in tools:
            self.add(t)

    # -- registration ----------------------------------------------------------------------------
    def add(
        self,
        tool: Tool | ToolFunction | Callable[..., Any],
        fn: Callable[..., Any] | None = None,
        *,
        sandboxed: bool | None = None,
        parallel: bool | None = None,
        timeout: float | None = None,
        replace: bool = False,
    ) -> PoolEntry:
        """Register a schema (with an optional implementation ``fn``), a ``@tool`` function, or a
        plain function (its schema is built as ``@tool`` would)."""
        if isinstance(tool, Tool):
            entry = PoolEntry(tool=tool, fn=fn)
        else:
            tf = tool if isinstance(tool, ToolFunction) else ToolFunction(tool)
            entry = PoolEntry(
                tool=tf.tool,
                fn=fn or tf.fn,
                sandboxed=tf.sandboxed,
                parallel=tf.parallel,
                timeout=tf.timeout,
            )
        if entry.fn is not None:
            entry.is_async = inspect.iscoroutinefunction(entry.fn)
        if sandboxed is not None:
            entry.sandboxed = sandboxed
        if parallel is not None:
            entry.parallel = parallel
        if timeout is not None:
            entry.timeout = timeout
        reasons = check_tool_schema(entry.tool)
        if reasons:
            raise ToolSchemaError(f"tool {entry.tool.name!r}: " + "; ".join(reasons))
        if entry.tool.name in self._entries and not replace:
            raise ToolSchemaError(f"a tool named {entry.tool.name!r} is already in the pool")
        self._entries[entry.tool.name] = entry
        return entry

    def bind(self, name: str, fn: Callable[..., Any], **flags: Any) -> PoolEntry:
        """Attach an implementation to a tool already in the pool (e.g. loaded from a file)."""
        entry = self.entry(name)
        entry.fn = fn
        entry.is_async = inspect.iscoroutinefunction(fn)
        for key, value in flags.items():
            if key not in ("sandboxed", "parallel", "timeout"):
                raise TypeError(f"unknown flag {key!r}")
            setattr(entry, key, value)
        return entry

    def register(self, fn: Callable[..., Any]) -> ToolFunction:
        """Decorator: ``@pool.register`` on a function or a ``@tool``."""
        tf = fn if isinstance(fn, ToolFunction) else ToolFunction(fn)
        self.add(tf)
        return tf

    def bound_to(self, obj: Any) -> ToolPool:
        """A copy of a pool of methods (``@tool`` methods taken from a class) with every
        implementation bound to ``obj``; the schemas were checked when they were added and are
        shared, not checked again (cheap enough to do per instance)."""
        pool = ToolPool(parallel=self.parallel)
        for name, entry in self._entries.items():
            fn = None if entry.fn is None else types.MethodType(entry.fn, obj)
            pool._entries[name] = dataclasses.replace(entry, fn=fn)
        return pool

    def remove(self, name: str) -> None:
        self.entry(name)
        del self._entries[name]

    # -- lookup ------------------------------------------------------------------------------------
    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Tool]:
        return (e.tool for e in self._entries.values())

    @property
    def names(self) -> list[str]:
        return list(self._entries)

    @property
    def tools(self) -> list[Tool]:
        return [e.tool for e in self._entries.values()]

    def as_mapping(self) -> Mapping[str, Tool]:
        return {n: e.tool for n, e in self._entries.items()}

    def get(self, name: str) -> Tool | None:
        entry = self._entries.get(name)
        return entry.tool if entry else None

    def entry(self, name: str) -> PoolEntry:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownToolError(name, self.names) from None

    def tool(self, name: str) -> Tool:
        return self.entry(name).tool

    def return_fields(self) -> dict[str, list[str]]:
        """Each tool's ordered output fields (what ``link_calls`` needs)."""
        return {n: e.tool.return_fields for n, e in self._entries.items()}

    # -- validation --------------------------------------------------------------------------------
    def validate_call(self, call: ToolCall) -> list[str]:
        """Reasons why ``call`` does not fit this pool (``[]`` when it does)."""
        return validate_call(call, self.as_mapping())

    def validate_arguments(self, name: str, arguments: Any) -> list[str]:
        return validate_arguments(self.tool(name), arguments)

    # -- files ---------------------------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        path: str | Path,
        *,
        fmt: str | None = None,
        parallel: bool = True,
        strict: bool = False,
    ) -> ToolPool:
        """Read a pool file (JSON Lines, a JSON or YAML list, or a Python module of ``@tool``
        functions, which keep their implementations); :class:`PoolFileError` lists every error.

        Warnings (unknown type names) do not stop loading unless ``strict``; they are kept in
        ``pool.warnings``."""
        found, problems = _read(path, fmt)
        errors = [p for p in problems if p.is_error or strict]
        if errors:
            raise PoolFileError(errors)
        pool = cls(parallel=parallel)
        pool.warnings = [p for p in problems if not p.is_error]
        for _, t, tf in found:
            if tf is None:
                pool._entries[t.name] = PoolEntry(tool=t)
            else:
                pool.add(tf)
        return pool

    def save(self, path: str | Path) -> Path:
        """Write the schemas in toollab's format: a JSON list for ``.json``, else JSON Lines.

        The file is written to a temporary name and renamed, so it is complete or absent."""
        p = Path(path)
        if p.is_dir():
            raise InputError("is a directory, not a file name", path=p)
        if not p.parent.exists():
            raise InputError(f"directory {str(p.parent)!r} does not exist", path=p)
        records = [tool_to_record(e.tool) for e in self._entries.values()]
        if p.suffix.lower() == ".json":
            text = json.dumps(records, ensure_ascii=False, indent=2) + "\n"
        else:
            text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        write_text_atomic(p, text)  # only a regular file is replaced (docs/input-limits.md)
        return p

    def __repr__(self) -> str:
        return f"ToolPool({len(self)} tools)"
