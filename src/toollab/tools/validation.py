"""Checking tool schemas and call arguments, with one precise reason per problem.

* :func:`check_tool_schema` — is a :class:`~toollab.schema.Tool` usable?  Its ``parameters`` must
  be a valid JSON Schema (Draft 2020-12 meta-schema, checked with ``jsonschema``) of type
  ``object``; every ``required`` name must be a declared property; property names must be
  non-empty.  ``returns``, when present, must be a valid JSON Schema too.
* :func:`tool_warnings` — what is usable but probably a mistake: a type name toollab does not
  know (kept as ``x-original-type``, so the value goes unchecked).
* :func:`ref_problems` — ``$ref`` s resolve only within the schema itself: a reference to
  anything else (``https://...``, another file) is a problem and is never fetched, and a chain of
  references that comes back to where it started without descending into the value (a cycle that
  no value can end) is one too.  Validators are built with an empty registry, so no reference
  ever leaves the document.
* :func:`validate_arguments` — do a call's arguments fit the tool?  Missing required parameters,
  unknown parameters (unless the schema allows extra ones with ``additionalProperties``), wrong
  types (a Python ``bool`` is not an integer; an integer is a valid number), enum violations and
  nested errors (array items, object fields) each give one reason naming the parameter path,
  e.g. ``parameter 'tags[1]': expected string, got integer 3``.  :class:`~toollab.schema.Ref`
  values are not checked: they are validated once resolved.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any
from urllib.parse import urldefrag, urljoin

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from toollab.data.types import (
    JSON_TYPES,
    tool_unknown_types,
    unknown_type_reason,
)
from toollab.errors import ArgumentValidationError, did_you_mean
from toollab.schema import Ref, Tool, ToolCall
from toollab.schema.wire import json_kind
from toollab.tools.formats import json_type_for

_META = Draft202012Validator(Draft202012Validator.META_SCHEMA)
#: validators whose reasons come first: what is missing or unknown
_FIRST = ("required", "additionalProperties", "unevaluatedProperties")


# -- tool schemas ---------------------------------------------------------------------------------
def _path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out


def _schema_error_reason(err: ValidationError, where: str) -> str:
    loc = _path([where, *err.absolute_path])
    if err.absolute_path and err.absolute_path[-1] == "type" and isinstance(err.instance, str):
        hint = json_type_for(err.instance)
        fix = (
            f" (use {hint!r})"
            if hint and hint != err.instance
            else did_you_mean(err.instance, JSON_TYPES)
        )
        return f"invalid JSON Schema at {loc}: {err.instance!r} is not a JSON Schema type{fix}; types are {', '.join(JSON_TYPES)}"
    if err.validator in ("anyOf", "oneOf", "allOf") and err.context:
        inner = best_match(err.context)
        return f"invalid JSON Schema at {loc}: {inner.message}"
    return f"invalid JSON Schema at {loc}: {err.message}"


_NAMED_SCHEMAS = ("$defs", "definitions", "dependentSchemas", "patternProperties")
_TEXT_KEYWORDS = ("description", "title", "$comment")


def _skeleton(schema: Any) -> Any:
    """``schema`` without what cannot change its meta-schema validity (texts, example values,
    extension keywords), so that validity can be cached by structure."""
    if isinstance(schema, list):
        return [_skeleton(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key.startswith("x-") or key in ("default", "const"):
            continue  # extension keywords and any-value keywords cannot make a schema invalid
        if key in _TEXT_KEYWORDS and isinstance(value, str):
            out[key] = ""
        elif key in ("enum", "examples") and isinstance(value, list):
            out[key] = []
        elif key in (*_NAMED_SCHEMAS, "properties") and isinstance(value, dict):
            out[key] = {k: _skeleton(v) for k, v in value.items()}
        else:
            out[key] = _skeleton(value)
    return out


@functools.lru_cache(maxsize=8192)
def _skeleton_valid(skeleton_json: str) -> bool:
    return bool(_META.is_valid(json.loads(skeleton_json)))


def _meta_valid(schema: Any) -> bool:
    """Is ``schema`` valid under the Draft 2020-12 meta-schema?  Each property's schema is checked
    on its own (the meta-schema applies itself to every property), the rest by its skeleton."""
    if not isinstance(schema, dict):
        return bool(_META.is_valid(schema))
    rest = dict(schema)
    props = schema.get("properties")
    if isinstance(props, dict):
        if not all(_meta_valid(v) for v in props.values()):
            return False
        rest["properties"] = {}
    required = schema.get("required")
    if (
        isinstance(required, list)
        and all(isinstance(r, str) for r in required)
        and len(set(required)) == len(required)
    ):
        rest["required"] = []
    try:
        key = json.dumps(_skeleton(rest), sort_keys=True)
    except (TypeError, ValueError):
        return bool(_META.is_valid(schema))
    return _skeleton_valid(key)


def meta_schema_errors(schema: Any) -> list[ValidationError]:
    """Every Draft 2020-12 meta-schema error of ``schema`` (a valid schema costs a cache lookup)."""
    if _meta_valid(schema):
        return []
    return list(_META.iter_errors(schema))


def schema_problems(
    schema: Any, where: str = "parameters", *, require_object: bool = True
) -> list[str]:
    """Every reason why ``schema`` is not a usable JSON Schema (``[]`` when it is)."""
    if not isinstance(schema, dict):
        return [f"{where} must be a JSON Schema object, got {json_kind(schema)}"]
    errors = sorted(meta_schema_errors(schema), key=lambda e: _path(e.absolute_path))
    reasons = [_schema_error_reason(e, where) for e in errors]
    if not reasons:
        reasons.extend(ref_problems(schema, where))
    if not require_object:
        return reasons
    stype = schema.get("type")
    if stype != "object" and not (isinstance(stype, str) and json_type_for(stype) == "object"):
        got = "no type" if stype is None else f"type {stype!r}"
        reasons.append(f'{where} must have "type": "object", got {got}')
    props = schema.get("properties", {})
    if isinstance(props, dict):
        for name in props:
            if not name.strip():
                reasons.append(f"{where}.properties has an empty parameter name")
    required = schema.get("required", [])
    if isinstance(required, list) and isinstance(props, dict):
        for name in required:
            if isinstance(name, str) and name not in props:
                reasons.append(
                    f"{where}.required names {name!r}, which is not in properties"
                    + did_you_mean(name, list(props))
                )
    return _dedupe(reasons)


# -- references ------------------------------------------------------------------------------------
_BASE = "urn:toollab:schema"
_REF_KEYS = ("$ref", "$dynamicRef")
#: keywords whose subschemas apply to the same value (a reference cycle through them never ends)
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MANY = ("allOf", "anyOf", "oneOf")
_MAX_NODES = 100_000


def _subschemas(node: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for key, value in node.items():
        if key in ("enum", "const", "default", "examples") or key.startswith("x-"):
            continue
        if isinstance(value, dict):
            if key in (
                "properties",
                "patternProperties",
                "$defs",
                "definitions",
                "dependentSchemas",
            ):
                for name, sub in value.items():
                    yield f"{key}.{name}", sub
            else:
                yield key, value
        elif isinstance(value, list):
            for i, sub in enumerate(value):
                yield f"{key}[{i}]", sub


def _walk(schema: Any) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(location, base URI, node)`` of every schema object in ``schema`` (no recursion)."""
    stack: list[tuple[str, str, Any]] = [("", _BASE, schema)]
    seen = 0
    while stack:
        where, base, node = stack.pop()
        if not isinstance(node, dict):
            continue
        seen += 1
        if seen > _MAX_NODES:
            return
        ident = node.get("$id")
        if isinstance(ident, str) and ident:
            base = urldefrag(urljoin(base, ident))[0] or base
        yield where, base, node
        for key, sub in _subschemas(node):
            stack.append((f"{where}.{key}" if where else key, base, sub))


