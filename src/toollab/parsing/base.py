"""What a parser returns, and the parser registry.

Every parser turns model text into exactly one of: calls, an explicit *no call* (possibly with an
answer text), or a format error with its reason.  Parsers never raise on model output: malformed
output is data to score.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from toollab.registry import Registry

# the parse record lives in the schema layer (a prediction holds one); re-exported here
from toollab.schema.record import ParseResult, ParseStatus

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


class Parser(Protocol):
    name: str

    def parse(self, text: str) -> ParseResult: ...


#: parser factories by output format; plugins: ``parser:NAME`` entry points
PARSERS: Registry[Callable[[], Parser]] = Registry(
    "parser", label="output format", builtins=("toollab.parsing",)
)


def register_parser(name: str) -> Callable[[Callable[[], Parser]], Callable[[], Parser]]:
    """Decorator: register a parser factory (a class or a zero-argument function) under ``name``."""
    return PARSERS.decorator(name)


def parser_names() -> list[str]:
    return PARSERS.names()


def get_parser(name: str) -> Parser:
    return PARSERS.get(name)()


def parse(text: str, fmt: str) -> ParseResult:
    """Parse ``text`` in output format ``fmt``; never raises on the text."""
    return safe_parse(get_parser(fmt), text)


def safe_parse(parser: Parser, text: Any) -> ParseResult:
    """Run a parser, turning any unexpected exception into a format error."""
    if not isinstance(text, str):
        return ParseResult.fail(f"output is not text but {type(text).__name__}")
    try:
        return parser.parse(text)
    except RecursionError:
        return ParseResult.fail("output nested too deeply to parse")
    except Exception as exc:  # a parser bug must not crash a run; it is reported as data
        return ParseResult.fail(f"parser {parser.name!r} failed: {type(exc).__name__}: {exc}")
