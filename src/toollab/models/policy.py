"""Call-decision policies for constrained decoding.

Syntax alone does not make a small model call well.  With a naive "array of calls, possibly
empty" schema the bundled 135M model repeats the call until ``max_tokens``, or escapes into an
empty list.  A :class:`CallPolicy` fixes the *shape* of the answer instead:

* ``allow_no_call`` + ``decision``: decide call / no-call **first** — ``"inline"`` puts a
  ``decision`` property first in one schema, ``"two_stage"`` runs a tiny ``{"decision": ...}``
  request before the call request, ``"empty"`` is the naive escape (an empty array);
* ``max_calls=1``: exactly one call, a single object rather than an array;
* ``max_calls=n`` (``exact_calls`` for a known count, ``declare_count`` to make the model state
  the count before the calls): ``maxItems`` bounds the array;
* ``repetition``: ``"stop"`` cuts the calls at the first repeat of an earlier call — and for
  multi-call shapes the request sets ``stop_on_repeat``, so the llama.cpp and transformers
  backends stop **decoding** there (:class:`~toollab.models.constrain.RepeatGuard`) instead of
  repeating until ``max_tokens`` — ``"dedupe"`` drops repeats, ``"keep"`` keeps them;
  ``keep_first`` keeps only the first call.

:func:`constrained_options` turns tools + policy into :class:`GenerateOptions`;
:func:`parse_constrained` reads the constrained output back into a
:class:`~toollab.parsing.ParseResult` (through the ``json`` parser); :func:`run_policy` runs a
policy against any :class:`~toollab.models.base.Model` that honours ``json_schema``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toollab.errors import UsageError
from toollab.models.base import ChatRequest, GenerateOptions, Message, Model, ModelOutput
from toollab.models.constrain import (
    CALL,
    DECISION_KEY,
    NO_CALL,
    build_schema,
    complete_items,
    decision_schema,
    drop_repeats,
    stop_at_repetition,
)
from toollab.parsing import ParseResult, parse
from toollab.schema import Decision, Instance, Tool, ToolCall
from toollab.schema.order import grammar_order

_NO_CALL_RE = re.compile(r'\{\s*"decision"\s*:\s*"no_call"')
_CALL_RE = re.compile(r'\{\s*"decision"\s*:\s*"call"')


class CallPolicy(BaseModel):
    """What a constrained answer may look like, and how its calls are post-processed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: whether "no call" is a legal answer (irrelevance-style tasks)
    allow_no_call: bool = False
    #: how the call / no-call decision is made when ``allow_no_call``
    decision: Literal["inline", "two_stage", "empty"] = "inline"
    #: at most this many calls (1: a single call object; None: unbounded)
    max_calls: int | None = 1
    min_calls: int = Field(default=1, ge=0)
    #: the count is known: exactly ``max_calls`` calls
    exact_calls: bool = False
    #: the model first states how many calls (1..max_calls) and then makes exactly that many
    declare_count: bool = False
    repetition: Literal["stop", "dedupe", "keep"] = "stop"
    #: keep only the first parsed call
    keep_first: bool = False
    #: the no-call branch carries an ``answer`` text
    answer_field: bool = True
    #: cap on every string without a ``maxLength`` (guards against loops inside strings)
    max_string_length: int | None = None

    @model_validator(mode="after")
    def _check(self) -> CallPolicy:
        if self.max_calls is not None and self.max_calls < 1:
            raise ValueError("max_calls must be at least 1 (or None for no bound)")
        if self.max_calls is not None and self.min_calls > self.max_calls:
            raise ValueError("min_calls exceeds max_calls")
        if self.declare_count and self.max_calls is None:
            raise ValueError("declare_count needs max_calls")
        return self

    # -- named policies (the variants benchmarks/bench_constrained.py compares) --------------
    @classmethod
    def naive(cls) -> CallPolicy:
        """An array of calls, possibly empty, repeats kept: syntax only."""
        return cls(
            allow_no_call=True, decision="empty", max_calls=None, min_calls=0, repetition="keep"
        )

    @classmethod
    def naive_first(cls) -> CallPolicy:
        """The naive array, keeping only its first call."""
        return cls.naive().model_copy(update={"keep_first": True})

    @classmethod
    def single(cls, *, allow_no_call: bool = False) -> CallPolicy:
        """Exactly one call (a single object), behind an inline decision when no-call is legal."""
        return cls(allow_no_call=allow_no_call, decision="inline", max_calls=1)

    @classmethod
    def decision_first(cls, *, max_calls: int | None = 1, two_stage: bool = False) -> CallPolicy:
        """Decide call / no-call first, then exactly one call (or at most ``max_calls``)."""
        return cls(
            allow_no_call=True, decision="two_stage" if two_stage else "inline", max_calls=max_calls
        )

    @classmethod
    def for_instance(
        cls,
        instance: Instance,
        *,
        allow_no_call: bool | None = None,
        use_gold_count: bool = False,
        max_calls: int = 16,
    ) -> CallPolicy:
        """The answer shape the benchmark's protocol publishes for ``instance``.

        Only :attr:`Instance.protocol` is read — facts every model taking the benchmark is given
        before it answers (a BFCL file's category: one call for ``simple*`` / ``multiple``,
        several for ``parallel*``, no call legal for irrelevance).  Where nothing is published,
        up to ``max_calls`` calls and a no-call are admitted: the call count, the decision label,
        the gold tools and any category derived from them are the answer key and never shape
        the grammar (so Seal-Tools instances, whose call count is not published, all admit one
        or more calls).  ``use_gold_count`` bounds the array by the gold count exactly: an
        oracle setting for ablations that reads the answer key on purpose (named in
        :data:`ANSWER_KEY_READERS`).
        """
        facts = instance.protocol
        no_call = allow_no_call if allow_no_call is not None else facts.no_call is not False
        n_gold = len(instance.gold)
        if use_gold_count and n_gold:
            return cls(allow_no_call=no_call, max_calls=n_gold, exact_calls=n_gold > 1)
        limit = facts.max_calls if facts.max_calls is not None else max_calls
        return cls(allow_no_call=no_call, max_calls=limit)


