"""The tool schema: lossless conversions, typed references, call graphs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from toollab.data import load_dataset, load_tools
from toollab.errors import InputError, ToolSchemaError
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
from toollab.schema.wire import LAYOUT_KEY

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


def _exact(a: object, b: object) -> bool:
    """Equal as JSON text: values and key order."""
    return json.dumps(a) == json.dumps(b)


STRICT = {
    "type": "function",
    "function": {
        "name": "f",
        "description": "d",
        "parameters": {
            "type": "object",
            "properties": {"x": {"type": "integer"}},
            "required": ["x"],
            "additionalProperties": False,
        },
        "strict": True,
    },
}

#: hand-made OpenAI dicts that are not what toollab would write on its own
OPENAI_EDGE_CASES = [
    STRICT,
    # keys in another order, an unknown key on the wrapper and one inside the function
    {
        "function": {
            "parameters": {"type": "object", "properties": {}},
            "name": "g",
            "x-vendor": {"a": [1, 2]},
            "description": "",
        },
        "type": "function",
        "cache_control": {"type": "ephemeral"},
    },
    # no description, no parameters
    {"type": "function", "function": {"name": "h"}},
    # null description and parameters
    {"type": "function", "function": {"name": "h", "description": None, "parameters": None}},
    # a result schema under "return" (HF's key) in an OpenAI dict
    {
        "type": "function",
        "function": {
            "name": "r",
            "description": "d",
            "parameters": {"type": "object", "properties": {}},
            "return": {"type": "number"},
        },
    },
    # nested objects, enums, defaults, arrays of objects
    {
        "type": "function",
        "function": {
            "name": "book",
            "description": "Book a trip.",
            "parameters": {
                "type": "object",
                "properties": {
                    "trip": {
                        "type": "object",
                        "properties": {
                            "from": {"type": "string"},
                            "legs": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {"mode": {"enum": ["air", "rail"]}},
                                    "x-unit": "km",
                                },
                            },
                        },
                        "required": ["from"],
                    },
                    "class": {"type": "string", "enum": ["eco", "biz"], "default": "eco"},
                    "seats": {"type": "integer", "default": 1, "minimum": 1},
                },
                "required": ["trip"],
            },
            "strict": False,
        },
        "id": "tool-7",
    },
]


@pytest.mark.parametrize("raw", OPENAI_EDGE_CASES)
def test_openai_dict_round_trips_exactly(raw: dict) -> None:
    tool = Tool.from_openai(copy.deepcopy(raw))
    assert _exact(tool.to_openai(), raw)
    # through JSON text and the extension key as well
    again = Tool.from_openai(json.loads(json.dumps(tool.to_openai(extras=True))))
    assert again == tool
    assert _exact(again.to_openai(), raw)


def test_strict_stays_a_top_level_key() -> None:
    tool = Tool.from_openai(STRICT)
    for form in (tool.to_openai(), tool.to_openai(extras=True)):
        assert form["function"]["strict"] is True
    assert tool.to_hf()["function"]["strict"] is True


def test_bare_function_dict_round_trips_through_the_function_view() -> None:
    bare = {"name": "f", "parameters": {"type": "object", "properties": {}}, "strict": True}
    tool = Tool.from_openai(bare)
    assert _exact(tool.to_openai_function(), bare)
    assert _exact(tool.to_openai()["function"], bare)
    assert tool.to_openai()["type"] == "function"


HF_EDGE_CASES = [
    WEATHER.to_hf(),
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
            "return": {"type": "number", "description": "The sum."},
        },
    },
    {"type": "function", "function": {"name": "ping", "description": "Ping."}},
    {
        "type": "function",
        "function": {"name": "p", "return": {"type": "string"}, "description": "x", "z": 1},
    },
    # both result keys: "return" is the result, "returns" an extra key kept as it is
    {
        "type": "function",
        "function": {"name": "q", "return": {"type": "string"}, "returns": {"type": "number"}},
    },
]


@pytest.mark.parametrize("raw", HF_EDGE_CASES)
def test_hf_dict_round_trips_exactly(raw: dict) -> None:
    tool = Tool.from_hf(copy.deepcopy(raw))
    assert _exact(tool.to_hf(), raw)
    assert Tool.from_hf(tool.to_hf(extras=True)) == tool


EDGE_TOOLS = [
    WEATHER,
    Tool(name="bare"),
    Tool(name="d", description="", parameters={"type": "object"}, returns={"type": "string"}),
    Tool.from_openai(STRICT).model_copy(update={"category": "c", "returns": {"type": "number"}}),
    Tool(
        name="nested",
        parameters=OPENAI_EDGE_CASES[-1]["function"]["parameters"],
        metadata={"raw": {"k": [1, {"v": None}]}, "format": "x"},
    ),
]


@pytest.mark.parametrize("tool", EDGE_TOOLS, ids=lambda t: t.name)
def test_tool_round_trips_with_extras(tool: Tool) -> None:
    for write, read in (
        (Tool.to_openai, Tool.from_openai),
        (Tool.to_hf, Tool.from_hf),
    ):
        data = write(tool, extras=True)
        assert read(data) == tool
        assert read(json.loads(json.dumps(data))) == tool
        # the plain form is itself a dict that round-trips exactly
        plain = write(tool)
        assert _exact(write(read(plain)), plain)


def test_plain_forms_carry_what_the_format_has_room_for() -> None:
    openai = WEATHER.to_openai()["function"]
    assert list(openai) == ["name", "description", "parameters"]
    hf = WEATHER.to_hf()["function"]
    assert list(hf) == ["name", "description", "parameters", "return"]
    ext = WEATHER.to_openai(extras=True)["function"]["x-toollab"]
    assert ext == {
        "returns": WEATHER.returns,
        "category": "weather",
        "metadata": {"source": "test"},
    }
    assert WEATHER.to_hf(extras=True)["function"]["x-toollab"] == {
        "category": "weather",
        "metadata": {"source": "test"},
    }


def test_changed_fields_win_over_the_source_layout() -> None:
    tool = Tool.from_openai({"type": "function", "function": {"name": "h", "description": None}})
    changed = tool.model_copy(
        update={"description": "now described", "returns": {"type": "string"}}
    )
    fn = changed.to_openai()["function"]
    assert fn == {"name": "h", "description": "now described"}
    assert changed.to_hf()["function"]["return"] == {"type": "string"}


P = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


def test_the_result_key_follows_the_format_written() -> None:
    """An OpenAI dict with ``"returns"``: chat templates read ``"return"``."""
    raw = {
        "type": "function",
        "function": {
            "name": "f",
            "returns": {"type": "object"},
            "description": "d",
            "parameters": P,
        },
    }
    tool = Tool.from_openai(copy.deepcopy(raw))
    assert tool.returns == {"type": "object"}
    assert _exact(tool.to_openai(), raw)  # its own format: exactly as read
    hf = tool.to_hf()["function"]
    assert list(hf) == ["name", "return", "description", "parameters"] and "returns" not in hf
    assert Tool.from_hf(tool.to_hf()) == tool
    # and the other way round: an HF dict read as OpenAI keeps "return" in OpenAI form
    back = Tool.from_hf(
        {"type": "function", "function": {"name": "g", "return": {"type": "string"}}}
    )
    assert back.to_hf()["function"]["return"] == {"type": "string"}


@pytest.mark.parametrize(
    "fn",
    [
        {"name": "f", "description": "d", "parameters": P, "strict": True},
        {"name": "f", "parameters": P},
        {"name": "f", "description": None, "parameters": P},
        {"description": "d", "name": "f", "parameters": P, "returns": {"type": "object"}},
    ],
)
def test_the_source_layout_never_goes_onto_the_wire(fn: dict) -> None:
    for read, write in ((Tool.from_openai, Tool.to_openai), (Tool.from_hf, Tool.to_hf)):
        tool = read({"type": "function", "function": copy.deepcopy(fn)})
        assert tool.wire_layout is not None and LAYOUT_KEY not in tool.metadata
        for extras in (False, True):
            text = json.dumps(write(tool, extras=extras))
            assert LAYOUT_KEY not in text and "inner" not in text, text
        assert LAYOUT_KEY not in tool.model_dump_json()
        # with extras the dict still reads back as the same tool, and exactly
        again = read(json.loads(json.dumps(write(tool, extras=True))))
        assert again == tool and _exact(write(again), write(tool))
    # a file written by an older version carried the layout in the metadata: dropped on reading
    old = {"name": "f", "parameters": P, "x-toollab": {"metadata": {LAYOUT_KEY: {"inner": []}}}}
    assert Tool.from_openai(old).metadata == {}


def test_the_extension_key_keeps_its_position() -> None:
    fn = {"name": "f", "x-toollab": {"category": "c"}, "description": "d", "parameters": P}
    raw = {"type": "function", "function": fn}
    tool = Tool.from_openai(copy.deepcopy(raw))
    assert tool.category == "c"
    assert _exact(tool.to_openai(extras=True), raw)
    assert list(tool.to_openai()["function"]) == ["name", "description", "parameters"]
    # without a position in the source it goes last
    assert list(WEATHER.to_openai(extras=True)["function"])[-1] == "x-toollab"


# -- real tools of every adapter ------------------------------------------------------------------
def _check_tool_round_trips(tool: Tool) -> None:
    for write, read in ((Tool.to_openai, Tool.from_openai), (Tool.to_hf, Tool.from_hf)):
        assert read(json.loads(json.dumps(write(tool, extras=True)))) == tool, tool.name
        plain = json.loads(json.dumps(write(tool)))
        assert _exact(write(read(plain)), plain), tool.name


def _check_dict_round_trips(fn: dict) -> None:
    """A source function dict, bare and wrapped, through both formats."""
    wrapped = {"type": "function", "function": fn}
    for read, write in ((Tool.from_openai, Tool.to_openai), (Tool.from_hf, Tool.to_hf)):
        tool = read(copy.deepcopy(wrapped))
        assert _exact(write(tool), wrapped), fn.get("name")
        assert read(write(tool, extras=True)) == tool
    assert _exact(Tool.from_openai(copy.deepcopy(fn)).to_openai_function(), fn)


@pytest.mark.parametrize(
    "fmt, sub, n",
    [("seal-tools", "seal-tools", 4076), ("deer", "deer", 977), ("tooleyes", "tooleyes", 568)],
)
def test_adapter_tools_round_trip(shared_data: Path, fmt: str, sub: str, n: int) -> None:
    tools = load_tools(shared_data / sub, fmt)
    assert len(tools) == n
    for tool in tools:
        _check_tool_round_trips(tool)


def test_bfcl_tools_and_function_docs_round_trip(shared_data: Path) -> None:
    ds = load_dataset(shared_data / "bfcl", "bfcl")
    assert len(ds.tools) > 1000
    for tool in ds.tools:
        _check_tool_round_trips(tool)
    docs = [doc for inst in ds for doc in inst.metadata["function"]]
    assert len(docs) == sum(len(inst.tools) for inst in ds)
    for doc in docs:  # BFCL's own docs ("type": "dict") read as OpenAI / HF dicts
        _check_dict_round_trips(doc)


def test_tooleyes_configs_round_trip(shared_data: Path) -> None:
    configs = sorted((shared_data / "tooleyes" / "Tool_Library").glob("**/config_gpt4.json"))
    fns = [fn for path in configs for fn in json.loads(path.read_text())]
    assert len(configs) == 95 and len(fns) == 568 + 190
    for fn in fns:
        _check_dict_round_trips(fn)
        assert Tool.from_openai(fn).wire_layout is None  # canonical: nothing to remember


def test_seal_tools_as_openai_dicts_round_trip(shared_data: Path) -> None:
    for tool in load_tools(shared_data / "seal-tools", "seal-tools")[:500]:
        _check_dict_round_trips(tool.to_openai_function())
        _check_dict_round_trips(tool.to_hf()["function"])


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
    # a call outside any graph is the plain OpenAI entry, nothing added
    assert call.to_openai() == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    assert call.to_hf() == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
    }
    assert ToolCall.from_hf(call.to_hf()) == call


GRAPH = [
    GoldCall(name="a", arguments={"q": "x"}, outputs=["API_call_0", "API_call_1"], id="c0"),
    GoldCall(
        name="b",
        arguments={"v": Ref("API_call_1", 0, "y"), "w": [Ref("API_call_0", 0, "x"), 3]},
        outputs=["API_call_2"],
        acceptable={"v": ["API_call_1"]},
    ),
]


@pytest.mark.parametrize("fmt", ["openai", "hf"])
def test_call_graphs_survive_the_tool_calls_formats(fmt: str) -> None:
    wire = [c.to_openai() if fmt == "openai" else c.to_hf() for c in GRAPH]
    assert wire[0]["x-toollab"] == {"outputs": ["API_call_0", "API_call_1"]}
    assert wire[1]["x-toollab"] == {
        "outputs": ["API_call_2"],
        "refs": [[0, "y"], [0, "x"]],
        "acceptable": {"v": ["API_call_1"]},
    }
    back = [GoldCall.from_openai(d) for d in json.loads(json.dumps(wire))]
    assert back == GRAPH
    assert dependencies(back) == [set(), {0}]
    # a server that refuses unknown keys gets the plain entries; the graph is then lost
    plain = [c.to_openai(extras=False) for c in GRAPH]
    assert all("x-toollab" not in d for d in plain)
    assert [c.outputs for c in map(ToolCall.from_openai, plain)] == [[], []]


@pytest.mark.parametrize(
    "ext, message",
    [
        ("labels", "x-toollab must be an object"),
        ({"outputs": "API_call_0"}, "outputs must be a list of labels"),
        ({"refs": [[0]]}, r"refs must be a list of \[call index or null, field or null\]"),
        ({"refs": [[0, None], [1, None]]}, "lists 2 links for 1 references"),
    ],
)
def test_bad_tool_call_extensions_are_clear_errors(ext: object, message: str) -> None:
    data = {
        "type": "function",
        "function": {"name": "f", "arguments": '{"a": {"$ref": "API_call_0"}}'},
        "x-toollab": ext,
    }
    with pytest.raises(InputError, match=message):
        ToolCall.from_openai(data)


def test_tool_call_input_errors() -> None:
    with pytest.raises(InputError, match="needs a function name"):
        ToolCall.from_openai({"function": {"arguments": "{}"}})
    with pytest.raises(InputError, match="arguments are not JSON"):
        ToolCall.from_openai({"function": {"name": "f", "arguments": "{oops"}})


@pytest.mark.parametrize(
    "call, message",
    [
        (
            {"function": {"name": "f", "arguments": "[1,2]"}},
            "must be a JSON object, got JSON array",
        ),
        ({"function": {"name": "f", "arguments": '"x"'}}, "must be a JSON object, got JSON string"),
        ({"function": {"name": "f", "arguments": "null"}}, "must be a JSON object, got JSON null"),
        ({"function": {"name": "f", "arguments": "7"}}, "must be a JSON object, got JSON number"),
        ({"function": {"name": "f", "arguments": 5}}, r"JSON object \(or its text\), got number"),
        ({"function": {"name": "f", "arguments": [1]}}, r"JSON object \(or its text\), got array"),
        ({"function": {"name": "f", "arguments": None}}, r"JSON object \(or its text\), got null"),
        (
            {"id": 5, "function": {"name": "f", "arguments": "{}"}},
            "id must be a string, got number",
        ),
        ({"id": ["c"], "function": {"name": "f", "arguments": {}}}, "id must be a string"),
    ],
)
def test_tool_call_arguments_must_be_an_object_and_the_id_a_string(
    call: dict[str, object], message: str
) -> None:
    """Never a pydantic traceback and never a silent ``{}``: an error naming the call."""
    with pytest.raises(InputError, match=message) as info:
        ToolCall.from_openai(call)
    assert "tool call 'f'" in str(info.value)


def test_tool_call_accepted_arguments_and_ids() -> None:
    for args in ("{}", "", " ", {}, {"a": 1}, '{"a": 1}'):
        call = ToolCall.from_openai({"function": {"name": "f", "arguments": args}})
        assert call.arguments in ({}, {"a": 1})
    assert ToolCall.from_openai({"function": {"name": "f"}}).arguments == {}
    for given, kept in (("c1", "c1"), ("", None), (None, None)):
        assert ToolCall.from_openai({"id": given, "function": {"name": "f"}}).id == kept


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
