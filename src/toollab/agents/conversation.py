"""The conversation protocol: how a multi-turn exchange with tools is written, one definition
for ``toollab chat`` and for the training conversations ``toollab data sft`` exports.

A conversation is the system prompt, then user turns; after each user turn the assistant
answers once per step, under :data:`CONVERSATION_POLICY` (decide first, then one call):

* a call — ``{"decision": "call", "call": {"name": ..., "arguments": {...}}}`` (arguments in
  the order the decoding grammar writes them), followed by one ``tool`` message holding the
  call's result as JSON (:func:`tool_message`);
* an answer — ``{"decision": "no_call", "answer": "..."}``, which ends the user turn.

The assistant turns in the history are always written by :func:`call_turn` /
:func:`answer_turn` from what was read, whatever spacing the model used, so the prompt of every
step is byte for byte the prompt the training conversations were rendered with.

:class:`RepeatGuard` keeps a conversation from looping: an identical call with an identical
result, in the same user turn, is a repeat (see its docs for what happens instead).

:func:`run_turn` is the loop of one user turn, the one both ``toollab chat`` and the
``conversation`` agent of ``toollab eval --conversations`` run: at most ``max_steps`` model steps,
each call executed and its result fed back, until the model answers, the repeat guard ends the
turn, an output cannot be read, the model fails, or the step limit is reached
(:class:`TurnOutcome`'s ``ended_by`` says which).  At the step limit, under constrained decoding,
one more step is decoded with the answer branch of the protocol alone (no call can be written),
so the turn still ends with an answer that reads the results (:data:`FINAL`).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from toollab.models.base import ChatRequest, GenerateOptions, Model, ModelOutput
from toollab.models.constrain import CALL, DECISION_KEY, NO_CALL, no_call_schema
from toollab.models.policy import CallPolicy, parse_constrained, run_policy
from toollab.parsing import ParseResult
from toollab.schema import Tool, ToolCall
from toollab.schema.order import grammar_order
from toollab.templates.base import Template

Message = dict[str, Any]

#: every step of a conversation: decide call / no-call first, then exactly one call
CONVERSATION_POLICY = CallPolicy.decision_first(max_calls=1)

#: the answer of a step that asks for a tool when none fits the request
NO_TOOL_FITS = "None of the available tools can do this."

#: what a repeated call gets back instead of running again (``{result}``: the earlier result)
REPEAT_NOTE = (
    "This call was already made with the same arguments and its result is known: {result}. "
    "Do not call it again; answer the user with this result."
)


def turn_policy(first_step: bool, require_call: bool) -> CallPolicy:
    """The constraint of one step: exactly one call for the first step of a user turn when a
    call is required (``toollab chat --require-call``), else :data:`CONVERSATION_POLICY`."""
    if first_step and require_call:
        return CallPolicy.single()
    return CONVERSATION_POLICY


def plain(value: Any) -> Any:
    """A tool result as plain JSON values (pydantic models dumped, tuples as lists)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def observation_text(value: Any) -> str:
    """How a tool result is shown to the model (and to the person chatting)."""
    return json.dumps(plain(value), ensure_ascii=False, default=str)


def tool_message(call: ToolCall, content: str) -> Message:
    """The ``tool`` message that carries one call's result (its :func:`observation_text`, or a
    note) back."""
    msg: Message = {"role": "tool", "name": call.name, "content": content}
    if call.id:
        msg["tool_call_id"] = call.id
    return msg


def call_turn(call: ToolCall, tools: Sequence[Tool]) -> str:
    """The assistant text of a step that makes ``call``."""
    tool = next((t for t in tools if t.name == call.name), None)
    body = {"name": call.name, "arguments": grammar_order(call, tool)}
    return json.dumps({DECISION_KEY: CALL, "call": body}, ensure_ascii=False)


def answer_turn(text: str) -> str:
    """The assistant text of a step that answers without a call."""
    return json.dumps({DECISION_KEY: NO_CALL, "answer": text}, ensure_ascii=False)


def turn_text(result: ParseResult, tools: Sequence[Tool]) -> str | None:
    """The history text of a read step (its first call, or its answer); ``None`` for an output
    that could not be read."""
    if result.is_error:
        return None
    if result.calls:
        return call_turn(result.calls[0], tools)
    return answer_turn(result.text or "")


