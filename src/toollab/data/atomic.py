"""Atomic output files: written to a temporary file beside the target, fsync'd, then renamed over
it (and the folder fsync'd), so a reader or a killed run never sees half a file.

Every writer of toollab's outputs (run stores, exports, generated data, training markers) goes
through :func:`atomic_write`; a file that cannot be written is an :class:`InputError` naming it.

What may be replaced (:func:`check_target`, docs/integrity.md):

* only a **regular file** (or nothing): a directory, a device node (``/dev/null``,
  ``/dev/full``), a FIFO or a socket at the path is refused, never replaced by a file;
* a **symbolic link** is written through only when it leads to a regular file in the link's own
  folder (or below it); a link leading out of that folder, or a dangling one, is refused;
* a file written **beside** the output the user named (a dataset card, a figures sidecar, a
  report's markdown summary) is replaced only when it carries toollab's mark
  (:data:`MARK`, which every such file holds in its first lines) or with ``--force``
  (``keep_foreign=True`` refuses it; see :func:`check_replaceable`);
* a file written into an **output folder** whose files cannot carry the mark (``data synth``'s
  data files, ``train export``'s GGUFs) is replaced only when the folder carries
  :data:`FOLDER_MARK` (or the file the mark) or with ``--force`` (:func:`check_output_folder`).

Temporary files are named ``.NAME.PID.XXXX.tmp`` beside their target (folders:
``.NAME.partial-PID``): an exception, ``KeyboardInterrupt`` or ``SIGTERM`` (the CLI turns it
into an interrupt) removes them; one left by a killed process (``SIGKILL``) is removed by the next
write of the same target once no process of that id runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from toollab.data.jsonl import os_problem
from toollab.errors import InputError

#: the mark of a file toollab wrote beside an output (cards, sidecars, summaries): such a file
#: is replaced by the next run; any other file there is kept unless ``--force`` is given
MARK = "toollab:generated"
#: how much of an existing file is read looking for :data:`MARK`
MARK_WINDOW = 4096
#: the mark as the first line of a markdown / HTML file
MARK_COMMENT = f"<!-- {MARK}: written by toollab; it replaces this file on the next run -->"
#: the file that marks an output folder toollab writes into (for outputs that cannot hold
#: :data:`MARK` themselves: DEER's / Seal-Tools' data files, GGUF weights)
FOLDER_MARK = ".toollab-generated"
#: the suffix of every temporary file (``.NAME.PID.XXXX.tmp``)
TMP_SUFFIX = ".tmp"


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


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device node"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse_special(path: Path, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    hint = "" if stat.S_ISDIR(mode) else "; to write to standard output, give - where a verb allows"
    raise InputError(f"is {_kind(mode)}: toollab replaces only regular files{hint}", path=path)


def check_target(path: str | Path) -> Path:
    """The file to replace when writing ``path``: ``path`` itself (absent or a regular file), or
    the regular file a symbolic link at ``path`` leads to inside the link's own folder.  An
    :class:`InputError` naming ``path`` for anything else (a directory, a device node, a FIFO, a
    socket, a link out of its folder or to nothing).  Creates nothing."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    except NotADirectoryError:
        raise InputError(
            "a file is where a folder should be on this path (not a directory)", path=path
        ) from None
    except OSError as exc:
        raise InputError(f"cannot use: {os_problem(exc)}", path=path) from None
    if not stat.S_ISLNK(st.st_mode):
        _refuse_special(path, st.st_mode)
        return path
    folder = Path(os.path.realpath(path.parent))
    real = Path(os.path.realpath(path))
    if real != folder and folder not in real.parents:
        raise InputError(
            f"is a symbolic link leading out of its folder (to {real}); toollab does not write "
            "through it: remove the link or give another path",
            path=path,
        )
    try:
        target = os.stat(path)
    except OSError:
        raise InputError("is a dangling or looping symbolic link", path=path) from None
    _refuse_special(path, target.st_mode)
    return real


def carries_mark(path: str | Path) -> bool:
    """Whether the file at ``path`` holds :data:`MARK` in its first :data:`MARK_WINDOW` bytes."""
    try:
        with open(path, "rb") as fh:
            return MARK.encode() in fh.read(MARK_WINDOW)
    except OSError:
        return False


def check_replaceable(path: str | Path, *, force: bool = False) -> Path:
    """:func:`check_target` for a file written *beside* an output: an existing file there must
    carry toollab's mark (it wrote the file) unless ``force``.  Call it before the work that
    precedes the write, so a refusal costs nothing."""
    target = check_target(path)
    if not force and target.exists() and not carries_mark(target):
        raise _foreign(path)
    return target


def _foreign(path: str | Path) -> InputError:
    return InputError(
        "a file toollab did not write is already here (it has no toollab mark); toollab "
        "does not overwrite it: move it away, choose another output, or pass --force",
        path=path,
    )


def folder_marked(folder: str | Path) -> bool:
    """Whether ``folder`` holds :data:`FOLDER_MARK` carrying :data:`MARK` (toollab writes its
    outputs there)."""
    return carries_mark(Path(folder) / FOLDER_MARK)


