"""Atomic output files for the generation pipelines (:mod:`toollab.data.atomic`), with the JSON
layout upstream's scripts write (``indent=4``).

A teacher's answer is data: whatever it holds (a lone UTF-16 surrogate, half an emoji; a NUL)
is written as its JSON escape (:func:`toollab.data.jsonl.json_text`), never a crash."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toollab.data.atomic import write_text_atomic
from toollab.data.jsonl import json_text

__all__ = ["write_json_atomic", "write_jsonl_atomic", "write_text_atomic"]


def write_json_atomic(
    path: Path, obj: Any, indent: int | None = 4, final_newline: bool = True
) -> None:
    """JSON as the upstream scripts write it (``indent=4, ensure_ascii=False``; ``json.dump``
    ends without a newline: ``final_newline=False``)."""
    text = json_text(obj, indent=indent)
    write_text_atomic(path, text + "\n" if final_newline else text)


def write_jsonl_atomic(path: Path, records: Iterable[Any]) -> None:
    """One JSON object per line."""
    write_text_atomic(path, "".join(json_text(r) + "\n" for r in records))
