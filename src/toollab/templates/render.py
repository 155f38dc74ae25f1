"""Value and call renderers shared by the templates (JSON, Python literals, references)."""

from __future__ import annotations

import json
import keyword
import math
from collections.abc import Sequence
from typing import Any

from toollab.schema import Ref, Tool, ToolCall, to_seal_value
from toollab.schema.call import _refs_to_json

#: the assistant text used for an explicit no-call when the instance gives no answer text
DEFAULT_NO_CALL_ANSWER = "None of the available tools can be used to answer this request."


def json_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments as plain JSON: references become ``{"$ref": label}``."""
    out: dict[str, Any] = _refs_to_json(arguments)
    return out


def grammar_order(call: ToolCall, tool: Tool | None) -> dict[str, Any]:
    """The call's arguments in the order the decoding grammar writes them: the tool's required
    parameters, then its optional ones, each in schema order; unknown names last (the schema
    rejects them)."""
    args = json_arguments(call.arguments)
    if tool is None:
        return args
    props = list(tool.properties)
    required = set(tool.required)
    order = [p for p in props if p in required] + [p for p in props if p not in required]
    out = {k: args[k] for k in order if k in args}
    out.update({k: v for k, v in args.items() if k not in out})
    return out


def call_to_json(call: ToolCall) -> dict[str, Any]:
    """The OpenAI-style ``{"name", "arguments"}`` object of a call."""
    return {"name": call.name, "arguments": json_arguments(call.arguments)}


def dumps(value: Any, *, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)


def py_literal(value: Any) -> str:
    """A Python literal for an argument value; a :class:`Ref` becomes its label as a bare name."""
    if isinstance(value, Ref):
        return value.label if python_name(value.label) else repr(value.label)
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if isinstance(value, int | float | str):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_literal(k)}: {py_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        inner = ", ".join(py_literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(py_literal(v) for v in value) + "]"
    return repr(value)


def python_name(text: object) -> bool:
    """Whether ``text`` can stand as a name in Python source: an identifier that is not a
    keyword (``class=1`` and ``from.x()`` do not parse; soft keywords such as ``match`` do)."""
    return isinstance(text, str) and text.isidentifier() and not keyword.iskeyword(text)


def python_unexpressible(calls: Sequence[ToolCall]) -> str | None:
    """Why calls cannot be written in Python call syntax (``None`` when they can): names must
    be dotted identifiers and argument names identifiers (``f(start-date=1)`` is not Python),
    none of them a keyword (``f(class='a')`` is not Python either)."""
    for c in calls:
        parts = c.name.split(".")
        if any(keyword.iskeyword(part) for part in parts):
            return f"tool name {c.name!r} has a Python keyword in it"
        if not all(python_name(part) for part in parts):
            return f"tool name {c.name!r} is not a (dotted) Python identifier"
        for k in c.arguments:
            if isinstance(k, str) and keyword.iskeyword(k):
                return f"argument name {k!r} of {c.name!r} is a Python keyword"
            if not python_name(k):
                return f"argument name {k!r} of {c.name!r} is not a Python identifier"
    return None


def python_expressible(calls: Sequence[ToolCall]) -> bool:
    """Whether calls can be written in Python call syntax (see :func:`python_unexpressible`)."""
    return python_unexpressible(calls) is None


def py_call(call: ToolCall) -> str:
    """``name(arg=value, ...)`` with Python-literal values (BFCL and DEER call syntax)."""
    args = ", ".join(f"{k}={py_literal(v)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def seal_call(call: ToolCall) -> dict[str, Any]:
    """Seal-Tools' ``{"api", "parameters", "responses"}`` with references as their labels."""
    return {
        "api": call.name,
        "parameters": to_seal_value(call.arguments),
        "responses": list(call.outputs),
    }


def function_doc(tool: Tool) -> dict[str, Any]:
    """The bare function dict of a tool (name, description, parameters)."""
    fn: dict[str, Any] = tool.to_openai()["function"]
    return fn


def raw_doc(tool: Tool) -> dict[str, Any] | None:
    """The tool's original documentation dict, when the dataset adapter kept it."""
    raw = tool.metadata.get("raw")
    return dict(raw) if isinstance(raw, dict) else None
