"""Rendering a Jinja chat template within bounds: time, output size, sizes of computed values.

A chat template comes from a file a user gives (``--chat-template FILE.jinja``) or a model's
GGUF, so it is code toollab did not write.  It runs in Jinja's immutable sandbox (no attribute
of Python internals, no mutation of lists and dicts; the environment ``transformers`` uses), and
:func:`render_jinja` bounds what the sandbox leaves open:

* **time**: :data:`MAX_RENDER_SECONDS` per rendering, checked at every call (macros included),
  attribute or item access, step of a ``range`` loop and piece of output, so a loop that does not
  end (or nested loops of 10¹⁰ steps, or a macro that calls itself twice per level) is stopped;
* **output**: :data:`MAX_RENDER_CHARS` characters;
* **computed values**: ``*``, ``+`` and ``~`` on text or lists may not make one longer than
  :data:`MAX_RENDER_CHARS`; ``**`` may not make an integer of more than :data:`MAX_POWER_BITS`
  bits (``2 ** 10**9`` would take minutes); a call or a filter may not be given an integer
  beyond :data:`MAX_RENDER_CHARS` (``'x'.center(10**10)``, ``'x'|indent(10**10)``) nor a
  format with a width or precision of 8 digits or more (``'%0999999999d' % 1``);
* **recursion**: a macro that calls itself without end is an error, not a crash.

Every broken bound is an :class:`InputError` naming it.  See ``docs/input-limits.md``.
"""

from __future__ import annotations

import functools
import json
import math
import re
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, overload

from toollab.errors import InputError

#: seconds one rendering of a chat template may take
MAX_RENDER_SECONDS = 5.0
#: characters one rendering may write, and the longest text or list a template may compute
MAX_RENDER_CHARS = 10_000_000
#: bits of the largest integer ``**`` may compute
MAX_POWER_BITS = 100_000

_state = threading.local()


def _check_time() -> None:
    deadline = getattr(_state, "deadline", None)
    if deadline is not None and time.monotonic() > deadline:
        raise InputError(
            f"chat template: rendering took more than {MAX_RENDER_SECONDS:g} s (a loop that "
            "does not end?)"
        )


class _Range(Sequence[int]):
    """``range`` for templates: at most Jinja's ``MAX_RANGE`` items, the time checked as it is
    iterated."""

    def __init__(self, *args: int) -> None:
        from jinja2.sandbox import safe_range

        self._r = safe_range(*args)

    def __len__(self) -> int:
        return len(self._r)

    @overload
    def __getitem__(self, i: int) -> int: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[int]: ...
    def __getitem__(self, i: int | slice) -> int | Sequence[int]:
        return self._r[i]

    def __iter__(self) -> Iterator[int]:
        for n, value in enumerate(self._r):
            if not n & 255:
                _check_time()
            yield value

    def __repr__(self) -> str:
        return repr(self._r)


_PERCENT_WIDTH = re.compile(r"%[#0 +\-]*(\d{8,}|\d*\.\d{8,})")
_BRACE_WIDTH = re.compile(r"\{[^{}]*:[^{}]*\d{8,}[^{}]*\}")


def _check_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """No integer argument (nor one in a tuple or list argument) beyond
    :data:`MAX_RENDER_CHARS`: widths, counts and lengths of texts to build."""
    for value in (*args, *kwargs.values()):
        items = value if isinstance(value, tuple | list) and len(value) < 100 else (value,)
        for item in items:
            if isinstance(item, int) and abs(item) > MAX_RENDER_CHARS:
                raise InputError(
                    f"chat template: the argument {item} is beyond {MAX_RENDER_CHARS:,} (a "
                    "width or a count of that size builds a text too long)"
                )


def _check_format(text: Any) -> None:
    if isinstance(text, str) and (_PERCENT_WIDTH.search(text) or _BRACE_WIDTH.search(text)):
        raise InputError("chat template: a format with a width or precision of 8 digits or more")


def _bounded_filter(func: Any) -> Any:
    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        _check_time()
        _check_args(args, kwargs)
        if func.__name__ == "do_format" and args:
            _check_format(args[0])
        return func(*args, **kwargs)

    return bounded


def _size(value: Any) -> int | None:
    return len(value) if isinstance(value, str | bytes | list | tuple) else None


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise(message: str) -> None:
    raise InputError(f"chat template: {message}")


