"""Robust JSON / JSON-lines reading with ``file:line`` errors.

Benchmarks ship their data as JSON arrays (DEER, ToolEyes), JSON lines (Seal-Tools) or JSON lines
in files named ``.json`` (BFCL).  :func:`read_records` reads any of them and yields each record with
the line it starts on, so that every later complaint about a record can name ``file:line``.
"""

from __future__ import annotations

import errno
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toollab.errors import InputError
from toollab.schema.json import JsonObject

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"

#: Longest line of a JSON-lines file (characters); a longer one is refused, not read.
MAX_LINE_CHARS = 16_000_000
#: What a JSON decoder raises on valid-looking but unusable input: a syntax error
#: (``JSONDecodeError``), nesting deeper than the interpreter's recursion limit
#: (``RecursionError``, about 1,000 levels), an integer of more than 4,300 digits (``ValueError``).
JSON_ERRORS = (ValueError, RecursionError)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """JSON text with every lone UTF-16 surrogate written as its ``\\uXXXX`` escape, so that the
    text encodes as UTF-8 and ``json.loads`` gives back the same string."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def json_text(obj: Any, *, indent: int | None = None) -> str:
    """``obj`` as JSON text that is always valid UTF-8 (lone surrogates escaped)."""
    return escape_surrogates(json.dumps(obj, ensure_ascii=False, indent=indent, default=str))


def json_problem(exc: BaseException) -> str:
    """One phrase for a failed JSON decode (any of :data:`JSON_ERRORS`)."""
    if isinstance(exc, json.JSONDecodeError):
        return _decode_problem(exc)
    if isinstance(exc, RecursionError):
        return f"nested too deeply (limit about {sys.getrecursionlimit()} levels)"
    text = str(exc)
    if "integer string conversion" in text or "digits" in text:
        return f"a number has more than {sys.get_int_max_str_digits():,} digits"
    return text or type(exc).__name__


def _lineno(exc: BaseException) -> int | None:
    return exc.lineno if isinstance(exc, json.JSONDecodeError) else None


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
    try:
        if not p.exists():
            if p.is_symlink():
                raise InputError("a dangling symbolic link (or a symlink loop)", path=p)
            raise InputError("no such file", path=p)
        if p.is_dir():
            raise InputError("is a directory, expected a file", path=p)
        if not p.is_file():  # a FIFO or a device would block or never end
            raise InputError("not a regular file (a pipe or a device?)", path=p)
        return p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=p) from None
    except OSError as exc:
        raise InputError(f"cannot read: {os_problem(exc)}", path=p) from None


def os_problem(exc: OSError) -> str:
    """A short reason for a failed file operation (permission, a directory, a symlink loop)."""
    if exc.errno == errno.ELOOP:
        return "too many levels of symbolic links (a symlink loop)"
    return exc.strerror or type(exc).__name__


def read_json(path: str | Path) -> Any:
    """Parse a whole file as one JSON value."""
    p = Path(path)
    text = read_text(p)
    try:
        return json.loads(text)
    except JSON_ERRORS as exc:
        raise InputError(f"invalid JSON: {json_problem(exc)}", path=p, line=_lineno(exc)) from None


def iter_jsonl(path: str | Path) -> Iterator[Record]:
    """JSON lines: one value per non-blank line."""
    p = Path(path)
    yield from _raising(p, scan_lines(read_text(p)))


#: ``(line, item, value, problem)``: a JSON value and the line it starts on (``item``: its
#: 1-based position in a list, ``None`` for JSON lines), or, with ``problem`` set and ``value``
#: ``None``, what is wrong at that line
Scanned = tuple[int, int | None, Any, str | None]


def _decode_problem(exc: json.JSONDecodeError) -> str:
    return f"{exc.msg} (column {exc.colno})"


def scan_lines(text: str) -> Iterator[Scanned]:
    """One entry per non-blank line of JSON-lines text; a malformed line is reported and the
    scan goes on."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_CHARS:
            yield lineno, None, None, f"line longer than {MAX_LINE_CHARS:,} characters"
            continue
        try:
            value = json.loads(line)
        except JSON_ERRORS as exc:
            yield lineno, None, None, json_problem(exc)
        else:
            yield lineno, None, value, None


def scan_array(text: str, start: int = 0, *, whole: bool = True) -> Iterator[Scanned]:
    """The elements of the JSON list opened by the first ``[`` at or after ``start``, each with the
    line it starts on; the scan stops at the first problem.  ``whole``: the list is the whole
    document, so anything after its ``]`` is a problem too."""
    pos = text.index("[", start) + 1
    n = len(text)
    line = 1 + text.count("\n", 0, pos)
    counted = pos

    def skip_ws(i: int) -> int:
        while i < n and text[i] in _WS:
            i += 1
        return i

    def line_at(i: int) -> int:  # offsets only grow, so lines are counted once
        nonlocal line, counted
        line += text.count("\n", counted, i)
        counted = i
        return line

    item = 0
    pos = skip_ws(pos)
    if pos >= n or text[pos] != "]":
        while True:
            pos = skip_ws(pos)
            if pos >= n:
                yield line_at(pos), None, None, "the list is not closed"
                return
            item += 1
            try:
                value, end = _DECODER.raw_decode(text, pos)
            except JSON_ERRORS as exc:
                yield _lineno(exc) or line_at(pos), item, None, json_problem(exc)
                return
            yield line_at(pos), item, value, None
            pos = skip_ws(end)
            if pos < n and text[pos] == ",":
                pos += 1
                continue
            if pos < n and text[pos] == "]":
                break
            problem = (
                "the list is not closed" if pos >= n else "expected ',' or ']' after a list element"
            )
            yield line_at(pos), item, None, problem
            return
    if whole:
        after = skip_ws(pos + 1)
        if after < n:
            yield line_at(after), None, None, "extra data after the list"


def _raising(p: Path, scanned: Iterator[Scanned]) -> Iterator[Record]:
    """The scanned values as :class:`Record` objects; the first problem raises :class:`InputError`."""
    for index, (line, _, value, problem) in enumerate(scanned):
        if problem is not None:
            raise InputError(f"invalid JSON: {problem}", path=p, line=line)
        yield Record(value, p, line, index)


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
        yield from _raising(p, scan_array(text, start))
        return
    try:
        first_line = stripped.split("\n", 1)[0]
        json.loads(first_line)
    except JSON_ERRORS:
        # not JSON lines: maybe one pretty-printed object
        try:
            data = json.loads(text)
        except JSON_ERRORS:
            pass  # report the error line by line below
        else:
            yield Record(data, p, 1 + text.count("\n", 0, start), 0)
            return
    yield from _raising(p, scan_lines(text))


def require_object(rec: Record, keys: tuple[str, ...] = ()) -> JsonObject:
    """The record as a dict that has ``keys``; an :class:`InputError` naming file:line if not."""
    if not isinstance(rec.data, dict):
        raise rec.error(f"expected a JSON object, got {type(rec.data).__name__}")
    missing = [k for k in keys if k not in rec.data]
    if missing:
        raise rec.error(
            "missing field" + ("s " if len(missing) > 1 else " ") + ", ".join(map(repr, missing))
        )
    return rec.data
