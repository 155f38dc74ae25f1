"""The ``json`` output format."""

from __future__ import annotations

import json

from toollab.parsing import NO_CALL_KEY, ParseStatus, parse


def test_single_object_with_dict_arguments() -> None:
    r = parse('{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}', "json")
    assert r.status is ParseStatus.CALLS
    assert [(c.name, c.arguments) for c in r.calls] == [
        ("get_weather", {"city": "Paris", "days": 3})
    ]


def test_arguments_as_json_string_and_parameters_alias() -> None:
    r = parse('{"name": "f", "arguments": "{\\"a\\": [1, 2]}"}', "json")
    assert r.calls[0].arguments == {"a": [1, 2]}
    r = parse('{"name": "f", "parameters": {"a": null}}', "json")
    assert r.calls[0].arguments == {"a": None}
    r = parse('{"name": "f", "arguments": ""}', "json")
    assert r.calls[0].arguments == {}


def test_list_tool_calls_and_function_wrappers() -> None:
    text = json.dumps(
        {
            "content": "checking two cities",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "w", "arguments": '{"city": "Oslo"}'},
                },
                {"function": {"name": "w", "arguments": {"city": "Rome"}}},
            ],
        }
    )
    r = parse(text, "json")
    assert [c.arguments["city"] for c in r.calls] == ["Oslo", "Rome"]
    assert r.calls[0].id == "c1"
    assert r.text == "checking two cities"
    r = parse('[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}]', "json")
    assert [c.name for c in r.calls] == ["a", "b"]


def test_prose_around_json_and_code_fence_is_the_thought() -> None:
    r = parse(
        'I will look it up.\n```json\n{"name": "search", "arguments": {"q": "a {b}"}}\n```', "json"
    )
    assert r.status is ParseStatus.CALLS
    assert r.calls[0].arguments == {"q": "a {b}"}
    assert r.thought == "I will look it up."


def test_python_literal_spelling_is_accepted() -> None:
    r = parse("{'name': 'f', 'arguments': {'ok': True, 'v': None, 't': (1, 2)}}", "json")
    assert r.calls[0].arguments == {"ok": True, "v": None, "t": [1, 2]}


def test_no_json_is_a_no_call_with_the_text() -> None:
    r = parse("  The capital of France is Paris (as you know).  ", "json")
    assert r.status is ParseStatus.NO_CALL
    assert r.text == "The capital of France is Paris (as you know)."


def test_explicit_answer_object_is_a_no_call() -> None:
    r = parse(json.dumps({NO_CALL_KEY: "No tool fits; it is 42."}), "json")
    assert r.status is ParseStatus.NO_CALL
    assert r.text == "No tool fits; it is 42."
    r = parse("[]", "json")
    assert r.status is ParseStatus.NO_CALL and r.details["empty_call_list"] is True
    r = parse('{"tool_calls": [], "content": "nothing to do"}', "json")
    assert r.status is ParseStatus.NO_CALL and r.text == "nothing to do"


def test_unusable_json_is_an_error_with_a_reason() -> None:
    cases = {
        '{"name": "f", "arguments": {"a": 1}': "unterminated",
        '{"name": "f", "arguments": {"a": tru}}': "invalid JSON",
        '{"tool": "f"}': "no 'name'",
        '{"name": "", "arguments": {}}': "non-empty string",
        '{"name": "f", "arguments": [1, 2]}': "must be an object",
        '{"name": "f", "arguments": "{not json"}': "arguments string is not JSON",
        '{"name": "f", "arguments": {"a": 1]}': "mismatched",
    }
    for text, reason in cases.items():
        r = parse(text, "json")
        assert r.status is ParseStatus.ERROR, text
        assert r.error is not None and reason in r.error, (text, r.error)


def test_calls_win_over_broken_fragments_which_are_reported() -> None:
    r = parse('{"name": "f", "arguments": {}} and then {"oops": }', "json")
    assert r.status is ParseStatus.CALLS
    assert r.details["ignored"]


def test_openai_round_trip_of_schema_calls() -> None:
    from toollab.schema import ToolCall

    call = ToolCall(name="book", arguments={"when": "2024-05-01", "seats": 2}, id="x1")
    r = parse(json.dumps([call.to_openai()]), "json")
    assert r.calls == [call]