def _environment() -> Any:
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Bounded(ImmutableSandboxedEnvironment):
        """The sandbox with the time checked at every call and access, and the sizes of
        ``*``, ``+`` and ``**`` results bounded."""

        intercepted_binops = frozenset({"*", "+", "**", "%"})
        code_generator_class = _generator()

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            _check_time()
            _check_args(args, kwargs)
            return super().call(__context, __obj, *args, **kwargs)

        def checked_concat(self, value: Any) -> Any:
            """The result of ``~``, refused beyond :data:`MAX_RENDER_CHARS` (its parts were
            checked, so it is at most a few times that)."""
            if len(value) > MAX_RENDER_CHARS:
                raise _too_long(len(value))
            return value

        def getattr(self, obj: Any, attribute: str) -> Any:
            _check_time()
            if attribute in ("format", "format_map"):
                _check_format(obj)
            return super().getattr(obj, attribute)

        def getitem(self, obj: Any, argument: Any) -> Any:
            _check_time()
            return super().getitem(obj, argument)

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_time()
            if operator == "**":
                _check_power(left, right)
            elif operator == "%":
                _check_format(left)
                _check_args((right,), {})
            elif operator == "*":
                for seq, times in ((left, right), (right, left)):
                    n = _size(seq)
                    if n is not None and isinstance(times, int) and n * times > MAX_RENDER_CHARS:
                        raise _too_long(n * times)
            else:
                a, b = _size(left), _size(right)
                if a is not None and b is not None and a + b > MAX_RENDER_CHARS:
                    raise _too_long(a + b)
            return super().call_binop(context, operator, left, right)

    env = Bounded(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = _tojson
    env.filters = {name: _bounded_filter(f) for name, f in env.filters.items()}
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    env.globals["range"] = _Range
    return env


def _generator() -> Any:
    from jinja2.compiler import CodeGenerator

    class Generator(CodeGenerator):
        """Jinja's code generator with ``~`` (concatenation) checked for its length."""

        def visit_Concat(self, node: Any, frame: Any) -> None:
            self.write("environment.checked_concat(")
            super().visit_Concat(node, frame)
            self.write(")")

    return Generator


def _too_long(n: int) -> InputError:
    return InputError(
        f"chat template: a computed value of {n:,} items (limit {MAX_RENDER_CHARS:,})"
    )


def _check_power(base: Any, exp: Any) -> None:
    if isinstance(base, int) and isinstance(exp, int) and exp > 0 and abs(base) > 1:
        bits = exp * math.log2(abs(base))
        if bits > MAX_POWER_BITS:
            raise InputError(
                f"chat template: {base} ** {exp} is an integer of about {bits:,.0f} bits "
                f"(limit {MAX_POWER_BITS:,})"
            )


@functools.lru_cache(maxsize=32)
def _compiled(source: str) -> Any:
    """A chat template compiled once per source (same environment as ``transformers``)."""
    from jinja2 import TemplateError

    try:
        return _environment().from_string(source)
    except TemplateError as exc:
        raise InputError(f"chat template does not compile: {exc}") from exc
    except RecursionError:
        raise InputError("chat template does not compile: nested too deeply") from None


def render_jinja(source: str, **context: Any) -> str:
    """Render a Hugging Face style chat template (same environment as ``transformers``) within
    the bounds of this module."""
    from jinja2 import TemplateError

    template = _compiled(source)
    outer = getattr(_state, "deadline", None)
    _state.deadline = time.monotonic() + MAX_RENDER_SECONDS if outer is None else outer
    try:
        parts: list[str] = []
        size = 0
        for piece in template.generate(**context):
            size += len(piece)
            if size > MAX_RENDER_CHARS:
                raise InputError(
                    f"chat template: the rendering is longer than {MAX_RENDER_CHARS:,} characters"
                )
            _check_time()
            parts.append(piece)
        return "".join(parts)
    except TemplateError as exc:
        raise InputError(f"chat template failed to render: {exc}") from exc
    except RecursionError:
        raise InputError(
            "chat template failed to render: it calls itself without end (recursion)"
        ) from None
    except (MemoryError, OverflowError) as exc:
        raise InputError(f"chat template failed to render: {type(exc).__name__}") from None
    finally:
        _state.deadline = outer
