"""Atomic output files: written to a temporary file beside the target, fsync'd, then renamed over
it (and the folder fsync'd), so a reader or a killed run never sees half a file.

Every writer of toollab's outputs (run stores, exports, generated data, training markers) goes
through :func:`atomic_write`; a file that cannot be written is an :class:`InputError` naming it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from toollab.data.jsonl import os_problem
from toollab.errors import InputError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (best effort: not every file system allows it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextmanager
def atomic_write(path: str | Path) -> Iterator[IO[str]]:
    """A UTF-8 text file written to a temporary name beside ``path`` and renamed over it when the
    block ends without an exception; on any exception the temporary file is removed and the
    target is left as it was."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(f"cannot write: {os_problem(exc)}", path=path) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; an output is an ordinary file
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise InputError(f"cannot write: {os_problem(exc)}", path=path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_write(path) as fh:
        fh.write(text)


def write_json_atomic(
    path: str | Path, obj: Any, indent: int | None = 2, final_newline: bool = True
) -> None:
    """JSON (``ensure_ascii=False``) written atomically."""
    text = json.dumps(obj, ensure_ascii=False, indent=indent)
    write_text_atomic(path, text + "\n" if final_newline else text)


def write_jsonl_atomic(path: str | Path, records: Iterable[Any]) -> None:
    """One JSON value per line, written atomically."""
    with atomic_write(path) as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")


def write_dir_atomic(final: str | Path, write: Callable[[Path], object]) -> None:
    """Fill a folder in one step: ``write(tmp)`` fills a sibling temporary folder, which then
    replaces ``final`` (a killed process leaves no half folder).  An :class:`OSError` is raised
    after the temporary folder is removed."""
    final = Path(final)
    tmp = final.with_name(f".{final.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        write(tmp)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
