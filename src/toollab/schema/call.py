"""Tool calls and call graphs.

A :class:`ToolCall` is a tool name, its arguments and an optional id.  An argument may be a
:class:`Ref` to an earlier call's output: Seal-Tools writes these as the string ``"API_call_N"``
(each call lists the labels of its outputs in ``responses``); toollab reads and writes that
convention and holds the reference as a typed :class:`Ref` in between.  Serialised as JSON a
reference is ``{"$ref": "API_call_N"}``.

A list of calls is a call graph: calls without references between them are parallel, a call
that references another is nested.  :func:`dependencies` and :func:`levels` expose that structure
to the executor.  A call graph survives the OpenAI and chat-template ``tool_calls`` formats: the
output labels and reference links travel under ``"x-toollab"`` (:meth:`ToolCall.to_openai`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from toollab.errors import InputError
from toollab.schema.wire import EXTRAS_KEY, json_kind

REF_KEY = "$ref"
SEAL_REF = re.compile(r"^API_call_\d+$")


@dataclass(frozen=True)
class Ref:
    """A reference to the output of an earlier call.

    ``label`` is the output's name (Seal-Tools: ``"API_call_3"``); ``call`` is the index of the
    producing call once the graph is linked; ``field`` the output field it picks (``None`` = the
    whole output).
    """

    label: str
    call: int | None = None
    field: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {REF_KEY: self.label}


def _refs_to_json(value: Any) -> Any:
    if isinstance(value, Ref):
        return value.to_json()
    if isinstance(value, dict):
        return {k: _refs_to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_refs_to_json(v) for v in value]
    return value


def _refs_from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1 and REF_KEY in value and isinstance(value[REF_KEY], str):
            return Ref(value[REF_KEY])
        return {k: _refs_from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_refs_from_json(v) for v in value]
    return value


def iter_refs(value: Any) -> list[Ref]:
    """Every :class:`Ref` inside an argument value, depth first."""
    out: list[Ref] = []
    if isinstance(value, Ref):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            out.extend(iter_refs(v))
    elif isinstance(value, list | tuple):
        for v in value:
            out.extend(iter_refs(v))
    return out


class ToolCall(BaseModel):
    """One call of one tool."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    #: labels of this call's outputs that later calls may reference (Seal-Tools ``responses``)
    outputs: list[str] = Field(default_factory=list)

    @field_validator("arguments", mode="before")
    @classmethod
    def _load_refs(cls, v: Any) -> Any:
        if v is None:
            return {}
        return _refs_from_json(v) if isinstance(v, dict) else v

    @field_serializer("arguments")
    def _dump_refs(self, v: dict[str, Any]) -> dict[str, Any]:
        return _refs_to_json(v)

    @property
    def refs(self) -> list[Ref]:
        return iter_refs(self.arguments)

    # -- OpenAI ``tool_calls`` and Hugging Face chat-template formats -----------------------------
    def graph_extension(self) -> dict[str, Any]:
        """What the wire formats have no slot for: the labels of this call's ``outputs`` and, for
        each reference in the arguments (depth first), the ``[call, field]`` it is linked to."""
        ext: dict[str, Any] = {}
        if self.outputs:
            ext["outputs"] = list(self.outputs)
        links = [[r.call, r.field] for r in self.refs]
        if any(c is not None or f is not None for c, f in links):
            ext["refs"] = links
        return ext

    def to_openai(self, *, extras: bool = True) -> dict[str, Any]:
        """``{"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}}``.

        References are ``{"$ref": label}`` inside the arguments.  When the call belongs to a
        call graph (it labels outputs, or its references are linked), ``"x-toollab"`` carries
        that (:meth:`graph_extension`) so that :meth:`from_openai` gives back the same call;
        ``extras=False`` leaves it out (a server that refuses unknown keys)."""
        out: dict[str, Any] = {
            "id": self.id or "",
            "type": "function",
            "function": {
                "name": self.name,
                "arguments": json.dumps(_refs_to_json(self.arguments), ensure_ascii=False),
            },
        }
        ext = self.graph_extension() if extras else {}
        if ext:
            out[EXTRAS_KEY] = ext
        return out

    def to_hf(self, *, extras: bool = True) -> dict[str, Any]:
        """A chat template's assistant ``tool_calls`` entry: ``{"type": "function", "function":
        {"name", "arguments": {...}}}`` (arguments as an object; ``"id"`` when the call has one),
        with the same ``"x-toollab"`` extension as :meth:`to_openai`."""
        out: dict[str, Any] = {"id": self.id} if self.id else {}
        out["type"] = "function"
        out["function"] = {"name": self.name, "arguments": _refs_to_json(self.arguments)}
        ext = self.graph_extension() if extras else {}
        if ext:
            out[EXTRAS_KEY] = ext
        return out

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> Self:
        """An OpenAI ``tool_calls`` entry (arguments as JSON text or an object), a chat-template
        entry or a bare ``{"name", "arguments"}``; ``"x-toollab"`` restores the call graph.

        The arguments must be a JSON object (or its text; empty text or no ``arguments`` key
        means none) and ``id`` a string or null: anything else is an :class:`InputError`
        naming the call."""
        if not isinstance(data, dict):
            raise InputError(f"a tool call must be a JSON object, got {type(data).__name__}")
        fn = data.get("function", data)
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise InputError("a tool call needs a function name")
        where = f"tool call {fn['name']!r}"
        args = fn.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except (ValueError, RecursionError) as exc:  # syntax, too deep, a huge integer
                raise InputError(
                    f"{where}: arguments are not JSON: {str(exc)[:200] or 'nested too deeply'}"
                ) from None
            if not isinstance(args, dict):
                raise InputError(
                    f"{where}: arguments must be a JSON object, got JSON {_json_kind(args)}"
                )
        elif not isinstance(args, dict):
            raise InputError(
                f"{where}: arguments must be a JSON object (or its text), got {_json_kind(args)}"
            )
        call_id = data.get("id")
        if call_id is not None and not isinstance(call_id, str):
            raise InputError(f"{where}: id must be a string, got {_json_kind(call_id)}")
        fields: dict[str, Any] = {"name": fn["name"], "arguments": args, "id": call_id or None}
        ext = data.get(EXTRAS_KEY)
        if ext is not None:
            fields.update(_read_extension(ext, fn["name"], cls))
        call = cls(**{k: v for k, v in fields.items() if k != "refs"})
        if "refs" in fields:
            call = call.model_copy(
                update={"arguments": _apply_links(call.arguments, fields["refs"], call.name)}
            )
        return call

    @classmethod
    def from_hf(cls, data: dict[str, Any]) -> Self:
        return cls.from_openai(data)

    def action_text(self) -> str:
        """The call as one action string, ``name(arg='value', ...)``: the unit that action
        sequences (LCS, API complexity) are compared in.  References print as their labels."""
        args = ", ".join(f"{k}={v!r}" for k, v in to_seal_value(self.arguments).items())
        return f"{self.name}({args})"

    # -- Seal-Tools format --------------------------------------------------------------------
    def to_seal(self) -> dict[str, Any]:
        return {
            "api": self.name,
            "parameters": to_seal_value(self.arguments),
            "responses": list(self.outputs),
        }