def _in_place(node: dict[str, Any]) -> Iterator[Any]:
    for key in _IN_PLACE_ONE:
        if isinstance(node.get(key), dict):
            yield node[key]
    for key in _IN_PLACE_MANY:
        if isinstance(node.get(key), list):
            yield from node[key]


def ref_problems(schema: Any, where: str = "parameters") -> list[str]:
    """Every ``$ref`` that points outside ``schema`` or cannot be resolved in it, and every
    reference cycle no value can end (``[]`` when there is none).  Nothing is fetched."""
    if not isinstance(schema, dict) or not any(
        isinstance(node.get(k), str) for _, _, node in _walk(schema) for k in _REF_KEYS
    ):
        return []
    try:
        registry = Registry().with_resource(_BASE, DRAFT202012.create_resource(schema)).crawl()
    except Exception as exc:
        return [f"{where}: its $id / $anchor declarations cannot be read: {exc}"]
    known = {_BASE, *(str(uri) for uri in registry)}
    problems: list[str] = []
    targets: dict[int, list[tuple[str, dict[str, Any]]]] = {}
    for loc, base, node in _walk(schema):
        for key in _REF_KEYS:
            ref = node.get(key)
            if not isinstance(ref, str):
                continue
            at = f"{where}.{loc}.{key}" if loc else f"{where}.{key}"
            absolute = base if ref.startswith("#") else urldefrag(urljoin(base, ref))[0]
            if absolute not in known:
                problems.append(
                    f"{at}: {ref!r} points outside the schema; references are resolved only "
                    "within the schema itself and never fetched"
                )
                continue
            try:
                resolved = registry.resolver(base_uri=base).lookup(ref).contents
            except Exception:  # Unresolvable, or a malformed pointer
                problems.append(f"{at}: {ref!r} names nothing in the schema")
                continue
            if isinstance(resolved, dict):
                targets.setdefault(id(node), []).append((ref, resolved))
    cycles = _cycles(schema, targets, where)
    problems.extend(cycles or _required_cycles(schema, targets, where))
    return problems


