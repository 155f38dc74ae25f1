"""Where training writes: a run's ``output_dir`` and an export's folder, checked before any work.

A run folder holds toollab's mark (:data:`toollab.data.atomic.FOLDER_MARK`, written when the
run starts, and the ``written_by`` field of ``run.json``).  Started on a folder that exists, a
run goes on (resumes) when the folder is a toollab run — marked, or holding a ``run.json`` of an
older toollab run (an object with a ``status``) — or is empty; a folder holding
anything else is refused before the base model loads, unless ``force``.  An export's folder
keeps a GGUF toollab did not write the same way (:func:`check_export_folder`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from toollab.data.atomic import carries_mark, check_output_folder, folder_marked
from toollab.errors import InputError

RUN_RECORD = "run.json"


def _old_run_record(path: Path) -> bool:
    """``run.json`` as toollab wrote it before it carried the mark."""
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(info, dict) and isinstance(info.get("status"), str)


def is_toollab_run(out: Path) -> bool:
    """Whether ``out`` is a folder toollab's training wrote (see the module docstring)."""
    record = out / RUN_RECORD
    return folder_marked(out) or carries_mark(record) or _old_run_record(record)


def check_run_folder(out: str | Path, *, force: bool = False) -> Path:
    """``out`` when a run may write there: absent, an empty folder or a toollab run (it then
    resumes as configured); an :class:`InputError` naming it for a file, or a folder of other
    files unless ``force``."""
    out = Path(out)
    if not out.exists():
        return out
    if not out.is_dir():
        raise InputError("output_dir exists and is not a folder", path=out)
    try:
        empty = not any(os.scandir(out))
    except OSError as exc:
        raise InputError(f"cannot read the folder: {exc.strerror or exc}", path=out) from None
    if empty or force or is_toollab_run(out):
        return out
    raise InputError(
        "output_dir holds files and no toollab run (no toollab mark, no run.json); toollab does "
        "not write its run over them: choose another output_dir, or pass force: true (--force)",
        path=out,
    )


def export_files(what: Iterable[str]) -> list[str]:
    """The GGUF files an export of ``what`` (adapter, f32, f16, q8_0) writes."""
    return [("adapter.gguf" if kind == "adapter" else f"model-{kind}.gguf") for kind in what]


def check_export_folder(dest: str | Path, what: Iterable[str], *, force: bool = False) -> Path:
    """Refuse (before any work) a GGUF of :func:`export_files` in ``dest`` that toollab did not
    write (the folder holds no toollab mark) unless ``force``."""
    return check_output_folder(dest, export_files(what), force=force)
