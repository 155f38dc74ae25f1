"""Robust JSON / JSON-lines reading with ``file:line`` errors.

Benchmarks ship their data as JSON arrays (DEER, ToolEyes), JSON lines (Seal-Tools) or JSON lines
in files named ``.json`` (BFCL).  :func:`read_records` reads any of them and yields each record with
the line it starts on, so that every later complaint about a record can name ``file:line``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toollab.errors import InputError

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


@dataclass(frozen=True)
class Record:
    """One JSON value of a file and where it starts."""

    data: Any
    path: Path
    line: int
    index: int

    def error(self, problem: str) -> InputError:
        """An :class:`InputError` pointing at this record."""
        return InputError(problem, path=self.path, line=self.line)


def read_text(path: str | Path) -> str:
    p = Path(path)
    if not p.exists():
        raise InputError("no such file", path=p)
    if p.is_dir():
        raise InputError("is a directory, expected a JSON file", path=p)
    try:
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=p) from exc
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path=p) from exc


def _json_problem(exc: json.JSONDecodeError) -> str:
    return f"invalid JSON: {exc.msg} (column {exc.colno})"


def read_json(path: str | Path) -> Any:
    """Parse a whole file as one JSON value."""
    p = Path(path)
    text = read_text(p)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(_json_problem(exc), path=p, line=exc.lineno) from exc


def iter_jsonl(path: str | Path) -> Iterator[Record]:
    """JSON lines: one value per non-blank line."""
    p = Path(path)
    text = read_text(p)
    yield from _iter_lines(p, text)


def _iter_lines(p: Path, text: str) -> Iterator[Record]:
    index = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(_json_problem(exc), path=p, line=lineno) from exc
        yield Record(data, p, lineno, index)
        index += 1


def _iter_array(p: Path, text: str, start: int) -> Iterator[Record]:
    """The elements of a top-level JSON array, each with the line it starts on."""
    pos = start + 1  # after "["
    line = 1 + text.count("\n", 0, pos)
    counted = pos
    index = 0
    n = len(text)

    def skip_ws(i: int) -> int:
        while i < n and text[i] in _WS:
            i += 1
        return i

    pos = skip_ws(pos)
    if pos < n and text[pos] == "]":
        _expect_end(p, text, pos + 1)
        return
    while True:
        pos = skip_ws(pos)
        line += text.count("\n", counted, pos)
        counted = pos
        if pos >= n:
            raise InputError("invalid JSON: the array is not closed", path=p, line=line)
        try:
            data, end = _DECODER.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise InputError(_json_problem(exc), path=p, line=exc.lineno) from exc
        yield Record(data, p, line, index)
        index += 1
        pos = skip_ws(end)
        if pos < n and text[pos] == ",":
            pos += 1
            continue
        if pos < n and text[pos] == "]":
            _expect_end(p, text, pos + 1)
            return
        line += text.count("\n", counted, pos)
        counted = pos
        raise InputError(
            "invalid JSON: expected ',' or ']' after an array element", path=p, line=line
        )


def _expect_end(p: Path, text: str, pos: int) -> None:
    rest = text[pos:]
    if rest.strip():
        offset = pos + len(rest) - len(rest.lstrip())
        line = 1 + text.count("\n", 0, offset)
        raise InputError("invalid JSON: extra data after the top-level array", path=p, line=line)


def read_records(path: str | Path) -> Iterator[Record]:
    """Every record of a JSON array file or a JSON-lines file, whatever its extension.

    A file whose first character is ``[`` is read as one array; otherwise each non-blank line is
    one record (a single pretty-printed object is accepted too).
    """
    p = Path(path)
    text = read_text(p)
    stripped = text.lstrip()
    if not stripped:
        return
    start = len(text) - len(stripped)
    if stripped[0] == "[":
        yield from _iter_array(p, text, start)
        return
    try:
        first_line = stripped.split("\n", 1)[0]
        json.loads(first_line)
    except json.JSONDecodeError:
        # not JSON lines: maybe one pretty-printed object
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            pass  # report the error line by line below
        else:
            yield Record(data, p, 1 + text.count("\n", 0, start), 0)
            return
    yield from _iter_lines(p, text)


def require_object(rec: Record, keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """The record as a dict that has ``keys``; an :class:`InputError` naming file:line if not."""
    if not isinstance(rec.data, dict):
        raise rec.error(f"expected a JSON object, got {type(rec.data).__name__}")
    missing = [k for k in keys if k not in rec.data]
    if missing:
        raise rec.error(
            "missing field" + ("s " if len(missing) > 1 else " ") + ", ".join(map(repr, missing))
        )
    return rec.data
