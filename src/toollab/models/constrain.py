"""Constrained decoding: JSON Schemas (and GBNF grammars) that admit exactly valid tool calls.

From the offered tools, :func:`call_schema` builds the object of one call: the tool name as a
``const`` and that tool's (normalised) parameters as ``arguments``, one ``anyOf`` branch per tool,
so a decoder can only name an offered tool and only give it arguments its schema allows.
:func:`build_schema` wraps it in the shape a :class:`~toollab.models.policy.CallPolicy` asks for:
one call, an array of at most / exactly *n* calls, optionally behind an explicit decision
(``{"decision": "call", ...}`` / ``{"decision": "no_call", "answer": ...}``).

Grammar compilers do not support every JSON Schema keyword (llama.cpp's
json-schema-to-grammar, for one), and BFCL / Seal-Tools write types JSON Schema does not know
(``dict``, ``float``, ``tuple``, ``any``, ``str`` ...).  :func:`grammar_schema` maps those types,
drops unsupported keywords, keeps ``required`` and closes objects with
``additionalProperties: false``.

Which backends honour the schema: llama.cpp (a GBNF grammar, :func:`gbnf_grammar`), OpenAI-compatible
servers (``response_format`` with a JSON Schema / vLLM ``guided_json``, :func:`response_format`);
see ``docs/templates.md``.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from typing import TYPE_CHECKING, Any

from toollab.errors import BackendError, ToolSchemaError
from toollab.schema import Tool, ToolCall
from toollab.schema.json import JsonObject
from toollab.tools.formats import PY_TO_JSON_TYPE

if TYPE_CHECKING:
    from toollab.models.policy import CallPolicy

#: type spellings of BFCL / Seal-Tools / Python → JSON Schema (``None``: any value)
TYPE_MAP: dict[str, str | None] = {**PY_TO_JSON_TYPE, "any": None}

#: keywords kept for grammar compilers; everything else (description, default, format, minimum,
#: examples, uniqueItems, non-standard keys ...) is dropped.  ``pattern`` is kept, anchored, when
#: llama.cpp's schema converter can turn it into a grammar (see :func:`grammar_pattern`).
_KEEP = {
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "const",
    "anyOf",
    "additionalProperties",
}
_KEEP_COUNTS = {"minItems", "maxItems", "minLength", "maxLength"}

DECISION_KEY = "decision"
CALL = "call"
NO_CALL = "no_call"


def _map_type(value: Any, where: str) -> str | None:
    if not isinstance(value, str):
        raise ToolSchemaError(f"{where}: a type must be a string, got {value!r}")
    key = value.strip().lower()
    if key not in TYPE_MAP:
        raise ToolSchemaError(f"{where}: unknown type {value!r}")
    return TYPE_MAP[key]


def grammar_schema(
    schema: Any,
    *,
    close_objects: bool = True,
    max_string_length: int | None = None,
    where: str = "schema",
) -> dict[str, Any]:
    """A JSON Schema a grammar compiler accepts, admitting the same values as ``schema``.

    * maps ``dict``/``float``/``tuple``/``any``/``str``/``int``/``bool``/``list`` to JSON Schema;
    * keeps ``type``, ``properties``, ``required`` (only declared names), ``items``, ``enum``,
      ``const``, ``anyOf`` (``oneOf`` is read as ``anyOf``), ``additionalProperties`` and the
      length/item counts; drops the rest;
    * closes every object that declares properties with ``additionalProperties: false`` (an
      object without declared properties stays open: it is a free-form dict);
    * ``max_string_length`` caps strings without a ``maxLength`` (a guard against a small model
      looping inside a string).
    """
    if schema is True or schema is None:
        return {}
    if not isinstance(schema, dict):
        raise ToolSchemaError(f"{where}: a schema must be an object, got {type(schema).__name__}")

    def sub(value: Any, at: str) -> dict[str, Any]:
        return grammar_schema(
            value, close_objects=close_objects, max_string_length=max_string_length, where=at
        )

    out: dict[str, Any] = {}
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        out["enum"] = copy.deepcopy(schema["enum"])
        return out
    if "const" in schema:
        return {"const": copy.deepcopy(schema["const"])}
    alts = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(alts, list) and alts:
        out["anyOf"] = [sub(a, f"{where}.anyOf[{i}]") for i, a in enumerate(alts)]
        return out
    typ: Any = schema.get("type")
    if isinstance(typ, list):
        mapped = [_map_type(t, where) for t in typ]
        typ = None if None in mapped else list(dict.fromkeys(mapped))
        if isinstance(typ, list) and len(typ) == 1:
            typ = typ[0]
    elif typ is not None:
        typ = _map_type(typ, where)
    props = schema.get("properties")
    if typ is None and isinstance(props, dict):
        typ = "object"
    if typ is None and "items" in schema:
        typ = "array"
    if typ is None:
        return {}
    out["type"] = typ
    if typ == "object":
        if isinstance(props, dict) and props:
            out["properties"] = {name: sub(spec, f"{where}.{name}") for name, spec in props.items()}
            req = schema.get("required")
            if isinstance(req, list):
                names = [r for r in req if isinstance(r, str) and r in props]
                if names:
                    out["required"] = list(dict.fromkeys(names))
            if close_objects:
                out["additionalProperties"] = False
        else:
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                out["additionalProperties"] = sub(extra, f"{where}.additionalProperties")
            elif close_objects and isinstance(props, dict):
                # an explicitly empty ``properties`` means: no keys at all
                out["additionalProperties"] = False
    elif typ == "array":
        items = schema.get("items")
        if isinstance(items, dict):
            out["items"] = sub(items, f"{where}.items")
        elif isinstance(items, list) and items:  # tuple-style items: accept any listed shape
            out["items"] = {"anyOf": [sub(i, f"{where}.items") for i in items]}
    elif typ == "string":
        pattern = grammar_pattern(schema.get("pattern"))
        if pattern is not None:
            out["pattern"] = pattern
        elif max_string_length is not None and "maxLength" not in schema:
            out["maxLength"] = max_string_length
    for key in _KEEP_COUNTS:
        if isinstance(schema.get(key), int) and not isinstance(schema.get(key), bool):
            out[key] = schema[key]
    return {k: v for k, v in out.items() if k in _KEEP or k in _KEEP_COUNTS or k == "pattern"}


_SHORTHAND = {"d": ("0-9", "[0-9]"), "w": ("A-Za-z0-9_", "[A-Za-z0-9_]"), "s": (" \\t", "[ \\t]")}
#: escapes llama.cpp's GBNF parser understands
_GBNF_ESCAPES = re.compile(r'\\[^xuUtrn\\"\[\]]')


def _expand_shorthands(pattern: str) -> str | None:
    """``\\d``, ``\\w``, ``\\s`` as explicit character classes (GBNF has no shorthands);
    ``None`` for the negated forms, which it cannot express."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in _SHORTHAND:
                out.append(_SHORTHAND[nxt][0 if in_class else 1])
            elif nxt in "DWS":
                return None
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        out.append(ch)
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=1024)
def grammar_pattern(pattern: Any) -> str | None:
    """``pattern`` as grammar compilers need it, or ``None`` when it cannot become a grammar.

    JSON Schema patterns are unanchored; llama.cpp's converter wants ``^...$`` and GBNF has no
    ``\\d``-style shorthands, so the pattern is anchored and its shorthands expanded.  Patterns
    that are invalid, or that use what GBNF cannot express (lookarounds, lazy quantifiers,
    negated shorthands), are dropped: the value is then only typed, not patterned.
    """
    if not isinstance(pattern, str) or not pattern:
        return None
    try:
        re.compile(pattern)
    except re.error:
        return None
    expanded = _expand_shorthands(pattern)
    if expanded is None:
        return None
    anchored = expanded if expanded.startswith("^") else "^.*" + expanded
    if not anchored.endswith("$") or anchored.endswith("\\$"):
        anchored += ".*$"
    try:
        from llama_cpp.llama_grammar import SchemaConverter
    except ImportError:  # without llama.cpp the pattern is still a valid JSON Schema keyword
        return anchored
    try:
        conv = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
        conv.visit({"type": "string", "pattern": anchored}, "")
        rules = conv.format_grammar()
    except Exception:
        return None
    return None if _GBNF_ESCAPES.search(rules) else anchored


