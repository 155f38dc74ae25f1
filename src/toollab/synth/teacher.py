"""A teacher model for data-generation pipelines: bounded concurrency, retries with backoff,
per-request timeouts, an on-disk answer cache and accounting.

:class:`Teacher` wraps any :class:`~toollab.models.Model` (``openai:<model>@<url>`` for a vLLM
server, ``bundled:smollm2-135m``, ``fake:`` in tests).  A pipeline asks through
:meth:`Teacher.ask` with a *check*: a function that turns the answer text into a value or raises
:class:`Reject` with a reason.  What happens to one question:

* the answer is looked up in the cache (key: teacher name, prompt or messages, decoding options
  and the attempt number); a hit costs nothing;
* otherwise the model is asked, at most ``concurrency`` requests in flight, each bounded by
  ``timeout_s``; a failure (timeout, backend error) is retried with exponential
  backoff up to ``retries`` times, and counted by reason; failures are not cached, so a re-run
  asks again;
* an answer is appended to the cache (one ``write`` + ``fsync`` per line) before it is checked;
* an answer the check rejects is counted under ``<stage>: <reason>`` and the question is asked
  again as a new *attempt* (a different sampling seed), up to ``attempts`` times.

After ``max_consecutive_failures`` failed requests in a row the teacher is taken as down: the
remaining questions fail at once (counted as ``teacher down``) so the run ends quickly with
everything answered so far in the cache; running the same command again resumes.

The cache is JSON lines; a line torn by a kill (the last one, without its newline) is cut off
when the cache is opened, and any other unreadable line is an :class:`InputError` naming it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from toollab.data.jsonl import escape_surrogates, json_text
from toollab.errors import BackendError, InputError
from toollab.models import ChatRequest, GenerateOptions, Model, ModelOutput, load_model
from toollab.models.registry import check_model_string
from toollab.synth import options as opt
from toollab.synth.options import check_fields

T = TypeVar("T")
R = TypeVar("R")

#: the reason a failed request is counted under
TIMEOUT = "timeout"
EMPTY = "empty answer"
DOWN = "teacher down"


class TeacherDown(BackendError):
    """The teacher stopped answering mid-run; what it answered is cached, a re-run resumes."""


class Reject(Exception):
    """Raised by a check: the teacher's answer is unusable, for ``reason`` (a short, fixed
    phrase: answers are counted by it)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass
class TeacherConfig:
    """How a pipeline drives its teacher (the CLI flags of ``toollab data synth``)."""

    #: model string (``openai:<model>@<url>``, ``bundled:smollm2-135m``, ``fake:...``)
    model: str = "bundled:smollm2-135m"
    #: requests in flight at once (default: what the backend says it can take)
    concurrency: int | None = None
    #: retries of a failed request (timeout, backend error)
    retries: int = 3
    #: first backoff in seconds; doubled on each retry, capped at 30 s
    backoff_s: float = 1.0
    #: seconds one request may take
    timeout_s: float = 300.0
    #: times a question is asked when its answers are rejected (DEER and Seal-Tools: 3 to 5)
    attempts: int = 3
    #: failed requests in a row after which the teacher is taken as down
    max_consecutive_failures: int = 20
    max_tokens: int = 1024
    #: sampling temperature (upstream pipelines used the API's default sampling)
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0

    def check(self) -> None:
        """Each field against its rule (finite, in range: :mod:`toollab.synth.options`) and the
        model string (its provider known, its model part there where needed), loading nothing:
        an :class:`InputError` / :class:`UsageError` naming the field."""
        check_fields(
            "TeacherConfig",
            {
                "model": (str, self.model),
                "concurrency": (opt.Concurrency | None, self.concurrency),
                "retries": (opt.Retries, self.retries),
                "backoff_s": (opt.Backoff, self.backoff_s),
                "timeout_s": (opt.Timeout, self.timeout_s),
                "attempts": (opt.Attempts, self.attempts),
                "max_consecutive_failures": (opt.FailuresInARow, self.max_consecutive_failures),
                "max_tokens": (opt.MaxTokens, self.max_tokens),
                "temperature": (opt.Temperature, self.temperature),
                "top_p": (opt.Share, self.top_p),
                "seed": (opt.Seed, self.seed),
            },
        )
        check_model_string(self.model)


