"""Text utilities shared by the output parsers: bracket matching, value decoding, safe call building.

Everything here runs in time linear in the length of the text (no backtracking regular
expressions, no re-scanning from every position) and never raises on model output: decoding
functions return ``(ok, value, reason)`` triples.
"""

from __future__ import annotations

import ast
import json
import math
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from toollab.schema import ToolCall

OPEN_TO_CLOSE = {"{": "}", "[": "]", "(": ")"}
CLOSERS = frozenset(OPEN_TO_CLOSE.values())

#: exceptions a decoder may raise on hostile input (deep nesting, huge literals, null bytes, ...)
#: what reading model output may raise from Python itself (``1/0`` in an argument is
#: ZeroDivisionError, an ArithmeticError): every parser turns these into a failed parse
DECODE_ERRORS = (
    ValueError,
    TypeError,
    SyntaxError,
    RecursionError,
    MemoryError,
    ArithmeticError,
    LookupError,
)


# -- text hygiene ------------------------------------------------------------------------------


_SURROGATE = re.compile("[\ud800-\udfff]")


def scrub(text: str) -> str:
    """``text`` with each lone UTF-16 surrogate replaced by U+FFFD, so it can always be written
    as UTF-8.  Other characters, including null bytes, are kept."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)


def parse_python(source: str) -> ast.Expression:
    """``ast.parse(source, mode="eval")`` with its warnings (invalid escape sequences, ...)
    silenced, so results do not depend on the warning filters in force."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source, mode="eval")