def arguments_schema(tool: Tool, *, max_string_length: int | None = None) -> dict[str, Any]:
    """A tool's parameters as a closed object schema (the ``arguments`` of its calls)."""
    params = dict(tool.parameters) if isinstance(tool.parameters, dict) else {}
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    schema = grammar_schema(
        params, max_string_length=max_string_length, where=f"tool {tool.name!r} parameters"
    )
    if schema.get("type") != "object":
        raise ToolSchemaError(f"tool {tool.name!r}: parameters must describe an object")
    if "properties" not in schema:
        schema["additionalProperties"] = False
    return schema


def call_schema(tools: list[Tool], *, max_string_length: int | None = None) -> dict[str, Any]:
    """One call to one of ``tools``: ``{"name": const, "arguments": its parameters}`` per tool."""
    if not tools:
        raise ToolSchemaError("a call schema needs at least one tool")
    branches = []
    seen: set[str] = set()
    for tool in tools:
        if tool.name in seen:
            continue
        seen.add(tool.name)
        branches.append(
            {
                "type": "object",
                "properties": {
                    "name": {"const": tool.name},
                    "arguments": arguments_schema(tool, max_string_length=max_string_length),
                },
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
        )
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def calls_array_schema(
    one: dict[str, Any], *, min_items: int = 1, max_items: int | None = None
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": one, "minItems": min_items}
    if max_items is not None:
        schema["maxItems"] = max_items
    return schema


def _obj(props: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def _call_branches(policy: CallPolicy, one: dict[str, Any]) -> list[dict[str, Any]]:
    """Property sets of the *call* branch(es), without the decision key."""
    if policy.max_calls == 1:
        return [{"call": one}]
    if policy.declare_count and policy.max_calls is not None:
        return [
            {"count": {"const": k}, "calls": calls_array_schema(one, min_items=k, max_items=k)}
            for k in range(max(1, policy.min_calls), policy.max_calls + 1)
        ]
    lo = policy.max_calls if policy.exact_calls and policy.max_calls else max(1, policy.min_calls)
    return [{"calls": calls_array_schema(one, min_items=lo, max_items=policy.max_calls)}]


def build_schema(tools: list[Tool], policy: CallPolicy) -> JsonObject:
    """The JSON Schema of one constrained answer under ``policy`` (the call stage when two-stage)."""
    one = call_schema(tools, max_string_length=policy.max_string_length)
    inline_decision = policy.allow_no_call and policy.decision == "inline"
    if not inline_decision:
        if policy.max_calls == 1 and policy.min_calls >= 1:
            return one
        if policy.declare_count and policy.max_calls is not None:
            return {"anyOf": [_obj(b) for b in _call_branches(policy, one)]}
        lo = policy.max_calls if policy.exact_calls and policy.max_calls else policy.min_calls
        if policy.allow_no_call and policy.decision == "empty":
            lo = 0
        return calls_array_schema(one, min_items=lo, max_items=policy.max_calls)
    branches = [_obj({DECISION_KEY: {"const": CALL}, **b}) for b in _call_branches(policy, one)]
    return {"anyOf": [*branches, no_call_schema(policy)]}


def no_call_schema(policy: CallPolicy) -> JsonObject:
    """The no-call branch of an inline decision: ``{"decision": "no_call"}``, with the
    ``answer`` text when the policy has the field.  Alone, it is the schema of an answer that
    may not call (a conversation's final step at the step limit)."""
    no_call_props: dict[str, Any] = {DECISION_KEY: {"const": NO_CALL}}
    if policy.answer_field:
        answer: dict[str, Any] = {"type": "string"}
        if policy.max_string_length is not None:
            answer["maxLength"] = policy.max_string_length
        no_call_props["answer"] = answer
    return _obj(no_call_props)


def decision_schema() -> dict[str, Any]:
    """Stage one of a two-stage policy: ``{"decision": "call" | "no_call"}``."""
    return _obj({DECISION_KEY: {"enum": [CALL, NO_CALL]}})


# -- grammar back ends ------------------------------------------------------------------------
def gbnf_grammar(schema: dict[str, Any]) -> str:
    """The llama.cpp GBNF grammar of a JSON Schema (needs ``llama-cpp-python``)."""
    try:
        from llama_cpp.llama_grammar import json_schema_to_gbnf
    except ImportError as exc:
        raise BackendError(
            "GBNF grammars need llama-cpp-python: pip install 'toollab[llama]'"
        ) from exc
    return str(json_schema_to_gbnf(json.dumps(schema)))


def compile_grammar(schema: dict[str, Any]) -> Any:
    """Compile a JSON Schema with llama.cpp (``LlamaGrammar.from_json_schema``); raises on failure."""
    try:
        from llama_cpp import LlamaGrammar
    except ImportError as exc:
        raise BackendError(
            "grammar compilation needs llama-cpp-python: pip install 'toollab[llama]'"
        ) from exc
    return LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)


def check_grammar(schema: dict[str, Any], llm: Any = None) -> str:
    """Compile a schema to GBNF and, given a loaded ``llama_cpp.Llama`` (``vocab_only`` is
    enough), have llama.cpp parse that grammar; returns the GBNF text.

    ``LlamaGrammar`` only keeps the text: llama.cpp parses it when a sampler is built, and
    returns NULL (not an exception) for a grammar it rejects, so that is checked here.
    """
    grammar = compile_grammar(schema)
    if llm is not None:
        import llama_cpp

        sampler = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not sampler:
            raise ToolSchemaError("llama.cpp rejected the grammar built from the schema")
        llama_cpp.llama_sampler_free(sampler)
    return str(grammar._grammar)


def response_format(schema: dict[str, Any], name: str = "tool_calls") -> dict[str, Any]:
    """The OpenAI ``response_format`` value for a schema (vLLM / SGLang / llama.cpp server)."""
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


# -- post-processing --------------------------------------------------------------------------
def call_key(call: ToolCall) -> str:
    """A canonical key of a call (name + arguments) to detect repeats."""
    return json.dumps(
        [call.name, call.model_dump(mode="json")["arguments"]], sort_keys=True, ensure_ascii=False
    )


def stop_at_repetition(calls: list[ToolCall]) -> tuple[list[ToolCall], int]:
    """Keep calls up to the first one that repeats an earlier call; returns (kept, dropped)."""
    seen: set[str] = set()
    for i, call in enumerate(calls):
        key = call_key(call)
        if key in seen:
            return calls[:i], len(calls) - i
        seen.add(key)
    return calls, 0


def drop_repeats(calls: list[ToolCall]) -> tuple[list[ToolCall], int]:
    """Drop every call identical to an earlier one; returns (kept, dropped)."""
    seen: set[str] = set()
    kept = []
    for call in calls:
        key = call_key(call)
        if key not in seen:
            seen.add(key)
            kept.append(call)
    return kept, len(calls) - len(kept)


def complete_items(text: str, start: int) -> tuple[list[Any], bool]:
    """The complete JSON values of the array opening at ``text[start] == "["``.

    Returns ``(items, closed)``: ``closed`` is False when the array was cut off (a decoder that
    hit ``max_tokens`` or a stop condition), in which case only the complete items are returned.
    """
    dec = json.JSONDecoder()
    items: list[Any] = []
    i = start + 1
    n = len(text)
    while True:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n:
            return items, False
        if text[i] == "]":
            return items, True
        try:
            value, i = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            return items, False
        items.append(value)


#: the start of a decision / count object up to the ``[`` of its ``calls`` array
_CALLS_OPEN = re.compile(
    r'\s*\{(?:\s*"(?:decision|count)"\s*:\s*(?:"[^"]*"|\d+)\s*,)*\s*"calls"\s*:\s*\['
)


def calls_array_start(text: str) -> int | None:
    """Where the calls array of a constrained answer opens (the index of its ``[``): a bare
    array, or the ``calls`` of a ``{"decision": "call", "calls": [...]}`` /
    ``{"count": k, "calls": [...]}`` object; ``None`` when the text has no calls array (yet)."""
    lead = len(text) - len(text.lstrip())
    if text[lead : lead + 1] == "[":
        return lead
    m = _CALLS_OPEN.match(text)
    return m.end() - 1 if m else None


class RepeatGuard:
    """A stop condition for decoders: true once a complete call repeats an earlier one.

    Feed it the growing text of **one** generation (a new guard per generation); it finds the
    calls array (:func:`calls_array_start`; answers without one never stop) and reads each
    complete call once, so a step costs only the new text.  The backends use it when a request
    sets ``GenerateOptions.stop_on_repeat`` (multi-call constrained answers whose policy has
    ``repetition="stop"``): llama.cpp's greedy fast path and its ``stopping_criteria``, and a
    transformers ``StoppingCriteria``; the output's ``finish_reason`` is then ``"repeat"``.
    """

    def __init__(self) -> None:
        self.stopped = False
        #: complete calls read so far (the repeat included)
        self.calls = 0
        #: length of the text when the repeat was complete
        self.stopped_at: int | None = None
        self._start: int | None = None
        self._pos = 0
        self._keys: set[str] = set()
        self._decoder = json.JSONDecoder()

    def __call__(self, text: str) -> bool:
        if self.stopped:
            return True
        if self._start is None:
            self._start = calls_array_start(text)
            if self._start is None:
                return False
            self._pos = self._start + 1
        i, n = self._pos, len(text)
        while True:
            while i < n and text[i] in " \t\r\n,":
                i += 1
            if i >= n or text[i] == "]":
                return False
            try:
                value, end = self._decoder.raw_decode(text, i)
            except json.JSONDecodeError:
                return False  # the next call is not complete yet
            if not isinstance(value, dict):
                return False  # calls are objects (a bare number might still be growing)
            i = self._pos = end
            self.calls += 1
            key = json.dumps(value, sort_keys=True, ensure_ascii=False)
            if key in self._keys:
                self.stopped, self.stopped_at = True, end
                return True
            self._keys.add(key)


def validate_schema(schema: dict[str, Any]) -> None:
    """Check that a built schema is a valid JSON Schema (draft 2020-12); raises on a bad one."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ToolSchemaError(f"built schema is not valid JSON Schema: {exc.message}") from exc
