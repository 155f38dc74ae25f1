"""A run directory: ``run.json`` (configuration), ``predictions.jsonl``, ``results.json``.

``predictions.jsonl`` is append-only: one :class:`~toollab.eval.record.Prediction` per line, each
line written with a single ``write`` and ``fsync``-ed before the next instance is counted as done.
A run killed at any point (``SIGKILL`` included) leaves at most one partial last line; reopening
the directory drops that line (and cuts it from the file, so nothing half-written remains) and
reports which ``(id, repeat)`` pairs are done, so the run continues where it stopped.

A run refuses to continue in a directory whose ``run.json`` was written with a different
configuration, naming every field that differs.  Resuming a run and ``toollab score`` check the
predictions the same way (:func:`check_predictions`): a line from another dataset, an id that is
not an instance of the run, a duplicated ``(id, repeat)`` pair or a ``repeat`` outside
``0 <= repeat < MAX_REPEATS`` (and below the run's ``repeats``) is refused.

Model output is data, whatever it holds: NUL bytes are escaped by JSON (``\u0000``) and a lone
UTF-16 surrogate (half an emoji, which OpenAI-compatible servers can return) is written as its
JSON escape (``\ud83d``), so every line is valid UTF-8 and reads back as the very same string
(:func:`json_text`).  Two adjacent lone surrogates that form a pair read back as the one
character they encode.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from toollab.data.atomic import fsync_dir, write_text_atomic
from toollab.data.jsonl import json_text, os_problem
from toollab.errors import InputError
from toollab.eval.record import Prediction

PREDICTIONS = "predictions.jsonl"
RUN_JSON = "run.json"
RESULTS = "results.json"
LOCK = ".toollab.lock"
#: the LLM judge's answers (``toollab eval --judge``; ``toollab score`` writes it beside the file)
JUDGE_CACHE = "judge_cache.jsonl"
#: the largest number of repeats a run may have; a prediction's ``repeat`` lies in [0, MAX_REPEATS)
MAX_REPEATS = 10_000

#: values nested deeper than this in a prediction's free-form fields (execution results,
#: observations, metadata) are stored as a marker string; JSON serializers refuse ~255 levels
MAX_STORED_DEPTH = 100
TOO_DEEP = "[nested too deeply to store]"


def prediction_line(pred: Prediction) -> str:
    """One ``predictions.jsonl`` line (without the newline) for ``pred``, whatever it holds: a
    lone surrogate is escaped; values nested beyond :data:`MAX_STORED_DEPTH` are cut (and the
    record says so in ``metadata["stored_truncated"]``)."""
    try:
        return pred.model_dump_json()
    except (PydanticSerializationError, ValueError):
        pass
    try:
        return json_text(pred.model_dump(mode="json"))  # a lone surrogate: escaped
    except ValueError:  # nested too deeply for the serializer
        return json_text(_shallow(pred).model_dump(mode="json"))


def _cap_depth(value: Any, depth: int = 0) -> Any:
    if depth >= MAX_STORED_DEPTH:
        return TOO_DEEP
    if isinstance(value, dict):
        return {k: _cap_depth(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cap_depth(v, depth + 1) for v in value]
    return value


def _cap_record(value: Any) -> Any:
    """A typed record (e.g. the execution record) with each of its fields cut like a value."""
    if isinstance(value, BaseModel):
        fields = {name: _cap_depth(getattr(value, name), 1) for name in type(value).model_fields}
        return type(value).model_construct(**fields)
    return _cap_depth(value)


def _shallow(pred: Prediction) -> Prediction:
    """``pred`` with its free-form values cut at :data:`MAX_STORED_DEPTH` levels."""
    update: dict[str, Any] = {
        "execution": _cap_record(pred.execution),
        "prompt": _cap_depth(pred.prompt),
        "metadata": {**_cap_depth(pred.metadata), "stored_truncated": True},
        "steps": [
            s.model_copy(update={"observation": _cap_depth(s.observation)}) for s in pred.steps
        ],
    }
    if pred.parsed is not None:
        calls = [
            c.model_copy(update={"arguments": _cap_depth(c.arguments)}) for c in pred.parsed.calls
        ]
        update["parsed"] = pred.parsed.model_copy(
            update={"calls": calls, "details": _cap_depth(pred.parsed.details)}
        )
    return pred.model_copy(update=update)


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to ``path`` through a temporary file and a rename (never half-written; a lone
    surrogate escaped); :class:`InputError` naming the path when it cannot be written."""
    write_text_atomic(path, json_text(obj, indent=2) + "\n")


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; :class:`InputError` naming the file when it is not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (at byte {exc.start})", path=path) from None
    except RecursionError:
        raise InputError("not usable JSON: nested too deeply", path=path) from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise InputError(f"not usable JSON: {exc}", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot read: {os_problem(exc)}", path=path) from None
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
    except RecursionError:
        raise InputError("not a prediction: JSON nested too deeply", path=path, line=line) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise InputError(f"not a prediction: {exc}", path=path, line=line) from None
    if not isinstance(data, dict):
        raise InputError(
            f"a prediction must be a JSON object, found {type(data).__name__}", path=path, line=line
        )
    try:
        pred = Prediction.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "record"
        raise InputError(
            f"not a prediction record: {where}: {first.get('msg')}", path=path, line=line
        ) from None
    except RecursionError:
        raise InputError("not a prediction: nested too deeply", path=path, line=line) from None
    if not 0 <= pred.repeat < MAX_REPEATS:
        raise InputError(
            f"impossible repeat {_short_int(pred.repeat)} for {pred.id!r}: a repeat lies in "
            f"0..{MAX_REPEATS - 1}",
            path=path,
            line=line,
        )
    return pred


def _short_int(value: int) -> str:
    if value.bit_length() > 64:
        return f"{'-' if value < 0 else ''}2**{value.bit_length() - 1} or more"
    return str(value)


def read_predictions(path: str | Path) -> list[Prediction]:
    """Every prediction of a JSONL file, strictly: a truncated or malformed line is an error."""
    p = Path(path)
    try:
        if not p.is_file():
            raise InputError("no such predictions file", path=p)
        with p.open("rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read: {os_problem(exc)}", path=p) from None
    out: list[Prediction] = []
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


def _check_entry(path: Path, *, directory: bool = False) -> None:
    """An :class:`InputError` when ``path`` exists but cannot be what the run needs there: a
    directory where a file belongs (or the reverse), a device, a FIFO, a socket, or a symbolic
    link (a run's own files are never links: a link would make a resumed run read, truncate or
    append to a file outside it)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise InputError("a file is where a directory should be on this path", path=path) from None
    except OSError as exc:
        raise InputError(f"cannot use: {os_problem(exc)}", path=path) from None
    if directory:
        if stat.S_ISLNK(st.st_mode):  # the run directory itself may be a link the user made
            try:
                st = os.stat(path)
            except OSError:
                raise InputError("a dangling or looping symbolic link", path=path) from None
        if not stat.S_ISDIR(st.st_mode):
            raise InputError("--out must be a directory, but a file is there", path=path)
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError("no permission to write in this run directory", path=path)
        return
    if stat.S_ISLNK(st.st_mode):
        raise InputError(
            f"is a symbolic link (to {os.readlink(path)}); a run directory keeps its own regular "
            "file here, never a link: replace it with the file or use another --out",
            path=path,
        )
    if not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise InputError(f"is {what}; a run directory keeps a regular file here", path=path)
    if not os.access(path, os.R_OK | os.W_OK):  # found now, not when the first line is written
        raise InputError("no permission to read and write this file", path=path)


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
        try:
            for entry in (
                self.root,
                self.run_path,
                self.predictions_path,
                self.results_path,
                self.root / LOCK,
                self.root / JUDGE_CACHE,
            ):
                _check_entry(entry, directory=entry == self.root)
            self._lock_fd, self._made_lock = self._lock()
        except OSError as exc:
            raise InputError(
                f"cannot use this run directory: {os_problem(exc)}", path=exc.filename or self.root
            ) from None
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
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            except FileNotFoundError:
                continue  # the directory went in between
            except FileExistsError:
                made = False
                try:
                    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
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
        _check_entry(path)
        if not path.is_file():
            return []
        try:
            with path.open("rb") as fh:
                data = fh.read()
            end = data.rfind(b"\n") + 1  # bytes up to and including the last newline
            if end < len(data):
                with path.open("r+b") as fh:
                    fh.truncate(end)
                    fh.flush()
                    os.fsync(fh.fileno())
                self.repaired_bytes = len(data) - end
        except OSError as exc:
            raise InputError(f"cannot read and repair: {os_problem(exc)}", path=path) from None
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
            _check_entry(self.predictions_path)  # never through a link put here meanwhile
            self._fd = os.open(
                self.predictions_path,
                os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW,
                0o644,
            )
            if new:
                fsync_dir(self.root)
        line = (prediction_line(pred) + "\n").encode("utf-8")
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


def _some(items: Sequence[str], n: int = 5) -> str:
    shown = ", ".join(repr(i) for i in items[:n])
    return shown + (f" and {len(items) - n} more" if len(items) > n else "")


def check_predictions(
    preds: Sequence[Prediction],
    *,
    ids: Collection[str],
    fingerprint: str | None,
    path: str | Path,
    repeats: int | None = None,
    dataset: str = "the dataset",
    advice: str = "",
) -> None:
    """Refuse predictions that cannot belong to one run: made on another dataset (fingerprint),
    ids that are not among ``ids``, a ``(id, repeat)`` pair twice, a repeat outside
    ``[0, repeats)`` (``[0, MAX_REPEATS)`` when ``repeats`` is ``None``).  ``toollab score`` and
    a resumed ``toollab eval`` both call this, so a file one accepts the other accepts.
    ``dataset`` names the data in messages; ``advice`` ends the foreign-dataset message."""
    known = ids if isinstance(ids, set | frozenset | dict) else set(ids)
    unknown = list(dict.fromkeys(p.id for p in preds if p.id not in known))
    prints = sorted({p.dataset for p in preds if p.dataset})
    if prints and prints != [fingerprint]:
        hint = f"; {len(unknown)} of its ids are not in it ({_some(unknown)})" if unknown else ""
        raise InputError(
            f"these predictions were made on another dataset (fingerprint {', '.join(prints)}) "
            f"than {dataset} (fingerprint {fingerprint}){hint}. {advice}".rstrip(),
            path=path,
        )
    if unknown:
        raise InputError(
            f"{len(unknown)} prediction id(s) are not instances of {dataset}: {_some(unknown)}",
            path=path,
        )
    top = MAX_REPEATS if repeats is None else repeats
    bad = [f"{p.id}@{_short_int(p.repeat)}" for p in preds if not 0 <= p.repeat < top]
    if bad:
        raise InputError(
            f"{len(bad)} prediction(s) have an impossible repeat (the run has {top}): {_some(bad)}",
            path=path,
        )
    seen: set[tuple[str, int]] = set()
    dups: list[str] = []
    for p in preds:
        key = (p.id, p.repeat)
        if key in seen:
            dups.append(f"{p.id}@{p.repeat}")
        seen.add(key)
    if dups:
        raise InputError(
            f"{len(dups)} prediction(s) appear more than once (id@repeat): {_some(dups)}", path=path
        )
