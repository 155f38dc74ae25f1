"""Tool schema checks and call-argument validation with precise reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.errors import ArgumentValidationError
from toollab.schema import Ref, Tool, ToolCall
from toollab.tools import (
    ToolPool,
    check_arguments,
    check_tool_schema,
    normalize_schema,
    tool,
    tool_unknown_types,
    tool_warnings,
    validate_arguments,
    validate_call,
)

WEATHER = Tool.build(
    name="get_weather",
    description="Weather for a city.",
    parameters={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "ratio": {"type": "number"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
            "limit": {"type": ["integer", "null"]},
            "options": {
                "type": "object",
                "properties": {"depth": {"type": "integer"}},
                "required": ["depth"],
            },
        },
        "required": ["city", "days"],
    },
)


def test_valid_arguments_have_no_reasons() -> None:
    args = {
        "city": "Oslo",
        "days": 3,
        "ratio": 2,  # an integer is a valid number
        "unit": "celsius",
        "tags": ["a", "b"],
        "grid": [[1, 2], [3]],
        "limit": None,
        "options": {"depth": 1},
    }
    assert validate_arguments(WEATHER, args) == []
    check_arguments(WEATHER, args)


def test_every_problem_gets_a_precise_reason() -> None:
    reasons = validate_arguments(
        WEATHER,
        {
            "days": True,  # a bool is not an integer
            "ratio": "1.5",
            "unit": "celcius",
            "tags": ["a", 3],
            "grid": [[1, "x"]],
            "limit": "ten",
            "options": {},
            "citty": "Oslo",
        },
    )
    assert reasons == [
        "missing required parameter 'city'",
        "unknown parameter 'citty' (did you mean 'city'?)",
        "missing required parameter 'options.depth'",
        "parameter 'days': expected integer, got boolean true",
        "parameter 'grid[0][1]': expected integer, got string \"x\"",
        "parameter 'limit': expected integer or null, got string \"ten\"",
        "parameter 'ratio': expected number, got string \"1.5\"",
        "parameter 'tags[1]': expected string, got integer 3",
        'parameter \'unit\': "celcius" is not one of ["celsius", "fahrenheit"] (did you mean \'celsius\'?)',
    ]


def test_check_arguments_raises_with_all_reasons() -> None:
    with pytest.raises(ArgumentValidationError) as info:
        check_arguments(WEATHER, {"city": 1})
    assert info.value.tool == "get_weather"
    assert info.value.reasons == [
        "missing required parameter 'days'",
        "parameter 'city': expected string, got integer 1",
    ]


def test_arguments_must_be_an_object() -> None:
    assert validate_arguments(WEATHER, ["Oslo"]) == ["arguments must be a JSON object, got array"]


def test_refs_are_not_validated_until_resolved() -> None:
    args = {
        "city": Ref("API_call_0"),
        "days": Ref("API_call_1", 0, "n"),
        "tags": [Ref("API_call_2"), 5],
    }
    assert validate_arguments(WEATHER, args) == [
        "parameter 'tags[1]': expected string, got integer 5"
    ]


def test_additional_properties_allowed_when_the_schema_says_so() -> None:
    open_tool = Tool.build(
        name="open",
        parameters={
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": True,
        },
    )
    assert validate_arguments(open_tool, {"a": "x", "b": 1}) == []
    closed = Tool.build(
        name="closed",
        parameters={
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": False,
        },
    )
    assert validate_arguments(closed, {"a": "x", "b": 1}) == ["unknown parameter 'b'"]


def test_unknown_tool_with_did_you_mean() -> None:
    pool = ToolPool([WEATHER])
    assert validate_call(ToolCall(name="get_wether", arguments={}), pool.as_mapping()) == [
        "unknown tool 'get_wether' (did you mean 'get_weather'?)"
    ]
    assert (
        pool.validate_call(ToolCall(name="get_weather", arguments={"city": "x", "days": 1})) == []
    )


def test_tool_schema_checks() -> None:
    assert check_tool_schema(WEATHER) == []
    bad = Tool.build(
        name="bad",
        parameters={
            "type": "array",
            "properties": {"a": {"type": "str"}, "b": {"type": "strng"}, "": {"type": "string"}},
            "required": ["a", "c"],
        },
    )
    assert check_tool_schema(bad) == [
        "invalid JSON Schema at parameters.properties.a.type: 'str' is not a JSON Schema type (use 'string'); "
        "types are string, integer, number, boolean, array, object, null",
        "invalid JSON Schema at parameters.properties.b.type: 'strng' is not a JSON Schema type (did you mean "
        "'string'?); types are string, integer, number, boolean, array, object, null",
        'parameters must have "type": "object", got type \'array\'',
        "parameters.properties has an empty parameter name",
        "parameters.required names 'c', which is not in properties",
    ]
    no_type = Tool.build(name="nt", parameters={"properties": {}})
    assert check_tool_schema(no_type) == ['parameters must have "type": "object", got no type']
    bad_returns = Tool.build(
        name="r", returns={"type": "object", "properties": {"x": {"minimum": "zero"}}}
    )
    assert check_tool_schema(bad_returns) == [
        "invalid JSON Schema at returns.properties.x.minimum: 'zero' is not of type 'number'"
    ]


def test_invalid_schema_makes_argument_validation_say_so() -> None:
    bad = Tool.build(
        name="bad", parameters={"type": "object", "properties": {"a": {"type": "str"}}}
    )
    (reason,) = validate_arguments(bad, {"a": "x"})
    assert reason.startswith(
        "tool 'bad' has an invalid parameter schema: invalid JSON Schema at parameters.properties.a.type"
    )


def test_normalize_schema_maps_python_type_names() -> None:
    schema = {
        "type": "dict",
        "properties": {
            "n": {"type": "float", "description": "type words in descriptions stay"},
            "items": {"type": "tuple", "items": {"type": "str"}},
            "when": {"type": "datetime"},
            "enum_keeps": {"type": "string", "enum": ["dict", "str"]},
        },
        "required": ["n"],
    }
    assert normalize_schema(schema) == {
        "type": "object",
        "properties": {
            "n": {"type": "number", "description": "type words in descriptions stay"},
            "items": {"type": "array", "items": {"type": "string"}},
            "when": {"x-original-type": "datetime"},
            "enum_keeps": {"type": "string", "enum": ["dict", "str"]},
        },
        "required": ["n"],
    }
    assert check_tool_schema(Tool.build(name="n", parameters=normalize_schema(schema))) == []


@pytest.mark.parametrize(
    "name",
    ["str", "int", "float", "bool", "dict", "tuple", "any", "Any", "HashMap", "STRING", "bytes"],
)
def test_upstream_type_names_are_known(name: str) -> None:
    schema = {"type": "object", "properties": {"x": {"x-original-type": name}}}
    assert tool_warnings(Tool.build(name="t", parameters=schema)) == []


def test_unknown_type_names_are_warnings_with_their_path() -> None:
    schema = normalize_schema(
        {
            "type": "dict",
            "properties": {
                "a": {"type": "strng"},
                "b": {"type": "array", "items": {"type": "objct"}},
                "c": {"type": "string", "enum": ["strng"], "default": "strng"},
            },
        }
    )
    t = Tool.build(name="t", parameters=schema, returns={"x-original-type": "flaot"})
    assert check_tool_schema(t) == []  # usable: the values are just not checked
    assert tool_warnings(t) == [
        "parameters.properties.a: unknown type name 'strng' (did you mean 'string'?); "
        "kept as x-original-type, the value is not checked",
        "parameters.properties.b.items: unknown type name 'objct' (did you mean 'object'?); "
        "kept as x-original-type, the value is not checked",
        "returns: unknown type name 'flaot' (did you mean 'float'?); "
        "kept as x-original-type, the value is not checked",
    ]
    assert validate_arguments(t, {"a": 5, "b": [1]}) == []


def test_properties_named_like_data_keywords_are_checked_too() -> None:
    """A parameter called ``default``, ``enum``, ``example`` or ``x-kind`` is a property, not a
    keyword: its type name is checked like any other (values of the keywords are not)."""
    names = ["default", "enum", "const", "example", "examples", "x-kind"]
    schema = normalize_schema(
        {
            "type": "object",
            "properties": {
                **{n: {"type": "strng"} for n in names},
                "ok": {"type": "string", "default": {"type": "strng"}, "enum": ["strng"]},
                "nested": {"type": "object", "properties": {"default": {"type": "intger"}}},
            },
            "$defs": {"example": {"type": "flaot"}},
        }
    )
    found = tool_unknown_types(Tool.build(name="t", parameters=schema))
    assert found == [
        *[(f"parameters.properties.{n}", "strng") for n in names],
        ("parameters.properties.nested.properties.default", "intger"),
        ("parameters.$defs.example", "flaot"),
    ]
    assert len(tool_warnings(Tool.build(name="t", parameters=schema))) == len(found)


def test_data_inspect_counts_what_tools_validate_warns_about() -> None:
    """One rule for both: ``data inspect``'s count equals the warnings of the distinct tools."""
    from toollab.data.stats import unknown_types

    schema = normalize_schema({"type": "object", "properties": {"default": {"type": "strng"}}})
    t = Tool.build(name="t", parameters=schema)
    other = Tool.build(name="u", parameters=schema, category="c")
    stats = unknown_types([t, t, other, t.model_copy()])
    assert stats["count"] == 2 == len(tool_warnings(t)) + len(tool_warnings(other))
    assert stats["places"] == [
        "tool 't': parameters.properties.default: 'strng'",
        "tool 'u': parameters.properties.default: 'strng'",
    ]