@dataclass
class TeacherStats:
    """What the teacher did: requests, cache hits, failures and rejections by reason, tokens."""

    questions: int = 0
    requests: int = 0
    cache_hits: int = 0
    answered: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: tokens the cache saved (usage recorded with the cached answers)
    cached_tokens: int = 0
    request_s: float = 0.0
    failures: Counter[str] = field(default_factory=Counter)
    rejected: Counter[str] = field(default_factory=Counter)
    accepted: Counter[str] = field(default_factory=Counter)
    gave_up: Counter[str] = field(default_factory=Counter)

    @property
    def cache_hit_rate(self) -> float:
        total = self.cache_hits + self.answered
        return self.cache_hits / total if total else 0.0

    def pass_rates(self) -> dict[str, dict[str, Any]]:
        """Per stage: answers checked, accepted, rejected (by reason) and the pass rate."""
        stages = {k.split(": ", 1)[0] for k in self.rejected} | set(self.accepted)
        out: dict[str, dict[str, Any]] = {}
        for stage in sorted(stages):
            reasons = {
                k.split(": ", 1)[1]: v
                for k, v in sorted(self.rejected.items())
                if k.split(": ", 1)[0] == stage
            }
            ok = self.accepted.get(stage, 0)
            checked = ok + sum(reasons.values())
            out[stage] = {
                "checked": checked,
                "accepted": ok,
                "rejected": reasons,
                "pass_rate": round(ok / checked, 4) if checked else None,
                "gave_up": self.gave_up.get(stage, 0),
            }
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "requests": self.requests,
            "answered": self.answered,
            "cache_hits": self.cache_hits,
            "cache_hit_rate": round(self.cache_hit_rate, 4),
            "retries": self.retries,
            "failures": dict(sorted(self.failures.items())),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "request_s": round(self.request_s, 3),
            "checks": self.pass_rates(),
        }


class AnswerCache:
    """Teacher answers on disk, one JSON line each: ``{key, text, usage}``; resumable."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._data: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.repaired = False
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        if path.is_dir():
            raise InputError("the teacher cache is a directory, expected a file", path=path)
        if not path.exists():  # made with its first answer
            return
        raw = path.read_bytes()
        *complete, tail = raw.split(b"\n")
        for n, line in enumerate(complete, 1):
            if line.strip():
                entry = _entry(line)
                if entry is None:
                    raise InputError(
                        "unreadable teacher cache line; delete the file to start afresh",
                        path=path,
                        line=n,
                    )
                self._data[entry["key"]] = entry
        if not tail.strip():
            return
        # the last line lacks its newline: a kill tore it (cut it off) or only the newline is
        # missing (keep it and end it)
        entry = _entry(tail)
        with path.open("r+b") as fh:
            if entry is None:
                fh.truncate(len(raw) - len(tail))
                self.repaired = True
            else:
                self._data[entry["key"]] = entry
                fh.seek(0, os.SEEK_END)
                fh.write(b"\n")
            fh.flush()
            os.fsync(fh.fileno())

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: str) -> dict[str, Any] | None:
        return self._data.get(key)

    def put(self, key: str, text: str, usage: dict[str, int]) -> None:
        entry = {"key": key, "text": text, "usage": usage}
        with self._lock:
            self._data[key] = entry
            if self.path is None:
                return
            # json_text: a lone surrogate in the answer is stored as its escape, never a crash
            line = (json_text(entry) + "\n").encode("utf-8")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("ab") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())


def sendable(text: str) -> str:
    """``text`` with each lone UTF-16 surrogate (half a character, which an earlier answer may
    hold) replaced by U+FFFD: a request must encode as UTF-8 to reach a server."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    return text


