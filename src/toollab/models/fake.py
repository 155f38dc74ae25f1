"""A deterministic scripted model for control-flow tests.

``FakeModel(outputs=[...])`` answers the n-th request with the n-th output; an output may be a
string, a :class:`ModelOutput` (e.g. with native ``tool_calls``) or an exception instance, which is
raised (to simulate a failing backend).  ``FakeModel(fn=...)`` computes each answer from
``fn(messages, tools)`` instead.  With neither it echoes the last user message (or the prompt).

From a model string: ``fake:`` (echo) or ``fake:/path/script.json`` where the file holds a JSON
list of outputs (strings, or objects with ``text`` / ``tool_calls`` / ``error``), or JSON lines of
the same.  ``latency`` (seconds) simulates a slow backend; every request is recorded in
``requests``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toollab.data.jsonl import JSON_ERRORS, json_problem, read_text
from toollab.errors import BackendError, InputError
from toollab.models.base import (
    ChatRequest,
    Message,
    Model,
    ModelOutput,
    Timings,
    Usage,
    cut_at_stop,
)
from toollab.models.registry import ModelSpec, merge_options, register_provider
from toollab.schema import Tool, ToolCall

FakeOutput = str | ModelOutput | BaseException
FakeFn = Callable[[list[Message], list[Tool]], "str | ModelOutput"]


def _count_words(text: str) -> int:
    return len(text.split())


class FakeModel(Model):
    """Scripted outputs, a function, or echo; deterministic and thread-safe."""

    supports_constraints = False

    def __init__(
        self,
        outputs: Sequence[FakeOutput] | None = None,
        fn: FakeFn | None = None,
        *,
        latency: float = 0.0,
        repeat: bool = False,
        max_concurrency: int = 8,
        name: str = "fake:",
    ) -> None:
        if outputs is not None and fn is not None:
            raise ValueError("give FakeModel either outputs or fn, not both")
        self.outputs = list(outputs) if outputs is not None else None
        self.fn = fn
        self.latency = latency
        self.repeat = repeat
        self.max_concurrency = max_concurrency
        self.name = name
        self.requests: list[ChatRequest] = []
        self._lock = threading.Lock()

    @property
    def calls(self) -> int:
        """How many requests it has answered (or failed)."""
        return len(self.requests)

    def _next(self, req: ChatRequest) -> FakeOutput:
        with self._lock:
            index = len(self.requests)
            self.requests.append(req)
        if self.fn is not None:
            messages = req.messages or [{"role": "raw", "content": req.prompt or ""}]
            return self.fn(messages, req.tools)
        if self.outputs is None:
            return _echo(req)
        if index >= len(self.outputs):
            if self.repeat and self.outputs:
                return self.outputs[index % len(self.outputs)]
            raise BackendError(
                f"fake model ran out of scripted outputs ({len(self.outputs)} given, "
                f"request {index + 1})"
            )
        return self.outputs[index]

    async def request(self, req: ChatRequest) -> ModelOutput:
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        item = self._next(req)
        if isinstance(item, BaseException):
            raise item
        prompt_words = _count_words(req.prompt or "") + sum(
            _count_words(str(m.get("content") or "")) for m in req.messages
        )
        if isinstance(item, ModelOutput):
            out = item.model_copy(deep=True)
        else:
            text, stop = cut_at_stop(str(item), req.options.stop)
            out = ModelOutput(text=text, finish_reason="stop", stop=stop)
        if out.usage == Usage():
            out.usage = Usage(prompt_tokens=prompt_words, completion_tokens=_count_words(out.text))
        if out.timings == Timings():
            out.timings = Timings(total_s=self.latency, prompt_s=0.0, generation_s=self.latency)
        out.tag = req.tag
        return out


def _echo(req: ChatRequest) -> str:
    if req.prompt is not None:
        return req.prompt
    for msg in reversed(req.messages):
        if msg.get("role") == "user":
            return str(msg.get("content") or "")
    return ""


def load_script(path: str | Path) -> list[FakeOutput]:
    """Outputs from a JSON list or JSON lines file (strings or ``{text, tool_calls, error}``)."""

    p = Path(path)
    if not p.is_file():
        raise InputError("fake model script not found", path=p)
    text = read_text(p)  # clear errors for non-UTF-8 text, permissions, directories
    items: list[Any]
    try:
        data = json.loads(text)
        items = data if isinstance(data, list) else [data]
    except JSON_ERRORS:
        items = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append(json.loads(line))
            except JSON_ERRORS as exc:
                raise InputError(f"not JSON: {json_problem(exc)}", path=p, line=n) from None
    return [_script_item(item, p, i) for i, item in enumerate(items)]


def _script_item(item: Any, path: Path, index: int) -> FakeOutput:
    if isinstance(item, str):
        return item
    if not isinstance(item, dict):
        raise InputError(
            f"output {index} must be a string or an object, got {type(item).__name__}", path=path
        )
    if item.get("error"):
        return BackendError(str(item["error"]))
    calls = item.get("tool_calls")
    try:
        parsed = [ToolCall.from_openai(c) for c in calls] if calls is not None else None
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"output {index}: bad tool_calls ({exc})", path=path) from None
    return ModelOutput(text=str(item.get("text") or ""), tool_calls=parsed, finish_reason="stop")


@register_provider("fake")
def _fake_provider(spec: ModelSpec, **options: Any) -> Model:
    opts = merge_options(spec, options, ["outputs", "fn", "latency", "repeat", "max_concurrency"])
    if spec.model and spec.model != "echo":
        if "outputs" in opts or "fn" in opts:
            raise InputError("give the fake model a script file or outputs, not both")
        opts["outputs"] = load_script(spec.model)
    return FakeModel(**opts)