def _is(node: dict[str, Any], type_name: str) -> bool:
    t = node.get("type")
    return t == type_name or t == [type_name]


def _mandatory(
    node: dict[str, Any], targets: dict[int, list[tuple[str, dict[str, Any]]]], root: bool
) -> Iterator[tuple[str, bool, dict[str, Any]]]:
    """``(label, descends, subschema)`` for every subschema that every value of ``node`` must
    satisfy too: its references, ``allOf`` (and a one-branch ``anyOf`` / ``oneOf``) at the same
    value, the schema of each *required* property of an object (``descends``: one level
    down), the items an array must hold (``minItems``)."""
    for ref, target in targets.get(id(node), []):
        yield f"$ref {ref!r}", False, target
    for key in ("allOf", "anyOf", "oneOf"):
        subs = node.get(key)
        if isinstance(subs, list) and (key == "allOf" or len(subs) == 1):
            for sub in subs:
                if isinstance(sub, dict):
                    yield key, False, sub
    props, required = node.get("properties"), node.get("required")
    if (root or _is(node, "object")) and isinstance(props, dict) and isinstance(required, list):
        for name in required:
            if isinstance(name, str) and isinstance(props.get(name), dict):
                yield f"required {name!r}", True, props[name]
    least = node.get("minItems")
    if _is(node, "array") and isinstance(least, int) and not isinstance(least, bool) and least > 0:
        prefix = node.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        for i, sub in enumerate(prefix[:least]):
            if isinstance(sub, dict):
                yield f"prefixItems[{i}]", True, sub
        if least > len(prefix) and isinstance(node.get("items"), dict):
            yield "items", True, node["items"]


def _required_cycles(
    schema: Any, targets: dict[int, list[tuple[str, dict[str, Any]]]], where: str
) -> list[str]:
    """A schema that every value must satisfy again one level down -- a required property (or
    a required array item) whose schema leads back through ``$ref`` to a schema it is inside:
    only an infinite value fits, so no call can ever be valid (``{"properties": {"next":
    {"$ref": "#"}}, "required": ["next"]}``)."""
    if not targets:
        return []
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in [node for _, _, node in _walk(schema)]:
        if state.get(id(start)):
            continue
        path: list[tuple[dict[str, Any], Iterator[tuple[str, bool, dict[str, Any]]], str, bool]]
        path = [(start, _mandatory(start, targets, start is schema), "", False)]
        state[id(start)] = 1
        while path:
            node, it, _label, _down = path[-1]
            step = next(it, None)
            if step is None:
                state[id(node)] = 2
                path.pop()
                continue
            label, down, nxt = step
            mark = state.get(id(nxt))
            if mark == 1:
                first = next(i for i, entry in enumerate(path) if entry[0] is nxt)
                loop = [(lb, d) for _n, _i, lb, d in path[first + 1 :]] + [(label, down)]
                if any(d for _lb, d in loop):  # an in-place loop is _cycles' problem
                    chain = " -> ".join(lb for lb, _d in loop)
                    return [
                        f"{where}: required-property cycle ({chain}): every value must hold "
                        "another value of the same schema inside it, so only an infinite value "
                        "would fit; make one of these properties optional"
                    ]
                continue
            if mark is None:
                state[id(nxt)] = 1
                path.append((nxt, _mandatory(nxt, targets, nxt is schema), label, down))
    return []


