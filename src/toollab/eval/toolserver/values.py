"""Plausible, typed values drawn from a JSON Schema, the same for the same seed.

:func:`fake_value` walks a schema: an object gets each declared property, an array a few items
(``minItems``/``maxItems`` honoured), a string its ``enum``/``const``/``format`` or a value of the
kind its property name suggests (``price`` a number written as text, ``date`` a date, ``url`` a
link, ...), integers and numbers a value within ``minimum``/``maximum``.  Everything comes from
the :class:`random.Random` given, so one seed gives one value.

:func:`response_schema` is the schema of a tool's response: the tool's own ``returns`` when it
declares one, else one made from its name, description and the call's arguments (ToolEyes' tools
declare none): ``{"status", "count", "results": [...]}`` where each result carries the arguments
of the call and a value of the kind the tool's name asks for (``get_uuid`` → UUIDs,
``get_random_number`` → numbers, ``search_recipes`` → records with an id, a title and a
description).  A count-like argument (``cnt``, ``count``, ``limit``, ...) sets how many results
there are, at most :data:`MAX_RESULTS`.
"""

from __future__ import annotations

import random
import re
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toollab.schema import Tool
from toollab.schema.json import JsonValue

#: results in a response made from a tool's name, at most
MAX_RESULTS = 10
#: how deep :func:`fake_value` descends before it writes ``None``
MAX_DEPTH = 8
#: argument names that say how many results are wanted
COUNT_ARGUMENTS = ("cnt", "count", "num", "number", "n", "limit", "size", "top", "k", "amount")
#: leading words of a tool name that say what it does, not what it returns
VERBS = frozenset(
    [
        "get",
        "fetch",
        "search",
        "find",
        "list",
        "lookup",
        "look",
        "query",
        "retrieve",
        "return",
        "show",
        "generate",
        "create",
        "make",
        "calculate",
        "compute",
        "convert",
        "check",
        "validate",
        "predict",
        "translate",
        "analyze",
        "analyse",
        "detect",
        "extract",
        "send",
        "post",
        "add",
        "update",
        "delete",
        "remove",
        "set",
        "run",
        "execute",
        "read",
        "open",
        "download",
        "upload",
        "random",
    ]
)

_WORDS = [
    "alpha",
    "bravo",
    "cedar",
    "delta",
    "ember",
    "falcon",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lumen",
    "meadow",
    "nectar",
    "orchid",
    "pepper",
    "quartz",
    "river",
    "sierra",
    "tundra",
    "umber",
    "violet",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
]
_FIRST = [
    "Alice",
    "Bruno",
    "Chen",
    "Dara",
    "Elif",
    "Farah",
    "Goran",
    "Hana",
    "Ivan",
    "Jonas",
    "Kenji",
    "Lena",
    "Mateo",
    "Nia",
]
_LAST = [
    "Garcia",
    "Ito",
    "Kowalski",
    "Larsen",
    "Mensah",
    "Novak",
    "Okafor",
    "Petrov",
    "Rossi",
    "Silva",
    "Tanaka",
    "Weber",
]
_CITIES = [
    "Paris",
    "Tokyo",
    "Nairobi",
    "Lima",
    "Oslo",
    "Toronto",
    "Sydney",
    "Madrid",
    "Seoul",
    "Cairo",
    "Austin",
    "Lyon",
]
_COUNTRIES = [
    "France",
    "Japan",
    "Kenya",
    "Peru",
    "Norway",
    "Canada",
    "Australia",
    "Spain",
    "Korea",
    "Egypt",
]


@dataclass(frozen=True)
class Kind:
    """A kind of value: the words that suggest it and the schema that draws it."""

    words: tuple[str, ...]
    schema: dict[str, Any]


