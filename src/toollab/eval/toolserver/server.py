"""A simulated tool server: real tool schemas answered offline, as a :class:`CallExecutor`.

:class:`ToolServer` executes one instance's calls.  A call goes through what a real API does
before it answers:

* a tool the instance does not offer gets a 404 error body naming the offered ones;
* arguments that do not fit the tool's schema (toollab's validation,
  :func:`toollab.tools.validation.validate_arguments`: a missing required parameter, an unknown
  one, a wrong type, a value outside an ``enum``) get a 400 error body listing every reason;
* a valid call is answered from the cache when it was answered before (:mod:`.cache`), else by
  the server's :class:`Backend` — the schema simulator (:class:`SchemaBackend`, deterministic:
  seeded by the call's key) or a model that plays the API (:mod:`.model_backend`) — and the
  answer is kept.

The error bodies are observations, not exceptions: the model reads them as it would read an
API's.  The server also plays the user when the model asks (:meth:`ToolServer.ask_user`,
ToolEyes' ``ask_to_user``), through a :class:`~toollab.eval.toolserver.user.SimulatedUser`.
:class:`ServerStats` counts what every server of a run did (calls, cache hits, rejected calls,
notes on repaired answers, time).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from toollab.errors import did_you_mean
from toollab.eval.toolserver.cache import CachedAnswer, ResponseCache, call_key
from toollab.eval.toolserver.user import SimulatedUser
from toollab.eval.toolserver.values import fake_value, response_schema
from toollab.schema import Instance, Tool, ToolCall
from toollab.schema.json import JsonValue
from toollab.templates.render import json_arguments
from toollab.tools.validation import validate_arguments

#: tools the agent handles itself (ToolEyes' control actions): never sent to the server
CONTROL_TOOLS = ("finish", "ask_to_user")


@dataclass
class Answer:
    """A backend's answer to one call: the observation, notes on how it was made (``non_json``,
    ``truncated``, ``looping``, ``model_error``, ...) and whether it may be cached."""

    observation: JsonValue
    notes: list[str] = field(default_factory=list)
    cacheable: bool = True


class Backend(Protocol):
    """What answers a valid call that the cache does not hold."""

    #: names the cache file: answers of different backends never mix
    cache_name: str

    async def respond(self, tool: Tool, arguments: dict[str, Any], key: str) -> Answer: ...


class SchemaBackend:
    """The deterministic simulator: a response drawn from the tool's schema
    (:func:`~toollab.eval.toolserver.values.response_schema`) with a generator seeded by the
    call's key, so the same call always gets the same answer."""

    cache_name = "sim"

    async def respond(self, tool: Tool, arguments: dict[str, Any], key: str) -> Answer:
        rng = random.Random(int(key[:16], 16))
        return Answer(fake_value(response_schema(tool, arguments, rng), rng))


@dataclass
class ServerStats:
    """What the servers of one run did."""

    calls: int = 0
    cache_hits: int = 0
    answered: int = 0
    #: calls refused: arguments that do not fit the schema
    rejected: int = 0
    #: calls of a tool the instance does not offer
    unknown_tool: int = 0
    #: answers that could not be made (not cached)
    failed: int = 0
    user_turns: int = 0
    #: how answers were repaired (``non_json``, ``truncated``, ``looping``, ...)
    notes: Counter[str] = field(default_factory=Counter)
    #: seconds spent answering calls (validation, cache, backend)
    seconds: float = 0.0

    @property
    def hit_rate(self) -> float | None:
        """Cache hits over the valid calls (``None`` before any)."""
        valid = self.cache_hits + self.answered + self.failed
        return self.cache_hits / valid if valid else None

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "answered": self.answered,
            "rejected": self.rejected,
            "unknown_tool": self.unknown_tool,
            "failed": self.failed,
            "user_turns": self.user_turns,
            "hit_rate": self.hit_rate,
            "notes": dict(sorted(self.notes.items())),
            "seconds": round(self.seconds, 6),
            "seconds_per_call": round(self.seconds / self.calls, 6) if self.calls else None,
        }


def api_error(code: int, status: str, message: str, details: list[str] | None = None) -> JsonValue:
    """An error body as REST APIs write them."""
    body: dict[str, JsonValue] = {"code": code, "status": status, "message": message}
    if details:
        body["details"] = list(details)
    return {"error": body}


class ToolServer:
    """The simulated API of one instance's tools (see the module docs)."""

    def __init__(
        self,
        instance: Instance,
        backend: Backend,
        cache: ResponseCache,
        *,
        stats: ServerStats | None = None,
        user: SimulatedUser | None = None,
    ) -> None:
        self.instance = instance
        self.tools = {t.name: t for t in instance.tools if t.name not in CONTROL_TOOLS}
        self.backend = backend
        self.cache = cache
        self.stats = stats if stats is not None else ServerStats()
        self.user = user

    async def execute(self, call: ToolCall) -> JsonValue:
        t0 = time.perf_counter()
        try:
            return await self._answer(call)
        finally:
            self.stats.calls += 1
            self.stats.seconds += time.perf_counter() - t0

    async def _answer(self, call: ToolCall) -> JsonValue:
        tool = self.tools.get(call.name)
        if tool is None:
            self.stats.unknown_tool += 1
            names = sorted(self.tools)
            return api_error(
                404,
                "Not Found",
                f"no endpoint {call.name!r}{did_you_mean(call.name, names)}; "
                f"this API offers: {', '.join(names) or 'nothing'}",
            )
        arguments: dict[str, Any] = json_arguments(call.arguments)
        reasons = validate_arguments(tool, arguments)
        if reasons:
            self.stats.rejected += 1
            return api_error(
                400, "Bad Request", f"invalid arguments for {tool.name!r}: {reasons[0]}", reasons
            )
        key = call_key(tool, arguments)
        cached = self.cache.get(key)
        if cached is not None:
            self.stats.cache_hits += 1
            return cached.observation  # type: ignore[no-any-return]  # JSON read back
        answer = await self.backend.respond(tool, arguments, key)
        self.stats.notes.update(answer.notes)
        if not answer.cacheable:
            self.stats.failed += 1
            return answer.observation
        self.stats.answered += 1
        self.cache.put(key, tool.name, arguments, CachedAnswer(answer.observation, answer.notes))
        return answer.observation

    async def ask_user(self, question: str) -> str | None:
        """The simulated user's reply to the model's question, or ``None`` when there is no
        user or it has answered all the turns it may."""
        if self.user is None:
            return None
        reply = await self.user.reply(self.instance.query, question)
        if reply is not None:
            self.stats.user_turns += 1
        return reply