class GoldCall(ToolCall):
    """A reference call.  ``arguments`` holds the canonical value of each argument;
    ``acceptable`` (BFCL) lists every acceptable value per argument, where ``""`` means the
    argument may be omitted."""

    acceptable: dict[str, list[Any]] = Field(default_factory=dict)

    def graph_extension(self) -> dict[str, Any]:
        ext = super().graph_extension()
        if self.acceptable:
            ext["acceptable"] = self.acceptable
        return ext


def _json_kind(value: Any) -> str:
    """How a JSON value is called in an error message (``array``, ``number``, ``null``…)."""
    kind = json_kind(value)
    return "number" if kind == "integer" else kind


def _read_extension(ext: Any, name: str, cls: type[ToolCall]) -> dict[str, Any]:
    """The fields an ``"x-toollab"`` extension of a wire tool call restores."""
    where = f"tool call {name!r}: {EXTRAS_KEY}"
    if not isinstance(ext, dict):
        raise InputError(f"{where} must be an object")
    out: dict[str, Any] = {}
    outputs = ext.get("outputs", [])
    if not isinstance(outputs, list) or not all(isinstance(o, str) for o in outputs):
        raise InputError(f"{where}.outputs must be a list of labels")
    out["outputs"] = outputs
    refs = ext.get("refs")
    if refs is not None:
        ok = isinstance(refs, list) and all(
            isinstance(r, list)
            and len(r) == 2
            and (r[0] is None or (isinstance(r[0], int) and not isinstance(r[0], bool)))
            and (r[1] is None or isinstance(r[1], str))
            for r in refs
        )
        if not ok:
            raise InputError(f"{where}.refs must be a list of [call index or null, field or null]")
        out["refs"] = refs
    if "acceptable" in ext and "acceptable" in cls.model_fields:
        if not isinstance(ext["acceptable"], dict):
            raise InputError(f"{where}.acceptable must be an object")
        out["acceptable"] = ext["acceptable"]
    return out


