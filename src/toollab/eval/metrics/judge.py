"""An LLM judge with an on-disk cache.

Any :class:`toollab.models.base.Model` can judge.  The decoding is ToolEyes' judge call
(``Code/Evaluation/util/utils.py: query_with_gpt``): ``max_tokens=1024``, ``temperature=0``,
``top_p=0.5``.  Each request is keyed by the sha256 of the judge model's name, the decoding
options and the prompt messages; answers are appended to a JSONL cache file, so re-scoring a run
asks nothing again.  The cache path is checked when the judge is made (an :class:`InputError`
naming it when answers could not be written there); a write that fails later is noted
(:attr:`Judge.cache_error`) and never costs the figures.  The score is read the upstream way — the first ``10`` or digit after
``Evaluation Score:`` — with fallbacks for judges that drift from the format.  The ToolEyes
prompts are in :mod:`.tooleyes_prompts`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from toollab.data.atomic import check_target
from toollab.errors import InputError
from toollab.models.base import ChatRequest, GenerateOptions, Model, run_sync

Message = dict[str, str]

_SCORE_LINE = re.compile(r"Evaluation Score\s*:[^\n]*", re.IGNORECASE)
_FIRST = re.compile(r"(10|\d)")
_ANY_SCORE = re.compile(r"\b(10|[1-9])(?:\s*/\s*10)?\b")


def parse_judge_score(text: str) -> int | None:
    """The 1–10 score in a judge's answer, or ``None`` when there is none.

    Upstream reads the first ``10`` or digit on the ``Evaluation Score:`` line.  When that line
    is missing, the last stand-alone number 1–10 of the answer (``"8/10"``, ``"Score: 7"``) is
    taken.
    """
    if not isinstance(text, str) or not text:
        return None
    lines = _SCORE_LINE.findall(text)
    for line in lines:
        m = _FIRST.search(line.split(":", 1)[1])
        if m:
            return int(m.group(1))
    hits = _ANY_SCORE.findall(text)
    return int(hits[-1]) if hits else None


def check_cache_path(path: str | Path) -> Path:
    """``path`` when judge answers can be appended to it (an existing file, or one that can be
    created); an :class:`InputError` naming it otherwise.  Creates nothing."""
    p = Path(path)
    if p.is_dir():
        raise InputError("the judge cache must be a file, but a directory is there", path=p)
    if os.path.lexists(p):  # a device, a FIFO, a socket, a link out of its folder: refused
        check_target(p)
    if p.exists():
        try:
            with p.open("a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise InputError(
                f"cannot write the judge cache: {exc.strerror or exc}", path=p
            ) from None
        return p
    folder = p.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise InputError(
            f"cannot create the judge cache: {folder} is a file, not a directory", path=p
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"cannot create the judge cache: {folder} is not writable", path=p)
    return p


class Verdict(BaseModel):
    score: int | None
    reason: str
    cached: bool = False
    error: str | None = None


class Judge:
    """Asks ``model`` and caches the answers in ``cache_path`` (JSONL)."""

    def __init__(
        self,
        model: Model,
        cache_path: str | Path | None = None,
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        top_p: float = 0.5,
        concurrency: int | None = None,
    ) -> None:
        self.model = model
        self.cache_path = check_cache_path(cache_path) if cache_path else None
        #: why answers could not be appended to the cache (they are still used), or ``None``
        self.cache_error: str | None = None
        self.options = GenerateOptions(max_tokens=max_tokens, temperature=temperature, top_p=top_p)
        self.concurrency = concurrency
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()
        self.requests_made = 0
        if self.cache_path and self.cache_path.exists():
            self._load(self.cache_path)

    @property
    def name(self) -> str:
        return getattr(self.model, "name", type(self.model).__name__)

    def key(self, messages: list[Message]) -> str:
        opts = self.options
        decoding = [opts.max_tokens, opts.temperature, opts.top_p]
        blob = json.dumps([self.name, decoding, messages], ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()

    def _load(self, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"judge cache is not UTF-8 text ({exc.reason} at byte {exc.start})", path=path
            ) from exc
        except OSError as exc:
            raise InputError(f"cannot read the judge cache: {exc.strerror}", path=path) from exc
        for line in text.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a torn last line from an interrupted run
            if isinstance(rec, dict) and isinstance(rec.get("key"), str):
                self._cache[rec["key"]] = str(rec.get("text", ""))

    def _store(self, key: str, text: str) -> None:
        self._cache[key] = text
        if self.cache_path is None or self.cache_error is not None:
            return
        # ASCII escapes: a lone surrogate in a model's text cannot break the cache file
        line = json.dumps({"key": key, "judge": self.name, "text": text}, ensure_ascii=True)
        try:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            with self._lock, self.cache_path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
        except OSError as exc:  # the answer is kept in memory: the figures do not depend on it
            self.cache_error = (
                f"judge answers not cached in {self.cache_path}: {exc.strerror or exc}"
            )

    def ask_many(self, prompts: list[list[Message]]) -> list[Verdict]:
        """Judge every prompt (cached ones are not asked again); order is kept."""
        keys = [self.key(p) for p in prompts]
        todo: dict[str, list[Message]] = {}
        for k, p in zip(keys, prompts, strict=True):
            if k not in self._cache and k not in todo:
                todo[k] = p
        errors: dict[str, str] = {}
        if todo:
            reqs = [
                ChatRequest(messages=list(p), options=self.options, tag=k) for k, p in todo.items()
            ]
            outs = run_sync(self.model.batch(reqs, self.concurrency))
            self.requests_made += len(reqs)
            for k, out in zip(todo, outs, strict=True):
                if out.error:
                    errors[k] = out.error  # not cached: a later run may succeed
                else:
                    self._store(k, out.text)
        verdicts = []
        for k in keys:
            if k in errors:
                verdicts.append(Verdict(score=None, reason="", error=errors[k]))
                continue
            text = self._cache.get(k, "")
            verdicts.append(
                Verdict(score=parse_judge_score(text), reason=text, cached=k not in todo)
            )
        return verdicts

    def ask(self, messages: list[Message]) -> Verdict:
        return self.ask_many([messages])[0]


def as_judge(value: Any, cache_path: str | Path | None = None) -> Judge | None:
    """Accept a :class:`Judge`, a :class:`Model` (wrapped) or ``None``."""
    if value is None or isinstance(value, Judge):
        return value
    if isinstance(value, Model):
        return Judge(value, cache_path)
    raise TypeError(f"a judge must be a toollab Model or Judge, got {type(value).__name__}")