def check_output_folder(folder: str | Path, names: Iterable[str], *, force: bool = False) -> Path:
    """Before writing the files ``names`` (paths relative to ``folder``) into the output folder
    ``folder``, whose files cannot all carry :data:`MARK` themselves (DEER's and Seal-Tools'
    data files, GGUF weights): ``folder`` is absent or a folder, each name is absent or a
    regular file (:func:`check_target`), and an existing one is toollab's (it carries the mark,
    or the folder carries :data:`FOLDER_MARK`) unless ``force``.  Creates nothing; call it
    before any work, then :func:`mark_folder` before the first write."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError("is not a folder (an output folder goes here)", path=folder)
    marked = folder_marked(folder)
    for name in names:
        target = check_target(folder / name)
        if not force and not marked and target.exists() and not carries_mark(target):
            raise _foreign(folder / name)
    return folder


def mark_folder(folder: str | Path) -> None:
    """Write :data:`FOLDER_MARK` into ``folder`` (made if absent): the next run replaces the
    outputs toollab wrote there without ``--force``."""
    write_text_atomic(
        Path(folder) / FOLDER_MARK,
        f"{MARK}: toollab writes its outputs into this folder and replaces them on the next "
        "run; delete this file to have it keep them\n",
    )


_TMP_REST = re.compile(r"(\d+)\.[^.]+" + re.escape(TMP_SUFFIX))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists (owned by someone else)
        return True
    return True


def clean_stale(folder: Path, name: str) -> list[Path]:
    """Remove the temporary files (``.NAME.PID.XXXX.tmp``) and folders (``.NAME.partial-PID``)
    of ``name`` in ``folder`` left by processes that no longer run; returns what went."""
    gone: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return gone
    tmp_prefix, dir_prefix = f".{name}.", f".{name}.partial-"
    for entry in entries:
        pid: int | None = None
        if entry.name.startswith(dir_prefix) and entry.name[len(dir_prefix) :].isdigit():
            pid = int(entry.name[len(dir_prefix) :])
        elif entry.name.startswith(tmp_prefix) and entry.name.endswith(TMP_SUFFIX):
            m = _TMP_REST.fullmatch(entry.name[len(tmp_prefix) :])
            pid = int(m.group(1)) if m else None
        if pid is None or _alive(pid):
            continue
        p = Path(entry.path)
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(p)
            else:
                p.unlink()
            gone.append(p)
    return gone


@contextmanager
def atomic_write(path: str | Path, *, keep_foreign: bool = False) -> Iterator[IO[str]]:
    """A UTF-8 text file written to a temporary name beside ``path`` and renamed over it when the
    block ends without an exception (a lone surrogate in the text is written as its
    ``\\uXXXX`` escape, so the file is valid UTF-8 and JSON text reads back as written); on
    any exception (an interrupt included) the temporary file is removed and the target is left
    as it was.  What is at ``path`` is checked first (:func:`check_target`; with
    ``keep_foreign``, :func:`check_replaceable`)."""
    path = Path(path)
    target = check_replaceable(path) if keep_foreign else check_target(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        clean_stale(target.parent, target.name)
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name}.{os.getpid()}.", suffix=TMP_SUFFIX, dir=target.parent
        )
    except OSError as exc:
        raise InputError(f"cannot write: {os_problem(exc)}", path=path) from None
    try:
        # a lone UTF-16 surrogate (from a model's output, a decoded ``\ud800``) is written as
        # its escape ``\udXXX``, the JSON escape of the same string: always valid UTF-8
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; an output is an ordinary file
        check_target(path)  # still a regular file (or nothing) at the moment of the rename
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise InputError(f"cannot write: {os_problem(exc)}", path=path) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def write_text_atomic(path: str | Path, text: str, *, keep_foreign: bool = False) -> None:
    with atomic_write(path, keep_foreign=keep_foreign) as fh:
        fh.write(text)


def write_json_atomic(
    path: str | Path,
    obj: Any,
    indent: int | None = 2,
    final_newline: bool = True,
    *,
    keep_foreign: bool = False,
) -> None:
    """JSON (``ensure_ascii=False``) written atomically."""
    text = json.dumps(obj, ensure_ascii=False, indent=indent)
    write_text_atomic(path, text + "\n" if final_newline else text, keep_foreign=keep_foreign)


def write_jsonl_atomic(path: str | Path, records: Iterable[Any]) -> None:
    """One JSON value per line, written atomically."""
    with atomic_write(path) as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")


def check_dir_target(final: str | Path) -> Path:
    """``final`` when a folder may be written there: nothing, or a real directory (not a link,
    a file or a device); an :class:`InputError` naming it otherwise."""
    final = Path(final)
    try:
        st = os.lstat(final)
    except FileNotFoundError:
        return final
    except OSError as exc:
        raise InputError(f"cannot use: {os_problem(exc)}", path=final) from None
    if stat.S_ISLNK(st.st_mode):
        raise InputError("is a symbolic link; toollab replaces only a real folder here", path=final)
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(f"is {_kind(st.st_mode)}, not a folder", path=final)
    return final


def write_dir_atomic(final: str | Path, write: Callable[[Path], object]) -> None:
    """Fill a folder in one step: ``write(tmp)`` fills a sibling temporary folder, which then
    replaces ``final`` (a killed process leaves no half folder; its temporary folder is removed
    by the next write of ``final``).  ``final`` must be absent or a real folder
    (:func:`check_dir_target`).  An :class:`OSError` is raised after the temporary folder is
    removed."""
    final = check_dir_target(final)
    tmp = final.with_name(f".{final.name}.partial-{os.getpid()}")
    clean_stale(final.parent, final.name)
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        write(tmp)
        check_dir_target(final)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
