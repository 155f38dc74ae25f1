"""Model output → calls, an explicit no-call, or a typed format error.

Formats: ``json`` (OpenAI-style ``{"name", "arguments"}``, one or a list; ``{"answer": ...}`` is a
no-call), ``seal`` (Seal-Tools ``[{"api", "parameters", "responses"}]``), ``python`` (BFCL
``[f(a=1), g(b="x")]`` via ``ast``), ``react`` (``Thought / Action / Action Input``), ``hermes``
(``<tool_call>`` tags), ``deer`` (``#SearchAPI#`` / ``#CallAPI#`` / ``#NoCallAPI#`` / ``#End#``
markers).  Scorers that must reproduce an upstream reader exactly use
:func:`seal_upstream_parse`, :func:`bfcl_decode_ast` and :func:`react_format_check`.
"""

from toollab.parsing.base import (
    Parser,
    ParseResult,
    ParseStatus,
    get_parser,
    parse,
    parser_names,
    register_parser,
    safe_parse,
)
from toollab.parsing.deer import DeerParser, parse_call_text, repair_quotes
from toollab.parsing.hermes import HermesParser
from toollab.parsing.json_calls import NO_CALL_KEY, JsonCallParser
from toollab.parsing.python_calls import (
    DECODER_FAILED,
    WRONG_OUTPUT_FORMAT,
    BfclDecodeError,
    PythonCallParser,
    bfcl_decode_ast,
    bfcl_is_function_calling_format,
)
from toollab.parsing.react import ReactParser, react_format_check, tooleyes_segments
from toollab.parsing.seal import SealParser, seal_upstream_parse

__all__ = [
    "DECODER_FAILED",
    "NO_CALL_KEY",
    "WRONG_OUTPUT_FORMAT",
    "BfclDecodeError",
    "DeerParser",
    "HermesParser",
    "JsonCallParser",
    "ParseResult",
    "ParseStatus",
    "Parser",
    "PythonCallParser",
    "ReactParser",
    "SealParser",
    "bfcl_decode_ast",
    "bfcl_is_function_calling_format",
    "get_parser",
    "parse",
    "parse_call_text",
    "parser_names",
    "react_format_check",
    "register_parser",
    "repair_quotes",
    "safe_parse",
    "seal_upstream_parse",
    "tooleyes_segments",
]
