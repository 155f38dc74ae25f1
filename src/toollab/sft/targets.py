"""Training targets: the assistant text a model is asked to produce, and the check that reads it back.

Two target formats, one definition each with inference:

* ``constrained`` (the default) — the JSON answer constrained decoding admits for the instance
  (:meth:`toollab.models.policy.CallPolicy.for_instance` → :func:`toollab.models.constrain.build_schema`):
  a single ``{"name", "arguments"}`` object where one call is expected, an array where several
  are, ``{"decision": "call", "call" | "calls": ...}`` / ``{"decision": "no_call", "answer": ...}``
  where a no-call is legal.  Arguments are written in the order the grammar admits them
  (required parameters first, then optional ones, each in schema order).  The target must
  validate against the schema, and :func:`toollab.models.policy.parse_constrained` must read the
  gold back;
* ``template`` — the template's own rendering (:meth:`Template.target`), read back with the
  template's parser (:meth:`Template.parse`), as an unconstrained model would answer.

:func:`make_target` returns the text or a :class:`Rejected` reason; nothing fails silently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from toollab.models.constrain import DECISION_KEY, NO_CALL, build_schema
from toollab.models.policy import CallPolicy, constrained_answer, parse_constrained
from toollab.parsing import ParseResult, ParseStatus
from toollab.schema import Instance, Ref, Tool, ToolCall
from toollab.templates.base import Template
from toollab.templates.render import DEFAULT_NO_CALL_ANSWER

TargetFormat = Literal["constrained", "template"]
TARGET_FORMATS: tuple[str, ...] = ("constrained", "template")

#: metadata key an augmentation sets when it makes a no-call legal for an instance whose source
#: otherwise always calls (a NoCall made by removing the gold tool)
ALLOW_NO_CALL = "sft_allow_no_call"


class Rejected(Exception):
    """Why an example cannot be written (a reason kind and the detail)."""

    def __init__(self, kind: str, detail: str = "") -> None:
        self.kind = kind
        self.detail = detail
        super().__init__(f"{kind}: {detail}" if detail else kind)


def policy_for(instance: Instance) -> CallPolicy:
    """The call policy inference uses for this instance (the no-call switch an augmentation may
    have set is honoured)."""
    flag = instance.metadata.get(ALLOW_NO_CALL)
    return CallPolicy.for_instance(instance, allow_no_call=True if flag else None)


def _norm(value: Any) -> Any:
    """Comparable form of an argument value: references by label, tuples as lists."""
    if isinstance(value, Ref):
        return value.label
    if isinstance(value, dict):
        if set(value) == {"$ref"}:
            return value["$ref"]
        return {k: _norm(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_norm(v) for v in value]
    return value


def call_view(calls: Sequence[ToolCall]) -> list[tuple[str, Any]]:
    """Calls as comparable (name, arguments) pairs."""
    return [(c.name, _norm(c.arguments)) for c in calls]


def same_calls(got: Sequence[ToolCall], gold: Sequence[ToolCall]) -> bool:
    return call_view(got) == call_view(gold)


# -- the constrained format ---------------------------------------------------------------------
def constrained_value(instance: Instance, tools: Sequence[Tool], policy: CallPolicy) -> Any:
    """The JSON value constrained decoding should produce for the instance's gold answer."""
    gold = list(instance.gold)
    if policy.decision == "two_stage" and policy.allow_no_call:
        raise Rejected("policy", "two-stage decisions are two requests, not one target")
    if not gold:
        if not policy.allow_no_call:
            raise Rejected(
                "no-call not admitted",
                f"constrained decoding for source {instance.source!r} always calls a tool",
            )
        if policy.decision == "empty":
            return []
        value: dict[str, Any] = {DECISION_KEY: NO_CALL}
        if policy.answer_field:
            value["answer"] = _no_call_answer(instance)
        return value
    if policy.max_calls is not None and len(gold) > policy.max_calls:
        raise Rejected(
            "too many calls",
            f"{len(gold)} gold calls; the policy admits at most {policy.max_calls}",
        )
    return constrained_answer(gold, tools, policy)


def _no_call_answer(instance: Instance) -> str:
    """The answer text of a no-call target: the instance's answer unless it is a marker chain."""
    answer = instance.answer
    if not answer or "#Begin#" in answer:
        return DEFAULT_NO_CALL_ANSWER
    return answer


