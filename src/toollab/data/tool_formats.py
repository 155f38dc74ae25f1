"""Reading one tool record in any of the formats a pool file or a dataset may hold.

Accepted records (one JSON object each):

* toollab's own :class:`~toollab.schema.Tool` JSON: ``{"name", "description", "parameters",
  "returns", "category", "metadata"}`` (only ``name`` is required);
* an OpenAI tool ``{"type": "function", "function": {...}}`` or the bare function dict
  ``{"name", "description", "parameters", ...}``;
* a Seal-Tools ``tool.jsonl`` record ``{"api_name", "api_description", "parameters":
  {name: {"type": "str", "description"}}, "required", "responses"}``;
* a DEER ``tool.json`` record ``{"api_name", "description_for_human", "description_for_model",
  "api_function": "name(a: str, b: int = 5)", "example": [{"query", "call"}]}``.

Seal-Tools' Python type names become JSON Schema types (see :data:`PY_TO_JSON_TYPE`); a type
toollab does not know is kept under ``"x-original-type"`` and puts no constraint on the value
(:func:`toollab.data.types.unknown_type_names` finds such names, so validation can flag them).
"""

from __future__ import annotations

from typing import Any

from toollab.data.pysig import parse_signature
from toollab.data.types import PYTHON_TYPES
from toollab.errors import ToolSchemaError
from toollab.schema import Tool
from toollab.schema.json import JsonObject
from toollab.schema.wire import json_kind

#: Python-style type names (Seal-Tools, BFCL) → JSON Schema types
PY_TO_JSON_TYPE = PYTHON_TYPES

#: the keys of toollab's own tool JSON
TOOL_KEYS = frozenset(Tool.model_fields)

#: keys of a Seal-Tools parameter/response entry that are JSON Schema keywords with the same meaning
_SEAL_KEEP = {"description", "default", "enum"}

SEAL_FORMAT = "seal-tools"
OPENAI_FORMAT = "openai"
TOOLLAB_FORMAT = "toollab"
DEER_FORMAT = "deer"
#: the record formats a pool file may hold
FORMATS = (TOOLLAB_FORMAT, OPENAI_FORMAT, SEAL_FORMAT, DEER_FORMAT)


def json_type_for(name: Any) -> str | None:
    """The JSON Schema type for a Python-style or JSON Schema type name, or ``None``."""
    if not isinstance(name, str):
        return None
    return PY_TO_JSON_TYPE.get(name.strip().lower())


def seal_field_schema(spec: Any) -> JsonObject:
    """One Seal-Tools parameter or response entry → a JSON Schema."""
    if not isinstance(spec, dict):
        raise ToolSchemaError(
            f"expected an object with 'type' and 'description', got {type(spec).__name__}"
        )
    out: dict[str, Any] = {}
    original = spec.get("type")
    json_type = json_type_for(original)
    if json_type is not None:
        out["type"] = json_type
    elif original is not None:
        out["x-original-type"] = original
    for key, value in spec.items():
        if key == "type":
            continue
        if key in _SEAL_KEEP:
            out[key] = value
        elif key == "examples" and isinstance(value, list):
            out["examples"] = value
        else:
            # Seal-only annotations (example, unit, choices, ...) travel as extension keywords
            out[key if key.startswith("x-") else f"x-{key}"] = value
    return out


def _seal_fields(tool: str, what: str, specs: Any) -> dict[str, Any]:
    """Seal-Tools ``parameters`` or ``responses`` (name → {type, description}) → properties."""
    if not isinstance(specs, dict):
        raise ToolSchemaError(
            f"tool {tool!r}: '{what}s' must be an object of name → {{type, description}}, "
            f"got {type(specs).__name__}"
        )
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        try:
            out[name] = seal_field_schema(spec)
        except ToolSchemaError as exc:
            raise ToolSchemaError(f"tool {tool!r}: {what} {name!r}: {exc.problem}") from None
    return out


def seal_to_tool(record: JsonObject) -> Tool:
    """A Seal-Tools ``tool.jsonl`` record → :class:`Tool` (``field`` becomes the category; the
    ``responses`` become an object schema of ``returns``, in order, when there are any)."""
    name = record.get("api_name")
    if not isinstance(name, str) or not name.strip():
        raise ToolSchemaError("tool has no name (Seal-Tools record without 'api_name')")
    params = record.get("parameters")
    properties = _seal_fields(name, "parameter", {} if params is None else params)
    required = record.get("required")
    if required is None:
        required = []
    if not isinstance(required, list):
        raise ToolSchemaError(
            f"tool {name!r}: 'required' must be a list of parameter names, got {type(required).__name__}"
        )
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    responses = record.get("responses")
    returns: dict[str, Any] | None = None
    if responses is not None:
        rprops = _seal_fields(name, "response", responses)
        if rprops:
            returns = {"type": "object", "properties": rprops}

    known = {"api_name", "api_description", "parameters", "required", "responses", "field"}
    metadata: dict[str, Any] = {"format": SEAL_FORMAT}
    extra = {k: v for k, v in record.items() if k not in known}
    if extra:
        metadata["seal_extra"] = extra
    return Tool.build(
        name=name,
        description=record.get("api_description") or "",
        parameters=parameters,
        returns=returns,
        category=record.get("field"),
        metadata=metadata,
    )


#: JSON Schema type → the Seal-Tools (Python-style) type name
JSON_TO_SEAL_TYPE = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
}


