"""``@tool``: schema from signature, type hints and docstring."""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional

import pytest

from toollab.errors import ToolSchemaError
from toollab.schema import Tool
from toollab.tools import Param, ToolFunction, check_tool_schema, parse_docstring, tool


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class Opaque:
    """Not describable as JSON Schema."""


@dataclass
class Point:
    x: int
    y: int


@tool
def get_weather(
    city: str,
    days: int,
    unit: Literal["celsius", "fahrenheit"] = "celsius",
    detailed: bool = False,
    tags: list[str] | None = None,
) -> dict[str, Any]:
    """Get the weather forecast for a city.

    Uses the national weather service.

    Args:
        city: Name of the city,
            e.g. "Paris".
        days (int): Number of days to forecast.
        unit: Temperature unit.
        detailed: Include hourly data.

    Returns:
        The forecast.
        temperature (float): Mean temperature.
        conditions (str): Sky conditions.
    """
    return {"temperature": 21.5, "conditions": f"sunny in {city}"}


def test_schema_from_signature_and_docstring() -> None:
    t = get_weather.tool
    assert isinstance(t, Tool)
    assert t.name == "get_weather"
    assert (
        t.description
        == "Get the weather forecast for a city.\n\nUses the national weather service."
    )
    props = t.parameters["properties"]
    assert list(props) == ["city", "days", "unit", "detailed", "tags"]
    assert props["city"] == {"type": "string", "description": 'Name of the city, e.g. "Paris".'}
    assert props["days"] == {"type": "integer", "description": "Number of days to forecast."}
    assert props["unit"] == {
        "type": "string",
        "enum": ["celsius", "fahrenheit"],
        "description": "Temperature unit.",
        "default": "celsius",
    }
    assert props["detailed"]["type"] == "boolean"
    assert props["detailed"]["default"] is False
    assert props["tags"] == {
        "type": ["array", "null"],
        "items": {"type": "string"},
        "default": None,
    }
    assert t.required == ["city", "days"]
    assert t.parameters["type"] == "object"
    # Returns: section → object with ordered fields, description from the free text
    assert t.returns is not None
    assert t.returns["description"] == "The forecast."
    assert t.return_fields == ["temperature", "conditions"]
    assert t.returns["properties"]["temperature"] == {
        "type": "number",
        "description": "Mean temperature.",
    }
    assert check_tool_schema(t) == []


def test_decorated_function_stays_callable() -> None:
    assert isinstance(get_weather, ToolFunction)
    assert get_weather("Oslo", 2) == {"temperature": 21.5, "conditions": "sunny in Oslo"}
    assert get_weather.__name__ == "get_weather"
    assert get_weather.__doc__ is not None and "forecast" in get_weather.__doc__
    assert get_weather.is_async is False


def test_async_tool_and_options() -> None:
    @tool(
        name="lookup", description="Look something up.", sandboxed=True, parallel=False, timeout=2.5
    )
    async def _lookup(query: str, limit: int = 3) -> list[str]:
        await asyncio.sleep(0)
        return [query] * limit

    assert _lookup.is_async
    assert _lookup.tool.name == "lookup"
    assert _lookup.tool.description == "Look something up."
    assert (_lookup.sandboxed, _lookup.parallel, _lookup.timeout) == (True, False, 2.5)
    assert _lookup.tool.returns == {"type": "array", "items": {"type": "string"}}
    assert asyncio.run(_lookup("q", limit=2)) == ["q", "q"]


def test_type_hint_mapping() -> None:
    @tool
    def f(
        color: Unit,
        maybe: Optional[int] = None,  # noqa: UP045 - the typing spelling must work too
        either: int | str = 1,
        ratio: float = 0.5,
        matrix: list[list[float]] | None = None,
        mapping: dict[str, int] | None = None,
        pair: tuple[int, str] = (1, "a"),
        note: Annotated[str, "A note for the log."] = "",
        point: Point | None = None,
        anything: Any = None,
        color_default: Unit = Unit.FAHRENHEIT,
    ) -> None:
        """Exercise the mapping."""

    props = f.tool.parameters["properties"]
    assert props["color"] == {"type": "string", "enum": ["celsius", "fahrenheit"]}
    assert props["maybe"]["type"] == ["integer", "null"]
    assert props["either"]["type"] == ["integer", "string"]
    assert props["ratio"] == {"type": "number", "default": 0.5}
    assert props["matrix"]["type"] == ["array", "null"]
    assert props["matrix"]["items"] == {"type": "array", "items": {"type": "number"}}
    assert props["mapping"]["additionalProperties"] == {"type": "integer"}
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert props["note"]["description"] == "A note for the log."
    assert props["point"]["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer"}}
    assert props["anything"] == {"default": None}
    assert props["color_default"]["default"] == "fahrenheit"
    assert f.tool.required == ["color"]
    assert f.tool.returns is None
    assert check_tool_schema(f.tool) == []