class SchemaCache:
    """JSON Schema validators per (tools, policy): building one per example would dominate."""

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._cache: dict[str, Any] = {}

    def validator(self, tools: Sequence[Tool], policy: CallPolicy) -> Any:
        import jsonschema

        key = json.dumps(
            [[t.name, t.parameters] for t in tools] + [policy.model_dump(mode="json")],
            sort_keys=True,
            default=str,
        )
        found = self._cache.get(key)
        if found is None:
            schema = build_schema(list(tools), policy)
            found = jsonschema.Draft202012Validator(schema)
            if len(self._cache) >= self.size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = found
        return found


def schema_error(validator: Any, value: Any) -> tuple[str, str] | None:
    """(kind, detail) of the most specific reason the value is outside the schema (``None``:
    admitted): among every branch's errors, the one deepest in the value (the branch that
    matched furthest)."""
    errors = list(validator.iter_errors(value))
    if not errors:
        return None
    leaves: list[Any] = []
    stack = errors
    while stack:
        err = stack.pop()
        if err.context:
            stack.extend(err.context)
        else:
            leaves.append(err)
    best = max(leaves or errors, key=lambda e: len(e.absolute_path))
    path = "/".join(str(p) for p in best.absolute_path) or "(root)"
    return _kind_of(best), f"at {path}: {best.message[:200]}"


def _kind_of(err: Any) -> str:
    """A short reason kind for the card, from the failing JSON Schema keyword."""
    where = list(err.absolute_path)
    if isinstance(err.instance, dict) and set(err.instance) == {"$ref"}:
        return "not admitted by the decoding schema: a reference to another call's output"
    if err.validator == "const" and where and where[-1] == "name":
        return "not admitted by the decoding schema: a tool name that is not offered"
    if err.validator == "type" and err.instance is None:
        return "not admitted by the decoding schema: null for a typed parameter"
    if err.validator in ("type", "enum", "pattern", "maxLength", "minLength"):
        return "not admitted by the decoding schema: a value of another type or form"
    if err.validator == "required":
        return "not admitted by the decoding schema: a required argument missing"
    if err.validator == "additionalProperties":
        return "not admitted by the decoding schema: an argument the tool does not declare"
    return "not admitted by the decoding schema"


def _check_parse(result: ParseResult, instance: Instance, where: str) -> None:
    """The parse of a target gives back the gold calls (or the gold no-call)."""
    if result.is_error:
        raise Rejected("unparsable target", f"{where}: {result.error}")
    if instance.gold:
        if result.status is not ParseStatus.CALLS:
            raise Rejected("round trip", f"{where} read a no-call, the gold calls a tool")
        if not same_calls(result.calls, list(instance.gold)):
            raise Rejected(
                "round trip",
                f"{where} read {call_view(result.calls)!r}, gold {call_view(list(instance.gold))!r}",
            )
    elif result.status is not ParseStatus.NO_CALL:
        raise Rejected("round trip", f"{where} read calls, the gold is a no-call")


def make_target(
    instance: Instance,
    tools: Sequence[Tool],
    template: Template,
    fmt: str,
    schemas: SchemaCache | None = None,
) -> tuple[str, dict[str, Any]]:
    """(target text, meta) for an instance, checked: :class:`Rejected` when it cannot be written."""
    if fmt == "constrained":
        policy = policy_for(instance)
        value = constrained_value(instance, tools, policy)
        text = json.dumps(value, ensure_ascii=False)
        validator = (schemas or SchemaCache()).validator(tools, policy)
        err = schema_error(validator, value)
        if err is not None:
            raise Rejected(*err)
        _check_parse(parse_constrained(text, policy), instance, "the constrained reader")
        return text, {"policy": policy.model_dump(mode="json")}
    if instance.gold:
        why = template.inexpressible(list(instance.gold))
        if why is not None:
            raise Rejected("inexpressible", f"{template.name}: {why}")
        if not template.can_express(list(instance.gold)):
            raise Rejected(
                "inexpressible",
                f"{template.name} writes at most {template.max_calls} call(s) per turn",
            )
    text = template.target(instance)
    _check_parse(template.parse(text), instance, f"the {template.parser} parser")
    return text, {}
