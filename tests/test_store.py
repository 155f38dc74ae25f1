"""The run directory's lock: one writer at a time, also while a run that wrote nothing cleans up."""

from __future__ import annotations

import fcntl
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from toollab.errors import InputError
from toollab.eval import store
from toollab.eval.store import LOCK, RUN_JSON, RunStore


def test_one_writer_at_a_time(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with RunStore(out) as first:
        first.prepare({"model": "m"}, ["model"])
        with pytest.raises(InputError, match="another toollab process is writing"):
            RunStore(out).__enter__()
    with RunStore(out):  # released on close; the run's files (lock included) stay
        assert (out / RUN_JSON).is_file() and (out / LOCK).is_file()


def test_a_run_that_wrote_nothing_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with RunStore(out):
        assert (out / LOCK).is_file()
    assert not out.exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    with RunStore(existing):
        pass
    assert existing.is_dir() and list(existing.iterdir()) == []


def _pause_before_locking(monkeypatch: pytest.MonkeyPatch, meanwhile: Any) -> None:
    """The next exclusive lock the store asks for runs ``meanwhile()`` first: another process
    acting between this one's open() of the lock file and its flock()."""
    armed = [True]

    def flock(fd: int, op: int) -> None:
        if armed[0] and op & fcntl.LOCK_EX:
            armed[0] = False
            meanwhile()
        fcntl.flock(fd, op)

    fake = SimpleNamespace(
        flock=flock, LOCK_EX=fcntl.LOCK_EX, LOCK_NB=fcntl.LOCK_NB, LOCK_UN=fcntl.LOCK_UN
    )
    monkeypatch.setattr(store, "fcntl", fake)


def test_a_removed_lock_file_gives_no_second_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holder of a run that wrote nothing removes the lock file (and the directory it made)
    on close.  A second process that opened the file just before gets the lock on a file that is
    gone: it must notice and lock the file at the path, so that a third is refused."""
    out = tmp_path / "run"
    first = RunStore(out).__enter__()
    _pause_before_locking(monkeypatch, first.close)
    second = RunStore(out).__enter__()
    monkeypatch.setattr(store, "fcntl", fcntl)
    assert (out / LOCK).is_file()  # the second holds the file the path names
    with pytest.raises(InputError, match="another toollab process is writing"):
        RunStore(out).__enter__()
    second.prepare({"model": "m"}, ["model"])
    second.close()
    with RunStore(out) as third:
        assert third.existing_config() == {"model": "m"}


def test_the_lock_file_goes_while_the_lock_is_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The unlink happens before the unlock: by the time anyone can take the lock on the old
    file, the path no longer names it."""
    out = tmp_path / "run"
    seen: list[str] = []
    holder = RunStore(out).__enter__()
    real_unlink = Path.unlink

    def unlink(self: Path, missing_ok: bool = False) -> None:
        if self.name == LOCK:
            probe = self.open("a")
            try:
                fcntl.flock(probe.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                seen.append("unlocked")
            except OSError:
                seen.append("held")
            finally:
                probe.close()
        real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    holder.close()
    assert seen == ["held"]
    assert not out.exists()
