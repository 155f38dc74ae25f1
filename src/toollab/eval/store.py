"""A run directory: ``run.json`` (configuration), ``predictions.jsonl``, ``results.json``.

``predictions.jsonl`` is append-only: one :class:`~toollab.eval.record.Prediction` per line, each
line written with a single ``write`` and ``fsync``-ed before the next instance is counted as done.
A run killed at any point (``SIGKILL`` included) leaves at most one partial last line; reopening
the directory drops that line (and cuts it from the file, so nothing half-written remains) and
reports which ``(id, repeat)`` pairs are done, so the run continues where it stopped.

A run refuses to continue in a directory whose ``run.json`` was written with a different
configuration, naming every field that differs.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from toollab.errors import InputError
from toollab.eval.record import Prediction

PREDICTIONS = "predictions.jsonl"
RUN_JSON = "run.json"
RESULTS = "results.json"
LOCK = ".toollab.lock"
#: the LLM judge's answers (``toollab eval --judge``; ``toollab score`` writes it beside the file)
JUDGE_CACHE = "judge_cache.jsonl"


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to ``path`` through a temporary file and a rename (never half-written)."""
    tmp = path.with_name(path.name + ".tmp")
    data = json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n"
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
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


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; :class:`InputError` naming the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object, found {type(data).__name__}", path=path)
    return data


def parse_prediction_line(text: str, path: Path, line: int) -> Prediction:
    """One JSONL line → :class:`Prediction`, with a clear error naming ``path:line``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not a complete JSON line ({exc.msg} at column {exc.colno}); the file is truncated "
            "or corrupted",
            path=path,
            line=line,
        ) from None
    if not isinstance(data, dict):
        raise InputError(
            f"a prediction must be a JSON object, found {type(data).__name__}", path=path, line=line
        )
    try:
        return Prediction.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "record"
        raise InputError(
            f"not a prediction record: {where}: {first.get('msg')}", path=path, line=line
        ) from None


def read_predictions(path: str | Path) -> list[Prediction]:
    """Every prediction of a JSONL file, strictly: a truncated or malformed line is an error."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such predictions file", path=p)
    out: list[Prediction] = []
    with p.open("rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", path=p, line=n) from None
        out.append(parse_prediction_line(text, p, n))
    return out


def config_differences(
    old: dict[str, Any], new: dict[str, Any], keys: Sequence[str]
) -> list[tuple[str, Any, Any]]:
    """``(key, old value, new value)`` for every key in ``keys`` whose values differ."""
    return [(k, old.get(k), new.get(k)) for k in keys if old.get(k) != new.get(k)]