#: settings that read the answer key on purpose (oracle and ablation settings): excluded by name
#: from the leak test and labelled in every run that uses them
ANSWER_KEY_READERS = {
    "use_gold_count": "constrained decoding bounded by the gold call count (ablation)",
}


@dataclass
class ConstraintPlan:
    """A policy compiled for one tool set: the schema of each stage and the parse of the answer."""

    tools: list[Tool]
    policy: CallPolicy
    #: the schema of the call stage (the only stage unless the policy is two-stage)
    schema: dict[str, Any] = field(init=False)
    #: stage one of a two-stage policy
    decision: dict[str, Any] | None = field(init=False)

    def __post_init__(self) -> None:
        self.schema = build_schema(self.tools, self.policy)
        two = self.policy.allow_no_call and self.policy.decision == "two_stage"
        self.decision = decision_schema() if two else None

    @property
    def two_stage(self) -> bool:
        return self.decision is not None

    @property
    def stop_on_repeat(self) -> bool:
        """Whether decoding stops at the first repeated call (several calls, ``"stop"``)."""
        return self.policy.repetition == "stop" and self.policy.max_calls != 1

    def options(self, base: GenerateOptions | None = None) -> GenerateOptions:
        return (base or GenerateOptions()).model_copy(
            update={"json_schema": self.schema, "stop_on_repeat": self.stop_on_repeat}
        )

    def decision_options(self, base: GenerateOptions | None = None) -> GenerateOptions:
        if self.decision is None:
            raise UsageError("this policy has no decision stage (decision='two_stage' needs it)")
        budget = min((base or GenerateOptions()).max_tokens, 16)
        return (base or GenerateOptions()).model_copy(
            update={"json_schema": self.decision, "max_tokens": budget}
        )

    def parse(self, text: str) -> ParseResult:
        return parse_constrained(text, self.policy)


def constrained_options(
    tools: list[Tool], plan: CallPolicy | ConstraintPlan, base: GenerateOptions | None = None
) -> GenerateOptions:
    """Decoding options whose ``json_schema`` admits exactly the answers ``plan`` allows.

    For a two-stage policy these are the options of the call stage; see
    :meth:`ConstraintPlan.decision_options` for the first stage.
    """
    compiled = plan if isinstance(plan, ConstraintPlan) else ConstraintPlan(tools, plan)
    return compiled.options(base)


