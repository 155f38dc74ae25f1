"""Model output → calls, an explicit no-call, or a typed format error.

Formats: ``json`` (OpenAI-style ``{"name", "arguments"}``, one or a list), ``seal`` (Seal-Tools
``[{"api", "parameters", "responses"}]``), ``python`` (BFCL ``[f(a=1), g(b="x")]`` via ``ast``),
``react`` (``Thought / Action / Action Input``), ``hermes`` (``<tool_call>`` tags), ``deer``
(``#SearchAPI#`` / ``#CallAPI#`` / ``#NoCallAPI#`` / ``#End#`` markers).
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

__all__ = [
    "ParseResult",
    "ParseStatus",
    "Parser",
    "get_parser",
    "parse",
    "parser_names",
    "register_parser",
    "safe_parse",
]
