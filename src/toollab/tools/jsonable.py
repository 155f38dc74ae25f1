"""Making tool results JSON-serialisable, noting every conversion."""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any

from pydantic import BaseModel


def to_jsonable(value: Any, notes: list[str], path: str = "output") -> Any:
    """``value`` as plain JSON data.

    Tuples become lists, pydantic models and dataclasses their fields, enums their values; a
    mapping key that is not a string becomes one; anything else that JSON cannot hold (including
    NaN and infinities) becomes ``str(value)``.  Each lossy conversion appends a note naming the
    path, e.g. ``"output.when: datetime is not JSON-serialisable; converted to str"``.
    """
    if value is None or isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        notes.append(f"{path}: {value} is not valid JSON; converted to str")
        return str(value)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value, notes, path)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = k
            if not isinstance(k, str):
                key = str(k)
                notes.append(f"{path}: key {k!r} converted to str")
            out[key] = to_jsonable(v, notes, f"{path}.{key}")
        return out
    if isinstance(value, list | tuple):
        return [to_jsonable(v, notes, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, set | frozenset):
        notes.append(f"{path}: set converted to a list")
        items = sorted(value, key=repr)
        return [to_jsonable(v, notes, f"{path}[{i}]") for i, v in enumerate(items)]
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump(mode="json"), notes, path)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(dataclasses.asdict(value), notes, path)
    notes.append(f"{path}: {type(value).__name__} is not JSON-serialisable; converted to str")
    return str(value)