# -- writing a constrained answer ------------------------------------------------------------
def constrained_answer(calls: Sequence[ToolCall], tools: Sequence[Tool], policy: CallPolicy) -> Any:
    """The JSON value constrained decoding under ``policy`` writes for ``calls`` (one or more):
    a call object, an array, or the decision object around them, arguments in grammar order
    (:func:`grammar_order`).  A :class:`UsageError` when the policy cannot hold them (a
    two-stage decision is two requests; more calls than ``max_calls``)."""
    if not calls:
        raise UsageError("a constrained answer with calls needs at least one call")
    if policy.decision == "two_stage" and policy.allow_no_call:
        raise UsageError("two-stage decisions are two requests, not one answer")
    if policy.max_calls is not None and len(calls) > policy.max_calls:
        raise UsageError(f"{len(calls)} calls; the policy admits at most {policy.max_calls}")
    by_name = {t.name: t for t in tools}
    objs = [{"name": c.name, "arguments": grammar_order(c, by_name.get(c.name))} for c in calls]
    inline = policy.allow_no_call and policy.decision == "inline"
    if policy.max_calls == 1:
        body: dict[str, Any] = {"call": objs[0]}
        if not inline:
            return objs[0]
    elif policy.declare_count:
        body = {"count": len(objs), "calls": objs}
        if not inline:
            return body
    else:
        if not inline:
            return objs
        body = {"calls": objs}
    return {DECISION_KEY: CALL, **body}


# -- reading constrained output back ----------------------------------------------------------
def _decode(text: str) -> tuple[Any, bool]:
    """(value, complete): the JSON value, or what a cut-off output still holds."""
    stripped = text.strip()
    try:
        return json.loads(stripped), True
    except RecursionError:  # nested deeper than the interpreter reads: unreadable, not fatal
        return None, True
    except json.JSONDecodeError:
        pass
    # cut off (max_tokens or a stop condition): recover what is complete
    if stripped.startswith("["):
        return complete_items(stripped, 0)[0], False
    if stripped.startswith("{"):
        if _NO_CALL_RE.match(stripped):
            declined: dict[str, Any] = {DECISION_KEY: NO_CALL}
            partial = _partial_answer(stripped)
            if partial is not None:
                declined["answer"] = partial
            return declined, False
        start = stripped.find("[")
        if start >= 0 and '"calls"' in stripped[:start]:
            value: dict[str, Any] = {"calls": complete_items(stripped, start)[0]}
            if _CALL_RE.match(stripped):
                value[DECISION_KEY] = CALL
            return value, False
    return None, False


_ANSWER_RE = re.compile(r'"answer"\s*:\s*"')


def _partial_answer(text: str) -> str | None:
    """The ``answer`` string of a no-call object cut off inside that string (max_tokens)."""
    m = _ANSWER_RE.search(text)
    if m is None:
        return None
    body = text[m.end() :]
    for cut in range(len(body), max(len(body) - 6, -1), -1):  # drop a half-written escape
        try:
            value = json.loads('"' + body[:cut] + '"')
        except json.JSONDecodeError:
            continue
        return value if isinstance(value, str) else None
    return None


def parse_decision(text: str) -> Decision | None:
    """Stage one's answer: :attr:`Decision.CALL`, :attr:`Decision.NO_CALL` or ``None``."""
    try:
        value = json.loads(text.strip())
    except (json.JSONDecodeError, RecursionError):
        return None
    if isinstance(value, dict) and value.get(DECISION_KEY) in (CALL, NO_CALL):
        return Decision.CALL if value[DECISION_KEY] == CALL else Decision.NO_CALL
    return None


