"""The ``json`` output format: OpenAI-style calls written as JSON.

Accepted shapes (one object, several objects in the text, or a list):

* ``{"name": "f", "arguments": {...}}`` — ``arguments`` may also be a JSON *string* (as in the
  OpenAI API) or be called ``parameters``;
* ``{"function": {"name": "f", "arguments": ...}, "id": ...}`` (an OpenAI ``tool_calls`` item);
* ``{"tool_calls": [...], "content": "..."}``;
* ``{"answer": "<text>"}`` — toollab's explicit *no call*: the model answers in text.

Python-literal spellings (single quotes, ``True``/``None``) are read too.  Text without any JSON
object is a no-call whose answer is the text; JSON that is present but unusable is an error that
says why.  An empty list ``[]`` is an explicit no-call.
"""

from __future__ import annotations

from typing import Any

from toollab.parsing._text import (
    CallShapeError,
    Span,
    clip,
    load_json_or_literal,
    make_call,
    next_non_space,
    outer_spans,
    scrub,
    strip_or_none,
)
from toollab.parsing.base import ParseResult, register_parser
from toollab.schema import ToolCall

#: the key of toollab's explicit no-call object: ``{"answer": "<text>"}``
NO_CALL_KEY = "answer"
#: at most this many JSON fragments of one output are read (the rest is reported as skipped)
MAX_FRAGMENTS = 1000


def looks_like_json(text: str, span: Span) -> bool:
    """Whether a bracketed region is meant as JSON: ``{"``, ``{'``, ``[{`` or ``[]``."""
    after = next_non_space(text, span.start + 1)
    if text[span.start] == "{":
        return after in ('"', "'")
    return after in ("{", "]")


def calls_from_value(value: Any, where: str = "JSON") -> tuple[list[ToolCall], str | None, bool]:
    """Interpret one decoded JSON value.

    Returns ``(calls, answer, explicit_empty)``; raises :class:`CallShapeError` when the value is
    neither calls nor an answer.
    """
    if isinstance(value, list):
        calls: list[ToolCall] = []
        answers: list[str] = []
        for i, item in enumerate(value):
            sub_calls, answer, _ = calls_from_value(item, f"{where} item {i}")
            calls.extend(sub_calls)
            if answer is not None:
                answers.append(answer)
        return calls, ("\n".join(answers) if answers else None), not value
    if not isinstance(value, dict):
        raise CallShapeError(f"{where} is a {type(value).__name__}, not a call object")
    if "tool_calls" in value:
        items = value["tool_calls"]
        if items is None:
            items = []
        if not isinstance(items, list):
            raise CallShapeError(f"{where}: 'tool_calls' must be a list")
        calls = [one_call(item, f"{where} tool_calls[{i}]") for i, item in enumerate(items)]
        content = value.get("content")
        return calls, _as_text(content) if content is not None else None, not items
    if NO_CALL_KEY in value and "name" not in value and "function" not in value:
        return [], _as_text(value[NO_CALL_KEY]), False
    return [one_call(value, where)], None, False


def one_call(item: Any, where: str) -> ToolCall:
    """One call object: ``{"name", "arguments"|"parameters"}`` or ``{"function": {...}}``."""
    if not isinstance(item, dict):
        raise CallShapeError(f"{where} is a {type(item).__name__}, not a call object")
    call_id = item.get("id")
    if "function" in item:
        fn = item["function"]
        if isinstance(fn, dict):
            return make_call(fn.get("name"), _arguments(fn), call_id=call_id, where=where)
        return make_call(fn, _arguments(item), call_id=call_id, where=where)
    if "name" not in item:
        keys = ", ".join(repr(k) for k in list(item)[:5])
        raise CallShapeError(f"{where} has no 'name' (keys: {keys or 'none'})")
    return make_call(item["name"], _arguments(item), call_id=call_id, where=where)


def _arguments(obj: dict[str, Any]) -> Any:
    if "arguments" in obj:
        return obj["arguments"]
    return obj.get("parameters")


def _as_text(value: Any) -> str:
    return scrub(value) if isinstance(value, str) else scrub(str(value))


def outside_text(text: str, spans: list[Span]) -> str | None:
    """The text around ``spans`` with Markdown code-fence lines dropped."""
    pieces: list[str] = []
    pos = 0
    for span in spans:
        pieces.append(text[pos : span.start])
        pos = len(text) if span.end is None else span.end + 1
    pieces.append(text[pos:])
    kept = [line for line in "".join(pieces).splitlines() if not line.strip().startswith("```")]
    return strip_or_none("\n".join(kept))


@register_parser("json")
class JsonCallParser:
    name = "json"

    def parse(self, text: str) -> ParseResult:
        text = scrub(text)
        candidates = [s for s in outer_spans(text) if looks_like_json(text, s)]
        if not candidates:
            return ParseResult.no_call(strip_or_none(text))
        calls: list[ToolCall] = []
        answers: list[str] = []
        problems: list[str] = []
        explicit_empty = False
        skipped = max(0, len(candidates) - MAX_FRAGMENTS)
        for span in candidates[:MAX_FRAGMENTS]:
            where = f"JSON at character {span.start}"
            if span.broken:
                problems.append(f"{where}: mismatched brackets")
                continue
            if span.end is None:
                problems.append(f"{where}: unterminated ({clip(span.text(text), 60)})")
                continue
            ok, value, reason = load_json_or_literal(span.text(text))
            if not ok:
                problems.append(f"{where}: {reason}")
                continue
            try:
                found, answer, empty = calls_from_value(value, where)
            except (CallShapeError, RecursionError) as exc:
                problems.append(
                    str(exc) if isinstance(exc, CallShapeError) else f"{where}: too deep"
                )
                continue
            calls.extend(found)
            explicit_empty = explicit_empty or empty
            if answer is not None:
                answers.append(answer)
        around = outside_text(text, candidates)
        answer_text = "\n".join(answers) if answers else None
        details: dict[str, Any] = {"ignored": problems[:20]} if problems else {}
        if skipped:
            details["skipped_fragments"] = skipped
        if calls:
            return ParseResult.ok(calls, thought=around, text=answer_text, details=details)
        if problems:
            return ParseResult.fail("; ".join(problems[:3]), thought=around)
        if answer_text is not None:
            return ParseResult.no_call(answer_text, thought=around)
        return ParseResult.no_call(around, details={"empty_call_list": explicit_empty})
