"""Schemas built from tools admit exactly valid calls to offered tools."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from toollab.errors import ToolSchemaError
from toollab.models.constrain import (
    arguments_schema,
    build_schema,
    call_schema,
    decision_schema,
    grammar_schema,
    response_format,
    validate_schema,
)
from toollab.models.policy import CallPolicy
from toollab.schema import Tool

BFCL_PARAMS = {
    "type": "dict",
    "properties": {
        "base": {"type": "integer", "description": "The base.", "default": 3},
        "ratio": {"type": "float", "minimum": 0},
        "point": {"type": "tuple", "items": {"type": "float"}},
        "anything": {"type": "any"},
        "options": {
            "type": "dict",
            "properties": {"mode": {"type": "string", "enum": ["a", "b"]}},
            "required": ["mode", "ghost"],
        },
        "free": {"type": "dict"},
        "tags": {"type": "array", "items": {"type": "string"}, "optional": True},
    },
    "required": ["base", "height"],
}


def tool(name: str = "area", params: dict[str, Any] | None = None) -> Tool:
    return Tool(name=name, parameters=params if params is not None else BFCL_PARAMS)


def test_normalize_maps_bfcl_types_and_drops_keywords() -> None:
    s = grammar_schema(BFCL_PARAMS)
    assert s["type"] == "object" and s["additionalProperties"] is False
    assert s["required"] == ["base"]  # "height" is not a declared property
    p = s["properties"]
    assert p["base"] == {"type": "integer"}
    assert p["ratio"] == {"type": "number"}
    assert p["point"] == {"type": "array", "items": {"type": "number"}}
    assert p["anything"] == {}
    assert p["options"] == {
        "type": "object",
        "properties": {"mode": {"enum": ["a", "b"]}},
        "required": ["mode"],
        "additionalProperties": False,
    }
    assert p["free"] == {"type": "object"}  # no declared keys: a free-form dict stays open
    assert p["tags"] == {"type": "array", "items": {"type": "string"}}
    validate_schema(s)


def test_normalize_seal_types_and_errors() -> None:
    assert grammar_schema({"type": "str"}) == {"type": "string"}
    assert grammar_schema({"type": ["int", "null"]}) == {"type": ["integer", "null"]}
    assert grammar_schema({"type": "str"}, max_string_length=50) == {
        "type": "string",
        "maxLength": 50,
    }
    assert grammar_schema({"oneOf": [{"type": "int"}, {"type": "str"}]}) == {
        "anyOf": [{"type": "integer"}, {"type": "string"}]
    }
    with pytest.raises(ToolSchemaError, match="unknown type"):
        grammar_schema({"type": "widget"}, where="tool x")
    with pytest.raises(ToolSchemaError):
        arguments_schema(tool(params={"type": "string"}))


def test_call_schema_admits_only_offered_tools_with_valid_arguments() -> None:
    tools = [tool("area"), tool("noargs", {"type": "object", "properties": {}})]
    schema = call_schema(tools)
    ok = {"name": "area", "arguments": {"base": 3, "point": [1.0, 2], "free": {"x": 1}}}
    jsonschema.validate(ok, schema)
    jsonschema.validate({"name": "noargs", "arguments": {}}, schema)
    bad = [
        {"name": "other", "arguments": {"base": 1}},  # not offered
        {"name": "area", "arguments": {}},  # required missing
        {"name": "area", "arguments": {"base": "three"}},  # wrong type
        {"name": "area", "arguments": {"base": 1, "extra": 2}},  # undeclared argument
        {"name": "noargs", "arguments": {"x": 1}},
        {"name": "area", "arguments": {"base": 1, "options": {"mode": "c"}}},  # not in enum
        {"name": "area"},
    ]
    for b in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(b, schema)


CALL = {"name": "area", "arguments": {"base": 1}}


@pytest.mark.parametrize(
    ("policy", "good", "bad"),
    [
        (CallPolicy.naive(), [[], [CALL], [CALL, CALL, CALL]], [CALL, {"decision": "call"}]),
        (CallPolicy.single(), [CALL], [[CALL], [], {"decision": "no_call"}]),
        (
            CallPolicy.decision_first(),
            [{"decision": "call", "call": CALL}, {"decision": "no_call", "answer": "no"}],
            [CALL, [], {"decision": "call", "calls": [CALL]}, {"decision": "no_call"}],
        ),
        (
            CallPolicy.decision_first(max_calls=2),
            [{"decision": "call", "calls": [CALL]}, {"decision": "call", "calls": [CALL, CALL]}],
            [{"decision": "call", "calls": []}, {"decision": "call", "calls": [CALL] * 3}],
        ),
        (
            CallPolicy(max_calls=3, exact_calls=True),
            [[CALL, CALL, CALL]],
            [[CALL], [CALL] * 4],
        ),
        (
            CallPolicy(max_calls=2, declare_count=True),
            [{"count": 1, "calls": [CALL]}, {"count": 2, "calls": [CALL, CALL]}],
            [{"count": 2, "calls": [CALL]}, {"count": 3, "calls": [CALL] * 3}],
        ),
    ],
)
def test_policy_shapes(policy: CallPolicy, good: list[Any], bad: list[Any]) -> None:
    schema = build_schema([tool()], policy)
    validate_schema(schema)
    for g in good:
        jsonschema.validate(g, schema)
    for b in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(b, schema)


def test_decision_first_property_comes_first() -> None:
    schema = build_schema([tool()], CallPolicy.decision_first())
    for branch in schema["anyOf"]:
        assert next(iter(branch["properties"])) == "decision"
    assert decision_schema()["properties"]["decision"] == {"enum": ["call", "no_call"]}
    rf = response_format(schema)
    assert rf["type"] == "json_schema" and rf["json_schema"]["schema"] is schema


def test_invalid_policies_are_refused() -> None:
    with pytest.raises(ValueError):
        CallPolicy(max_calls=0)
    with pytest.raises(ValueError):
        CallPolicy(max_calls=None, declare_count=True)
    with pytest.raises(ToolSchemaError):
        call_schema([])


def test_schema_is_json_serialisable() -> None:
    """The schema survives a JSON round trip unchanged, is a valid JSON Schema, and admits a
    well-formed call and a no-call while refusing an unknown tool."""
    import jsonschema

    schema = build_schema(
        [tool(), tool("b")], CallPolicy(max_calls=4, declare_count=True, allow_no_call=True)
    )
    assert json.loads(json.dumps(schema)) == schema
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"decision": "no_call", "answer": "none of these tools fits"})
    call = {"name": "b", "arguments": {"base": 2}}
    assert validator.is_valid({"decision": "call", "count": 1, "calls": [call]})
    assert not validator.is_valid({"decision": "call", "count": 2, "calls": [call]})
    unknown = {"name": "zzz", "arguments": {}}
    assert not validator.is_valid({"decision": "call", "count": 1, "calls": [unknown]})


def test_patterns_are_anchored_expanded_or_dropped() -> None:
    from toollab.models.constrain import grammar_pattern

    assert grammar_pattern(r"^\d{4}-\d{2}$") == "^[0-9]{4}-[0-9]{2}$"
    assert grammar_pattern("^=") == "^=.*$"  # JSON Schema patterns are unanchored
    assert grammar_pattern(r"^[\d.]+$") == "^[0-9.]+$"
    assert grammar_pattern("(?=x)a") is None  # lookaround: GBNF cannot express it
    assert grammar_pattern(r"^\D$") is None
    assert grammar_pattern("[") is None  # not a regular expression
