"""Reading a model's answer when the model plays a tool or the user: never unbounded.

A model asked to play an API may write prose instead of JSON, a huge answer, or the same few
words over and over until its token budget runs out.  :func:`read_api_answer` turns any text
into a JSON observation of bounded size and says what it repaired (notes ``non_json``,
``looping``, ``truncated``, ``empty``); :func:`read_user_reply` does the same for a reply in
words.  Nothing here raises on model output.
"""

from __future__ import annotations

import json
import re

from toollab.schema.json import JsonValue

#: characters of a model's text read at all (the rest is cut before anything else)
HARD_LIMIT = 32_768
#: a unit of 3-200 characters repeated at least 4 times in a row is a loop
_LOOP = re.compile(r"(.{3,200}?)\1{3,}", re.DOTALL)
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*|\s*```\s*$")


def cut_loops(text: str) -> str:
    """``text`` with every run of a repeated unit kept once."""
    return _LOOP.sub(lambda m: m.group(1), text)


def _json_in(text: str) -> tuple[bool, JsonValue]:
    """The JSON value ``text`` is, or the first one it holds (after prose or a code fence)."""
    stripped = _FENCE.sub("", text.strip())
    try:
        return True, json.loads(stripped)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for i, ch in enumerate(stripped):
        if ch in "{[":
            try:
                value, _ = decoder.raw_decode(stripped, i)
            except ValueError:
                continue
            return True, value
    return False, None


def clip(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[:max_chars] + " …"


def read_api_answer(text: str, max_chars: int) -> tuple[JsonValue, list[str]]:
    """(the observation, notes): JSON when the text is or holds JSON, else the text as
    ``{"result": ...}``; a loop is cut, and an answer longer than ``max_chars`` (as JSON) is
    cut to a preview."""
    notes: list[str] = []
    if len(text) > HARD_LIMIT:
        text = text[:HARD_LIMIT]
        notes.append("truncated")
    ok, value = _json_in(text)
    if not ok:
        uncut = cut_loops(text)
        if uncut != text:
            notes.append("looping")
            text = uncut
            ok, value = _json_in(text)
    if not ok:
        if not text.strip():
            notes.append("empty")
        notes.append("non_json")
        value = {"result": clip(text.strip(), max_chars)}
    dumped = json.dumps(value, ensure_ascii=False)
    if len(dumped) > max_chars:
        if "truncated" not in notes:
            notes.append("truncated")
        value = {"truncated": True, "preview": clip(dumped, max_chars)}
    return value, notes


def read_user_reply(text: str, max_chars: int) -> tuple[str, list[str]]:
    """(the reply, notes): stripped, loops cut, at most ``max_chars`` characters."""
    notes: list[str] = []
    text = text[:HARD_LIMIT].strip()
    uncut = cut_loops(text)
    if uncut != text:
        notes.append("looping")
        text = uncut
    if len(text) > max_chars:
        notes.append("truncated")
        text = clip(text, max_chars)
    if not text:
        notes.append("empty")
    return text, notes
