"""Typed errors, grouped by who has to act on them.

* :class:`InputError` — the *user* gave toollab something it cannot use (a file, a tool schema,
  a flag).  It names the file, the line (when there is one) and the problem.  The CLI prints it
  and exits with code 2.
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
