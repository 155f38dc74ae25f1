"""The simulated tool server's answers on disk, so that a rerun gets the very same answers.

One JSON-lines file per server (``sim.jsonl`` for the schema simulator, ``model-<hash>.jsonl``
for a model-played one) in the cache folder.  Each answer is keyed by the sha256 of the tool's
name, its schema and the call's arguments in canonical JSON (:func:`call_key`), so two tools of
one name with different schemas never share an answer and argument order does not matter.  A
line holds the key, the call, the observation and the notes of how it was made
(``non_json``, ``truncated``, ``looping``, ...).  Lines are appended under an exclusive lock
(several runs may share one folder); a torn last line of an interrupted run is skipped when the
file is read.  Answers that could not be made (a model error) are never stored: a later run asks
again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.errors import InputError
from toollab.schema import Tool
from toollab.schema.measures import canonical_json


def call_key(tool: Tool, arguments: dict[str, Any]) -> str:
    """The cache key of a call: sha256 over the tool's name and schema and the arguments."""
    blob = canonical_json(
        {
            "tool": tool.name,
            "schema": {"description": tool.description, "parameters": tool.parameters},
            "returns": tool.returns,
            "arguments": arguments,
        }
    )
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class CachedAnswer:
    """One stored answer."""

    observation: Any
    notes: list[str] = field(default_factory=list)


class ResponseCache:
    """The answers of one server, read from and appended to ``folder / name``; ``folder``
    ``None`` keeps them in memory only."""

    def __init__(self, folder: str | Path | None, name: str) -> None:
        self.path = Path(folder) / f"{name}.jsonl" if folder is not None else None
        self._answers: dict[str, CachedAnswer] = {}
        self._lock = threading.Lock()
        #: lines of the file that could not be read (a torn last line, a foreign line)
        self.skipped = 0
        if self.path is not None:
            self._check_folder(self.path.parent)
            if self.path.is_file():
                self._load(self.path)

    @staticmethod
    def _check_folder(folder: Path) -> None:
        if folder.exists() and not folder.is_dir():
            raise InputError("the tool cache must be a folder, but a file is there", path=folder)

    def _load(self, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the tool cache: {exc}", path=path) from None
        for line in text.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                self.skipped += 1
                continue
            if not isinstance(rec, dict) or not isinstance(rec.get("key"), str):
                self.skipped += 1
                continue
            notes = rec.get("notes")
            self._answers[rec["key"]] = CachedAnswer(
                rec.get("observation"),
                [str(n) for n in notes] if isinstance(notes, list) else [],
            )

    def __len__(self) -> int:
        return len(self._answers)

    def get(self, key: str) -> CachedAnswer | None:
        return self._answers.get(key)

    def put(self, key: str, tool: str, arguments: Any, answer: CachedAnswer) -> None:
        """Keep ``answer`` and append it to the file (under an exclusive lock)."""
        with self._lock:
            self._answers[key] = answer
            if self.path is None:
                return
            line = json.dumps(
                {
                    "key": key,
                    "tool": tool,
                    "arguments": arguments,
                    "observation": answer.observation,
                    "notes": answer.notes,
                },
                ensure_ascii=True,  # a lone surrogate in a model's text cannot break the file
                default=str,
            )
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as fh:
                    fcntl.flock(fh, fcntl.LOCK_EX)
                    try:
                        fh.write(line + "\n")
                        fh.flush()
                    finally:
                        fcntl.flock(fh, fcntl.LOCK_UN)
            except OSError as exc:
                raise InputError(
                    f"cannot write the tool cache: {exc.strerror or exc}", path=self.path
                ) from None
