"""Typed errors, grouped by who has to act on them.

* :class:`InputError` — the *user* gave toollab something it cannot use (a file, a tool schema,
  a flag).  It names the file, the line (when there is one) and the problem.  The CLI prints it
  and exits with code 2.  :class:`ArgumentError` is its form for a Python API argument of the
  wrong type or value (also a ``TypeError`` and a ``ValueError``).
* :class:`ModelError` — the *model* produced something unusable (a malformed call, arguments that
  do not fit the schema).  These are data: agents turn them into observations, scorers count them.
* :class:`BackendError` — the *environment* failed (a server is down, a GGUF is missing, a
  request timed out).  Inside a run the failure is recorded on that instance and the run goes on.
* :class:`ToolExecutionError` — a tool raised or timed out; the executor turns it into an
  observation.
"""

from __future__ import annotations

from pathlib import Path


class ToolLabError(Exception):
    """Base class of every error toollab raises on purpose."""


class InputError(ToolLabError):
    """Bad input from the user: names what (file, line, field) and why."""

    def __init__(
        self,
        problem: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        where: str | None = None,
    ) -> None:
        self.problem = problem
        self.path = str(path) if path is not None else None
        self.line = line
        self.where = where
        super().__init__(self.format())

    def format(self) -> str:
        loc = ""
        if self.path is not None:
            loc = self.path
            if self.line is not None:
                loc += f":{self.line}"
        if self.where:
            loc = f"{loc} ({self.where})" if loc else self.where
        return f"{loc}: {self.problem}" if loc else self.problem


class ToolSchemaError(InputError):
    """A tool definition is not usable (no name, invalid JSON Schema, ...)."""


class UsageError(InputError):
    """A CLI flag or option value is wrong (unknown format, unknown provider, ...)."""


class ArgumentError(UsageError, TypeError, ValueError):
    """An argument of a Python API call has the wrong type or value: names the argument and what
    it expects.  It is also a :class:`TypeError` and a :class:`ValueError`, so code that catches
    those keeps working."""

    def __init__(self, argument: str, expected: str, got: object) -> None:
        self.argument = argument
        self.expected = expected
        super().__init__(f"expected {expected}, got {_describe(got)}", where=argument)


def _describe(value: object) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    if isinstance(value, str | int | float | bool | type(None)):
        return text
    return f"{type(value).__name__} {text}"


def check_arg(argument: str, value: object, types: type | tuple[type, ...], expected: str) -> None:
    """Raise :class:`ArgumentError` unless ``value`` is an instance of ``types`` (a ``bool`` is
    never taken for a number)."""
    wanted = types if isinstance(types, tuple) else (types,)
    numeric = any(t in (int, float) for t in wanted) and bool not in wanted
    if not isinstance(value, wanted) or (numeric and isinstance(value, bool)):
        raise ArgumentError(argument, expected, value)


def check_int(
    argument: str, value: object, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """``value`` if it is an ``int`` (not a ``bool``) in ``[minimum, maximum]``, else
    :class:`ArgumentError`."""
    bounds = []
    if minimum is not None:
        bounds.append(f">= {minimum}")
    if maximum is not None:
        bounds.append(f"<= {maximum}")
    expected = "an integer" + (f" {' and '.join(bounds)}" if bounds else "")
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        raise ArgumentError(argument, expected, value)
    return value


#: the longest name :func:`path_component` lets become a file or folder name
MAX_NAME_CHARS = 200


def path_component(name: object, what: str) -> str:
    """``name`` if it can be used as one file or folder name inside a parent folder (a task's
    run directory under ``log_dir``, a dataset file under ``data/``), else
    :class:`ArgumentError` naming ``what``: a string of 1 to :data:`MAX_NAME_CHARS` printable
    characters, no ``/`` or ``\\``, not ``.`` or ``..``.  Every place where a name becomes a
    path component goes through here, so no name reaches outside its parent folder."""
    if (
        not isinstance(name, str)
        or not name
        or name in (".", "..")
        or len(name) > MAX_NAME_CHARS
        or any(c in "/\\" or not c.isprintable() for c in name)
    ):
        raise ArgumentError(
            what,
            "a name usable as one file name (no '/', '\\' or control character, not '.' or "
            f"'..', 1 to {MAX_NAME_CHARS} characters)",
            name,
        )
    return name


class ModelError(ToolLabError):
    """The model's output could not be used. Data to score, never a crash."""


class ArgumentValidationError(ModelError):
    """A call's arguments do not fit the tool's schema; ``reasons`` lists every problem."""

    def __init__(self, tool: str, reasons: list[str]) -> None:
        self.tool = tool
        self.reasons = reasons
        super().__init__(f"invalid arguments for {tool!r}: " + "; ".join(reasons))


class UnknownToolError(ModelError):
    def __init__(self, name: str, known: list[str] | None = None) -> None:
        self.name = name
        hint = ""
        if known:
            import difflib

            close = difflib.get_close_matches(name, known, n=1)
            if close:
                hint = f" (did you mean {close[0]!r}?)"
        super().__init__(f"unknown tool {name!r}{hint}")


class BackendError(ToolLabError):
    """The environment failed: server down, model file missing, timeout, malformed response."""


class ToolExecutionError(ToolLabError):
    """A tool raised, timed out or broke its sandbox limits."""


def did_you_mean(value: str, choices: list[str] | tuple[str, ...]) -> str:
    """A ' (did you mean 'x'?)' hint, or '' when nothing is close."""
    import difflib

    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""
