"""The ``python`` output format and BFCL's AST decoding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toollab.parsing import (
    DECODER_FAILED,
    BfclDecodeError,
    ParseStatus,
    bfcl_decode_ast,
    bfcl_is_function_calling_format,
    parse,
)

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple")


def _render(gt: list[dict[str, dict[str, list[Any]]]]) -> tuple[str, list[dict[str, Any]]]:
    parts, expected = [], []
    for call in gt:
        ((name, params),) = call.items()
        args = {k: v[0] for k, v in params.items() if v and v[0] != ""}
        parts.append(f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")")
        expected.append({name: args})
    return "[" + ", ".join(parts) + "]", expected


def test_real_possible_answers_rendered_as_calls_decode_back(shared_data: Path) -> None:
    n = 0
    for cat in CATEGORIES:
        path = shared_data / "bfcl" / "possible_answer" / f"BFCL_v4_{cat}.json"
        for line in path.read_text(encoding="utf-8").splitlines():
            text, expected = _render(json.loads(line)["ground_truth"])
            assert bfcl_decode_ast(text) == expected, text
            r = parse(text, "python")
            assert r.status is ParseStatus.CALLS
            assert [{c.name: c.arguments} for c in r.calls] == json.loads(json.dumps(expected))
            n += 1
    assert n == 1000


def test_parallel_example_and_dotted_names() -> None:
    text = '[spotify.play(artist="Taylor Swift", duration=20), spotify.play(artist="Maroon 5", duration=15)]'
    assert bfcl_decode_ast(text) == [
        {"spotify.play": {"artist": "Taylor Swift", "duration": 20}},
        {"spotify.play": {"artist": "Maroon 5", "duration": 15}},
    ]


def test_fences_and_brackets() -> None:
    call = "calculate_triangle_area(base=10, height=5)"
    expected = [{"calculate_triangle_area": {"base": 10, "height": 5}}]
    assert bfcl_decode_ast(call) == expected  # no surrounding []
    assert bfcl_decode_ast(f"```\n[{call}]\n```") == expected  # plain fence passes
    with pytest.raises(BfclDecodeError) as err:
        bfcl_decode_ast(f"```python\n[{call}]\n```")  # a python fence always fails
    assert err.value.error_type == DECODER_FAILED
    assert parse(f"```python\n[{call}]\n```", "python").status is ParseStatus.ERROR


def test_positional_arguments_are_dropped_and_counted() -> None:
    assert bfcl_decode_ast("[f(1, 2, c=3)]") == [{"f": {"c": 3}}]
    r = parse("[f(1, 2, c=3), g(x=1)]", "python")
    assert r.calls[0].arguments == {"c": 3}
    assert r.details["positional_args"] == {"0": 2}


def test_value_resolution_like_bfcl() -> None:
    text = (
        "[f(a=-3, b=+2, c=2*3+1, d=units, e=(1, 2), g=[1, {'k': None}], h=math.sqrt(4),"
        " i=g(x=1), j=arr[0], k=..., l='x' + 'y')]"
    )
    ((name, args),) = bfcl_decode_ast(text)[0].items()
    assert name == "f"
    assert args == {
        "a": -3,
        "b": -2,  # BFCL negates every unary operand
        "c": 7,
        "d": "units",
        "e": (1, 2),
        "g": [1, {"k": None}],
        "h": "math.sqrt(4)",
        "i": {"g": {"x": 1}},
        "j": "arr[0]",
        "k": "...",
        "l": "xy",
    }
    assert parse(text, "python").calls[0].arguments["e"] == [1, 2]


@pytest.mark.parametrize(
    "text",
    [
        "[f(a=lambda: 1)]",
        "[f(a=x.y)]",
        "[f(a={1, 2})]",
        "[f(a=10**100000)]",
        "[f(a=open('x') + 1)]",
        "[f(a=1), 2]",
        "[f(a='unterminated)]",
        "[f(a=-x)]",
        "[f(a=[1]*10**9)]",
    ],
)
def test_decode_failures(text: str) -> None:
    with pytest.raises(BfclDecodeError) as err:
        bfcl_decode_ast(text)
    assert err.value.error_type == DECODER_FAILED
    r = parse(text, "python")
    assert r.status is ParseStatus.ERROR and r.details["bfcl_error"] == DECODER_FAILED


def test_no_calls() -> None:
    r = parse("[]", "python")
    assert r.status is ParseStatus.NO_CALL and r.details["empty_call_list"]
    assert bfcl_decode_ast("[]") == []
    r = parse("I cannot answer this with the given functions.", "python")
    assert r.status is ParseStatus.NO_CALL
    assert r.text == "I cannot answer this with the given functions."
    assert r.details["bfcl_error"] == DECODER_FAILED
    # a call wrapped in prose is a decode failure, reported as an error
    assert parse("Sure! [f(a=1)]", "python").status is ParseStatus.ERROR


def test_keyword_unpacking() -> None:
    assert bfcl_decode_ast("[f(**kw)]") == [{"f": {None: "kw"}}]
    assert parse("[f(**kw)]", "python").status is ParseStatus.ERROR


def test_function_calling_format_check() -> None:
    assert bfcl_is_function_calling_format([{"f": {}}])
    assert not bfcl_is_function_calling_format([{"f": {}, "g": {}}])
    assert not bfcl_is_function_calling_format([{"f": 1}])
    assert not bfcl_is_function_calling_format({"f": {}})
