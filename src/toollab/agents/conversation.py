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
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toollab.models.constrain import CALL, DECISION_KEY, NO_CALL
from toollab.models.policy import CallPolicy
from toollab.parsing import ParseResult
from toollab.schema import Tool, ToolCall
from toollab.schema.order import grammar_order

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
