"""The ``python`` output format: BFCL's Python call syntax, ``[f(a=1), mod.g(b="x")]``.

Decoding follows BFCL's ``default_decode_ast_prompting`` → ``ast_parse`` (see
``METRICS.md`` §2) without ever calling ``eval``:

1. strip the characters ``` ` ```, newline and space from both ends; wrap in ``[...]`` unless the
   text already starts with ``[`` / ends with ``]``; strip spaces and ``'`` once more;
2. ``ast.parse(mode="eval")``; a lone call is a one-call list, otherwise every element must be a
   call;
3. each call becomes ``{dotted.name: {kwarg: value}}``.  Positional arguments are dropped
   (:class:`ParseResult` counts them in ``details["positional_args"]``); values are resolved like
   BFCL's ``resolve_ast_by_type``: literals, lists, dicts, tuples, a unary operator on a constant
   gives its *negation* (BFCL's rule, so ``+5`` reads as ``-5``), arithmetic on literals is
   computed (safely, with size limits on each operation and on the total), a bare name gives its identifier, a call without keywords
   its source text, a call with keywords a nested ``{name: {...}}``, a subscript its source text.

Any failure is ``ast_decoder:decoder_failed``; the parser also refuses texts longer than
``MAX_AST_CHARS`` (100,000 characters) so one absurd output cannot stall a run; a result that is not a list of one-key dicts is
``ast_decoder:decoder_wrong_output_format``.  ``[]`` is an explicit no-call, and text without
anything that looks like a call is a no-call whose answer is the text.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from toollab.errors import ModelError
from toollab.parsing._text import (
    DECODE_ERRORS,
    MAX_AST_CHARS,
    CallShapeError,
    UnsafeExpression,
    clip,
    dotted_name,
    make_call,
    parse_python,
    safe_arith,
    scrub,
    strip_or_none,
    too_long_for_ast,
    work_budget,
)
from toollab.parsing.base import ParseResult, register_parser
from toollab.schema import ToolCall
from toollab.schema.json import JsonObject

DECODER_FAILED = "ast_decoder:decoder_failed"
WRONG_OUTPUT_FORMAT = "ast_decoder:decoder_wrong_output_format"

_CALL_LIKE = re.compile(r"[A-Za-z0-9_.]\(")


class BfclDecodeError(ModelError):
    """BFCL could not decode the output; ``error_type`` is BFCL's label for it."""

    def __init__(self, error_type: str, reason: str) -> None:
        self.error_type = error_type
        self.reason = reason
        super().__init__(f"{error_type}: {reason}")


class _Unsupported(ValueError):
    pass


def bfcl_prepare(text: str) -> str:
    """The string BFCL hands to ``ast.parse`` for ``text``."""
    result = text.strip("`\n ")
    if not result.startswith("["):
        result = "[" + result
    if not result.endswith("]"):
        result = result + "]"
    return result.strip().strip("'")


def bfcl_is_function_calling_format(decoded: Any) -> bool:
    """BFCL's ``is_function_calling_format_output``: a list of ``{name: {params}}`` dicts."""
    if type(decoded) is not list:
        return False
    for item in decoded:
        if type(item) is not dict or len(item) != 1:
            return False
        if type(next(iter(item.values()))) is not dict:
            return False
    return True


def bfcl_decode_ast(text: str, max_chars: int | None = None) -> list[dict[str, JsonObject]]:
    """BFCL's decoded structure for ``text``: a list of single-key ``{name: {kwarg: value}}``
    dicts, or :class:`BfclDecodeError` (``decoder_failed`` / ``decoder_wrong_output_format``).

    Values are exactly what BFCL's resolver produces (tuples stay tuples; ``**kw`` unpacking
    gives a ``None`` key as in BFCL).  ``max_chars`` optionally refuses longer texts (the
    ``python`` parser uses :data:`MAX_AST_CHARS`; BFCL itself has no limit)."""
    decoded, _ = _decode(text, max_chars)
    return decoded


