"""Atomic output files: written to a temporary file beside the target, fsync'd, then renamed, so a
reader (or a killed run) never sees half a file."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    _fsync_dir(path.parent)


def write_json_atomic(
    path: Path, obj: Any, indent: int | None = 4, final_newline: bool = True
) -> None:
    """JSON as the upstream scripts write it (``indent=4, ensure_ascii=False``; ``json.dump``
    ends without a newline: ``final_newline=False``)."""
    text = json.dumps(obj, ensure_ascii=False, indent=indent)
    write_text_atomic(path, text + "\n" if final_newline else text)


def write_jsonl_atomic(path: Path, records: Iterable[Any]) -> None:
    write_text_atomic(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


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
