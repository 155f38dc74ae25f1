"""The backend interface: one small abstract method.

A backend turns a :class:`ChatRequest` (messages, offered tools, decoding options) into a
:class:`ModelOutput` (text and/or native tool calls, token usage, timings).  Everything else
(sync wrappers, bounded-concurrency batches, error capture) is shared here.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from toollab.schema import Instance, Tool, ToolCall
from toollab.schema.json import JsonObject

Message = dict[str, Any]


class GenerateOptions(BaseModel):
    """Decoding options.  Greedy by default; ``seed`` reaches sampling."""

    model_config = ConfigDict(extra="forbid")

    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    stop: list[str] = Field(default_factory=list)
    #: constrain the output to this JSON Schema (llama.cpp grammar / ``response_format``)
    json_schema: JsonObject | None = None
    #: constrain the output with a raw GBNF grammar (llama.cpp only)
    grammar: str | None = None
    #: let the server use its native ``tools`` / ``tool_calls`` when it has them (OpenAI-compatible)
    native_tools: bool = True
    #: hand ``tools`` to the model's own chat template (llama.cpp, transformers).  Only the
    #: ``chat`` template route sets it: toollab's other templates document the tools in the
    #: system prompt already, and a tool-aware chat template would document them a second time
    template_tools: bool = False
    #: stop generating as soon as a complete call repeats an earlier one in the answer's calls
    #: array (:class:`~toollab.models.constrain.RepeatGuard`; llama.cpp and transformers)
    stop_on_repeat: bool = False


class ChatRequest(BaseModel):
    """One request.  Either chat ``messages`` (rendered with the model's chat template) or a
    pre-rendered ``prompt`` that is completed verbatim (DEER-style prompts, prefix reuse)."""

    model_config = ConfigDict(extra="forbid")

    messages: list[Message] = Field(default_factory=list)
    tools: list[Tool] = Field(default_factory=list)
    options: GenerateOptions = Field(default_factory=GenerateOptions)
    #: complete this text verbatim instead of rendering ``messages`` (no chat template)
    prompt: str | None = None
    #: free-form tag carried through (e.g. the instance id)
    tag: str | None = None


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0


class Timings(BaseModel):
    total_s: float = 0.0
    prompt_s: float | None = None
    generation_s: float | None = None


class ModelOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = ""
    #: calls returned natively by the backend (OpenAI ``tool_calls``); None when not used
    tool_calls: list[ToolCall] | None = None
    usage: Usage = Field(default_factory=Usage)
    timings: Timings = Field(default_factory=Timings)
    #: why generation ended: ``"stop"`` (a stop string or end of sequence), ``"length"`` (the token
    #: limit), ``"repeat"`` (the repeat guard); None when the backend does not say
    finish_reason: str | None = None
    #: the stop string generation ended at, left out of ``text``; None when none was hit (end of
    #: sequence, the token limit) or the backend does not say which (an OpenAI-compatible server
    #: without ``stop_reason``).  An agent that must write the stop string back (DEER's markers)
    #: reads it here instead of guessing
    stop: str | None = None
    #: set when the request failed; the run records it on the instance and goes on
    error: str | None = None
    tag: str | None = None


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, str | None]:
    """``text`` up to the earliest stop string in it, and that stop string (``(text, None)`` when
    none occurs; of two starting at the same place, the longer)."""
    best: tuple[int, int] | None = None
    found: str | None = None
    for s in stops:
        pos = text.find(s) if s else -1
        if pos >= 0 and (best is None or (pos, -len(s)) < best):
            best, found = (pos, -len(s)), s
    return (text, None) if best is None else (text[: best[0]], found)


@dataclass(frozen=True)
class ChatTemplateSource:
    """A model's own Jinja chat template and the special tokens it refers to."""

    source: str
    special_tokens: dict[str, str] = field(default_factory=dict)


class GoldWriter(Protocol):
    """What a model that answers from the dataset needs of a prompt template: the gold assistant
    text in the template's syntax (every :class:`toollab.templates.Template` is one)."""

    def target(self, instance: Instance) -> str: ...

    def render_calls(self, calls: list[ToolCall]) -> str: ...

    def render_answer(self, text: str | None) -> str: ...


@runtime_checkable
class BindsInstances(Protocol):
    """A model that answers from the dataset itself (the ``oracle``): before the first request
    it is told the instances, the template to answer in and whether the agent goes step by
    step.  ``isinstance(model, BindsInstances)`` says whether a model needs this."""

    def bind(
        self,
        instances: Iterable[Instance],
        template: GoldWriter,
        *,
        stepwise: bool | None = None,
    ) -> Any: ...


@runtime_checkable
class RendersPrompts(Protocol):
    """A model that renders chat requests to prompt text itself (llama.cpp, transformers), so
    requests can be ordered for prefix reuse by their rendered text."""

    def render(self, req: ChatRequest) -> str: ...


class Model(ABC):
    """Base of every backend.  Subclasses implement :meth:`request` only."""

    #: the model string it was built from, e.g. ``"bundled:smollm2-135m"``
    name: str = "model"
    #: whether the backend can constrain output with a JSON Schema / grammar
    supports_constraints: bool = False
    #: how many requests it makes sense to run at once (1 for in-process CPU backends)
    max_concurrency: int = 1
    #: what it reads of the answer key, for models that do so on purpose (the oracle); a run
    #: with such a model is labelled so in ``run.json`` and the report
    reads_answer_key: str | None = None

    @abstractmethod
    async def request(self, req: ChatRequest) -> ModelOutput:
        """Answer one request.  May raise :class:`toollab.errors.BackendError`."""

    def own_chat_template(self) -> ChatTemplateSource | None:
        """The model's own chat template (GGUF ``tokenizer.chat_template``, the HF tokenizer's),
        when the backend renders prompts with one; ``None`` otherwise."""
        return None

    # -- shared conveniences --------------------------------------------------------------
    async def safe_request(self, req: ChatRequest) -> ModelOutput:
        """:meth:`request`, with any failure recorded on the output instead of raised."""
        t0 = time.perf_counter()
        try:
            out = await self.request(req)
        except Exception as exc:
            return ModelOutput(
                error=f"{type(exc).__name__}: {exc}",
                timings=Timings(total_s=time.perf_counter() - t0),
                tag=req.tag,
            )
        if out.tag is None:
            out.tag = req.tag
        return out

    async def batch(
        self, reqs: Sequence[ChatRequest], concurrency: int | None = None
    ) -> list[ModelOutput]:
        """Run many requests with bounded concurrency; order is preserved, failures recorded."""
        sem = asyncio.Semaphore(max(1, concurrency or self.max_concurrency))

        async def one(r: ChatRequest) -> ModelOutput:
            async with sem:
                return await self.safe_request(r)

        return list(await asyncio.gather(*(one(r) for r in reqs)))

    def generate(
        self,
        messages: list[Message],
        tools: list[Tool] | None = None,
        options: GenerateOptions | None = None,
        **kw: Any,
    ) -> ModelOutput:
        """Synchronous single request (raises on failure)."""
        opts = options or GenerateOptions(**kw)
        return run_sync(
            self.request(ChatRequest(messages=messages, tools=tools or [], options=opts))
        )

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (files, servers, threads)."""

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_sync(coro: Any) -> Any:
    """Run a coroutine from synchronous code, also when an event loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(1) as ex:
        return ex.submit(asyncio.run, coro).result()
