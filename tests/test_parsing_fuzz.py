"""Property test: generated and mutated outputs in every format, fed to every parser.

Valid renderings of random calls must read back to the same calls; after random damage
(truncation, deletions, insertions, duplications, bracket flips, random unicode, shuffled markers)
every parser must still return a well-formed :class:`ParseResult` and never raise.
"""

from __future__ import annotations

import json
import keyword
import operator
import random
import string
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toollab.parsing import (
    BfclDecodeError,
    ParseResult,
    ParseStatus,
    bfcl_decode_ast,
    get_parser,
    parser_names,
    react_format_check,
    seal_upstream_parse,
)
from toollab.schema import Decision, ToolCall

EXAMPLES = 350
MUTANTS_PER_RENDERING = 4

_HEAD = string.ascii_letters + "_"
# the strings of ``[A-Za-z_][A-Za-z0-9_]{0,12}`` (built directly: ``st.from_regex`` is slow)
IDENT = st.builds(
    operator.add, st.sampled_from(_HEAD), st.text(_HEAD + string.digits, max_size=12)
).filter(
    lambda s: not keyword.iskeyword(s) and s not in {"finish", "Finish", "True", "False", "None"}
)
SAFE_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r"), max_size=20
)
LEAF = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**15), max_value=10**15)
    | st.floats(allow_nan=False, allow_infinity=False)
    | SAFE_TEXT
)


