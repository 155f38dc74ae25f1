"""Benchmark type names → JSON Schema, and which type names are known at all.

Each benchmark spells parameter types its own way (Seal-Tools: ``str`` / ``int`` / ``float`` /
``bool``, BFCL: ``dict`` / ``float`` / ``tuple`` / ``any``, ToolBench: ``STRING`` / ``NUMBER``).
A known name becomes a JSON Schema ``type``; a name without a faithful JSON Schema equivalent is
kept under ``x-original-type`` and leaves the value unconstrained.

A name that is none of these (``"strng"``) is *unknown*: it is kept the same way, but
:func:`unknown_type_names` finds it so that ``toollab tools validate`` and ``toollab data
inspect`` can flag it.  Known are JSON Schema's own names, the Python-style names of
:data:`PYTHON_TYPES`, BFCL's and ToolBench's names, and Python's built-in type names (DEER's
signatures annotate parameters with ``bytes``); case does not matter.
"""

from __future__ import annotations

import builtins
from typing import Any

from toollab.errors import did_you_mean
from toollab.schema import Tool

ORIGINAL_TYPE = "x-original-type"

#: JSON Schema's own type names
JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")

#: Python-style type names (Seal-Tools, BFCL, hand-written tools) → JSON Schema types
PYTHON_TYPES: dict[str, str] = {
    "str": "string",
    "string": "string",
    "text": "string",
    "int": "integer",
    "integer": "integer",
    "long": "integer",
    "float": "number",
    "number": "number",
    "double": "number",
    "bool": "boolean",
    "boolean": "boolean",
    "list": "array",
    "array": "array",
    "tuple": "array",
    "set": "array",
    "dict": "object",
    "object": "object",
    "map": "object",
    "null": "null",
    "none": "null",
}

BFCL_TYPES: dict[str, str | None] = {
    "dict": "object",
    "float": "number",
    "integer": "integer",
    "string": "string",
    "array": "array",
    "tuple": "array",
    "boolean": "boolean",
    "any": None,
    # BFCL's Java / JavaScript categories
    "String": "string",
    "long": "integer",
    "double": "number",
    "Boolean": "boolean",
    "ArrayList": "array",
    "HashMap": "object",
}

#: BFCL names whose JSON Schema type loses information; the original travels along
BFCL_LOSSY = {
    "tuple",
    "any",
    "float",
    "long",
    "double",
    "ArrayList",
    "HashMap",
    "String",
    "Boolean",
}

TOOLBENCH_TYPES: dict[str, str] = {
    "string": "string",
    "number": "number",
    "integer": "integer",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
    "enum": "string",
}


def type_schema(name: Any, mapping: dict[str, str], *, fold_case: bool = False) -> dict[str, Any]:
    """``{"type": ...}`` for a known name, else ``{"x-original-type": name}`` (no constraint)."""
    key = name.lower() if fold_case and isinstance(name, str) else name
    if isinstance(key, str) and key in mapping:
        return {"type": mapping[key]}
    if name is None:
        return {}
    return {ORIGINAL_TYPE: name if isinstance(name, str) else str(name)}


def object_schema(
    properties: dict[str, dict[str, Any]], required: list[str] | None = None
) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required or [])}


def _builtin_type_names() -> set[str]:
    return {
        name.lower()
        for name, value in vars(builtins).items()
        if isinstance(value, type) and not issubclass(value, BaseException)
    }


#: every type name toollab recognises (lower case)
KNOWN_TYPE_NAMES: frozenset[str] = frozenset(
    {
        *JSON_TYPES,
        *PYTHON_TYPES,
        *(k.lower() for k in BFCL_TYPES),
        *TOOLBENCH_TYPES,
        *_builtin_type_names(),
    }
)
#: the names a misspelling is compared with
_SUGGESTIONS = sorted({*JSON_TYPES, *PYTHON_TYPES})
#: keywords whose values are data, not schemas
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "example"})
#: keywords whose values map names (property names, ...) to schemas: a name there is never a
#: keyword, so a property called ``default`` or ``example`` is walked like any other
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)


def is_known_type_name(name: str) -> bool:
    return name.strip().lower() in KNOWN_TYPE_NAMES


def unknown_type_names(schema: Any, where: str = "parameters") -> list[tuple[str, str]]:
    """``(path, name)`` of every unknown type name kept under ``x-original-type`` in ``schema``,
    depth first, e.g. ``("parameters.properties.city", "strng")``."""
    out: list[tuple[str, str]] = []
    _walk(schema, where, out)
    return out


def tool_unknown_types(tool: Tool) -> list[tuple[str, str]]:
    """``(path, name)`` of every type name toollab does not know in the tool's parameters and
    result schemas (``("parameters.properties.city", "strng")``)."""
    found = unknown_type_names(tool.parameters, "parameters")
    if tool.returns is not None:
        found.extend(unknown_type_names(tool.returns, "returns"))
    return found


def _walk(node: Any, path: str, out: list[tuple[str, str]]) -> None:
    if isinstance(node, list):
        for i, item in enumerate(node):
            _walk(item, f"{path}[{i}]", out)
        return
    if not isinstance(node, dict):
        return
    original = node.get(ORIGINAL_TYPE)
    if isinstance(original, str) and not is_known_type_name(original):
        out.append((path, original))
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            for name, schema in value.items():
                _walk(schema, f"{path}.{key}.{name}", out)
            continue
        if key in _DATA_KEYWORDS or key.startswith("x-"):
            continue
        _walk(value, f"{path}.{key}", out)


def unknown_type_reason(path: str, name: str) -> str:
    """The warning for one unknown type name."""
    hint = did_you_mean(name.strip().lower(), _SUGGESTIONS)
    return (
        f"{path}: unknown type name {name!r}{hint}; kept as {ORIGINAL_TYPE}, "
        "the value is not checked"
    )
