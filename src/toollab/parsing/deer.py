"""The ``deer`` output format: DEER's decision chains.

``#Begin# Need to look up the API Pool. #SearchAPI# <pool> #CallAPI# CTCP(nctid='NCT03780233')
#APIResponse#  #End#`` — markers ``#Begin#``, ``#SearchAPI#``, ``#CallAPI#``, ``#NoCallAPI#``,
``#APIResponse#``, ``#End#``.

Reading (DEER's order: ``#End#``, ``#NoCallAPI#``, ``#CallAPI#``, ``#SearchAPI#``):

* no ``#Begin#`` → error;
* ``#End#`` with "Don't need" before the first marker → no-call, decision ``NoSearch``, text = the
  sentence;
* ``#NoCallAPI#`` → no-call, decision ``NoCall``, text = what follows it up to ``#End#``;
* ``#CallAPI#`` → decision ``Call``; the call is the text between ``#CallAPI# `` and
  `` #APIResponse#`` (up to the next marker or the end when ``#APIResponse#`` is missing), read as
  one Python call with ``ast`` (values resolved like the ``python`` format).  The raw text is in
  ``details["call_text"]`` and DEER's name rule (``call_text[:call_text.find("(")]``) in
  ``details["call_name"]``.  Unescaped quotes inside string values (``query='What's up'``) are
  repaired (``details["repaired"] = True``); when the text still is not a call the result is an
  **error that keeps decision ``Call``**, so decision accuracy and call validity are scored
  separately;
* only ``#SearchAPI#`` → a no-call with decision ``None`` and ``details["needs_second_round"] =
  True``: DEER's second, teacher-forced round must follow;
* ``#End#`` alone → decision ``NoSearch``.

``details["upstream_branch"]`` is the first of ``#End#``, ``#NoCallAPI#``, ``#CallAPI#``,
``#SearchAPI#`` present (the branch DEER's own evaluation takes) and
``details["upstream_no_search"]`` whether ``"#Begin# Don't need"`` occurs, so a scorer can
reproduce DEER's counts exactly.
"""

from __future__ import annotations

import ast
from typing import Any

from toollab.parsing._text import (
    DECODE_ERRORS,
    CallShapeError,
    UnsafeExpression,
    clip,
    dotted_name,
    make_call,
    parse_python,
    scrub,
    strip_or_none,
    too_long_for_ast,
    work_budget,
)
from toollab.parsing.base import ParseResult, register_parser
from toollab.parsing.python_calls import resolve_value
from toollab.schema import Decision, ToolCall

BEGIN = "#Begin#"
SEARCH = "#SearchAPI#"
CALL = "#CallAPI#"
NO_CALL = "#NoCallAPI#"
RESPONSE = "#APIResponse#"
END = "#End#"
MARKERS = (BEGIN, SEARCH, CALL, NO_CALL, RESPONSE, END)
UPSTREAM_ORDER = (END, NO_CALL, CALL, SEARCH)
NO_SEARCH_PHRASES = ("don't need", "don’t need", "do not need")


MAX_LISTED_MARKERS = 64


def markers_in_order(text: str, limit: int = MAX_LISTED_MARKERS) -> list[str]:
    """The markers of ``text`` in order of appearance (each occurrence, at most ``limit``)."""
    found: list[tuple[int, str]] = []
    for m in MARKERS:
        pos = text.find(m)
        count = 0
        while pos >= 0 and count < limit:
            found.append((pos, m))
            count += 1
            pos = text.find(m, pos + len(m))
    return [m for _, m in sorted(found)[:limit]]


def _next_marker(text: str, start: int) -> int:
    positions = [p for p in (text.find(m, start) for m in MARKERS) if p >= 0]
    return min(positions, default=len(text))


def repair_quotes(src: str) -> str:
    """Escape quote characters inside string literals that a model forgot to escape.

    Inside a string, a matching quote only ends it when the next non-space character can follow
    a value (``,`` ``)`` ``]`` ``}`` ``:``) or the text ends; any other such quote is escaped, and
    raw line breaks become ``\\n``.  Linear time."""
    out: list[str] = []
    quote = ""
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if quote:
            if c == "\\" and i + 1 < n:
                out.append(src[i : i + 2])
                i += 2
                continue
            if c == quote:
                j = i + 1
                while j < n and src[j] in " \t":
                    j += 1
                if j >= n or src[j] in ",)]}:\n":
                    quote = ""
                    out.append(c)
                else:
                    out.append("\\" + c)
                i += 1
                continue
            out.append("\\n" if c == "\n" else "\\r" if c == "\r" else c)
        else:
            if c in "'\"":
                quote = c
            out.append(c)
        i += 1
    return "".join(out)


