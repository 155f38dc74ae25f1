"""The tool schema: lossless conversions, typed references, call graphs."""

from __future__ import annotations

import json

import pytest

from toollab.errors import ToolSchemaError
from toollab.schema import (
    Decision,
    GoldCall,
    Instance,
    Ref,
    Tool,
    ToolCall,
    dependencies,
    is_nested,
    levels,
    link_calls,
)

WEATHER = Tool(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["c", "f"]},
        },
        "required": ["city"],
    },
    returns={"type": "object", "properties": {"temp": {"type": "number"}}},
    category="weather",
    metadata={"source": "test"},
)


def test_openai_round_trip_is_lossless_with_extras() -> None:
    data = WEATHER.to_openai(extras=True)
    assert data["type"] == "function"
    assert Tool.from_openai(data) == WEATHER
    # through JSON text too
    assert Tool.from_openai(json.loads(json.dumps(data))) == WEATHER


def test_openai_plain_format_round_trips_openai_tools() -> None:
    raw = {
        "type": "function",
        "function": {
            "name": "f",
            "description": "d",
            "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "strict": True,
        },
    }
    tool = Tool.from_openai(raw)
    assert tool.metadata["openai_extra"] == {"strict": True}
    back = tool.to_openai()
    assert back["function"]["parameters"] == raw["function"]["parameters"]
    assert Tool.from_openai(tool.to_openai(extras=True)) == tool


def test_hf_format_carries_returns() -> None:
    hf = WEATHER.to_hf()
    assert hf["function"]["return"] == WEATHER.returns
    back = Tool.from_hf(hf)
    assert back.returns == WEATHER.returns
    assert back.parameters == WEATHER.parameters


def test_views() -> None:
    assert WEATHER.required == ["city"]
    assert WEATHER.optional == ["unit"]
    assert WEATHER.return_fields == ["temp"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"name": ""}, "no name"),
        ({"name": None}, "no name"),
        ({"name": "f", "parameters": [1]}, "JSON Schema object"),
    ],
)
def test_build_rejects_bad_tools(kwargs: dict, message: str) -> None:
    with pytest.raises(ToolSchemaError, match=message):
        Tool.build(**kwargs)


def test_refs_serialise_as_dollar_ref_and_back() -> None:
    call = ToolCall(name="g", arguments={"x": Ref("API_call_0"), "ys": [1, Ref("API_call_1")]})
    dumped = json.loads(call.model_dump_json())
    assert dumped["arguments"] == {"x": {"$ref": "API_call_0"}, "ys": [1, {"$ref": "API_call_1"}]}
    again = ToolCall.model_validate(dumped)
    assert again.arguments["x"] == Ref("API_call_0")
    assert [r.label for r in again.refs] == ["API_call_0", "API_call_1"]


def test_seal_convention_links_and_writes_back() -> None:
    calling = [
        {
            "api": "getWildlifeSpecies",
            "parameters": {"habitat": "forest"},
            "responses": ["API_call_0"],
        },
        {
            "api": "getProjects",
            "parameters": {"species": "API_call_0"},
            "responses": ["API_call_1", "API_call_2"],
        },
        {"api": "describe", "parameters": {"name": "API_call_2"}, "responses": ["API_call_3"]},
    ]
    raw = [
        ToolCall(name=c["api"], arguments=c["parameters"], outputs=c["responses"]) for c in calling
    ]
    linked = link_calls(raw, {"getProjects": ["id", "title"]})
    assert linked[1].arguments["species"] == Ref("API_call_0", 0, None)
    assert linked[2].arguments["name"] == Ref("API_call_2", 1, "title")
    assert [c.to_seal() for c in linked] == calling
    assert dependencies(linked) == [set(), {0}, {1}]
    assert levels(linked) == [[0], [1], [2]]
    assert is_nested(linked)
    # the originals are untouched
    assert raw[1].arguments["species"] == "API_call_0"


def test_parallel_calls_form_one_level() -> None:
    calls = [ToolCall(name="a"), ToolCall(name="b"), ToolCall(name="c")]
    assert levels(calls) == [[0, 1, 2]]
    assert not is_nested(calls)


def test_openai_tool_call_round_trip() -> None:
    call = ToolCall(name="get_weather", arguments={"city": "Paris"}, id="call_1")
    assert ToolCall.from_openai(call.to_openai()) == call


def test_instance_json_round_trip_and_label() -> None:
    inst = Instance(
        id="x",
        query="Weather in Paris?",
        tools=[WEATHER],
        gold=[
            GoldCall(
                name="get_weather", arguments={"city": "Paris"}, acceptable={"unit": ["c", ""]}
            )
        ],
    )
    again = Instance.model_validate_json(inst.model_dump_json())
    assert again == inst
    assert again.label() is Decision.CALL
    assert Instance(id="y", query="hi").label() is Decision.NO_CALL
