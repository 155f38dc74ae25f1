"""Python-style signatures and calls as benchmarks write them in text.

* :func:`parse_signature` reads ``ad4mat(api_key: str, user_id: int, product_urls: List[str],
  location: str = None)`` into a JSON Schema object (``required`` = parameters without a default).
  Hand-written signatures are often not valid Python (``...``, ``optional x: str``, a default
  before a required parameter), so parameters are split by hand and each piece is read leniently.
* :func:`parse_call_text` reads ``CTCP(nctid='NCT03780233')`` into a name and keyword arguments
  with :mod:`ast` (never ``eval``); text that is not valid Python (an unescaped apostrophe inside
  a quoted value, a cut-off call) falls back to a lenient split and says so.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

from toollab.data.types import ORIGINAL_TYPE

_SIMPLE: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "string": {"type": "string"},
    "int": {"type": "integer"},
    "integer": {"type": "integer"},
    "float": {"type": "number"},
    "number": {"type": "number"},
    "bool": {"type": "boolean"},
    "boolean": {"type": "boolean"},
    "list": {"type": "array"},
    "List": {"type": "array"},
    "dict": {"type": "object"},
    "Dict": {"type": "object"},
    "tuple": {"type": "array"},
    "Tuple": {"type": "array"},
    "Any": {},
    "any": {},
    "None": {"type": "null"},
}
_PARAM = re.compile(
    r"^(?P<opt>optional\s+)?(?P<stars>\*{0,2})(?P<name>[A-Za-z_]\w*)\s*"
    r"(?::\s*(?P<ann>.+?))?\s*(?:=\s*(?P<default>.*))?$",
    re.S,
)


def annotation_schema(text: str) -> dict[str, Any]:
    """``List[str]`` → ``{"type": "array", "items": {"type": "string"}}``; unknown → x-original-type."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return {ORIGINAL_TYPE: text.strip()}
    return _node_schema(node, text.strip())


def _node_schema(node: ast.expr, text: str) -> dict[str, Any]:
    if isinstance(node, ast.Name) and node.id in _SIMPLE:
        return dict(_SIMPLE[node.id])
    if isinstance(node, ast.Attribute):  # typing.List → List
        return _node_schema(ast.Name(id=node.attr), text)
    if isinstance(node, ast.Constant) and node.value is None:
        return {"type": "null"}
    if isinstance(node, ast.Subscript):
        base = (
            node.value.attr
            if isinstance(node.value, ast.Attribute)
            else getattr(node.value, "id", "")
        )
        args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base == "Optional" and len(args) == 1:
            return _node_schema(args[0], text)
        if base in ("List", "list", "Sequence", "Set", "set") and len(args) == 1:
            return {"type": "array", "items": _node_schema(args[0], ast.unparse(args[0]))}
        if base in ("Tuple", "tuple"):
            if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is Ellipsis:
                return {"type": "array", "items": _node_schema(args[0], ast.unparse(args[0]))}
            return {
                "type": "array",
                "prefixItems": [_node_schema(a, ast.unparse(a)) for a in args],
                "minItems": len(args),
                "maxItems": len(args),
            }
        if base in ("Dict", "dict", "Mapping") and len(args) == 2:
            return {
                "type": "object",
                "additionalProperties": _node_schema(args[1], ast.unparse(args[1])),
            }
        if base == "Union":
            options = [_node_schema(a, ast.unparse(a)) for a in args]
            options = [o for o in options if o != {"type": "null"}]
            return options[0] if len(options) == 1 else {"anyOf": options}
    return {ORIGINAL_TYPE: text}


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at ``sep`` outside brackets and quotes."""
    parts: list[str] = []
    depth = 0
    quote: str | None = None
    buf: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            buf.append(ch)
            if ch == "\\" and i + 1 < len(text):
                buf.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            buf.append(ch)
        elif ch in "([{":
            depth += 1
            buf.append(ch)
        elif ch in ")]}":
            depth -= 1
            buf.append(ch)
        elif ch == sep and depth == 0:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
        i += 1
    parts.append("".join(buf))
    return [p.strip() for p in parts if p.strip()]


def _default_value(text: str) -> tuple[bool, Any]:
    """(is JSON-representable, value) of a default written in Python."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False, text
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False, repr(value)
    return True, list(value) if isinstance(value, tuple) else value


