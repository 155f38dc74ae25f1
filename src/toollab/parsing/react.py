"""The ``react`` output format: ``Thought: ... / Action: ... / Action Input: {...}``.

Used by ToolEyes and ToolBench (and α-UMi's caller).  The parser reads the **last** ``Action:``
and the ``Action Input:`` after it (α-UMi's rule), so a model that rambles through several
steps is judged on its final one.  ``Action Input`` may be JSON or a Python dict literal; it ends
at a following ``Observation:`` line.

* ``Action: finish`` / ``Finish`` (ToolEyes / ToolBench) is the final answer: a no-call whose
  text is ``answer`` or ``final_answer`` from the input, with ``details["finish"] = True``
  (and ``details["give_up"] = True`` for ToolBench's ``give_up_and_restart``);
* ``Final Answer: <text>`` after the last action is a no-call with that text;
* text with neither is a no-call with the whole text (``details["plain_text"] = True``);
* an ``Action`` without ``Action Input``, an empty action, or an input that is not an object is
  an error.

:func:`react_format_check` and :func:`tooleyes_segments` mirror ToolEyes' own
``reasoning_format_check`` / ``json_format_check`` / ``process_message`` for its IF metric.
"""

from __future__ import annotations

from typing import Any

from toollab.parsing._text import (
    CallShapeError,
    clip,
    load_json_or_literal,
    load_literal,
    make_call,
    match_bracket,
    scrub,
    strip_or_none,
)
from toollab.parsing.base import ParseResult, register_parser

THOUGHT = "Thought:"
ACTION = "Action:"
ACTION_INPUT = "Action Input:"
FINAL_ANSWER = "Final Answer:"
OBSERVATION = "Observation:"
FINISH_ACTIONS = frozenset({"finish", "Finish"})


def tooleyes_segments(text: str) -> tuple[str, str, str] | None:
    """ToolEyes' ``process_message``: ``(thought, action, action_input)`` or ``None`` when one of
    its three regular expressions (``Thought:.*?Action:``, ``Action:.*?Action Input:``,
    ``Action Input:.*``, all DOTALL, first match) does not match.  Linear time."""
    t = text.find(THOUGHT)
    if t < 0:
        return None
    t_end = text.find(ACTION, t + len(THOUGHT))
    if t_end < 0:
        return None
    a = text.find(ACTION)
    a_end = text.find(ACTION_INPUT, a + len(ACTION))
    if a_end < 0:
        return None
    ai = text.find(ACTION_INPUT)
    thought = text[t : t_end + len(ACTION)].replace(ACTION, "").replace(THOUGHT, "").strip()
    action = (
        text[a : a_end + len(ACTION_INPUT)]
        .replace("\\n", "")
        .replace(ACTION, "")
        .replace(ACTION_INPUT, "")
        .strip()
    )
    action_input = text[ai:].replace(ACTION_INPUT, "").strip()
    return thought, action, action_input


def react_format_check(text: str) -> tuple[bool, str]:
    """ToolEyes' format test of one assistant turn: ``reasoning_format_check`` (Thought, Action
    and Action Input present, non-empty action) and ``json_format_check`` (the Action Input is a
    Python literal; ToolEyes uses ``eval``, toollab ``ast.literal_eval``).

    Returns ``(True, "")`` or ``(False, reason)``."""
    if not isinstance(text, str):
        return False, f"turn is {type(text).__name__}, not text"
    segments = tooleyes_segments(text)
    if segments is None:
        return False, "missing 'Thought:', 'Action:' or 'Action Input:'"
    _, action, action_input = segments
    if not action:
        return False, "empty Action"
    ok, _, reason = load_literal(action_input.replace(ACTION_INPUT, ""))
    if not ok:
        return False, f"Action Input {reason}"
    return True, ""


@register_parser("react")
class ReactParser:
    name = "react"

    def parse(self, text: str) -> ParseResult:
        text = scrub(text)
        a = text.rfind(ACTION)
        fa = text.rfind(FINAL_ANSWER)
        if fa >= 0 and fa > a:
            answer = text[fa + len(FINAL_ANSWER) :]
            return ParseResult.no_call(
                answer.strip(),
                thought=_thought(text, fa),
                details={"final_answer": True},
            )
        if a < 0:
            return ParseResult.no_call(strip_or_none(text), details={"plain_text": True})
        thought = _thought(text, a)
        after = a + len(ACTION)
        ai = text.find(ACTION_INPUT, after)
        nl = text.find("\n", after)
        name_end = min(x for x in (ai, nl, len(text)) if x >= 0)
        action = text[after:name_end].strip().strip("`'\"").strip()
        if not action:
            return ParseResult.fail("empty Action", thought=thought)
        if ai < 0:
            return ParseResult.fail(
                f"Action {clip(action, 60)!r} has no 'Action Input:'", thought=thought
            )
        raw = text[ai + len(ACTION_INPUT) :]
        obs = raw.find(OBSERVATION)
        if obs >= 0:
            raw = raw[:obs]
        ok, value, reason = _read_input(raw)
        if not ok:
            return ParseResult.fail(reason, thought=thought)
        if action in FINISH_ACTIONS:
            return _finish(value, thought)
        try:
            call = make_call(action, value, where="Action Input")
        except CallShapeError as exc:
            return ParseResult.fail(str(exc), thought=thought)
        return ParseResult.ok([call], thought=thought)


def _thought(text: str, end: int) -> str | None:
    t = text.rfind(THOUGHT, 0, end)
    start = t + len(THOUGHT) if t >= 0 else 0
    return strip_or_none(text[start:end])


def _read_input(raw: str) -> tuple[bool, Any, str]:
    s = raw.strip()
    if not s:
        return False, None, "empty Action Input"
    if s[0] in "{[":
        end = match_bracket(s, 0)
        if end is None:
            return False, None, f"Action Input is unterminated: {clip(s, 60)}"
        s = s[: end + 1]
    ok, value, reason = load_json_or_literal(s)
    if not ok:
        return False, None, f"Action Input is neither JSON nor a Python literal ({reason})"
    if not isinstance(value, dict):
        return False, None, f"Action Input is a {type(value).__name__}, not an object"
    return True, value, ""


def _finish(value: dict[str, Any], thought: str | None) -> ParseResult:
    details: dict[str, Any] = {"finish": True}
    if value.get("return_type") == "give_up_and_restart":
        details["give_up"] = True
    answer = value.get("answer", value.get("final_answer"))
    text = None if answer is None else scrub(answer if isinstance(answer, str) else str(answer))
    return ParseResult.no_call(text, thought=thought, details=details)
