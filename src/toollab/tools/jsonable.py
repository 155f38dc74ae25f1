"""Making tool results JSON-serialisable, noting every conversion."""

from __future__ import annotations

from typing import Any

from toollab.tools._plain import ResultTooLarge, plain

__all__ = ["ResultTooLarge", "to_jsonable"]


def to_jsonable(value: Any, notes: list[str], path: str = "output") -> Any:
    """``value`` as plain JSON data.

    Tuples become lists, pydantic models and dataclasses their fields, enums their values; a
    mapping key that is not a string becomes one; anything else that JSON cannot hold (including
    NaN and infinities) becomes ``str(value)``.  Each lossy conversion appends a note naming the
    path, e.g. ``"output.when: datetime is not JSON-serialisable; converted to str"``.

    Whatever a tool returns gives data, never an exception: a value that contains itself is cut
    where it recurs, nesting deeper than 200 levels and objects whose ``str()`` raises become
    short placeholder strings, an integer too long for a decimal string becomes hex.  Only a
    result of more than a million values raises :class:`ResultTooLarge`.
    """
    return plain(value, notes, path)