def _decode(
    text: str, max_chars: int | None = None
) -> tuple[list[dict[str, dict[str, Any]]], list[int]]:
    """The BFCL structure and, per call, the number of dropped positional arguments."""
    if not isinstance(text, str):
        raise BfclDecodeError(DECODER_FAILED, f"output is {type(text).__name__}, not text")
    source = bfcl_prepare(text)
    too_long = too_long_for_ast(source, max_chars)
    if too_long:
        raise BfclDecodeError(DECODER_FAILED, too_long)
    try:
        tree = parse_python(source)
    except DECODE_ERRORS as exc:
        raise BfclDecodeError(DECODER_FAILED, f"invalid syntax: {clip(str(exc), 160)}") from None
    body = tree.body
    if isinstance(body, ast.Call):
        nodes: list[ast.expr] = [body]
    elif isinstance(body, ast.List | ast.Tuple | ast.Set):
        nodes = list(body.elts)
    else:
        raise BfclDecodeError(DECODER_FAILED, f"not a list of calls but {type(body).__name__}")
    decoded: list[dict[str, dict[str, Any]]] = []
    positional: list[int] = []
    with work_budget():  # the total size of computed values, across every call of the output
        for i, node in enumerate(nodes):
            _resolve_into(decoded, positional, i, node)
    if not bfcl_is_function_calling_format(decoded):
        raise BfclDecodeError(WRONG_OUTPUT_FORMAT, "not a list of {name: {params}} objects")
    return decoded, positional


def _resolve_into(
    decoded: list[dict[str, dict[str, Any]]], positional: list[int], i: int, node: ast.expr
) -> None:
    """Append the resolved call ``node`` (element ``i``) and its positional-argument count."""
    if not isinstance(node, ast.Call):
        raise BfclDecodeError(DECODER_FAILED, f"element {i} is a {type(node).__name__}, not a call")
    try:
        decoded.append(_resolve_call(node))
    except (_Unsupported, UnsafeExpression, *DECODE_ERRORS) as exc:
        raise BfclDecodeError(
            DECODER_FAILED, f"call {i}: {clip(str(exc) or type(exc).__name__, 160)}"
        ) from None
    positional.append(len(node.args))


def _resolve_call(node: ast.Call) -> dict[str, dict[str, Any]]:
    args: dict[Any, Any] = {}
    for kw in node.keywords:
        args[kw.arg] = resolve_value(kw.value)
    return {dotted_name(node.func): args}


def resolve_value(node: ast.AST) -> Any:
    """BFCL's ``resolve_ast_by_type`` without ``eval``."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        operand = node.operand
        if not isinstance(operand, ast.Constant):
            raise _Unsupported(f"unary operator on {type(operand).__name__}")
        value: Any = operand.value
        return -value  # BFCL negates whatever the operator is
    if isinstance(node, ast.List):
        return [resolve_value(v) for v in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[Any, Any] = {}
        for k, v in zip(node.keys, node.values, strict=True):
            if k is None:
                raise _Unsupported("dict unpacking (**) in a value")
            out[resolve_value(k)] = resolve_value(v)
        return out
    if isinstance(node, ast.BinOp):
        return safe_arith(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        if not node.keywords:
            return ast.unparse(node)
        return _resolve_call(node)
    if isinstance(node, ast.Tuple):
        return tuple(resolve_value(v) for v in node.elts)
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
    raise _Unsupported(f"unsupported value {type(node).__name__}")


def calls_from_decoded(decoded: list[dict[str, dict[str, Any]]]) -> list[ToolCall]:
    """:class:`ToolCall` objects (JSON-compatible values) from BFCL's structure."""
    calls: list[ToolCall] = []
    for i, item in enumerate(decoded):
        ((name, args),) = item.items()
        if None in args:
            raise CallShapeError(f"call {i} ({name}) uses keyword unpacking (**)")
        calls.append(make_call(name, args, where=f"call {i}"))
    return calls


@register_parser("python")
class PythonCallParser:
    name = "python"

    def parse(self, text: str) -> ParseResult:
        text = scrub(text)
        try:
            decoded, positional = _decode(text, MAX_AST_CHARS)
        except BfclDecodeError as exc:
            failure = {"bfcl_error": exc.error_type}
            if exc.error_type == DECODER_FAILED and not _CALL_LIKE.search(text):
                return ParseResult.no_call(strip_or_none(text), details=failure)
            return ParseResult.fail(str(exc), details=failure)
        if not decoded:
            return ParseResult.no_call(None, details={"empty_call_list": True})
        try:
            calls = calls_from_decoded(decoded)
        except (CallShapeError, RecursionError) as exc:
            return ParseResult.fail(str(exc) or "call arguments nested too deeply")
        details: dict[str, Any] = {}
        if any(positional):
            details["positional_args"] = {str(i): n for i, n in enumerate(positional) if n}
        return ParseResult.ok(calls, details=details)
