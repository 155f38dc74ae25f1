"""Checkpoints of a run: which ones are complete, which one to resume from, and disk space.

transformers writes a checkpoint folder in several files; a run killed while writing one leaves
a folder that looks like a checkpoint but is not.  toollab marks a checkpoint complete only once
the trainer has finished saving it (:data:`COMPLETE`), resumes from the newest complete one and
removes the unfinished ones.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from toollab.data.atomic import write_text_atomic
from toollab.errors import BackendError

COMPLETE = "toollab-complete"
_CKPT = re.compile(r"^checkpoint-(\d+)$")


def checkpoints(output_dir: Path) -> list[tuple[int, Path, bool]]:
    """``(step, folder, complete)`` of every checkpoint folder, oldest first."""
    if not output_dir.is_dir():
        return []
    out = []
    for p in output_dir.iterdir():
        m = _CKPT.match(p.name)
        if m and p.is_dir():
            out.append((int(m.group(1)), p, (p / COMPLETE).is_file()))
    return sorted(out)


def last_complete(output_dir: Path) -> Path | None:
    done = [p for _, p, ok in checkpoints(output_dir) if ok]
    return done[-1] if done else None


def drop_incomplete(output_dir: Path) -> list[Path]:
    """Remove checkpoint folders a killed run left unfinished; return them."""
    gone = [p for _, p, ok in checkpoints(output_dir) if not ok]
    for p in gone:
        shutil.rmtree(p, ignore_errors=True)
    return gone


class MarkComplete(TrainerCallback):  # type: ignore[misc]
    """After the trainer has written a checkpoint, mark it complete."""

    def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if not state.is_world_process_zero:
            return
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if folder.is_dir():
            write_text_atomic(folder / COMPLETE, json.dumps({"step": state.global_step}))


def check_disk(output_dir: Path, need_bytes: int) -> None:
    """A :class:`BackendError` now, before any step, when the run's files will not fit."""
    probe = output_dir
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < need_bytes:
        raise BackendError(
            f"not enough disk space for the run in {output_dir}: its checkpoints and final model "
            f"need about {need_bytes / 2**20:,.0f} MiB, {free / 2**20:,.0f} MiB are free "
            "(free space, lower save_total_limit, or choose another output_dir)"
        )
