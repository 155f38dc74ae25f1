"""Every parser on hostile inputs: huge, deeply nested, binary, broken unicode."""

from __future__ import annotations

import contextlib
import json
import time

import pytest

from toollab.parsing import (
    BfclDecodeError,
    ParseResult,
    ParseStatus,
    bfcl_decode_ast,
    get_parser,
    parser_names,
    react_format_check,
    safe_parse,
    seal_upstream_parse,
)

MB = 1_000_000

HOSTILE = {
    "open_brackets": "[" * MB,
    "open_objects": '{"' * (MB // 2),
    "deep_balanced": "[" * 200_000 + "]" * 200_000,
    "deep_object": '{"a":' * 100_000 + "1" + "}" * 100_000,
    "one_word": "a" * MB,
    "open_calls": "f(" * (MB // 2),
    "deer_markers": "#Begin# #SearchAPI# #CallAPI# " * (MB // 30),
    "hermes_tags": "<tool_call>" * (MB // 11),
    "react_markers": "Thought: Action: Action Input: " * (MB // 31),
    "seal_starts": "[{'api'" * (MB // 7),
    "quotes": "'\"" * (MB // 2),
    "null_bytes": "\x00" * MB,
    "surrogates": "\ud800\udfff" * (MB // 2),
    "huge_int_call": "[f(a=" + "9" * MB + ")]",
    "huge_int_json": '{"name": "f", "arguments": {"a": ' + "9" * 100_000 + "}}",
    "backslashes": '{"a": "' + "\\" * MB,
    "spaces": "[" + " " * MB,
    "many_fragments": "{'a'} " * 150_000,
    "many_tags": '<tool_call>{"name": "f", "arguments": {}}</tool_call>' * 20_000,
    "power_tower": "[f(a=2**2**2**2**2**2)]",
    "long_sum": "[f(a=" + "+".join(["1"] * 20_000) + ")]",
}


def _check(result: ParseResult) -> None:
    assert isinstance(result, ParseResult)
    ParseResult.model_validate(result.model_dump())
    json.dumps(result.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    if result.status is ParseStatus.ERROR:
        assert result.error
        assert "failed:" not in result.error or "decoder_failed" in result.error


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_is_data_not_a_crash(name: str) -> None:
    text = HOSTILE[name]
    start = time.perf_counter()
    for fmt in parser_names():
        _check(get_parser(fmt).parse(text))  # the parser itself never raises
    seal_upstream_parse(text)
    react_format_check(text)
    with contextlib.suppress(BfclDecodeError):
        bfcl_decode_ast(text, max_chars=MB // 10)
    elapsed = time.perf_counter() - start
    assert elapsed < 10, f"{name}: {elapsed:.1f}s for all parsers"


def test_a_megabyte_is_read_in_linear_time() -> None:
    """Doubling the input roughly doubles the time (no quadratic scans)."""
    unit = 'x <tool_call> [{"api" #CallAPI# Action: {"name": ( '
    timings = []
    for n in (MB // 2, MB):
        text = (unit * (n // len(unit) + 1))[:n]
        start = time.perf_counter()
        for fmt in parser_names():
            get_parser(fmt).parse(text)
        timings.append(time.perf_counter() - start)
    assert timings[1] < 5
    assert timings[1] < 4 * timings[0] + 0.5


def test_non_text_and_exceptions_become_errors() -> None:
    r = safe_parse(get_parser("json"), b"bytes")
    assert r.status is ParseStatus.ERROR and "bytes" in (r.error or "")


def test_surrogates_are_replaced_in_results() -> None:
    r = get_parser("json").parse('{"name": "f", "arguments": {"\\ud800": "\\udfff x"}}')
    assert r.calls[0].arguments == {"\ufffd": "\ufffd x"}
    r = get_parser("react").parse("Final Answer: bad \ud800 char")
    assert r.text == "bad \ufffd char"