def cache_key(teacher: str, req: ChatRequest, attempt: int) -> str:
    """sha256 of the teacher name, prompt / messages, decoding options and the attempt."""
    payload = {
        "teacher": teacher,
        "prompt": req.prompt,
        "messages": req.messages,
        "options": req.options.model_dump(mode="json"),
        "attempt": attempt,
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(escape_surrogates(blob).encode("utf-8")).hexdigest()


@dataclass
class Answer(Generic[T]):
    """The checked value of one question (``None`` when every attempt failed or was rejected)."""

    value: T | None
    attempts: int
    reasons: list[str]


ProgressHook = Callable[[str, int], None]


class Teacher:
    """Ask a model many questions, checked, cached and counted."""

    def __init__(
        self,
        model: Model | str,
        config: TeacherConfig | None = None,
        cache: Path | str | None = None,
        progress: ProgressHook | None = None,
    ) -> None:
        self.config = config or TeacherConfig()
        self.config.check()
        self.model = load_model(model) if isinstance(model, str) else model
        self.name = getattr(self.model, "name", None) or str(model)
        self.cache = AnswerCache(Path(cache) if cache is not None else None)
        self.stats = TeacherStats()
        self.progress = progress
        self._sem: asyncio.Semaphore | None = None
        self._consecutive_failures = 0

    @property
    def concurrency(self) -> int:
        return max(1, self.config.concurrency or self.model.max_concurrency)

    @property
    def down(self) -> bool:
        return self._consecutive_failures >= self.config.max_consecutive_failures

    def options(self, attempt: int, **overrides: Any) -> GenerateOptions:
        c = self.config
        opts: dict[str, Any] = {
            "max_tokens": c.max_tokens,
            "temperature": c.temperature,
            "top_p": c.top_p,
            "seed": c.seed + attempt,
        }
        opts.update(overrides)
        return GenerateOptions(**opts)

    def request_for(
        self, prompt: str, *, system: str | None = None, attempt: int = 0, **options: Any
    ) -> ChatRequest:
        """The chat request of one question (the user message, after an optional system one)."""
        messages: list[dict[str, Any]] = []
        if system:
            messages.append({"role": "system", "content": sendable(system)})
        messages.append({"role": "user", "content": sendable(prompt)})
        return ChatRequest(messages=messages, options=self.options(attempt, **options))

    # -- one request ------------------------------------------------------------------------
    async def complete(self, req: ChatRequest, attempt: int = 0) -> str | None:
        """The answer text of one request (cache, retries, timeout); ``None`` when it failed."""
        key = cache_key(self.name, req, attempt)
        hit = self.cache.get(key)
        if hit is not None:
            self.stats.cache_hits += 1
            usage = hit.get("usage") or {}
            self.stats.cached_tokens += int(usage.get("prompt_tokens", 0)) + int(
                usage.get("completion_tokens", 0)
            )
            return str(hit.get("text", ""))
        delay = self.config.backoff_s
        for retry in range(self.config.retries + 1):
            if self.down:
                self.stats.failures[DOWN] += 1
                return None
            if retry:
                self.stats.retries += 1
                await asyncio.sleep(min(delay, 30.0))
                delay *= 2
            out = await self._request(req)
            reason = _failure(out)
            if reason is None:
                self._consecutive_failures = 0
                self.stats.answered += 1
                usage = {
                    "prompt_tokens": out.usage.prompt_tokens,
                    "completion_tokens": out.usage.completion_tokens,
                }
                self.stats.prompt_tokens += usage["prompt_tokens"]
                self.stats.completion_tokens += usage["completion_tokens"]
                # the write and its fsync run off the event loop: other requests go on meanwhile
                await asyncio.to_thread(self.cache.put, key, out.text, usage)
                return out.text
            self._consecutive_failures += 1
            self.stats.failures[reason] += 1
        return None

    async def _request(self, req: ChatRequest) -> ModelOutput:
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.concurrency)
        async with self._sem:
            self.stats.requests += 1
            t0 = time.perf_counter()
            try:
                out = await asyncio.wait_for(
                    self.model.safe_request(req), timeout=self.config.timeout_s
                )
            except TimeoutError:
                out = ModelOutput(error=TIMEOUT)
            self.stats.request_s += time.perf_counter() - t0
            return out

    # -- one checked question ----------------------------------------------------------------
    async def ask(
        self,
        stage: str,
        make_request: Callable[[int], ChatRequest],
        check: Callable[[str], T],
        attempts: int | None = None,
    ) -> Answer[T]:
        """Ask until ``check`` accepts an answer: ``make_request(attempt)`` builds each attempt's
        request (a pipeline may vary it, e.g. new sampled values); rejections are counted under
        ``stage``."""
        self.stats.questions += 1
        reasons: list[str] = []
        n = attempts or self.config.attempts
        for attempt in range(n):
            text = await self.complete(make_request(attempt), attempt)
            if text is None:
                reasons.append("teacher failed")
                if self.down:
                    break
                continue
            try:
                if not text.strip():
                    raise Reject(EMPTY)
                value = check(text)
            except Reject as rej:
                self.stats.rejected[f"{stage}: {rej.reason}"] += 1
                reasons.append(rej.reason)
                continue
            self.stats.accepted[stage] += 1
            return Answer(value, attempt + 1, reasons)
        self.stats.gave_up[stage] += 1
        return Answer(None, n, reasons)

    async def map(self, stage: str, items: Sequence[R], fn: Callable[[R], Awaitable[T]]) -> list[T]:
        """``fn`` over ``items`` concurrently (requests stay bounded by the semaphore), results
        in order; the progress hook hears of each finished item."""
        done = 0

        async def one(item: R) -> T:
            nonlocal done
            result = await fn(item)
            done += 1
            if self.progress is not None:
                self.progress(stage, done)
            return result

        if self.progress is not None:
            self.progress(stage, -len(items))  # announces the stage and its size
        return list(await asyncio.gather(*(one(i) for i in items)))

    def check_alive(self, where: str) -> None:
        """Raise :class:`TeacherDown` when the teacher went down during ``where``."""
        if self.down:
            raise TeacherDown(
                f"the teacher {self.name} stopped answering during {where} "
                f"({self.config.max_consecutive_failures} failed requests in a row: "
                f"{dict(self.stats.failures)}); {len(self.cache)} answers are cached in "
                f"{self.cache.path}: run the same command again to resume"
            )

    def close(self) -> None:
        self.model.close()


def _entry(line: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("key"), str):
        return None
    return entry


def _failure(out: ModelOutput) -> str | None:
    if out.error:
        if out.error == TIMEOUT:
            return TIMEOUT
        return out.error.split(":", 1)[0] or "error"
    return None