def seal_field_entry(schema: Any) -> JsonObject:
    """The inverse of :func:`seal_field_schema`: a JSON Schema → a Seal-Tools entry."""
    spec = schema if isinstance(schema, dict) else {}
    typ = spec.get("x-original-type", spec.get("type", "str"))
    out: dict[str, Any] = {"type": JSON_TO_SEAL_TYPE.get(typ, typ) if isinstance(typ, str) else typ}
    out["description"] = spec.get("description", "")
    for key, value in spec.items():
        if key in ("type", "x-original-type", "description"):
            continue
        out[key[2:] if key.startswith("x-") else key] = value
    return out


def tool_to_seal(tool: Tool) -> JsonObject:
    """A :class:`Tool` → a Seal-Tools ``tool.jsonl`` record (the inverse of :func:`seal_to_tool`)."""
    rec: dict[str, Any] = {"api_name": tool.name, "api_description": tool.description}
    if tool.category:
        rec["field"] = tool.category
    rec["parameters"] = {name: seal_field_entry(spec) for name, spec in tool.properties.items()}
    rec["required"] = tool.required
    returns = (tool.returns or {}).get("properties") or {}
    rec["responses"] = {name: seal_field_entry(spec) for name, spec in returns.items()}
    extra = tool.metadata.get("seal_extra")
    if isinstance(extra, dict):
        rec.update(extra)
    return rec


def deer_to_tool(record: dict[str, Any]) -> Tool:
    """A DEER ``tool.json`` record → :class:`Tool`: the description for humans (the one DEER's
    candidate lines show), the parameters read from ``api_function``'s Python signature; the
    signature, the description for the model and the query → call examples in ``metadata``."""
    name, api_function = record.get("api_name"), record.get("api_function")
    if not isinstance(name, str) or not name.strip():
        raise ToolSchemaError("tool has no name ('api_name')")
    if not isinstance(api_function, str) or not api_function.strip():
        raise ToolSchemaError(f"tool {name!r}: 'api_function' must be a signature string")
    examples = record.get("example") or []
    if not isinstance(examples, list):
        raise ToolSchemaError(f"tool {name!r}: 'example' must be a list of {{query, call}}")
    sig = parse_signature(api_function)
    metadata: dict[str, Any] = {
        "format": DEER_FORMAT,
        "api_function": api_function,
        "description_for_model": record.get("description_for_model"),
        "examples": examples,
    }
    if sig.skipped:
        metadata["signature_skipped"] = sig.skipped
    return Tool.build(
        name=name,
        description=str(record.get("description_for_human") or record.get("description") or ""),
        parameters=sig.parameters,
        metadata=metadata,
    )


def record_format(record: Any) -> str:
    """Which of the accepted formats a decoded JSON value looks like."""
    if not isinstance(record, dict):
        raise ToolSchemaError(f"a tool must be a JSON object, got {json_kind(record)}")
    if "api_name" in record and "api_function" in record:
        return DEER_FORMAT
    if "api_name" in record or "api_description" in record:
        return SEAL_FORMAT
    if "function" in record or record.get("type") == "function":
        return OPENAI_FORMAT
    if set(record) <= TOOL_KEYS:
        return TOOLLAB_FORMAT
    return OPENAI_FORMAT  # a bare function dict with extra keys (e.g. "strict")


def tool_from_record(record: Any) -> Tool:
    """Decode one tool record of any accepted format; :class:`ToolSchemaError` says why not."""
    fmt = record_format(record)
    if fmt == DEER_FORMAT:
        return deer_to_tool(record)
    if fmt == SEAL_FORMAT:
        return seal_to_tool(record)
    if fmt == OPENAI_FORMAT:
        fn = record.get("function", record)
        if not isinstance(fn, dict):
            raise ToolSchemaError(
                f"'function' must be an object describing one tool, got {json_kind(fn)}"
            )
        if isinstance(fn, dict) and not (isinstance(fn.get("name"), str) and fn["name"].strip()):
            raise ToolSchemaError("tool has no name")
        return Tool.from_openai(record)
    metadata = record.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ToolSchemaError("'metadata' must be an object")
    return Tool.build(
        name=record.get("name"),
        description=record.get("description") or "",
        parameters=record.get("parameters"),
        returns=record.get("returns"),
        category=record.get("category"),
        metadata=metadata,
    )


def tool_to_record(tool: Tool) -> JsonObject:
    """toollab's own tool JSON, without empty optional fields."""
    out: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
    }
    if tool.returns is not None:
        out["returns"] = tool.returns
    if tool.category is not None:
        out["category"] = tool.category
    if tool.metadata:
        out["metadata"] = tool.metadata
    return out


def normalize_schema(schema: Any) -> Any:
    """Replace Python-style type names (``"dict"``, ``"float"``, ``"str"``, ...) by JSON Schema
    types throughout a schema; an unknown type name moves to ``"x-original-type"``.

    Useful for sources such as BFCL that write ``"type": "dict"``.  Returns a new value.
    """
    if isinstance(schema, list):
        return [normalize_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            mapped = json_type_for(value)
            if mapped is None:
                out["x-original-type"] = value
            else:
                out["type"] = mapped
        elif key == "type" and isinstance(value, list):
            mapped_list = [json_type_for(v) or v for v in value]
            out["type"] = mapped_list
        elif key in ("properties", "$defs", "definitions", "patternProperties") and isinstance(
            value, dict
        ):
            out[key] = {k: normalize_schema(v) for k, v in value.items()}
        elif key == "enum" or key == "const" or key == "default" or key == "examples":
            out[key] = value
        else:
            out[key] = normalize_schema(value)
    return out
