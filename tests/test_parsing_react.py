"""The ``react`` output format and ToolEyes' format check."""

from __future__ import annotations

import pytest

from toollab.parsing import ParseStatus, parse, react_format_check, tooleyes_segments

TOOLEYES_TURN = (
    "Thought: First, I will use the predict_age function to estimate the ages of the individual "
    'named Sophia in Germany.\nAction: predict_age\nAction Input: {"names": "Sophia"}'
)
TOOLEYES_FINISH = (
    "Thought: The individual named Liam is 36 years old. Now, I will use the finish tool.\n"
    'Action: finish\nAction Input: {"answer": "Sophia is 39 years old, and Liam is 36."}'
)


def test_tooleyes_call_and_finish() -> None:
    r = parse(TOOLEYES_TURN, "react")
    assert r.status is ParseStatus.CALLS
    assert (r.calls[0].name, r.calls[0].arguments) == ("predict_age", {"names": "Sophia"})
    assert r.thought is not None and r.thought.startswith("First, I will use")
    r = parse(TOOLEYES_FINISH, "react")
    assert r.status is ParseStatus.NO_CALL
    assert r.text == "Sophia is 39 years old, and Liam is 36."
    assert r.details["finish"] is True


def test_toolbench_style_and_python_dict_input() -> None:
    text = "Thought: look up layers\nAction: list_all_layers_for_geolocation\nAction Input: {}"
    assert parse(text, "react").calls[0].arguments == {}
    text = "Action: search\nAction Input: {'q': 'weather', 'n': 3}\nObservation: sunny"
    r = parse(text, "react")
    assert r.calls[0].arguments == {"q": "weather", "n": 3}
    text = 'Thought: done\nAction: Finish\nAction Input: {"return_type": "give_up_and_restart"}'
    r = parse(text, "react")
    assert r.status is ParseStatus.NO_CALL and r.details["give_up"] is True


def test_last_action_wins_like_alpha_umi() -> None:
    text = (
        'Thought: a\nAction: first\nAction Input: {"x": 1}\nObservation: ok\n'
        'Thought: b\nAction: second\nAction Input: {"y": 2}'
    )
    r = parse(text, "react")
    assert [c.name for c in r.calls] == ["second"] and r.thought == "b"


def test_final_answer_and_plain_text() -> None:
    r = parse("Thought: I know it.\nFinal Answer: Paris.", "react")
    assert r.status is ParseStatus.NO_CALL and r.text == "Paris." and r.thought == "I know it."
    r = parse("Paris is the capital.", "react")
    assert r.status is ParseStatus.NO_CALL and r.details["plain_text"] is True


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Thought: x\nAction: search", "no 'Action Input:'"),
        ("Thought: x\nAction: \nAction Input: {}", "empty Action"),
        ("Thought: x\nAction: search\nAction Input:", "empty Action Input"),
        ('Thought: x\nAction: search\nAction Input: {"q": ', "unterminated"),
        ("Thought: x\nAction: search\nAction Input: [1, 2]", "not an object"),
        ("Thought: x\nAction: search\nAction Input: q=weather", "neither JSON"),
    ],
)
def test_errors(text: str, reason: str) -> None:
    r = parse(text, "react")
    assert r.status is ParseStatus.ERROR
    assert r.error is not None and reason in r.error


def test_tooleyes_format_check_mirrors_upstream() -> None:
    assert react_format_check(TOOLEYES_TURN) == (True, "")
    assert react_format_check(TOOLEYES_FINISH) == (True, "")
    ok, reason = react_format_check("Action: f\nAction Input: {}")
    assert not ok and "Thought" in reason
    ok, reason = react_format_check("Thought: x\nAction: \nAction Input: {}")
    assert (ok, reason) == (False, "empty Action")
    # JSON literals are not Python: ToolEyes' eval rejects true/null, and so does the check
    ok, reason = react_format_check('Thought: x\nAction: f\nAction Input: {"a": true}')
    assert not ok and "Action Input" in reason
    ok, _ = react_format_check("Thought: x\nAction: f\nAction Input: {'a': True}")
    assert ok
    # everything after "Action Input:" is evaluated, so a trailing observation breaks it
    ok, _ = react_format_check("Thought: x\nAction: f\nAction Input: {}\nObservation: 1")
    assert not ok


def test_tooleyes_segments() -> None:
    seg = tooleyes_segments("Thought: t\nAction: f\\n\nAction Input: {'a': 1}")
    assert seg == ("t", "f", "{'a': 1}")
    assert tooleyes_segments("no markers") is None