def _cycles(
    schema: Any, targets: dict[int, list[tuple[str, dict[str, Any]]]], where: str
) -> list[str]:
    """References that lead back to their own schema through in-place keywords only."""
    if not targets:
        return []
    nodes = {id(node): node for _, _, node in _walk(schema)}

    def edges(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
        for _, target in targets.get(id(node), []):
            yield target
        for sub in _in_place(node):
            if isinstance(sub, dict):
                yield sub

    problems: list[str] = []
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    for start in [n for i, n in nodes.items() if i in targets]:
        if state.get(id(start)):
            continue
        path: list[tuple[dict[str, Any], Iterator[dict[str, Any]]]] = [(start, edges(start))]
        state[id(start)] = 1
        while path:
            node, it = path[-1]
            nxt = next(it, None)
            if nxt is None:
                state[id(node)] = 2
                path.pop()
                continue
            mark = state.get(id(nxt))
            if mark == 1:
                refs = [r for n, _ in path for r, _t in targets.get(id(n), [])]
                chain = " -> ".join(repr(r) for r in refs) or "a reference"
                problems.append(
                    f"{where}: $ref cycle ({chain}): the references lead back to themselves "
                    "without descending into the value, so no value can be checked"
                )
                return problems
            if mark is None:
                state[id(nxt)] = 1
                path.append((nxt, edges(nxt)))
    return problems


def check_tool_schema(tool: Tool) -> list[str]:
    """Every reason why ``tool`` is not usable, ``[]`` when it is."""
    reasons: list[str] = []
    if not tool.name.strip():
        reasons.append("tool has no name")
    reasons.extend(schema_problems(tool.parameters, "parameters"))
    if tool.returns is not None:
        reasons.extend(schema_problems(tool.returns, "returns", require_object=False))
    return reasons


def tool_warnings(tool: Tool) -> list[str]:
    """What is usable but probably not meant: type names toollab does not know (a misspelt
    ``"strng"`` in a Seal-Tools record, ...), which leave the value unchecked."""
    return [unknown_type_reason(path, name) for path, name in tool_unknown_types(tool)]


# -- call arguments -------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def _argument_validator(schema_json: str) -> Draft202012Validator | str:
    """A validator for a tool's parameters, or the reason the schema itself is broken."""
    schema = json.loads(schema_json)
    problems = schema_problems(schema, "parameters")
    if problems:
        return problems[0]
    closed = copy.deepcopy(schema)
    if not any(
        k in closed for k in ("additionalProperties", "patternProperties", "unevaluatedProperties")
    ):
        closed["additionalProperties"] = False  # toollab flags unknown parameters by default
    # an empty registry: references resolve within the schema only, nothing is ever fetched
    return Draft202012Validator(closed, registry=Registry())


def _under_ref(instance: Any, path: Iterable[Any]) -> bool:
    """Is the value at ``path`` (or any value on the way to it) an unresolved :class:`Ref`?"""
    node = instance
    if isinstance(node, Ref):
        return True
    for p in path:
        try:
            node = node[p]
        except (KeyError, IndexError, TypeError):
            return False
        if isinstance(node, Ref):
            return True
    return False


def _short(value: Any, limit: int = 60) -> str:
    text = (
        json.dumps(value, ensure_ascii=False, default=repr)
        if not isinstance(value, Ref)
        else repr(value)
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _expected_types(schema: Any) -> list[str] | None:
    if not isinstance(schema, dict):
        return None
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [str(x) for x in t]
    for key in ("anyOf", "oneOf"):
        subs = schema.get(key)
        if isinstance(subs, list):
            out: list[str] = []
            for sub in subs:
                ts = _expected_types(sub)
                if ts is None:
                    return None
                out.extend(ts)
            return out
    if "enum" in schema or "const" in schema:
        return None
    return None


def _argument_reasons(err: ValidationError) -> list[str]:
    path = list(err.absolute_path)
    where = _path(path)
    label = f"parameter {where!r}" if where else "arguments"
    if err.validator == "required":
        name = err.message.split(" is a required property")[0]
        with contextlib.suppress(ValueError, SyntaxError):
            name = str(ast.literal_eval(name))
        full = _path([*path, name])
        return [f"missing required parameter {full!r}"]
    if err.validator in ("additionalProperties", "unevaluatedProperties") and isinstance(
        err.instance, dict
    ):
        declared = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
        declared = declared if isinstance(declared, dict) else {}
        extras = [k for k in err.instance if k not in declared]
        return [
            f"unknown parameter {_path([*path, k])!r}" + did_you_mean(k, list(declared))
            for k in extras
        ] or [f"{label}: {err.message}"]
    if err.validator == "type":
        types = (
            err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        )
        return [
            f"{label}: expected {' or '.join(map(str, types))}, got {json_kind(err.instance)} {_short(err.instance)}"
        ]
    if err.validator == "enum":
        options = err.validator_value if isinstance(err.validator_value, list) else []
        hint = (
            did_you_mean(err.instance, [o for o in options if isinstance(o, str)])
            if isinstance(err.instance, str)
            else ""
        )
        return [f"{label}: {_short(err.instance)} is not one of {_short(options, 200)}{hint}"]
    if err.validator == "const":
        return [f"{label}: must be {_short(err.validator_value)}, got {_short(err.instance)}"]
    if err.validator in ("anyOf", "oneOf"):
        alts = _expected_types(err.schema)
        if alts:
            return [
                f"{label}: expected {' or '.join(alts)}, got {json_kind(err.instance)} {_short(err.instance)}"
            ]
        if err.context:
            inner = best_match(err.context)
            sub = _argument_reasons(inner)
            if sub:
                return sub
    return [f"{label}: {err.message}"]


def validate_arguments(tool: Tool, arguments: Any) -> list[str]:
    """Every reason why ``arguments`` do not fit ``tool``; ``[]`` when they do."""
    if not isinstance(arguments, dict):
        return [f"arguments must be a JSON object, got {json_kind(arguments)}"]
    try:
        validator = _argument_validator(json.dumps(tool.parameters, sort_keys=True, default=str))
    except RecursionError:
        return [f"tool {tool.name!r} has an invalid parameter schema: it is nested too deeply"]
    if isinstance(validator, str):
        return [f"tool {tool.name!r} has an invalid parameter schema: {validator}"]
    reasons: list[str] = []
    try:
        errors = sorted(
            validator.iter_errors(arguments),
            key=lambda e: (e.validator not in _FIRST, _path(e.absolute_path)),
        )
    except (Unresolvable, RecursionError) as exc:  # what ref_problems cannot foresee
        kind = "is nested too deeply" if isinstance(exc, RecursionError) else f"has {exc}"
        return [f"tool {tool.name!r}: the arguments cannot be checked: the schema {kind}"]
    for err in errors:
        if _under_ref(arguments, err.absolute_path):
            continue
        reasons.extend(_argument_reasons(err))
    return _dedupe(reasons)


def check_arguments(tool: Tool, arguments: Any) -> None:
    """Raise :class:`ArgumentValidationError` listing every reason when the arguments do not fit."""
    reasons = validate_arguments(tool, arguments)
    if reasons:
        raise ArgumentValidationError(tool.name, reasons)


def validate_call(call: ToolCall, tools: Mapping[str, Tool]) -> list[str]:
    """Reasons why ``call`` is not a valid call of one of ``tools`` (unknown tool included)."""
    tool = tools.get(call.name)
    if tool is None:
        return [f"unknown tool {call.name!r}" + did_you_mean(call.name, list(tools))]
    return validate_arguments(tool, call.arguments)


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out