def test_docstring_return_types_are_checked_too() -> None:
    @tool
    def f(x: int) -> dict:
        """F.

        Returns:
            The result.
            total (flot): The total.
        """
        return {"total": x}

    (warning,) = tool_warnings(f.tool)
    assert warning.startswith("returns.properties.total: unknown type name 'flot'")


# -- schemas only an infinite value fits ----------------------------------------------------------
def _obj(props: dict[str, object], required: list[str], **defs: object) -> dict[str, object]:
    schema: dict[str, object] = {"type": "object", "properties": props, "required": required}
    if defs:
        schema["$defs"] = defs
    return schema


NODE = {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}, "required": ["next"]}

#: (id, parameters) -- each required chain leads back to a schema it is inside
INFINITE = [
    ("required-ref-root", _obj({"a": {"$ref": "#"}}, ["a"])),
    ("required-ref-root-allof", _obj({"a": {"allOf": [{"$ref": "#"}]}}, ["a"])),
    ("required-ref-root-one-branch", _obj({"a": {"anyOf": [{"$ref": "#"}]}}, ["a"])),
    ("def-requires-itself", _obj({"x": {"$ref": "#/$defs/n"}}, [], n=NODE)),
    ("def-requires-itself-required", _obj({"x": {"$ref": "#/$defs/n"}}, ["x"], n=NODE)),
    (
        "two-defs-require-each-other",
        _obj(
            {"x": {"$ref": "#/$defs/a"}},
            [],
            a={"type": "object", "properties": {"b": {"$ref": "#/$defs/b"}}, "required": ["b"]},
            b={"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "required": ["a"]},
        ),
    ),
    (
        "array-with-min-items",
        _obj(
            {"x": {"$ref": "#/$defs/t"}},
            [],
            t={"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/t"}},
        ),
    ),
    (
        "prefix-items",
        _obj(
            {"x": {"$ref": "#/$defs/t"}},
            [],
            t={"type": "array", "minItems": 1, "prefixItems": [{"$ref": "#/$defs/t"}]},
        ),
    ),
    (
        "anchor",
        _obj(
            {"x": {"$ref": "#node"}},
            [],
            n={
                "$anchor": "node",
                "type": "object",
                "properties": {"k": {"$ref": "#node"}},
                "required": ["k"],
            },
        ),
    ),
    (
        "deep-chain",
        _obj(
            {"x": {"$ref": "#/$defs/a"}},
            [],
            a={
                "type": "object",
                "properties": {
                    "p": {
                        "type": "object",
                        "properties": {"q": {"$ref": "#/$defs/a"}},
                        "required": ["q"],
                    }
                },
                "required": ["p"],
            },
        ),
    ),
]

