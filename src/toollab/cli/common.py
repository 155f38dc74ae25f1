"""Shared CLI plumbing: error handling, ``--json`` output, progress bars, data notes.

Human-facing output (tables, progress, notes) goes to stderr through :data:`console`, so that with
``--json`` stdout holds exactly one JSON object.  A :class:`~toollab.data.DataNote` raised while
a command reads a dataset (e.g. Seal-Tools instances offering only their gold tools) is printed
as one ``note: ...`` line.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from toollab.data.base import DataNote
from toollab.data.jsonl import os_problem
from toollab.errors import BackendError, InputError, ToolLabError

console = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

#: the ``--out`` value that means standard output (verbs that write one file)
STDOUT = "-"

JsonOpt = typer.Option(
    False, "--json", help="Print one JSON object on stdout and nothing else there."
)


def emit_json(obj: Any) -> None:
    """Write ``obj`` as the single JSON object on stdout (lone surrogates from model output
    escaped, so the line is always valid UTF-8)."""
    text = json.dumps(obj, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj, ensure_ascii=True, default=str)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


_show_warning = warnings.showwarning


def _show_note(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Data notes as ``note: ...`` on stderr; every other warning as Python shows it."""
    if issubclass(category, DataNote):
        console.print(
            f"[bold yellow]note:[/] {escape(str(message))}", highlight=False, soft_wrap=True
        )
        return
    _show_warning(message, category, filename, lineno, file, line)


warnings.showwarning = _show_note


def fail(message: str, code: int = 2) -> None:
    console.print(
        f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True
    )
    raise typer.Exit(code)


def handle_errors(fn: F) -> F:
    """Turn toollab's typed errors into one clear line on stderr and an exit code.

    Bad input (files, schemas, flags) exits 2; an environment failure exits 3.  A file that
    cannot be used (no permission, a directory where a file belongs, a symlink loop) and input
    nested too deeply for the interpreter are bad input too: one line, no traceback.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            fail(exc.format(), 2)
        except BackendError as exc:
            fail(str(exc), 3)
        except ToolLabError as exc:
            fail(str(exc), 2)
        except FileNotFoundError as exc:
            fail(f"{exc.filename}: no such file", 2)
        except ConnectionError as exc:  # the environment (a server), not the input
            fail(f"connection failed: {exc}", 3)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            fail(f"{where}{os_problem(exc)}", 2)
        except ValidationError as exc:  # options that build a typed config
            errors = exc.errors()
            where = ".".join(str(p) for p in errors[0]["loc"]) if errors else exc.title
            fail(f"{where}: {errors[0]['msg'] if errors else exc}", 2)
        except RecursionError:
            fail("the input is nested too deeply to process (see docs/input-limits.md)", 2)
        return None

    return wrapper  # type: ignore[return-value]


def progress(transient: bool = False) -> Progress:
    """A rich progress bar with count, elapsed time and ETA, on stderr.

    Shown only when stderr is a terminal: piped or captured output (logs, CI, ``--json`` runs
    whose stderr is redirected) gets no bar, and stdout is never written."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        console=console,
        transient=transient,
        disable=not console.is_terminal,
    )


def track(
    items: Iterable[T], total: int | None, description: str, quiet: bool = False
) -> Iterator[T]:
    """Iterate with a progress bar unless ``quiet``."""
    if quiet:
        yield from items
        return
    with progress() as bar:
        task = bar.add_task(description, total=total)
        for item in items:
            yield item
            bar.advance(task)