def _apply_links(arguments: dict[str, Any], links: list[list[Any]], name: str) -> dict[str, Any]:
    """Give the references of ``arguments`` (depth first) their ``[call, field]`` links."""
    todo = iter(links)
    count = len(iter_refs(arguments))
    if count != len(links):
        raise InputError(
            f"tool call {name!r}: {EXTRAS_KEY}.refs lists {len(links)} links for {count} references"
        )

    def link(value: Any) -> Any:
        if isinstance(value, Ref):
            call, field = next(todo)
            return Ref(value.label, call, field)
        if isinstance(value, dict):
            return {k: link(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [link(v) for v in value]
        return value

    out: dict[str, Any] = link(arguments)
    return out


def to_seal_value(value: Any) -> Any:
    """Refs back to Seal-Tools' ``"API_call_N"`` strings."""
    if isinstance(value, Ref):
        return value.label
    if isinstance(value, dict):
        return {k: to_seal_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_seal_value(v) for v in value]
    return value


def _link_value(value: Any, producers: dict[str, tuple[int, str | None]]) -> Any:
    if isinstance(value, Ref):
        if value.label in producers:
            idx, field = producers[value.label]
            # a field the reference already names wins over the positional one
            return Ref(value.label, idx, value.field if value.field is not None else field)
        return value
    if isinstance(value, str) and value in producers:
        idx, field = producers[value]
        return Ref(value, idx, field)
    if isinstance(value, dict):
        return {k: _link_value(v, producers) for k, v in value.items()}
    if isinstance(value, list):
        return [_link_value(v, producers) for v in value]
    return value


def link_calls(
    calls: list[ToolCall], return_fields: dict[str, list[str]] | None = None
) -> list[ToolCall]:
    """Turn output labels used as argument values into linked :class:`Ref` objects.

    A string argument equal to an output label of an *earlier* call becomes a reference to it.
    ``return_fields`` maps a tool name to its ordered output fields so the n-th label of a call
    picks the n-th field (Seal-Tools' convention); without it a reference means the whole output.
    Calls are copied, never changed in place.
    """
    producers: dict[str, tuple[int, str | None]] = {}
    out: list[ToolCall] = []
    for i, call in enumerate(calls):
        args = _link_value(call.arguments, producers)
        out.append(call.model_copy(update={"arguments": args}))
        fields = (return_fields or {}).get(call.name, [])
        for j, label in enumerate(call.outputs):
            if label not in producers:
                field = fields[j] if j < len(fields) and len(call.outputs) > 1 else None
                producers[label] = (i, field)
    return out


def dependencies(calls: list[ToolCall]) -> list[set[int]]:
    """For each call, the indices of the earlier calls whose outputs it uses."""
    producers: dict[str, int] = {}
    deps: list[set[int]] = []
    for i, call in enumerate(calls):
        d: set[int] = set()
        for ref in call.refs:
            if ref.call is not None and ref.call < i:
                d.add(ref.call)
            elif ref.label in producers:
                d.add(producers[ref.label])
        deps.append(d)
        for label in call.outputs:
            producers.setdefault(label, i)
    return deps


def levels(calls: list[ToolCall]) -> list[list[int]]:
    """Group call indices into waves: every call's dependencies lie in an earlier wave."""
    deps = dependencies(calls)
    depth: list[int] = []
    for d in deps:
        depth.append(1 + max((depth[j] for j in d), default=-1))
    waves: dict[int, list[int]] = {}
    for i, lv in enumerate(depth):
        waves.setdefault(lv, []).append(i)
    return [waves[k] for k in sorted(waves)]


def is_nested(calls: list[ToolCall]) -> bool:
    return any(dependencies(calls))
