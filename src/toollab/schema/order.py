"""The order a call's arguments are written in by the decoding grammar (and so by the training
targets and every constrained transcript): one definition for models, templates and data."""

from __future__ import annotations

from typing import Any

from toollab.schema.call import ToolCall, _refs_to_json
from toollab.schema.tool import Tool


def grammar_order(call: ToolCall, tool: Tool | None) -> dict[str, object]:
    """The call's arguments in the order the decoding grammar writes them: the tool's required
    parameters, then its optional ones, each in schema order; unknown names last (the schema
    rejects them).  References are ``{"$ref": label}``."""
    args: dict[str, Any] = _refs_to_json(call.arguments)
    if tool is None:
        return args
    props = list(tool.properties)
    required = set(tool.required)
    order = [p for p in props if p in required] + [p for p in props if p not in required]
    out = {k: args[k] for k in order if k in args}
    out.update({k: v for k, v in args.items() if k not in out})
    return out
