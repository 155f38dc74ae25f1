"""Benchmark type names → JSON Schema.

Each benchmark spells parameter types its own way (BFCL: ``dict`` / ``float`` / ``tuple`` /
``any``, ToolBench: ``STRING`` / ``NUMBER``; Seal-Tools' Python names are read with its tool
records, see :data:`toollab.tools.formats.PY_TO_JSON_TYPE`).  A known name becomes a JSON Schema
``type``; a name without a faithful JSON Schema equivalent is kept under ``x-original-type`` and
leaves the value unconstrained.
"""

from __future__ import annotations

from typing import Any

ORIGINAL_TYPE = "x-original-type"

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