#: value kinds by the words of a property or tool name, first match wins
KINDS: tuple[Kind, ...] = (
    Kind(("uuid", "guid"), {"type": "string", "format": "uuid"}),
    Kind(("email", "mail"), {"type": "string", "format": "email"}),
    Kind(("url", "link", "website", "href", "image", "photo", "thumbnail"), {"type": "string", "format": "uri"}),
    Kind(("ip",), {"type": "string", "format": "ipv4"}),
    Kind(("datetime", "timestamp", "updated", "created"), {"type": "string", "format": "date-time"}),
    Kind(("date", "day", "birthday", "deadline"), {"type": "string", "format": "date"}),
    Kind(("time", "hour"), {"type": "string", "format": "time"}),
    Kind(("city", "location", "place", "destination", "origin"), {"type": "string", "x-kind": "city"}),
    Kind(("country", "nation", "region"), {"type": "string", "x-kind": "country"}),
    Kind(("author", "person", "user", "artist", "owner", "player", "name"), {"type": "string", "x-kind": "person"}),
    Kind(("price", "cost", "amount", "fee", "salary", "balance", "value"), {"type": "number", "minimum": 1, "maximum": 2000}),
    Kind(("rate", "ratio", "percent", "percentage", "probability", "score", "rating"), {"type": "number", "minimum": 0, "maximum": 10}),
    Kind(("temperature", "temp"), {"type": "number", "minimum": -20, "maximum": 40}),
    Kind(("latitude", "lat"), {"type": "number", "minimum": -90, "maximum": 90}),
    Kind(("longitude", "lon", "lng"), {"type": "number", "minimum": -180, "maximum": 180}),
    Kind(("number", "count", "total", "age", "year", "quantity", "population", "size", "length", "id"), {"type": "integer", "minimum": 1, "maximum": 9999}),
    Kind(("is", "has", "available", "valid", "open", "enabled"), {"type": "boolean"}),
    Kind(("string", "password", "code", "token", "key"), {"type": "string", "x-kind": "token"}),
)  # fmt: skip


def words_of(name: str) -> list[str]:
    """``getRandom_number`` → ``["get", "random", "number"]``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def kind_schema(name: str) -> dict[str, Any] | None:
    """The schema of the kind of value ``name`` suggests (its last word first), or ``None``."""
    words = words_of(name)
    for word in reversed(words):
        for kind in KINDS:
            if word in kind.words:
                return dict(kind.schema)
    return None


def subject_of(tool: Tool) -> str:
    """What a tool returns, from its name: ``get_random_number`` → ``random_number``."""
    words = words_of(tool.name)
    while len(words) > 1 and words[0] in VERBS:
        words = words[1:]
    return "_".join(words) or "result"


def requested_count(arguments: dict[str, Any]) -> int | None:
    """The number of results a count-like argument asks for (1..:data:`MAX_RESULTS`)."""
    for key, value in arguments.items():
        if key.lower() not in COUNT_ARGUMENTS:
            continue
        try:
            n = int(str(value).strip())
        except ValueError:
            continue
        return max(1, min(MAX_RESULTS, n))
    return None


def response_schema(tool: Tool, arguments: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The schema a response to this call is drawn from (see the module docs)."""
    if tool.returns:
        return tool.returns
    subject = subject_of(tool)
    item_kind = kind_schema(subject)
    n = requested_count(arguments) or rng.randint(1, 3)
    item: dict[str, Any]
    if item_kind is not None and item_kind.get("x-kind") != "person":
        item = item_kind
    else:
        props: dict[str, Any] = {
            "id": {"type": "string", "x-kind": "token"},
            "title": {"type": "string", "x-kind": "title", "x-subject": subject},
            "description": {"type": "string", "x-kind": "sentence", "x-subject": subject},
        }
        for key, value in arguments.items():
            if key.lower() not in COUNT_ARGUMENTS:
                props[key] = {"const": value}
        item = {"type": "object", "properties": props}
    return {
        "type": "object",
        "properties": {
            "status": {"const": "success"},
            "count": {"const": n},
            "results": {"type": "array", "minItems": n, "maxItems": n, "items": item},
        },
    }