def _values(keys: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    return st.recursive(
        LEAF,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
        max_leaves=6,
    )


def _calls(keys: st.SearchStrategy[str], dotted: bool = False) -> st.SearchStrategy[list[ToolCall]]:
    name = st.builds(lambda a, b: f"{a}.{b}", IDENT, IDENT) | IDENT if dotted else IDENT
    call = st.builds(
        lambda n, args, k: ToolCall(
            name=n, arguments=args, outputs=[f"API_call_{i}" for i in range(k)]
        ),
        name,
        st.dictionaries(keys, _values(keys), max_size=4),
        st.integers(0, 2),
    )
    return st.lists(call, min_size=1, max_size=3)


# -- renderers ---------------------------------------------------------------------------------

REACT_MARKS = ("Action", "Observation", "Final Answer", "Thought")
HERMES_MARKS = ("<tool_call>", "</tool_call>", "<think>", "</think>")
DEER_MARKS = ("#Begin#", "#SearchAPI#", "#CallAPI#", "#NoCallAPI#", "#APIResponse#", "#End#")


def render_json(calls: list[ToolCall], style: int, ascii_only: bool) -> str:
    def one(c: ToolCall) -> dict[str, Any]:
        if style == 2:
            return c.to_openai()
        return {"name": c.name, "arguments": c.arguments}

    if style == 1 or len(calls) > 1:
        body: Any = [one(c) for c in calls]
    elif style == 2:
        body = {"tool_calls": [one(c) for c in calls]}
    else:
        body = one(calls[0])
    return "Calling now.\n" + json.dumps(body, ensure_ascii=ascii_only)


def render_seal(calls: list[ToolCall], as_literal: bool) -> str:
    records = [c.to_seal() for c in calls]
    return "Output:\n" + (str(records) if as_literal else json.dumps(records, ensure_ascii=False))


def render_python(calls: list[ToolCall]) -> str:
    parts = [
        f"{c.name}(" + ", ".join(f"{k}={v!r}" for k, v in c.arguments.items()) + ")" for c in calls
    ]
    return "[" + ", ".join(parts) + "]"


def render_react(calls: list[ToolCall]) -> str:
    c = calls[0]
    return f"Thought: I should use {c.name}.\nAction: {c.name}\nAction Input: {json.dumps(c.arguments, ensure_ascii=False)}"


def render_hermes(calls: list[ToolCall]) -> str:
    tags = "".join(
        "<tool_call>\n"
        + json.dumps({"name": c.name, "arguments": c.arguments}, ensure_ascii=False)
        + "\n</tool_call>\n"
        for c in calls
    )
    return "Let me check.\n" + tags


def render_deer(calls: list[ToolCall], decision: Decision) -> str:
    if decision is Decision.NO_SEARCH:
        return "#Begin# Don't need to look up the API Pool, I can answer this question with my own knowledge. #End#"
    pool = f"#Begin# Need to look up the API Pool. #SearchAPI# The API Pool including: {[c.name for c in calls]!r}, and the introduction and usage of each API is as follows: \n{{'api_name': 'x'}}"
    if decision is Decision.NO_CALL:
        return (
            pool
            + " #NoCallAPI# There is no proper API and I need to answer this question with my own knowledge. #End#"
        )
    c = calls[0]
    args = ", ".join(f"{k}={v!r}" for k, v in c.arguments.items())
    return pool + f" #CallAPI# {c.name}({args}) #APIResponse#  #End#"


# -- mutations ---------------------------------------------------------------------------------

NASTY = [
    "\x00",
    "\ud800",
    "\udfff",
    "\ufffd",
    "\u202e",
    "\n",
    "\\",
    '"',
    "'",
    "`",
    "#",
    ":",
    "é",
    "😀",
    "\t",
]
BRACKETS = "{}[]()"
ALL_MARKERS = [
    *DEER_MARKS,
    *HERMES_MARKS,
    "Thought:",
    "Action:",
    "Action Input:",
    "Final Answer:",
    "Observation:",
    '{"api"',
    "[{",
    '{"name":',
    "```python\n",
    "```\n",
    NO_CALL_JSON := '{"answer": "x"}',
]


def mutate(text: str, rng: random.Random) -> str:
    """One to four random edits of ``text``, driven by ``rng`` (seeded by hypothesis)."""
    for _ in range(rng.randint(1, 4)):
        n = len(text)
        i = rng.randint(0, n)
        kind = rng.randint(0, 8)
        if kind == 0:  # truncation
            text = text[:i]
        elif kind == 1 and n:  # deletion
            k = min(i, n - 1)
            text = text[:k] + text[k + 1 :]
        elif kind == 2:  # insertion of a nasty, random or bracket character
            pool = rng.choice((NASTY, BRACKETS, None))
            ch = (
                rng.choice(pool)
                if pool
                else chr(rng.choice((rng.randint(32, 0x2FFF), rng.randint(0, 0x10FFFF))))
            )
            text = text[:i] + ch + text[i:]
        elif kind == 3 and n:  # duplication of a slice
            j = rng.randint(i, min(n, i + 40))
            text = text[:j] + text[i:j] + text[j:]
        elif kind == 4:  # bracket flip
            spots = [k for k, c in enumerate(text) if c in BRACKETS]
            if spots:
                k = rng.choice(spots)
                text = text[:k] + rng.choice(BRACKETS) + text[k + 1 :]
        elif kind == 5:  # a marker of any format
            text = text[:i] + rng.choice(ALL_MARKERS) + text[i:]
        elif kind == 6:  # two markers swapped
            text = _swap_markers(text, rng.randint(0, 10**6), rng.randint(0, 10**6))
        elif kind == 7:  # random unicode run
            run = "".join(chr(rng.randint(0, 0x10FFFF)) for _ in range(rng.randint(1, 12)))
            text = text[:i] + run + text[i:]
        else:  # a repeated nasty character
            text = text[:i] + rng.choice(NASTY) * rng.randint(1, 30) + text[i:]
    return text


def _swap_markers(text: str, a: int, b: int) -> str:
    found = sorted((p, m) for m in ALL_MARKERS for p in _positions(text, m))
    if len(found) < 2:
        return text
    (p1, m1), (p2, m2) = found[a % len(found)], found[b % len(found)]
    if p1 > p2:
        (p1, m1), (p2, m2) = (p2, m2), (p1, m1)
    if p1 + len(m1) > p2:
        return text
    return text[:p1] + m2 + text[p1 + len(m1) : p2] + m1 + text[p2 + len(m2) :]


def _positions(text: str, marker: str) -> list[int]:
    out: list[int] = []
    pos = text.find(marker)
    while pos >= 0 and len(out) < 8:
        out.append(pos)
        pos = text.find(marker, pos + 1)
    return out


# -- checks ------------------------------------------------------------------------------------

PARSERS = {name: get_parser(name) for name in parser_names()}


def _well_formed(result: Any) -> ParseResult:
    assert isinstance(result, ParseResult)
    ParseResult.model_validate(result.model_dump())
    json.dumps(result.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    if result.status is ParseStatus.ERROR:
        assert result.error
    if result.status is ParseStatus.CALLS:
        assert result.calls
    return result


def _feed_everywhere(text: str, counter: dict[str, int]) -> dict[str, ParseResult]:
    counter["texts"] += 1
    results = {}
    for name, parser in PARSERS.items():
        results[name] = _well_formed(parser.parse(text))
        counter["parses"] += 1
    out = seal_upstream_parse(text)
    assert out == -1 or isinstance(out, list)
    ok, reason = react_format_check(text)
    assert isinstance(ok, bool) and isinstance(reason, str)
    try:
        decoded = bfcl_decode_ast(text, max_chars=100_000)
        assert isinstance(decoded, list)
    except BfclDecodeError:
        pass
    return results


def _same_calls(got: list[ToolCall], want: list[ToolCall], with_outputs: bool = False) -> bool:
    def key(c: ToolCall) -> tuple[Any, ...]:
        return (c.name, c.arguments, c.outputs if with_outputs else [])

    return [key(c) for c in got] == [key(c) for c in want]


def _clean(calls: list[ToolCall], marks: tuple[str, ...]) -> bool:
    blob = json.dumps([c.arguments for c in calls], ensure_ascii=False) + repr(
        [c.arguments for c in calls]
    )
    return not any(m in blob for m in marks)


# built once: drawing from strategies made anew for every example costs more than the parsing
IDENT_CALLS = _calls(IDENT)
TEXT_CALLS = _calls(SAFE_TEXT.filter(bool))
DOTTED_CALLS = _calls(IDENT, dotted=True)


def test_every_parser_survives_generated_and_mutated_outputs() -> None:
    counter = {"texts": 0, "parses": 0, "round_trips": 0}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        ident_calls = data.draw(IDENT_CALLS, label="calls")
        text_calls = data.draw(TEXT_CALLS, label="text-key calls")
        dotted_calls = data.draw(DOTTED_CALLS, label="dotted calls")
        decision = data.draw(st.sampled_from(list(Decision)), label="deer decision")
        style = data.draw(st.integers(0, 2))
        ascii_only = data.draw(st.booleans())
        as_literal = data.draw(st.booleans())
        seed = data.draw(st.integers(0, 2**32 - 1), label="mutation seed")

        renderings: list[tuple[str, str, list[ToolCall], Callable[[ParseResult], bool]]] = [
            ("json", render_json(text_calls, style, ascii_only), text_calls, lambda r: True),
            ("seal", render_seal(text_calls, as_literal), text_calls, lambda r: True),
            ("python", render_python(dotted_calls), dotted_calls, lambda r: True),
            (
                "react",
                render_react(text_calls),
                text_calls[:1],
                lambda r: _clean(text_calls[:1], REACT_MARKS),
            ),
            (
                "hermes",
                render_hermes(text_calls),
                text_calls,
                lambda r: _clean(text_calls, HERMES_MARKS),
            ),
            (
                "deer",
                render_deer(ident_calls, decision),
                ident_calls[:1],
                lambda r: _clean(ident_calls[:1], DEER_MARKS),
            ),
        ]
        rng = random.Random(seed)
        for fmt, text, calls, clean in renderings:
            results = _feed_everywhere(text, counter)
            for _ in range(MUTANTS_PER_RENDERING):
                _feed_everywhere(mutate(text, rng), counter)
            got = results[fmt]
            if not clean(got):
                continue
            counter["round_trips"] += 1
            if fmt == "deer":
                assert got.decision is decision, (text, got)
                if decision is not Decision.CALL:
                    assert got.status is ParseStatus.NO_CALL
                    continue
            assert got.status is ParseStatus.CALLS, (fmt, text, got.error)
            assert _same_calls(got.calls, calls, with_outputs=fmt == "seal"), (fmt, text, got.calls)
            if fmt == "python":
                assert bfcl_decode_ast(text) == [{c.name: c.arguments} for c in calls]

    run()
    assert counter["texts"] >= 10_000, counter
    assert counter["round_trips"] >= 0.9 * 6 * EXAMPLES, counter
