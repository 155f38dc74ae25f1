"""Atomic output files for the generation pipelines (:mod:`toollab.data.atomic`), with the JSON
layout upstream's scripts write (``indent=4``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toollab.data.atomic import write_json_atomic as _write_json
from toollab.data.atomic import write_jsonl_atomic, write_text_atomic

__all__ = ["write_json_atomic", "write_jsonl_atomic", "write_text_atomic"]


def write_json_atomic(
    path: Path, obj: Any, indent: int | None = 4, final_newline: bool = True
) -> None:
    """JSON as the upstream scripts write it (``indent=4, ensure_ascii=False``; ``json.dump``
    ends without a newline: ``final_newline=False``)."""
    _write_json(path, obj, indent=indent, final_newline=final_newline)
