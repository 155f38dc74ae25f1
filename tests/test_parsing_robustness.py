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


# -- arithmetic and odd expressions in arguments -------------------------------------------------
#: expressions a model may write as an argument value; each must be data (a value, or a failed
#: parse with a reason), never a Python exception out of a parser's entry point
ODD_EXPRESSIONS = [
    "1/0",
    "1//0",
    "1%0",
    "1.0/0",
    "0.0/0.0",
    "-1/0",
    "(1/0)",
    "[1/0]",
    "{'k': 1/0}",
    "(1, 1/0)",
    "1/(1-1)",
    "5 % 0.0",
    "10**10**10",
    "2**-1",
    "0**-1",
    "(-8)**0.5",
    "2.0**10000",
    "10**400 / 1",
    "1e308 * 10",
    "1e308 * 1e308 - 1e308 * 1e308",
    "-~x",
    "~1.5",
    "~'a'",
    "-'a'",
    "+None",
    "-None",
    "not 1",
    "1 << 10**9",
    "1 >> -1",
    "1 & 1",
    "1 | 1",
    "1 ^ 1",
    "1 @ 1",
    "'a' - 1",
    "'a' * -1",
    "'a' * 10**12",
    "[1] * 10**12",
    "[[1] * 1000] * 1000",
    "'%0999999999d' % 1",
    "'%s' % 'x'",
    "b'a' % 1",
    "'a' / 2",
    "[] + ()",
    "None + 1",
    "1j // 1",
    "1j % 1",
    "(1+2j) ** 2",
    "{[1]: 2}",
    "{{}: 1}",
    "{1/0: 2}",
    "x[1/0]",
    "f(1/0)",
    "f(a=1/0)",
    "lambda: 1",
    "(yield)",
    "await x",
    "x if 1/0 else y",
    "[i for i in range(10**9)]",
    "__import__('os').system('true')",
    "().__class__",
    "9" * 5000 + " * 9",
    "1" + "+1" * 5000,
    "-" * 5000 + "1",
    "float('nan')",
    "1e999",
    "-1e999",
    "0x" + "f" * 20000,
    "1_000_000 ** 1_000",
]
TEMPLATES = [
    "[f(a={})]",
    "f(a={})",
    "[f(a=1), g(b={})]",
    "[f(a=g(b={}))]",
    "[f(a=[{}, 2])]",
    "[f(a={{'k': {}}})]",
]


@pytest.mark.parametrize("expr", ODD_EXPRESSIONS)
def test_odd_expressions_in_arguments_are_data(expr: str) -> None:
    names = [n for n in parser_names()]
    for template in TEMPLATES:
        text = template.format(expr)
        for fmt in names:
            _check(get_parser(fmt).parse(text))
        try:
            decoded = bfcl_decode_ast(text)
        except BfclDecodeError as exc:
            assert exc.error_type in ("ast_decoder:decoder_failed",
                                      "ast_decoder:decoder_wrong_output_format")  # fmt: skip
        else:
            assert isinstance(decoded, list)
        seal_upstream_parse(text)
        react_format_check(text)
        _check(get_parser("deer").parse(f"#CallAPI# {text} #End#"))
        _check(get_parser("react").parse(f"Thought: t\nAction: f\nAction Input: {{'a': {expr}}}"))


def test_a_division_by_zero_is_a_failed_parse_with_its_reason() -> None:
    r = get_parser("python").parse("[f(a=1/0)]")
    assert r.status is ParseStatus.ERROR and "ZeroDivisionError" in (r.error or "")
    with pytest.raises(BfclDecodeError, match="decoder_failed"):
        bfcl_decode_ast("[f(a=1/0)]")
    assert get_parser("python").parse("[f(a=1/2)]").calls[0].arguments == {"a": 0.5}