class RunStore:
    """The files of one run directory.  Use as a context manager (holds an exclusive lock)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.predictions_path = self.root / PREDICTIONS
        self.run_path = self.root / RUN_JSON
        self.results_path = self.root / RESULTS
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._made_root = False
        self._made_lock = False
        #: how many bytes of a partial last line were cut when the directory was opened
        self.repaired_bytes = 0

    # -- locking ---------------------------------------------------------------------------------
    def __enter__(self) -> RunStore:
        if self.root.exists() and not self.root.is_dir():
            raise InputError("--out must be a directory, but a file is there", path=self.root)
        self._lock_fd, self._made_lock = self._lock()
        return self

    def _make_root(self) -> None:
        try:
            self.root.mkdir(parents=True)
            self._made_root = True
        except FileExistsError:
            pass

    def _lock(self) -> tuple[int, bool]:
        """An exclusive lock on ``LOCK`` (its fd, and whether this process created the file).

        The last holder of a run that wrote nothing removes the file while still holding the
        lock, so a process that opened the old file meanwhile finds, once it has the lock,
        that the path no longer names that file: it then locks the file now at the path (or
        creates one).  Whoever holds the lock on the file the path names holds the run."""
        path = self.root / LOCK
        for _ in range(100):
            self._make_root()  # again if a run that left nothing removed it meanwhile
            made = True
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileNotFoundError:
                continue  # the directory went in between
            except FileExistsError:
                made = False
                try:
                    fd = os.open(path, os.O_RDWR)
                except FileNotFoundError:
                    continue  # removed in between: create it
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise InputError(
                    "another toollab process is writing this run directory; wait for it or use "
                    "another --out",
                    path=self.root,
                ) from None
            try:
                current = os.stat(path)
            except FileNotFoundError:
                current = None
            held = os.fstat(fd)
            if current is not None and (current.st_dev, current.st_ino) == (
                held.st_dev,
                held.st_ino,
            ):
                return fd, made
            os.close(fd)  # a removed lock file: lock the one at the path now
        raise InputError("cannot lock this run directory (its lock file keeps changing)", path=path)

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            fd, self._lock_fd = self._lock_fd, None
            try:
                self._remove_if_unused()  # while the lock is still held
            finally:
                with contextlib.suppress(OSError):
                    fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)

    def _remove_if_unused(self) -> None:
        """A run that stopped before writing anything (a bad model, say) leaves no trace: the
        lock file it created goes, and the directory too when it made it and it is empty.
        Called with the lock held, so no other process can take the lock on the file that goes
        and believe it holds the run."""
        if self.run_path.exists() or self.predictions_path.exists():
            return
        with contextlib.suppress(OSError):
            if self._made_lock:
                (self.root / LOCK).unlink()
            if self._made_root:
                self.root.rmdir()

    # -- configuration -----------------------------------------------------------------------------
    def existing_config(self) -> dict[str, Any] | None:
        return read_json(self.run_path) if self.run_path.is_file() else None

    def check(self, config: dict[str, Any], identity: Sequence[str], *, explain: str = "") -> bool:
        """Whether the directory already holds this run (True) or none (False); an error when it
        holds another run (fields in ``identity`` differ) or predictions without ``run.json``.
        Writes nothing."""
        old = self.existing_config()
        if old is None:
            if self.predictions_path.is_file() and self.predictions_path.stat().st_size > 0:
                raise InputError(
                    f"{PREDICTIONS} is here but {RUN_JSON} is missing, so the run cannot be "
                    "checked before continuing; use another --out",
                    path=self.root,
                )
            return False
        diffs = config_differences(old, config, identity)
        if diffs:
            lines = "; ".join(f"{k}: {a!r} in run.json, {b!r} now" for k, a, b in diffs)
            raise InputError(
                f"this directory holds a run with a different configuration ({lines}). "
                f"Rerun with the same options to resume it, or use another --out{explain}",
                path=self.run_path,
            )
        return True

    def prepare(
        self, config: dict[str, Any], identity: Sequence[str], *, explain: str = ""
    ) -> bool:
        """Write ``run.json`` for a new run, or check it for a resumed one.

        Returns True when the directory already held this run.  Fields in ``identity`` must be
        equal; the others (e.g. the metric selection) are updated in ``run.json``.
        """
        resumed = self.check(config, identity, explain=explain)
        if not resumed:
            write_json_atomic(self.run_path, config)
            return False
        old = self.existing_config() or {}
        if any(old.get(k) != v for k, v in config.items()):
            write_json_atomic(self.run_path, {**old, **config})
        return True

    # -- predictions ------------------------------------------------------------------------------
    def load(self) -> list[Prediction]:
        """The predictions written so far, after cutting a partial last line from the file.

        A complete line that is not a prediction means the file was edited or damaged (an
        interrupted run leaves only a partial *last* line): that is an error, not repaired.
        """
        path = self.predictions_path
        if not path.is_file():
            return []
        with path.open("rb") as fh:
            data = fh.read()
        end = data.rfind(b"\n") + 1  # bytes up to and including the last newline
        if end < len(data):
            with path.open("r+b") as fh:
                fh.truncate(end)
                fh.flush()
                os.fsync(fh.fileno())
            self.repaired_bytes = len(data) - end
        out: list[Prediction] = []
        for n, raw in enumerate(data[:end].split(b"\n")[:-1], 1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError("not UTF-8 text", path=path, line=n) from None
            out.append(parse_prediction_line(text, path, n))
        return out

    def append(self, pred: Prediction, *, sync: bool = True) -> None:
        """Append one prediction as one line; durably (``fdatasync``) unless ``sync=False``,
        in which case :meth:`sync` must follow before the prediction counts as done."""
        if self._fd is None:
            new = not self.predictions_path.exists()
            self._fd = os.open(self.predictions_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            if new:
                _fsync_dir(self.root)
        line = (pred.model_dump_json() + "\n").encode("utf-8")
        view = memoryview(line)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        if sync:
            self.sync()

    def sync(self) -> None:
        """Make every line appended so far durable (one ``fdatasync`` covers them all)."""
        if self._fd is not None:
            os.fdatasync(self._fd)

    def append_many(self, preds: Iterable[Prediction]) -> None:
        """Append several predictions with one ``fdatasync`` at the end."""
        for p in preds:
            self.append(p, sync=False)
        self.sync()

    # -- results ----------------------------------------------------------------------------------
    def write_results(self, results: dict[str, Any]) -> None:
        write_json_atomic(self.results_path, results)


def done_keys(preds: Iterable[Prediction]) -> set[tuple[str, int]]:
    return {(p.id, p.repeat) for p in preds}


def unique(preds: Iterable[Prediction]) -> Iterator[Prediction]:
    """Predictions with the first record of each ``(id, repeat)`` kept."""
    seen: set[tuple[str, int]] = set()
    for p in preds:
        key = (p.id, p.repeat)
        if key not in seen:
            seen.add(key)
            yield p
