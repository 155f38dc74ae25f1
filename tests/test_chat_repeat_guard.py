"""``toollab chat`` never loops on an identical call with an identical result: the scripted fake
model repeats calls, the real tool counts how often it ran."""

from __future__ import annotations

import json
from typing import Any

from toollab.agents.conversation import REPEAT_NOTE, RepeatGuard
from toollab.cli.chat_cmd import ChatSession
from toollab.models import GenerateOptions
from toollab.models.fake import FakeModel
from toollab.schema import ToolCall
from toollab.templates import get_template
from toollab.tools import Executor, ToolPool, tool

RUNS: list[str] = []


@tool
def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city.

    Args:
        city: the city
    """
    RUNS.append(city)
    return {"city": city, "temp": 21}


@tool
def set_unit(unit: str) -> str:
    """Set the unit.

    Args:
        unit: celsius or fahrenheit
    """
    RUNS.append(unit)
    return "ok"


PARIS = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
RESULT = json.dumps({"city": "Paris", "temp": 21})


def session(outputs: list[str]) -> tuple[ChatSession, FakeModel]:
    RUNS.clear()
    pool = ToolPool([get_weather, set_unit])
    model = FakeModel(outputs=outputs)
    tpl = get_template("json")
    chat = ChatSession(
        model, tpl, list(pool.tools), Executor(pool, confine=False), GenerateOptions()
    )
    return chat, model


def test_a_repeated_call_is_not_run_again_and_the_second_repeat_ends_the_turn() -> None:
    chat, model = session([PARIS, PARIS, PARIS, PARIS])
    answer = chat.turn("What's the weather in Paris?")
    assert RUNS == ["Paris"]  # run once, never again
    assert answer == RESULT  # the second repeat ends the turn with the known result
    assert len(model.requests) == 3  # it stopped before max_steps (4)
    tools = [m for m in chat.messages if m["role"] == "tool"]
    assert tools[0]["content"] == RESULT
    assert tools[1]["content"] == tools[2]["content"] == REPEAT_NOTE.format(result=RESULT)
    # the model was told before it was asked again
    assert model.requests[2].messages[-1]["content"] == REPEAT_NOTE.format(result=RESULT)
    # the history ends with an answer: no call without its result, no turn without its answer
    assert chat.messages[-1] == {"role": "assistant", "content": RESULT}


def test_the_model_answers_after_the_note() -> None:
    chat, _ = session([PARIS, PARIS, "It is 21 degrees in Paris."])
    assert chat.turn("What's the weather in Paris?") == "It is 21 degrees in Paris."
    assert RUNS == ["Paris"]


def test_a_call_after_other_calls_runs_again_and_counts_only_with_the_same_result() -> None:
    unit = '{"name": "set_unit", "arguments": {"unit": "celsius"}}'
    chat, _ = session([PARIS, unit, PARIS, "done"])
    assert chat.turn("weather in Paris, in celsius") == "done"
    # set_unit ran in between: the world may have changed, so get_weather ran again; its result
    # was the same, so the model got the note with it
    assert RUNS == ["Paris", "celsius", "Paris"]
    tools = [m["content"] for m in chat.messages if m["role"] == "tool"]
    assert tools == [RESULT, '"ok"', REPEAT_NOTE.format(result=RESULT)]


def test_a_later_user_turn_runs_the_call_again() -> None:
    chat, _ = session([PARIS, "21 degrees.", PARIS, "Still 21."])
    assert chat.turn("weather in Paris?") == "21 degrees."
    assert chat.turn("and now?") == "Still 21."
    assert RUNS == ["Paris", "Paris"]


def test_the_guard_tells_repeats_from_new_questions() -> None:
    guard = RepeatGuard()
    a = ToolCall(name="f", arguments={"x": 1, "y": 2})
    same = ToolCall(name="f", arguments={"y": 2, "x": 1})
    assert guard.known(a) is None
    assert guard.record(a, "1") is False
    assert guard.known(same) == "1"  # nothing ran since: known, not run again
    assert guard.record(ToolCall(name="g"), "x") is False
    assert guard.known(a) is None  # something ran since: run it again ...
    assert guard.record(a, "2") is False  # ... another result: a new question
    assert guard.record(a, "2") is True  # the identical result: a repeat
    assert guard.repeat() is True and guard.repeat() is False
    guard.new_turn()
    assert guard.known(a) is None and guard.repeats == 0
