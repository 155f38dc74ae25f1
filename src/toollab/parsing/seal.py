"""The ``seal`` output format: Seal-Tools calling lists.

``[{"api": "getWildlifeSpecies", "parameters": {"habitat": "forest"}, "responses": ["API_call_0"]},
{"api": "getProjectDetails", "parameters": {"project_id": "API_call_0"}, "responses": ["API_call_1"]}]``

Two readers:

* the ``seal`` parser is tolerant: it reads the list as JSON or as a Python literal (the format
  the Seal-Tools fine-tuning data uses), keeps apostrophes, accepts a lone call object and a
  missing ``responses`` key.  ``responses`` labels become :attr:`ToolCall.outputs`; argument
  values such as ``"API_call_0"`` stay strings exactly as written (link them with
  :func:`toollab.schema.link_calls`).
* :func:`seal_upstream_parse` reproduces Seal-Tools' own ``transform_output_format
  ('ToolLearning', text)`` byte for byte, quirks included, for scoring comparable with the paper.
"""

from __future__ import annotations

import json
import re
from typing import Any

from toollab.parsing._text import (
    CallShapeError,
    clip,
    load_json_or_literal,
    make_call,
    match_bracket,
    scrub,
    strip_or_none,
)
from toollab.parsing.base import ParseResult, register_parser
from toollab.schema import ToolCall

_UPSTREAM_START = re.compile(r"\[\s*\{\s*\"api\"")
_TOLERANT_START = re.compile(r"\{\s*[\"']api[\"']")


def seal_upstream_parse(text: str) -> list[Any] | int:
    """Seal-Tools' ``transform_output_format('ToolLearning', text)``: the decoded list, or ``-1``.

    1. every ``'`` becomes ``"`` and every ``\\n`` is deleted;
    2. from the first ``[{"api"`` (regex ``\\[\\s*\\{\\s*"api"``) to its bracket-matched ``]``
       (a plain ``[``/``]`` counter that ignores strings; unbalanced → empty text);
    3. the substring must contain the words ``api``, ``parameters`` and ``responses`` anywhere;
    4. ``json.loads``; any failure → ``-1``.
    """
    if not isinstance(text, str):
        return -1
    swapped = text.replace("'", '"').replace("\n", "")
    m = _UPSTREAM_START.search(swapped)
    if m is None:
        return -1
    pos_s = m.start()
    pos_e = _upstream_match_square_bracket(swapped, pos_s)
    candidate = swapped[pos_s : pos_e + 1]
    if not ("api" in candidate and "parameters" in candidate and "responses" in candidate):
        return -1
    try:
        output = json.loads(candidate)
    except Exception:  # upstream uses a bare ``except``: every failure is a format error
        return -1
    return output  # type: ignore[no-any-return]


def _upstream_match_square_bracket(text: str, pos_s: int) -> int:
    counter = -1
    for i in range(pos_s + 1, len(text)):
        c = text[i]
        if c == "[":
            counter -= 1
        elif c == "]":
            counter += 1
            if counter == 0:
                return i
    return -1


def calls_from_seal_list(value: Any) -> list[ToolCall]:
    """Calls from a decoded Seal-Tools list (or one call object); :class:`CallShapeError` if a
    record is not ``{"api": str, "parameters": dict, "responses": list}``-like."""
    items = value if isinstance(value, list) else [value]
    calls: list[ToolCall] = []
    for i, item in enumerate(items):
        where = f"call {i}"
        if not isinstance(item, dict):
            raise CallShapeError(f"{where} is a {type(item).__name__}, not an object")
        if "api" not in item:
            raise CallShapeError(f"{where} has no 'api' key")
        params = item.get("parameters", item.get("arguments"))
        if params is not None and not isinstance(params, dict):
            raise CallShapeError(
                f"{where}: 'parameters' must be an object, got {type(params).__name__}"
            )
        outputs = item.get("responses")
        calls.append(make_call(item["api"], params, outputs=outputs, where=where))
    return calls


@register_parser("seal")
class SealParser:
    name = "seal"

    def parse(self, text: str) -> ParseResult:
        text = scrub(text)
        m = _TOLERANT_START.search(text)
        if m is None:
            stripped = text.strip()
            if _is_empty_list(stripped):
                return ParseResult.no_call(None, details={"empty_call_list": True})
            return ParseResult.no_call(strip_or_none(text))
        start = m.start()
        j = start - 1
        while j >= 0 and text[j].isspace():
            j -= 1
        if j >= 0 and text[j] == "[":
            start = j
        end = match_bracket(text, start)
        if end is None:
            return ParseResult.fail(
                f"call list starting at character {start} is never closed "
                f"or has mismatched brackets ({clip(text[start:], 60)})",
                thought=strip_or_none(text[:start]),
            )
        ok, value, reason = load_json_or_literal(text[start : end + 1])
        if not ok:
            return ParseResult.fail(
                f"call list is neither JSON nor a Python literal: {reason}",
                thought=strip_or_none(text[:start]),
            )
        try:
            calls = calls_from_seal_list(value)
        except CallShapeError as exc:
            return ParseResult.fail(str(exc), thought=strip_or_none(text[:start]))
        except RecursionError:
            return ParseResult.fail("call list nested too deeply")
        around = strip_or_none(text[:start] + " " + text[end + 1 :])
        if not calls:
            return ParseResult.no_call(around, details={"empty_call_list": True})
        return ParseResult.ok(calls, thought=around)


def _is_empty_list(s: str) -> bool:
    if not (s.startswith("[") and s.endswith("]")):
        return False
    return not s[1:-1].strip()


__all__ = ["SealParser", "calls_from_seal_list", "seal_upstream_parse"]
