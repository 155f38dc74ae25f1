"""Tool pool sources other than JSON: YAML files and Python modules of ``@tool`` functions.

* ``.yaml`` / ``.yml``: a list of tool records (any format JSON pool files accept), or a mapping
  with a ``tools`` list; each record is located by the line it starts on.
* ``.py``: loading a pool (``ToolPool.load``) imports the module (it is the user's own code) and
  every module-level ``@tool`` function becomes a tool *with its implementation*, located by its
  ``def`` line.  *Validating* a file does not run it: :func:`scan_python_tools` reads its syntax
  and finds its ``@tool`` functions without importing it.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import inspect
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from toollab.data.jsonl import read_text
from toollab.data.yaml_limits import load_yaml, yaml_error
from toollab.errors import InputError
from toollab.tools.decorator import ToolFunction

#: ``(line, item in a list, decoded value, problem)``, as for JSON pool files
Record = tuple[int | None, int | None, Any, str | None]

YAML_SUFFIXES = (".yaml", ".yml")


def yaml_records(text: str) -> Iterator[Record]:
    """The tool records of a YAML document, each with the line it starts on."""
    import yaml

    try:
        root, data = load_yaml(text)  # aliases, depth, line length and integers bounded
    except yaml.YAMLError as exc:
        error = yaml_error(exc, "")  # the one mapping of a YAML error to a problem and a line
        yield error.line, None, None, error.problem
        return
    if root is None:
        return
    node, items = root, data
    if (
        isinstance(root, yaml.MappingNode)
        and isinstance(data, dict)
        and isinstance(data.get("tools"), list)
    ):
        node = next(v for k, v in root.value if k.value == "tools")
        items = data["tools"]
    if not isinstance(node, yaml.SequenceNode) or not isinstance(items, list):
        yield (
            root.start_mark.line + 1,
            None,
            None,
            "a YAML tool file must hold a list of tools (or a 'tools' list)",
        )
        return
    for i, (child, value) in enumerate(zip(node.value, items, strict=True), start=1):
        yield child.start_mark.line + 1, i, value, None


def _is_tool_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name):
        return target.id == "tool"
    return isinstance(target, ast.Attribute) and target.attr == "tool"


def scan_python_tools(path: Path) -> list[tuple[int | None, str, Literal["error", "warning"]]]:
    """``(line, problem, severity)`` for a ``.py`` tool file read without importing it: a syntax
    error, no ``@tool`` function, or (a warning) the ``@tool`` functions whose schemas are built
    only when the module is imported."""

    try:
        source = read_text(path)
    except InputError as exc:
        return [(None, exc.problem, "error")]
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        return [(exc.lineno, f"Python syntax error: {exc.msg}", "error")]
    except (ValueError, RecursionError, MemoryError) as exc:
        return [
            (None, f"cannot be read as Python: {str(exc)[:200] or type(exc).__name__}", "error")
        ]
    found = [
        (node.lineno, node.name)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(_is_tool_decorator(d) for d in node.decorator_list)
    ]
    if not found:
        return [(None, "the module defines no @tool functions", "error")]
    names = ", ".join(f"{name} (line {line})" for line, name in found)
    return [
        (
            found[0][0],
            f"not imported, so the schemas of its {len(found)} @tool function(s) were not built "
            f"or checked: {names}; validating does not run the module's code (import it to "
            "check them: ToolPool.load, or validate_file(..., import_python=True))",
            "warning",
        )
    ]


def python_tools(path: Path) -> tuple[list[tuple[int, ToolFunction]], list[tuple[int | None, str]]]:
    """Import ``path`` and return its module-level ``@tool`` functions with their ``def`` lines,
    or the ``(line, problem)`` that stopped the import."""
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    name = f"toollab_user_tools_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        return [], [(None, "cannot be imported as a Python module")]
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        return [], [(exc.lineno, f"Python syntax error: {exc.msg}")]
    except Exception as exc:
        sys.modules.pop(name, None)
        line = None
        for frame in traceback.extract_tb(exc.__traceback__):
            if Path(frame.filename).resolve() == path.resolve():
                line = frame.lineno
        message = getattr(exc, "problem", None) or str(exc)
        return [], [(line, f"importing the module failed: {type(exc).__name__}: {message}")]
    found: list[tuple[int, ToolFunction]] = []
    for value in vars(module).values():
        if isinstance(value, ToolFunction):
            try:
                line = inspect.getsourcelines(value.fn)[1]
            except (OSError, TypeError):
                line = 0
            found.append((line, value))
    if not found:
        return [], [(None, "the module defines no @tool functions")]
    found.sort(key=lambda item: item[0])
    return found, []