def call_key(call: ToolCall) -> str:
    """Identity of a call: its name and its arguments (key order ignored)."""
    args = call.model_dump(mode="json")["arguments"]
    return json.dumps([call.name, args], sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class RepeatGuard:
    """Remembers the calls answered in one user turn and tells a repeat from a new question.

    A call is a **repeat** when an identical call (same name, same arguments) was answered
    earlier in the same user turn and either nothing ran since (it is not executed again: the
    world cannot have changed) or it ran again and gave the identical result.  A call that ran
    again after other calls and got another result is a new question (``search()`` after a
    filter changed).  ``toollab chat`` feeds the first repeat back as :data:`REPEAT_NOTE` with
    the result and asks again; the second repeat ends the turn with that result as the answer.
    Calls in later user turns run again (the world may have changed: the weather now).
    """

    #: (result text, calls executed when it was recorded) of every call answered this turn
    answered: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: calls executed this user turn
    executed: int = 0
    #: repeats seen this user turn
    repeats: int = 0

    def new_turn(self) -> None:
        self.answered.clear()
        self.executed = 0
        self.repeats = 0

    def known(self, call: ToolCall) -> str | None:
        """The earlier result of an identical call with nothing run since (do not run it
        again), or ``None`` (run it)."""
        found = self.answered.get(call_key(call))
        if found is not None and found[1] == self.executed:
            return found[0]
        return None

    def record(self, call: ToolCall, result_text: str) -> bool:
        """Record an executed call's result; whether it repeats an identical call's result."""
        key = call_key(call)
        earlier = self.answered.get(key)
        self.executed += 1
        self.answered[key] = (result_text, self.executed)
        return earlier is not None and earlier[0] == result_text

    def repeat(self) -> bool:
        """Count one repeat; whether the turn should go on (``False``: stop and show the result)."""
        self.repeats += 1
        return self.repeats < 2

    @staticmethod
    def note(result_text: str) -> str:
        return REPEAT_NOTE.format(result=result_text)


# -- one user turn ---------------------------------------------------------------------------------
#: how a user turn ended (:attr:`TurnOutcome.ended_by`)
ANSWERED = "answer"  #: the model answered without a call
REPEATED = "repeat"  #: the repeat guard ended it (a second repeated call): its result is the answer
STEP_LIMIT = "step_limit"  #: ``max_steps`` steps, every one a call: no answer
#: ``max_steps`` steps, every one a call, then the final step (no call allowed) answered
FINAL = "final_answer"
UNPARSED = "unparsed"  #: an output that could not be read
MODEL_ERROR = "model_error"  #: the backend failed
ENDINGS = (ANSWERED, FINAL, REPEATED, STEP_LIMIT, UNPARSED, MODEL_ERROR)


@dataclass
class TurnStep:
    """One model step of a user turn: what the model said and, for a call, what it got back."""

    output: ModelOutput
    parsed: ParseResult
    #: the assistant text kept in the history (the protocol's rendering when constrained)
    content: str
    calls: list[ToolCall] = field(default_factory=list)
    #: each call's result text (what it returned, or the earlier result of a call not run again)
    results: list[str] = field(default_factory=list)
    #: per call: an identical call was answered with nothing run since, so it did not run again
    known: list[bool] = field(default_factory=list)
    #: per call: a repeat (not run again, or run again with the identical result)
    repeats: list[bool] = field(default_factory=list)


@dataclass
class TurnOutcome:
    """How one user turn went: its steps, how it ended (one of :data:`ENDINGS`) and the answer
    (the model's, or the known result the repeat guard answered with)."""

    steps: list[TurnStep]
    ended_by: str
    answer: str | None = None
    #: the backend's error (``ended_by == MODEL_ERROR``)
    error: str | None = None


Execute = Callable[[list[ToolCall]], Awaitable[list[Any]]]


@dataclass
class TurnRunner:
    """What stays fixed across the user turns of one conversation: the model, how it is asked,
    the tools and how their calls run (``execute``: one observation per call, in order)."""

    model: Model
    template: Template
    tools: list[Tool]
    execute: Execute
    options: GenerateOptions
    max_steps: int = 4
    #: decode every step under :func:`turn_policy` (tools loaded, backend able to)
    constrained: bool = False
    #: constrained: the first step of each user turn must call a tool
    require_call: bool = False
    #: ``ChatRequest.tag`` of every request (the instance id of an evaluation)
    tag: str | None = None
    guard: RepeatGuard = field(default_factory=RepeatGuard)

    async def _answer(self, messages: list[Message], first_step: bool) -> TurnStep:
        if self.constrained:
            policy = turn_policy(first_step, self.require_call)
            outcome = await run_policy(
                self.model, list(messages), self.tools, policy, self.options, tag=self.tag
            )
            # the history holds the protocol's own rendering of what was read: the prompts the
            # training conversations were made of
            content = turn_text(outcome.result, self.tools)
            out = outcome.outputs[-1]
            return TurnStep(out, outcome.result, outcome.raw if content is None else content)
        req = ChatRequest(
            messages=list(messages), tools=self.tools, options=self.options, tag=self.tag
        )
        out = await self.model.safe_request(req)
        if out.tool_calls:
            return TurnStep(out, ParseResult.ok(list(out.tool_calls)), out.text)
        parsed = self.template.parse(out.text)
        if parsed.is_error and out.text.lstrip().startswith(f'{{"{DECISION_KEY}"'):
            alt = parse_constrained(out.text)  # a model trained on the protocol, no grammar
            parsed = parsed if alt.is_error else alt
        return TurnStep(out, parsed, out.text)

    async def _final(self, messages: list[Message]) -> TurnStep:
        """The step after the step limit: the same prompt, decoded under the no-call branch of
        the protocol alone (an answer in text, no call)."""
        schema = no_call_schema(CONVERSATION_POLICY)
        options = self.options.model_copy(update={"json_schema": schema, "native_tools": False})
        req = ChatRequest(messages=list(messages), tools=self.tools, options=options, tag=self.tag)
        out = await self.model.safe_request(req)
        parsed = parse_constrained(out.text, CONVERSATION_POLICY)
        content = turn_text(parsed, self.tools)
        return TurnStep(out, parsed, out.text if content is None else content)

    def answer_text(self, text: str) -> str:
        """The history text of an answer given for the model (the repeat guard's)."""
        return answer_turn(text) if self.constrained else self.template.render_answer(text)

    async def run_turn(
        self,
        messages: list[Message],
        text: str,
        on_step: Callable[[TurnStep], None] | None = None,
    ) -> TurnOutcome:
        """Send the user message ``text`` and run the turn; ``messages`` (the conversation so
        far) gets the message, every step and every tool result appended.  A model error leaves
        what the turn appended in place (the caller decides: ``chat`` drops it).  ``on_step``
        hears each step once its calls have run."""
        messages.append({"role": "user", "content": text})
        self.guard.new_turn()
        steps: list[TurnStep] = []
        for k in range(self.max_steps):
            step = await self._answer(messages, first_step=k == 0)
            steps.append(step)
            out, parsed = step.output, step.parsed
            if out.error:
                if on_step is not None:
                    on_step(step)
                return TurnOutcome(steps, MODEL_ERROR, error=out.error)
            assistant: Message = {"role": "assistant", "content": step.content}
            if parsed.is_error or not parsed.calls:
                messages.append(assistant)
                if on_step is not None:
                    on_step(step)
                if parsed.is_error:
                    return TurnOutcome(steps, UNPARSED)
                reply = parsed.text if parsed.text is not None else out.text
                return TurnOutcome(steps, ANSWERED, answer=reply)
            if out.tool_calls and not self.constrained:
                assistant["tool_calls"] = [c.to_openai() for c in out.tool_calls]
            messages.append(assistant)
            step.calls = list(parsed.calls)
            earlier = [self.guard.known(c) for c in step.calls]
            fresh = [c for c, e in zip(step.calls, earlier, strict=True) if e is None]
            results = iter(await self.execute(fresh) if fresh else [])
            for call, known in zip(step.calls, earlier, strict=True):
                if known is None:
                    result = observation_text(next(results, {"error": "no result"}))
                    again = self.guard.record(call, result)
                else:
                    result, again = known, True
                step.results.append(result)
                step.known.append(known is not None)
                step.repeats.append(again)
                messages.append(tool_message(call, self.guard.note(result) if again else result))
            if on_step is not None:
                on_step(step)
            if any(step.repeats) and not self.guard.repeat():
                last = step.results[-1]
                messages.append({"role": "assistant", "content": self.answer_text(last)})
                return TurnOutcome(steps, REPEATED, answer=last)
        if not self.constrained:  # no grammar can forbid a call: the turn stops here
            return TurnOutcome(steps, STEP_LIMIT)
        step = await self._final(messages)
        steps.append(step)
        if on_step is not None:
            on_step(step)
        if step.output.error:
            return TurnOutcome(steps, MODEL_ERROR, error=step.output.error)
        if step.parsed.is_error or step.parsed.calls:
            return TurnOutcome(steps, STEP_LIMIT)
        messages.append({"role": "assistant", "content": step.content})
        reply = step.parsed.text if step.parsed.text is not None else step.output.text
        return TurnOutcome(steps, FINAL, answer=reply)


class TurnRecord(BaseModel):
    """What one user turn of an evaluated conversation did, as the ``conversation`` agent
    records it (``Prediction.metadata["turns"]``) and the ``conversation`` scorer reads it."""

    #: how it ended: one of :data:`ENDINGS`
    ended_by: str
    #: model steps taken
    steps: int = 0
    #: calls made (repeats included)
    calls: int = 0
    #: repeated identical calls (not run again, or run again with the identical result)
    repeats: int = 0
    #: steps whose output could not be read
    unparsed: int = 0
    #: the answer that ended the turn (the model's, or the repeat guard's known result)
    answer: str | None = None
    #: the result texts the model was given in this turn, in order
    observations: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, outcome: TurnOutcome) -> TurnRecord:
        return cls(
            ended_by=outcome.ended_by,
            steps=len(outcome.steps),
            calls=sum(len(s.calls) for s in outcome.steps),
            repeats=sum(sum(s.repeats) for s in outcome.steps),
            unparsed=sum(1 for s in outcome.steps if s.parsed.is_error and not s.output.error),
            answer=outcome.answer,
            observations=[r for s in outcome.steps for r in s.results],
        )
