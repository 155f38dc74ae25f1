"""JSON data as a type: what crosses package boundaries when the content is JSON by nature
(tool arguments, JSON Schemas, environment states, upstream records)."""

from pydantic import JsonValue

#: a JSON object (``dict[str, JsonValue]``); values are JSON values, checked by pydantic where a
#: model holds one
JsonObject = dict[str, JsonValue]

__all__ = ["JsonObject", "JsonValue"]