def fake_value(schema: Any, rng: random.Random, name: str = "", depth: int = 0) -> JsonValue:
    """A value of ``schema`` drawn with ``rng`` (``name``: the property it is for)."""
    if depth > MAX_DEPTH or not isinstance(schema, dict):
        return None
    if "const" in schema:
        const: JsonValue = schema["const"]
        return const
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        choice: JsonValue = rng.choice(enum)
        return choice
    for key in ("anyOf", "oneOf"):
        subs = schema.get(key)
        if isinstance(subs, list) and subs:
            return fake_value(rng.choice(subs), rng, name, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        props = schema.get("properties")
        if not isinstance(props, dict):
            return {}
        return {k: fake_value(v, rng, k, depth + 1) for k, v in props.items()}
    if kind == "array":
        low = _int(schema.get("minItems"), 1)
        high = max(low, _int(schema.get("maxItems"), max(low, 3)))
        n = rng.randint(low, min(high, MAX_RESULTS))
        return [fake_value(schema.get("items", {}), rng, name, depth + 1) for _ in range(n)]
    if kind == "string" and "format" not in schema and "x-kind" not in schema:
        by_name = kind_schema(name)
        if by_name is not None and by_name.get("type") == "string":
            schema = {**by_name, **schema}
    return _scalar(str(kind), schema, rng)


def _int(value: Any, default: int) -> int:
    return (
        value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default
    )


def _bounds(schema: dict[str, Any], low: float, high: float) -> tuple[float, float]:
    lo = schema.get("minimum", low)
    hi = schema.get("maximum", high)
    lo = lo if isinstance(lo, int | float) and not isinstance(lo, bool) else low
    hi = hi if isinstance(hi, int | float) and not isinstance(hi, bool) else high
    return (lo, hi) if lo <= hi else (hi, lo)


def _scalar(kind: str, schema: dict[str, Any], rng: random.Random) -> JsonValue:
    if kind == "integer":
        lo, hi = _bounds(schema, 0, 1000)
        return rng.randint(int(lo), int(hi))
    if kind == "number":
        lo, hi = _bounds(schema, 0, 1000)
        return round(rng.uniform(lo, hi), 2)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    fmt = schema.get("format") or schema.get("x-kind") or "word"
    draw = _STRINGS.get(str(fmt), _STRINGS["word"])
    return draw(rng, schema)


def _sentence(rng: random.Random, schema: dict[str, Any]) -> str:
    subject = str(schema.get("x-subject", "item")).replace("_", " ")
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 8)))
    return f"A {subject} about {words}."


def _title(rng: random.Random, schema: dict[str, Any]) -> str:
    subject = str(schema.get("x-subject", "item")).replace("_", " ").title()
    return f"{rng.choice(_WORDS).title()} {subject} {rng.randint(1, 99)}"


def _date(rng: random.Random) -> str:
    return f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _time(rng: random.Random) -> str:
    return f"{rng.randint(0, 23):02d}:{rng.choice((0, 15, 30, 45)):02d}:00"


_STRINGS: dict[str, Callable[[random.Random, dict[str, Any]], str]] = {
    "uuid": lambda rng, s: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
    "email": lambda rng, s: f"{rng.choice(_FIRST).lower()}.{rng.choice(_LAST).lower()}@example.com",
    "uri": lambda rng, s: f"https://example.com/{rng.choice(_WORDS)}/{rng.randint(1000, 9999)}",
    "ipv4": lambda rng, s: ".".join(str(rng.randint(1, 254)) for _ in range(4)),
    "date-time": lambda rng, s: f"{_date(rng)}T{_time(rng)}Z",
    "date": lambda rng, s: _date(rng),
    "time": lambda rng, s: _time(rng),
    "city": lambda rng, s: rng.choice(_CITIES),
    "country": lambda rng, s: rng.choice(_COUNTRIES),
    "person": lambda rng, s: f"{rng.choice(_FIRST)} {rng.choice(_LAST)}",
    "token": lambda rng, s: "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(12)),
    "title": _title,
    "sentence": _sentence,
    "word": lambda rng, s: f"{rng.choice(_WORDS)}-{rng.randint(10, 99)}",
}  # fmt: skip
