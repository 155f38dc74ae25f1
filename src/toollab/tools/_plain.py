"""A confined tool's result as JSON data (see :func:`toollab.tools.jsonable.to_jsonable`).

Run inside the sandbox by :mod:`toollab.tools._zygote` (and used by toollab itself); standard
library only.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any


def plain(value: Any, notes: list[str], path: str = "output") -> Any:
    """``value`` as JSON data; see :func:`toollab.tools.jsonable.to_jsonable` (same rules; this
    copy runs inside the sandbox without importing toollab)."""
    return _Plain(notes).convert(value, path, 0)


class ResultTooLarge(ValueError):
    """A tool result holds more values than :func:`plain` converts."""


class _Plain:
    MAX_DEPTH = 200
    MAX_NODES = 1_000_000

    def __init__(self, notes: list[str]) -> None:
        self.notes = notes
        self.nodes = 0
        self.active: set[int] = set()

    def text(self, value: Any, path: str) -> str:
        if type(value) is int and value.bit_length() > 13_000:
            self.notes.append(f"{path}: integer of {value.bit_length():,} bits converted to hex")
            return hex(value)
        try:
            return str(value)
        except BaseException as exc:
            self.notes.append(
                f"{path}: str() of {type(value).__name__} raised {type(exc).__name__}"
            )
            return f"<unprintable {type(value).__name__}>"

    @staticmethod
    def sort_key(value: Any) -> str:
        try:
            return repr(value)
        except BaseException:
            return f"<{type(value).__name__}>"

    def convert(self, value: Any, path: str, depth: int) -> Any:
        try:
            return self.node(value, path, depth)
        except ResultTooLarge:
            raise
        except Exception as exc:  # the value's own methods (items(), __class__ ...) raised
            self.notes.append(f"{path}: reading it raised {type(exc).__name__}; left out")
            return f"<unreadable {type(value).__name__}>"

    def node(self, value: Any, path: str, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > self.MAX_NODES:
            raise ResultTooLarge(f"the result holds more than {self.MAX_NODES:,} values")
        kind = type(value)
        if value is None or kind is bool or kind is str:
            return value
        if isinstance(value, enum.Enum):
            return self.convert(value.value, path, depth + 1)
        if isinstance(value, str):  # a subclass: its methods are the tool's code
            return str.__str__(value)
        if isinstance(value, bool):
            return bool(int.__index__(value))
        if isinstance(value, int):
            number = int.__index__(value)
            if number.bit_length() > 13_000:  # ~3,900 digits: str() refuses 4,300 and more
                return self.text(number, path)
            return number
        if isinstance(value, float):
            number_f = float.__float__(value)
            if math.isfinite(number_f):
                return number_f
            self.notes.append(f"{path}: {number_f} is not valid JSON; converted to str")
            return str(number_f)
        if depth >= self.MAX_DEPTH:
            self.notes.append(f"{path}: nested deeper than {self.MAX_DEPTH}; converted to str")
            return f"<{type(value).__name__} nested too deep>"
        if id(value) in self.active:
            self.notes.append(f"{path}: refers to itself; cut")
            return f"<cycle: {type(value).__name__}>"
        self.active.add(id(value))
        try:
            return self.container(value, path, depth)
        finally:
            self.active.discard(id(value))

    def container(self, value: Any, path: str, depth: int) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, v in list(value.items()):
                key = k if isinstance(k, str) else self.text(k, f"{path} key")
                if not isinstance(k, str):
                    self.notes.append(f"{path}: key {self.sort_key(k)} converted to str")
                out[key] = self.convert(v, f"{path}.{key}", depth + 1)
            return out
        if isinstance(value, list | tuple):
            return [self.convert(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
        if isinstance(value, set | frozenset):
            self.notes.append(f"{path}: set converted to a list")
            items = sorted(value, key=self.sort_key)
            return [self.convert(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(items)]
        dump = getattr(type(value), "model_dump", None)
        if callable(dump):  # a pydantic model
            return self.convert(value.model_dump(mode="json"), path, depth + 1)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return self.convert(fields, path, depth + 1)
        self.notes.append(
            f"{path}: {type(value).__name__} is not JSON-serialisable; converted to str"
        )
        return self.text(value, path)