#: (id, parameters) -- recursive, but a finite value ends every chain
FINITE = [
    ("optional-ref-root", _obj({"a": {"$ref": "#"}}, [])),
    ("null-alternative", _obj({"a": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}}, ["a"])),
    (
        "tree-of-lists",
        _obj({"x": {"$ref": "#/$defs/t"}}, [], t={"type": "array", "items": {"$ref": "#/$defs/t"}}),
    ),
    (
        "untyped-node",
        _obj(
            {"x": {"$ref": "#/$defs/n"}},
            [],
            n={"properties": {"next": {"$ref": "#/$defs/n"}}, "required": ["next"]},
        ),
    ),
    (
        "string-node",
        _obj(
            {"x": {"$ref": "#/$defs/n"}},
            [],
            n={
                "type": "string",
                "properties": {"next": {"$ref": "#/$defs/n"}},
                "required": ["next"],
            },
        ),
    ),
    (
        "linked-list",
        _obj(
            {"x": {"$ref": "#/$defs/l"}},
            [],
            l={"type": "object", "properties": {"next": {"$ref": "#/$defs/l"}}},
        ),
    ),
]


@pytest.mark.parametrize("params", [c[1] for c in INFINITE], ids=[c[0] for c in INFINITE])
def test_a_required_cycle_is_refused(params: dict[str, object], tmp_path: Path) -> None:
    tool_ = Tool.build(name="inf", parameters=params)
    reasons = check_tool_schema(tool_)
    assert len(reasons) == 1 and "required-property cycle" in reasons[0], reasons
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"name": "inf", "parameters": params}) + "\n")
    result = CliRunner().invoke(app, ["tools", "validate", str(pool)])
    assert result.exit_code == 2 and "required-property cycle" in result.output, result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("params", [c[1] for c in FINITE], ids=[c[0] for c in FINITE])
def test_a_recursive_schema_a_finite_value_fits_is_kept(params: dict[str, object]) -> None:
    assert check_tool_schema(Tool.build(name="fin", parameters=params)) == []