@dataclass
class Signature:
    name: str
    parameters: dict[str, Any]
    #: pieces that could not be read as parameters (``...``, ``*args``)
    skipped: list[str] = field(default_factory=list)


def parse_signature(text: str) -> Signature:
    """``name(a: int, b: str = "x")`` → name and a JSON Schema object for the parameters."""
    text = text.strip()
    open_at = text.find("(")
    if open_at < 0:
        return Signature(text, {"type": "object", "properties": {}, "required": []})
    name = text[:open_at].strip()
    close_at = text.rfind(")")
    inner = text[open_at + 1 : close_at if close_at > open_at else len(text)]
    props: dict[str, Any] = {}
    required: list[str] = []
    skipped: list[str] = []
    for piece in split_top_level(inner):
        m = _PARAM.match(piece)
        if not m or m.group("stars"):
            skipped.append(piece)
            continue
        pname = m.group("name")
        ann = m.group("ann")
        schema = annotation_schema(ann) if ann else {}
        default = m.group("default")
        if default is not None:
            ok, value = _default_value(default.strip())
            if ok:
                schema["default"] = value
            else:
                schema["x-default"] = value
        elif not m.group("opt"):
            required.append(pname)
        props[pname] = schema
    return Signature(name, {"type": "object", "properties": props, "required": required}, skipped)


@dataclass
class ParsedCall:
    name: str
    arguments: dict[str, Any]
    #: "ast" (valid Python), "lenient" (read piece by piece) or "name-only"
    method: str
    problems: list[str] = field(default_factory=list)


def _value(node: ast.expr) -> Any:
    """A literal, or a bare identifier as its name (BFCL's rule for ``ast.Name``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _value(node.operand)
        if isinstance(inner, int | float):
            return -inner
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return [_value(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {
            (_value(k) if k is not None else None): _value(v)
            for k, v in zip(node.keys, node.values, strict=True)
        }
    return ast.literal_eval(node)


def _json_safe(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def _lenient_value(text: str) -> Any:
    text = text.strip()
    try:
        return _json_safe(_value(ast.parse(text, mode="eval").body))
    except (SyntaxError, ValueError, TypeError):
        pass
    if len(text) >= 2 and text[0] in "'\"" and text[-1] == text[0]:
        return text[1:-1]
    if text[:1] in ("'", '"'):  # cut off before the closing quote
        return text[1:]
    if text in ("true", "false"):
        return text == "true"
    return text


_KW_START = re.compile(r",\s*([A-Za-z_]\w*)\s*=(?!=)")


def parse_call_text(text: str) -> ParsedCall:
    """``name(k=v, ...)`` → :class:`ParsedCall`; positional arguments are reported, not kept."""
    text = text.strip()
    open_at = text.find("(")
    name = text[:open_at].strip() if open_at >= 0 else text
    try:
        node = ast.parse(text, mode="eval").body
        if not isinstance(node, ast.Call):
            raise ValueError("not a call")
        args = {kw.arg: _json_safe(_value(kw.value)) for kw in node.keywords if kw.arg is not None}
        problems = [f"positional argument {ast.unparse(a)!r} ignored" for a in node.args]
        return ParsedCall(ast.unparse(node.func), args, "ast", problems)
    except (SyntaxError, ValueError, TypeError) as exc:
        reason = f"not valid Python ({exc.__class__.__name__}: {exc})"
    if open_at < 0:
        return ParsedCall(name, {}, "name-only", [reason])
    close_at = text.rfind(")")
    inner = text[open_at + 1 : close_at if close_at > open_at else len(text)]
    if close_at <= open_at:
        reason += "; the call is not closed"
    # keyword boundaries ", name=": robust to unescaped quotes inside values
    pieces: list[tuple[str, str]] = []
    first = re.match(r"\s*([A-Za-z_]\w*)\s*=(?!=)", inner)
    if first:
        key, pos = first.group(1), first.end()
        for m in _KW_START.finditer(inner, pos):
            pieces.append((key, inner[pos : m.start()]))
            key, pos = m.group(1), m.end()
        pieces.append((key, inner[pos:]))
    args = {key: _lenient_value(raw) for key, raw in pieces}
    return ParsedCall(name, args, "lenient" if pieces else "name-only", [reason])