def parse_call_text(call_text: str) -> tuple[ToolCall | None, str, dict[str, Any]]:
    """``(call, "", details)`` for a DEER call like ``CTCP(nctid='NCT03780233')``, or
    ``(None, reason, details)``."""
    details: dict[str, Any] = {}
    src = call_text.strip()
    if not src:
        return None, "empty call after #CallAPI#", details
    node, reason = _parse_one_call(src)
    if node is None:
        repaired = repair_quotes(src)
        if repaired != src:
            node, _ = _parse_one_call(repaired)
            if node is not None:
                details["repaired"] = True
    if node is None:
        return None, f"call text is not a Python call ({reason}): {clip(src, 80)}", details
    try:
        args: dict[str, Any] = {}
        with work_budget():  # computed values bounded in total, as for the python format
            for kw in node.keywords:
                if kw.arg is None:
                    return None, "call uses keyword unpacking (**)", details
                args[kw.arg] = resolve_value(kw.value)
        if node.args:
            details["positional_args"] = len(node.args)
        return make_call(dotted_name(node.func), args, where="#CallAPI# call"), "", details
    except CallShapeError as exc:
        return None, str(exc), details
    except (UnsafeExpression, *DECODE_ERRORS) as exc:
        return None, f"call arguments cannot be read: {clip(str(exc), 120)}", details


def _parse_one_call(src: str) -> tuple[ast.Call | None, str]:
    too_long = too_long_for_ast(src)
    if too_long:
        return None, too_long
    try:
        tree = parse_python(src)
    except DECODE_ERRORS as exc:
        return None, clip(str(exc) or type(exc).__name__, 100)
    body = tree.body
    if isinstance(body, ast.List | ast.Tuple) and len(body.elts) == 1:
        body = body.elts[0]
    if not isinstance(body, ast.Call):
        return None, f"a {type(body).__name__}, not a call"
    return body, ""


def _says_no_search(segment: str) -> bool:
    low = segment.lower()
    return any(p in low for p in NO_SEARCH_PHRASES)


@register_parser("deer")
class DeerParser:
    name = "deer"

    def parse(self, text: str) -> ParseResult:
        text = scrub(text)
        details: dict[str, Any] = {
            "markers": markers_in_order(text),
            "upstream_branch": next((m for m in UPSTREAM_ORDER if m in text), None),
            "upstream_no_search": f"{BEGIN} Don't need" in text,
        }
        b = text.find(BEGIN)
        if b < 0:
            return ParseResult.fail("no #Begin# marker", details=details)
        body = text[b + len(BEGIN) :]
        opening = body[: _next_marker(body, 0)]
        if END in body and _says_no_search(opening):
            return ParseResult.no_call(
                strip_or_none(opening), decision=Decision.NO_SEARCH, details=details
            )
        if NO_CALL in body:
            start = body.find(NO_CALL) + len(NO_CALL)
            answer = body[start : _next_marker(body, start)]
            return ParseResult.no_call(
                strip_or_none(answer),
                thought=strip_or_none(opening),
                decision=Decision.NO_CALL,
                details=details,
            )
        if CALL in body:
            return self._call(body, opening, details)
        if SEARCH in body:
            details["needs_second_round"] = True
            return ParseResult.no_call(None, thought=strip_or_none(opening), details=details)
        if END in body:
            return ParseResult.no_call(
                strip_or_none(opening), decision=Decision.NO_SEARCH, details=details
            )
        return ParseResult.fail("no decision marker after #Begin#", details=details)

    def _call(self, body: str, opening: str, details: dict[str, Any]) -> ParseResult:
        start = body.find(CALL) + len(CALL)
        if body.startswith(" ", start):
            start += 1
        stop = body.find(" " + RESPONSE, start)
        details["has_api_response"] = RESPONSE in body[start:]
        if stop < 0:
            stop = _next_marker(body, start)
        call_text = body[start:stop]
        paren = call_text.find("(")
        details["call_text"] = call_text
        details["call_name"] = call_text[:paren] if paren >= 0 else call_text[:-1]
        call, reason, extra = parse_call_text(call_text)
        details.update(extra)
        thought = strip_or_none(opening)
        if call is None:
            return ParseResult.fail(
                reason, decision=Decision.CALL, thought=thought, details=details
            )
        return ParseResult.ok([call], decision=Decision.CALL, thought=thought, details=details)
