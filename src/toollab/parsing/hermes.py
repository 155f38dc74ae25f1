"""The ``hermes`` output format: Hermes / Qwen ``<tool_call>`` tags.

``<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>`` — one tag per call, possibly
several.  A tag left open at the end of the text (generation stopped early) is read up to the
end; a new ``<tool_call>`` also ends an unclosed one.  Text outside the tags (and a
``<think>...</think>`` block) is kept as the thought; without any tag the text is a no-call answer.
The content of a tag is read like the ``json`` format (``arguments`` may be a JSON string).
"""

from __future__ import annotations

from toollab.parsing._text import (
    CallShapeError,
    clip,
    load_json_or_literal,
    match_bracket,
    scrub,
    strip_or_none,
)
from toollab.parsing.base import ParseResult, register_parser
from toollab.parsing.json_calls import calls_from_value
from toollab.schema import ToolCall

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


def split_think(text: str) -> tuple[str | None, str]:
    """``(thinking, rest)``: a leading ``<think>...</think>`` block (or text before a lone
    ``</think>``, when the template opened the block) split off."""
    close = text.find(THINK_CLOSE)
    if close < 0:
        return None, text
    rest = text[close + len(THINK_CLOSE) :]
    open_ = text.find(THINK_OPEN, 0, close)
    if open_ >= 0:
        return strip_or_none(text[open_ + len(THINK_OPEN) : close]), text[:open_] + rest
    return strip_or_none(text[:close]), rest


def tool_call_blocks(text: str) -> tuple[list[tuple[str, bool]], str]:
    """The contents of the ``<tool_call>`` tags (with whether each was closed) and the text
    outside them.  Linear time."""
    blocks: list[tuple[str, bool]] = []
    outside: list[str] = []
    pos = 0
    close = text.find(CLOSE)
    while True:
        i = text.find(OPEN, pos)
        if i < 0:
            outside.append(text[pos:])
            break
        outside.append(text[pos:i])
        body = i + len(OPEN)
        if 0 <= close < body:  # each search resumes where the last stopped: linear overall
            close = text.find(CLOSE, body)
        k = text.find(OPEN, body)
        if close < 0 or (0 <= k < close):
            end = k if k >= 0 else len(text)
            blocks.append((text[body:end], False))
            if k < 0:
                break
            pos = k
            continue
        blocks.append((text[body:close], True))
        pos = close + len(CLOSE)
    return blocks, "".join(outside)


@register_parser("hermes")
class HermesParser:
    name = "hermes"

    def parse(self, text: str) -> ParseResult:
        text = scrub(text)
        thinking, rest = split_think(text)
        blocks, outside = tool_call_blocks(rest)
        around = strip_or_none(outside.replace(CLOSE, ""))
        thought = strip_or_none("\n".join(x for x in (thinking, around) if x))
        if not blocks:
            return ParseResult.no_call(around, thought=thinking)
        calls: list[ToolCall] = []
        for n, (content, closed) in enumerate(blocks):
            where = f"<tool_call> {n}"
            body = content.strip()
            if not body:
                return ParseResult.fail(f"{where} is empty", thought=thought)
            if body[0] in "{[":
                end = match_bracket(body, 0)
                if end is None:
                    state = "closed" if closed else "unclosed"
                    return ParseResult.fail(
                        f"{where} ({state}) holds unterminated JSON: {clip(body, 60)}",
                        thought=thought,
                    )
                body = body[: end + 1]
            ok, value, reason = load_json_or_literal(body)
            if not ok:
                return ParseResult.fail(f"{where}: {reason}", thought=thought)
            try:
                found, _, _ = calls_from_value(value, where)
            except (CallShapeError, RecursionError) as exc:
                return ParseResult.fail(str(exc) or f"{where}: too deep", thought=thought)
            if not found:
                return ParseResult.fail(f"{where} holds no call", thought=thought)
            calls.extend(found)
        details = {"unclosed_tag": True} if not blocks[-1][1] else {}
        return ParseResult.ok(calls, thought=thought, details=details)