def parse_constrained(text: str, policy: CallPolicy | None = None) -> ParseResult:
    """A constrained answer → :class:`ParseResult`, post-processed by the policy.

    Accepts every shape :func:`build_schema` produces: a call object, an array of calls, and the
    decision objects (``{"decision": "call", "call"|"calls": ...}``, ``{"decision": "no_call",
    "answer": ...}``).  A cut-off array keeps its complete calls (``details["truncated"]``).
    ``details`` also records ``repeats_dropped`` and ``calls_dropped``.
    """
    policy = policy or CallPolicy()
    value, complete = _decode(text)
    details: dict[str, Any] = {"truncated": not complete}
    if value is None:
        return ParseResult.fail(
            "constrained output is not JSON (cut off before a complete call)", details=details
        )
    decision: Decision | None = None
    if (
        isinstance(value, dict)
        and DECISION_KEY not in value
        and "calls" in value
        and "name" not in value
    ):
        value = value["calls"]  # {"count": k, "calls": [...]}
    if isinstance(value, dict) and DECISION_KEY in value:
        if value[DECISION_KEY] == NO_CALL:
            answer = value.get("answer")
            return ParseResult.no_call(
                answer if isinstance(answer, str) else None,
                decision=Decision.NO_CALL,
                details=details,
            )
        decision = Decision.CALL
        value = value.get("calls", value.get("call"))
        if value is None:
            return ParseResult.fail("decision is 'call' but no call follows", details=details)
    if isinstance(value, list) and not value:
        if not complete:
            return ParseResult.fail(
                "output cut off before the first complete call", details=details
            )
        return ParseResult.no_call(None, details=details)
    result = parse(json.dumps(value, ensure_ascii=False), "json")
    if result.is_error or not result.calls:
        return result.model_copy(update={"details": {**result.details, **details}})
    calls = list(result.calls)
    dropped = 0
    if policy.repetition == "stop":
        calls, dropped = stop_at_repetition(calls)
    elif policy.repetition == "dedupe":
        calls, dropped = drop_repeats(calls)
    details["repeats_dropped"] = dropped
    extra = 0
    limit = 1 if policy.keep_first else policy.max_calls
    if limit is not None and len(calls) > limit:
        extra = len(calls) - limit
        calls = calls[:limit]
    details["calls_dropped"] = extra
    return ParseResult.ok(calls, decision=decision, details={**result.details, **details})


# -- running a policy against a model ---------------------------------------------------------
@dataclass
class PolicyOutcome:
    """The parsed answer plus every model output it took (one, or two when two-stage)."""

    result: ParseResult
    outputs: list[ModelOutput]

    @property
    def raw(self) -> str:
        return "\n".join(o.text for o in self.outputs)


def native_calls_text(out: ModelOutput) -> str:
    """The constrained answer of an output: its text, or — when a server answered with native
    ``tool_calls`` anyway (vLLM-style servers may, even for a ``response_format`` request) — those
    calls as the JSON array of ``{"name", "arguments"}`` objects the schemas admit."""
    if out.tool_calls and not out.text.strip():
        return json.dumps(
            [
                {"name": c.name, "arguments": c.model_dump(mode="json")["arguments"]}
                for c in out.tool_calls
            ],
            ensure_ascii=False,
        )
    return out.text


async def run_policy(
    model: Model,
    messages: list[Message],
    tools: list[Tool],
    policy: CallPolicy | ConstraintPlan,
    options: GenerateOptions | None = None,
    *,
    tag: str | None = None,
) -> PolicyOutcome:
    """Ask ``model`` for a constrained answer under ``policy`` (two requests when two-stage).

    The requests carry the tools (prompt-based backends document them) but never ask for native
    ``tools``: the answer must be the schema's JSON text, not a server's ``tool_calls``, and a
    chat template must not document the tools a second time.  Native calls a server returns
    anyway are read too (:func:`native_calls_text`).
    """
    plan = policy if isinstance(policy, ConstraintPlan) else ConstraintPlan(tools, policy)
    options = (options or GenerateOptions()).model_copy(update={"native_tools": False})
    outputs: list[ModelOutput] = []
    if plan.two_stage:
        first = await model.safe_request(
            ChatRequest(
                messages=messages, tools=tools, options=plan.decision_options(options), tag=tag
            )
        )
        outputs.append(first)
        if first.error:
            return PolicyOutcome(ParseResult.fail(f"backend error: {first.error}"), outputs)
        decided = parse_decision(native_calls_text(first))
        if decided is None and first.tool_calls:
            decided = Decision.CALL  # a server that went straight to its calls has decided
        if decided is None:
            return PolicyOutcome(ParseResult.fail("decision stage gave no decision"), outputs)
        if decided is Decision.NO_CALL:
            return PolicyOutcome(ParseResult.no_call(None, decision=Decision.NO_CALL), outputs)
    out = await model.safe_request(
        ChatRequest(messages=messages, tools=tools, options=plan.options(options), tag=tag)
    )
    outputs.append(out)
    if out.error:
        return PolicyOutcome(ParseResult.fail(f"backend error: {out.error}"), outputs)
    result = plan.parse(native_calls_text(out))
    if plan.two_stage and not result.is_error:
        result = result.model_copy(update={"decision": Decision.CALL})
    return PolicyOutcome(result, outputs)