def test_kwargs_allow_extra_parameters() -> None:
    @tool
    def g(a: int, **extra: str) -> str:
        """G."""
        return str(a)

    assert g.tool.parameters["additionalProperties"] == {"type": "string"}


def test_bad_signatures_are_clear_errors() -> None:
    def star(*args: int) -> None:
        """Nope."""

    with pytest.raises(ToolSchemaError, match=r"\*args is not allowed"):
        tool(star)

    def positional(a: int, /) -> None:
        """Nope."""

    with pytest.raises(ToolSchemaError, match="positional-only"):
        tool(positional)

    with pytest.raises(ToolSchemaError, match="needs a name"):
        tool(lambda x: x)

    def weird(o: Opaque) -> None:
        """Nope."""

    with pytest.raises(ToolSchemaError, match="parameter 'o'"):
        tool(weird)


def test_parse_docstring_sections() -> None:
    doc = parse_docstring(
        """Summary line.

        Args:
            a: First.
            b (list[str]): Second,
                continued.

        Raises:
            ValueError: never.

        Returns:
            bool: whether it worked.
        """
    )
    assert doc.description == "Summary line."
    assert doc.params == {"a": "First.", "b": "Second, continued."}
    assert doc.returns == "bool: whether it worked."
    assert doc.return_fields == []
    assert parse_docstring(None).description == ""


class Thermostat:
    """A class whose methods are tools."""

    def __init__(self, target: float = 20.0) -> None:
        self.target = target

    @tool(returns=False)
    def set_target(
        self,
        celsius: Annotated[float, Param(minimum=5, maximum=30)],
        *,
        mode: Literal["heat", "cool"] = "heat",
        room: Annotated[str | None, Param(optional=True)] = None,
        zones: Annotated[list[str], Param(minItems=1)] = ["main"],  # noqa: B006
    ) -> str:
        """Set the target temperature.

        Args:
            celsius: Degrees Celsius.
            mode: Heating or cooling.
            room: Which room (all rooms when left out).
        """
        self.target = celsius
        return f"{mode} {room or 'all'} {celsius}"


def test_method_tool_schema_leaves_out_self() -> None:
    t = Thermostat.set_target.tool
    assert t.name == "set_target"
    assert t.description == "Set the target temperature."
    assert t.returns is None
    assert t.parameters == {
        "type": "object",
        "properties": {
            "celsius": {
                "type": "number",
                "minimum": 5,
                "maximum": 30,
                "description": "Degrees Celsius.",
            },
            "mode": {
                "type": "string",
                "enum": ["heat", "cool"],
                "default": "heat",
                "description": "Heating or cooling.",
            },
            "room": {"type": "string", "description": "Which room (all rooms when left out)."},
            "zones": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "default": ["main"],
            },
        },
        "required": ["celsius"],
    }
    # key order: type facts, Param facts, default, description
    assert list(t.parameters["properties"]["mode"]) == ["type", "enum", "default", "description"]


def test_method_tool_is_bound_per_instance() -> None:
    a, b = Thermostat(), Thermostat(18.0)
    bound = a.set_target
    assert isinstance(bound, ToolFunction)
    assert bound.tool is Thermostat.set_target.tool  # the schema is shared, not rebuilt
    assert bound(celsius=22.5) == "heat all 22.5"
    assert (a.target, b.target) == (22.5, 18.0)
    assert b.set_target(celsius=7, room="hall", mode="cool") == "cool hall 7"
    assert b.target == 7


def test_method_tool_runs_through_the_executor() -> None:
    from toollab.schema import ToolCall
    from toollab.tools import Executor, ToolPool

    t = Thermostat()
    with Executor(ToolPool([t.set_target])) as ex:
        ok, bad = ex.execute(
            [
                ToolCall(name="set_target", arguments={"celsius": 21}),
                ToolCall(name="set_target", arguments={"celsius": 50}),
            ]
        ).results
    assert ok.output == "heat all 21" and t.target == 21
    assert bad.error_kind == "validation" and "50" in bad.error


def test_param_refuses_type_keywords() -> None:
    with pytest.raises(ToolSchemaError, match="type annotation"):
        Param(type="string")
