"""The ``hermes`` output format."""

from __future__ import annotations

import pytest

from toollab.parsing import ParseStatus, parse


def test_several_tags_with_text_around() -> None:
    text = (
        'Let me check both.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n'
        '</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}\n</tool_call>'
    )
    r = parse(text, "hermes")
    assert r.status is ParseStatus.CALLS
    assert [c.arguments["city"] for c in r.calls] == ["Oslo", "Rome"]
    assert r.thought == "Let me check both."


def test_unclosed_tag_at_end_and_think_block() -> None:
    r = parse('<think>need weather</think><tool_call>{"name": "w", "arguments": {}}', "hermes")
    assert r.status is ParseStatus.CALLS and r.details["unclosed_tag"] is True
    assert r.thought == "need weather"
    # a new tag also ends an unclosed one
    r = parse(
        '<tool_call>{"name": "a", "arguments": {}}<tool_call>{"name": "b", "arguments": {}}</tool_call>',
        "hermes",
    )
    assert [c.name for c in r.calls] == ["a", "b"]


def test_no_tag_is_an_answer() -> None:
    r = parse("<think>easy</think>It is 4.", "hermes")
    assert r.status is ParseStatus.NO_CALL and r.text == "It is 4." and r.thought == "easy"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<tool_call></tool_call>", "is empty"),
        ('<tool_call>{"name": "f", "arguments": {"a": 1}</tool_call>', "unterminated"),
        ("<tool_call>{'name': f}</tool_call>", "invalid JSON"),
        ('<tool_call>{"arguments": {}}</tool_call>', "no 'name'"),
        ("<tool_call>[]</tool_call>", "holds no call"),
    ],
)
def test_errors(text: str, reason: str) -> None:
    r = parse(text, "hermes")
    assert r.status is ParseStatus.ERROR
    assert r.error is not None and reason in r.error
