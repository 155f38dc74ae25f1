"""A Python tool file loaded and run inside the sandbox: this process never imports it.

:func:`load_confined` reads the ``@tool`` functions of a ``.py`` file by importing it *in the
sandbox* (its module-level code runs there, confined like its calls) and builds a
:class:`~toollab.tools.pool.ToolPool` whose implementations are :class:`FileTool` references:
each call imports the file in the sandbox process (once) and runs the function there.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from toollab.errors import ToolSchemaError
from toollab.schema import Tool
from toollab.tools.decorator import ToolFunction
from toollab.tools.pool import PoolFileError, Problem, ToolPool
from toollab.tools.sources import python_tools
from toollab.tools.validation import check_tool_schema, tool_warnings

if TYPE_CHECKING:  # the sandbox module imports this one
    from toollab.tools.sandbox import Sandbox


def module_name(path: str) -> str:
    """The name the tool file is imported under in the sandbox."""
    return f"toollab_confined_tools_{hashlib.sha1(path.encode()).hexdigest()[:12]}"


def _module(path: str) -> ModuleType:
    """The tool file as a module, imported once per process."""
    name = module_name(path)
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path!r}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


@dataclass(frozen=True)
class FileTool:
    """The ``@tool`` function ``name`` of the file ``path``, called where it is unpickled."""

    path: str
    name: str

    def __call__(self, **kwargs: Any) -> Any:
        fn = getattr(_module(self.path), self.name)
        return getattr(fn, "fn", fn)(**kwargs)


def describe(path: str) -> dict[str, Any]:
    """Run in the sandbox: the file's tools (schema, flags, attribute name, line) and the problems
    that stopped its import, as JSON data."""

    found, failures = python_tools(Path(path))
    names: dict[int, str] = {}
    for mod in list(sys.modules.values()):
        if getattr(mod, "__file__", None) == path:
            for attr, value in vars(mod).items():
                if isinstance(value, ToolFunction):
                    names.setdefault(id(value), attr)
    return {
        "tools": [
            {
                "line": line,
                "attr": names.get(id(tf), tf.fn.__name__),
                "tool": tf.tool.model_dump(mode="json"),
                "parallel": tf.parallel,
                "timeout": tf.timeout,
            }
            for line, tf in found
        ],
        "problems": [[line, problem] for line, problem in failures],
    }


def load_confined(path: str | Path, sandbox: Sandbox, *, parallel: bool = True) -> ToolPool:
    """The pool of a ``.py`` tool file, read and run in ``sandbox`` (see the module docs).

    Raises :class:`~toollab.tools.pool.PoolFileError` with every problem (an import that fails in
    the sandbox, a schema that is not usable, a duplicate name)."""
    from toollab.tools.sandbox import SandboxError  # imported here: the sandbox imports this module

    shown = str(path)
    p = Path(path)
    if not p.is_file():
        raise PoolFileError([Problem(shown, None, "no such file")])
    real = str(p.resolve())
    try:
        data, _ = sandbox.call(describe, (real,), read_only=[real])
    except SandboxError as exc:
        problem = Problem(shown, None, f"reading the tools in the sandbox: {exc}")
        raise PoolFileError([problem]) from None
    problems = [Problem(shown, line, str(problem)) for line, problem in data.get("problems", [])]
    pool = ToolPool(parallel=parallel)
    entries: list[tuple[int, Tool, dict[str, Any]]] = []
    seen: dict[str, int] = {}
    for item in data.get("tools", []):
        line = int(item.get("line") or 0)
        try:
            tool = Tool.model_validate(item["tool"])
        except (ValueError, TypeError, KeyError) as exc:
            problems.append(Problem(shown, line, f"the tool schema cannot be read: {exc}"))
            continue
        reasons = check_tool_schema(tool)
        problems.extend(Problem(shown, line, r, tool.name) for r in reasons)
        pool.warnings.extend(
            Problem(shown, line, w, tool.name, severity="warning") for w in tool_warnings(tool)
        )
        if tool.name in seen:
            problems.append(
                Problem(
                    shown,
                    line,
                    f"duplicate tool name {tool.name!r} (line {seen[tool.name]} and line {line})",
                    tool.name,
                )
            )
            continue
        seen[tool.name] = line
        if not reasons:
            entries.append((line, tool, item))
    if problems:
        raise PoolFileError(problems)
    for _, tool, item in entries:
        timeout = item.get("timeout")
        try:
            pool.add(
                tool,
                FileTool(real, str(item["attr"])),
                sandboxed=True,
                parallel=bool(item.get("parallel", True)),
                timeout=float(timeout) if isinstance(timeout, int | float) else None,
            )
        except ToolSchemaError as exc:
            raise PoolFileError([Problem(shown, None, exc.problem)]) from None
    return pool