def clip(text: str, limit: int = 120) -> str:
    """A short, printable excerpt of ``text`` for error messages."""
    text = scrub(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def strip_or_none(text: str | None) -> str | None:
    if text is None:
        return None
    text = text.strip()
    return text or None


# -- bracket matching --------------------------------------------------------------------------


def match_bracket(text: str, start: int, quotes: str = "\"'") -> int | None:
    """Index of the bracket closing ``text[start]`` (one of ``{[(``), or ``None``.

    Strings delimited by any character of ``quotes`` are skipped (with backslash escapes); a
    closer of the wrong kind or the end of the text gives ``None``.  Linear time.
    """
    if start >= len(text) or text[start] not in OPEN_TO_CLOSE:
        return None
    end, broken = _closing(text, start, quotes)
    return None if broken else end


def _closing(text: str, start: int, quotes: str) -> tuple[int | None, bool]:
    """Where the bracket opened at ``text[start]`` closes: ``(index, False)``; ``(index, True)``
    at the first closer of the wrong kind; ``(None, False)`` when the text ends first."""
    stack = [OPEN_TO_CLOSE[text[start]]]
    i, n = start + 1, len(text)
    quote = ""
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in quotes:
            quote = c
        elif c in OPEN_TO_CLOSE:
            stack.append(OPEN_TO_CLOSE[c])
        elif c in CLOSERS:
            if c != stack.pop():
                return i, True
            if not stack:
                return i, False
        i += 1
    return None, False


@dataclass(frozen=True)
class Span:
    """An outermost bracketed region; ``end`` is ``None`` when it is never closed, and
    ``broken`` is set when a closer of the wrong kind (at ``end``) cuts it short."""

    start: int
    end: int | None
    broken: bool = False

    def text(self, source: str) -> str:
        return source[self.start : (self.end + 1 if self.end is not None else len(source))]


def outer_spans(text: str, openers: str = "{[", quotes: str = '"') -> list[Span]:
    """All outermost ``{...}`` / ``[...]`` regions of ``text`` in one linear pass.

    Quotes only count inside a bracket, so apostrophes and quotation marks in surrounding prose
    do not disturb the matching.  After a mismatched closer the scan restarts right after it.
    """
    spans: list[Span] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in openers:
            end, broken = _closing(text, i, quotes)
            spans.append(Span(i, end, broken))
            if end is None:
                break
            i = end
        i += 1
    return spans


def next_non_space(text: str, i: int) -> str:
    """The first non-whitespace character at or after ``i`` (``""`` at the end)."""
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    return text[i] if i < n else ""


# -- value decoding ----------------------------------------------------------------------------


def load_json(text: str) -> tuple[bool, Any, str]:
    try:
        return True, json.loads(text), ""
    except DECODE_ERRORS as exc:
        return False, None, f"invalid JSON: {clip(str(exc), 160)}"


#: Longest text handed to Python's own parser (``ast``).  CPython parses about 10 µs per
#: character of call syntax, so this bounds the time one output can take; no real model output
#: comes near it.
MAX_AST_CHARS = 100_000


def too_long_for_ast(text: str, limit: int | None = MAX_AST_CHARS) -> str:
    """A reason when ``text`` is longer than ``limit`` characters, else ``""``."""
    if limit is not None and len(text) > limit:
        return f"too long to read as Python ({len(text)} characters, limit {limit})"
    return ""


def load_literal(text: str, limit: int | None = MAX_AST_CHARS) -> tuple[bool, Any, str]:
    """``ast.literal_eval`` that never raises (and refuses texts longer than ``limit``)."""
    reason = too_long_for_ast(text, limit)
    if reason:
        return False, None, reason
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return True, ast.literal_eval(text.strip()), ""
    except DECODE_ERRORS as exc:
        return False, None, f"not a Python literal: {clip(str(exc) or type(exc).__name__, 160)}"


def load_json_or_literal(text: str) -> tuple[bool, Any, str]:
    """JSON first, then a Python literal (single quotes, ``True``/``None``, tuples)."""
    ok, value, reason = load_json(text)
    if ok:
        return ok, value, ""
    ok, value, _ = load_literal(text)
    if ok:
        return ok, value, ""
    return False, None, reason


#: Deepest nesting of lists and objects accepted in a call's arguments; deeper ones make the call
#: unusable (a parse error, data to score): real arguments are a few levels deep, and records
#: must stay serializable (pydantic refuses ~255 levels).
MAX_VALUE_DEPTH = 100


def jsonable(value: Any, _depth: int = 0) -> Any:
    """``value`` made JSON-compatible: tuples and sets become lists, bytes and other objects
    strings, dict keys strings, lone surrogates are replaced.  Raises RecursionError beyond
    :data:`MAX_VALUE_DEPTH` levels, ValueError for an integer of more than
    :data:`MAX_INT_BITS` bits (it could not be written as JSON)."""
    if _depth > MAX_VALUE_DEPTH:
        raise RecursionError(f"value nested too deeply (more than {MAX_VALUE_DEPTH} levels)")
    if isinstance(value, str):
        return scrub(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:  # a hex literal of 20,000 digits, say
            raise ValueError(f"a number of {value.bit_length()} bits (limit {MAX_INT_BITS})")
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, dict):
        return {_key(k): jsonable(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v, _depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        items = [jsonable(v, _depth + 1) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is Ellipsis:
        return "..."
    return scrub(str(value))


def _key(k: Any) -> str:
    if isinstance(k, str):
        return scrub(k)
    if isinstance(k, float) and math.isnan(k):
        return "NaN"
    return scrub(str(jsonable(k)))


# -- calls -------------------------------------------------------------------------------------


class CallShapeError(Exception):
    """A decoded value does not describe a call; the message is the reason."""


def make_call(
    name: Any, arguments: Any, *, outputs: Any = None, call_id: Any = None, where: str = "call"
) -> ToolCall:
    """A validated :class:`ToolCall` from decoded parts, or :class:`CallShapeError`.

    ``arguments`` may be a dict, ``None`` (no arguments) or a JSON string holding an object.
    """
    if not isinstance(name, str) or not name.strip():
        raise CallShapeError(
            f"{where}: the tool name must be a non-empty string, got {_show(name)}"
        )
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        if not arguments.strip():
            arguments = {}
        else:
            ok, value, reason = load_json(arguments)
            if not ok:
                raise CallShapeError(f"{where}: arguments string is not JSON ({reason})")
            arguments = value
    if not isinstance(arguments, dict):
        raise CallShapeError(
            f"{where}: arguments must be an object, got {type(arguments).__name__}"
        )
    try:
        args = jsonable(arguments)
        outs: list[str] = []
        if outputs is not None:
            if not isinstance(outputs, list | tuple):
                outputs = [outputs]
            outs = [scrub(o) if isinstance(o, str) else scrub(str(jsonable(o))) for o in outputs]
    except RecursionError as exc:
        raise CallShapeError(f"{where}: arguments nested too deeply") from exc
    except ValueError as exc:
        raise CallShapeError(f"{where}: {exc}") from exc
    cid = scrub(str(call_id)) if call_id not in (None, "") else None
    return ToolCall(name=scrub(name.strip()), arguments=args, outputs=outs, id=cid)


def _show(value: Any) -> str:
    return clip(repr(value), 60)


# -- safe evaluation of Python expressions ------------------------------------------------------

#: Largest integer (in bits) an arithmetic expression may produce; keeps ``10**10**9`` out.
MAX_INT_BITS = 4096
#: Longest sequence (list, tuple, string) one operation may produce.
MAX_SEQ_LEN = 100_000
#: Most the values computed for one output may weigh *in total*: a list counts its items, a
#: string its characters, nested values in full (``[[1]*1000]*1000`` weighs a million), so work
#: and memory stay bounded however the operations are combined.
MAX_TOTAL_SIZE = 1_000_000


class _Budget:
    """What is left of :data:`MAX_TOTAL_SIZE` for one output, and the sizes of the values
    computed so far (kept alive, so that their ids stay theirs)."""

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.limit = limit
        self.sizes: dict[int, int] = {}
        self.keep: list[Any] = []

    def size(self, value: Any) -> int:
        return value_size(value, self.left + 1, self.sizes)

    def spend(self, value: Any, size: int) -> None:
        self.left -= size
        if self.left < 0:
            raise UnsafeExpression(
                f"values too large in total (more than {self.limit:,} items and characters)"
            )
        if isinstance(value, list | tuple):
            self.sizes[id(value)] = size
            self.keep.append(value)


_BUDGET: ContextVar[_Budget | None] = ContextVar("toollab_parse_budget", default=None)


@contextmanager
def work_budget(limit: int = MAX_TOTAL_SIZE) -> Iterator[None]:
    """Bound the total size of every value :func:`safe_arith` computes inside the block."""
    token = _BUDGET.set(_Budget(limit))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def value_size(value: Any, cap: int, _memo: dict[int, int] | None = None) -> int:
    """The expanded size of ``value`` (items of lists and tuples, characters of strings; a
    shared sub-list counted every time it occurs), or a number above ``cap`` as soon as it
    exceeds it.  Linear in the number of distinct lists."""
    if isinstance(value, str | bytes):
        return len(value) + 1
    if not isinstance(value, list | tuple):
        return 1
    memo = {} if _memo is None else _memo
    key = id(value)
    if key in memo:
        return memo[key]
    total = 1
    for item in value:
        if isinstance(item, list | tuple):
            total += value_size(item, cap, memo)
        elif isinstance(item, str | bytes):
            total += len(item) + 1
        else:
            total += 1
        if total > cap:
            return total  # not memoized: a partial count
    memo[key] = total
    return total


def _spend(op: ast.operator | None, left: Any, right: Any, result: Any) -> None:
    """Charge ``result`` (of ``left op right``) to the output's budget; its size follows from
    the operands' for repetition and concatenation, so the result is never walked."""
    budget = _BUDGET.get()
    if budget is None:
        budget = _Budget(MAX_TOTAL_SIZE)  # one expression on its own
    if not isinstance(result, str | bytes | list | tuple):
        size = 1
    elif isinstance(op, ast.Mult):
        seq, count = (left, right) if isinstance(right, int) else (right, left)
        size = 1 + max(int(count), 0) * (budget.size(seq) - 1)
    elif isinstance(op, ast.Add):
        size = budget.size(left) + budget.size(right) - 1
    else:
        size = budget.size(result)
    budget.spend(result, size)


class UnsafeExpression(ValueError):
    """An expression toollab will not evaluate (names, calls, huge results)."""


_BINOPS: dict[type[ast.operator], Any] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}


def safe_arith(node: ast.AST) -> Any:
    """Evaluate an arithmetic expression over literals (numbers, strings, lists, tuples) without
    ``eval``.  Anything else — names, calls, attribute access — raises :class:`UnsafeExpression`;
    oversized results (huge powers, giant repetitions) too."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, int | float | complex | str | bytes) or node.value is None:
            return node.value
        raise UnsafeExpression(f"unsupported constant {type(node.value).__name__}")
    if isinstance(node, ast.List | ast.Tuple):
        items = [safe_arith(e) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.UnaryOp):
        v = safe_arith(node.operand)
        if isinstance(node.op, ast.USub):
            return _apply(lambda a, _b: -a, v, None)
        if isinstance(node.op, ast.UAdd):
            return _apply(lambda a, _b: +a, v, None)
        if isinstance(node.op, ast.Invert) and isinstance(v, int):
            return ~v
        if isinstance(node.op, ast.Not):
            return not v
        raise UnsafeExpression("unsupported unary operator")
    if isinstance(node, ast.BinOp):
        left, right = safe_arith(node.left), safe_arith(node.right)
        if isinstance(node.op, ast.Pow):
            return _safe_pow(left, right)
        if isinstance(node.op, ast.Mult):
            _check_repeat(left, right)
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise UnsafeExpression(f"unsupported operator {type(node.op).__name__}")
        if isinstance(node.op, ast.Mod) and isinstance(left, str | bytes):
            # printf-style formatting: a width like '%0999999999d' allocates before any check
            raise UnsafeExpression("string formatting (%) is not evaluated")
        result = _apply(op, left, right)
        _check_size(result)
        _spend(node.op, left, right, result)
        return result
    raise UnsafeExpression(f"cannot evaluate {type(node).__name__} safely")


def _apply(op: Any, left: Any, right: Any) -> Any:
    """``op(left, right)``; what Python raises for it (``1/0``, ``'a' - 1``, a float overflow)
    is an :class:`UnsafeExpression` saying so."""
    try:
        return op(left, right)
    except (ArithmeticError, TypeError, ValueError) as exc:
        raise UnsafeExpression(f"cannot compute: {type(exc).__name__}: {exc}") from None


def _safe_pow(base: Any, exp: Any) -> Any:
    if isinstance(base, int) and isinstance(exp, int) and not isinstance(exp, bool):
        if exp > 0 and abs(base) > 1 and exp * max(abs(base).bit_length(), 1) > MAX_INT_BITS:
            raise UnsafeExpression("power too large")
    elif isinstance(base, int | float) and isinstance(exp, int | float):
        if isinstance(exp, float) and abs(exp) > 1e6:
            raise UnsafeExpression("power too large")
    else:
        raise UnsafeExpression("unsupported operands for **")
    result = _apply(lambda a, b: a**b, base, exp)
    _check_size(result)
    return result


def _check_repeat(a: Any, b: Any) -> None:
    for seq, count in ((a, b), (b, a)):
        if (
            isinstance(seq, str | bytes | list | tuple)
            and isinstance(count, int)
            and len(seq) * max(count, 0) > MAX_SEQ_LEN
        ):
            raise UnsafeExpression("repetition too large")


def _check_size(value: Any) -> None:
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise UnsafeExpression("number too large")
    if isinstance(value, str | bytes | list | tuple) and len(value) > MAX_SEQ_LEN:
        raise UnsafeExpression("result too large")


def dotted_name(node: ast.AST) -> str:
    """``a.b.c`` for an attribute chain, like BFCL's ``resolve_ast_call`` (parts that are not
    names or attributes are skipped)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))
