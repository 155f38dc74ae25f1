"""What an agent is: one instance in, one :class:`~toollab.schema.record.Prediction` out.

An agent drives a model through a template: it builds the prompt, asks the model (once, or in a
loop with tool execution in between), parses the output and packs everything a scorer needs into
a :class:`Prediction`.  Agents are registered by name (``@register_agent("single")``) and chosen
with ``toollab eval --agent NAME``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from toollab.envs.base import CallExecutor
from toollab.models.base import ChatRequest, GenerateOptions, Model, ModelOutput
from toollab.models.policy import DECISION_KEY, parse_constrained
from toollab.parsing import ParseResult
from toollab.registry import Registry
from toollab.schema import Instance, ToolCall
from toollab.schema.record import Prediction
from toollab.templates.base import Template


@dataclass
class AgentOptions:
    """Per-run settings every agent receives."""

    #: decoding options; the runner sets ``seed = run seed + repeat index``
    generate: GenerateOptions = field(default_factory=GenerateOptions)
    #: constrain decoding to the template's call grammar (when the backend supports it)
    constrained: bool = False
    #: maximum model turns for multi-step agents (ToolEyes uses 9)
    max_turns: int = 9
    repeat: int = 0
    #: returns what executes this instance's calls (its environment), or None when there is none
    environment: Callable[[Instance], CallExecutor | None] | None = None


@runtime_checkable
class PlansFirstRequest(Protocol):
    """An agent whose first request is not the template's chat messages (DEER sends a raw
    prompt); the runner uses it to order work for prompt-prefix reuse."""

    def first_request(self, instance: Instance, template: Template) -> ChatRequest: ...


@runtime_checkable
class NeedsTemplateMethods(Protocol):
    """An agent that calls template methods beyond the base ones (DEER: ``prompt`` and
    ``teacher_forced_prompt``); the runner checks the template has them before any work."""

    needs_template_methods: tuple[str, ...]


@runtime_checkable
class HasDefaultMaxTokens(Protocol):
    """An agent with its own generation budget per turn (DEER: 128 tokens)."""

    default_max_tokens: int


class Agent(Protocol):
    name: str
    #: True when the agent makes one call per model turn (the oracle then answers step by step)
    stepwise: bool
    #: what it reads of the answer key, for agents that do so on purpose (a benchmark's
    #: teacher-forced protocol); ``None`` for every agent whose requests the answer cannot reach
    reads_answer_key: str | None

    async def run(
        self, instance: Instance, model: Model, template: Template, options: AgentOptions
    ) -> Prediction: ...


#: agent factories (a class or a zero-argument function); plugins: ``agent:NAME`` entry points
AGENTS: Registry[Callable[[], Agent]] = Registry("agent", builtins=("toollab.agents",))


def register_agent(name: str) -> Callable[[Callable[[], Agent]], Callable[[], Agent]]:
    """Decorator: register an agent factory (a class or a zero-argument function) under ``name``."""
    return AGENTS.decorator(name)


def agent_names() -> list[str]:
    return AGENTS.names()


def get_agent(name: str) -> Agent:
    return AGENTS.get(name)()


# -- helpers shared by the built-in agents ---------------------------------------------------------


def usage_of(outputs: list[ModelOutput]) -> dict[str, int]:
    """Token counts summed over every model call of one instance."""
    return {
        "prompt_tokens": sum(o.usage.prompt_tokens for o in outputs),
        "completion_tokens": sum(o.usage.completion_tokens for o in outputs),
        "cached_tokens": sum(o.usage.cached_tokens for o in outputs),
        "requests": len(outputs),
    }


def timings_of(outputs: list[ModelOutput]) -> dict[str, float]:
    """Model time summed over every model call (``prompt_s``/``generation_s`` when reported)."""
    out: dict[str, float] = {"model_s": sum(o.timings.total_s for o in outputs)}
    prompt = [o.timings.prompt_s for o in outputs if o.timings.prompt_s is not None]
    gen = [o.timings.generation_s for o in outputs if o.timings.generation_s is not None]
    if prompt:
        out["prompt_s"] = sum(prompt)
    if gen:
        out["generation_s"] = sum(gen)
    return out


def read_output(out: ModelOutput, template: Template) -> tuple[str, ParseResult]:
    """The raw text and its parse; native ``tool_calls`` are taken as they are.

    A text the template cannot read that is a decision object of constrained decoding
    (``{"decision": "call", "call": ...}``: what a model trained on toollab's constrained
    targets writes even with no grammar) is read as constrained decoding reads it, and marked
    ``details["read_as"] = "constrained"``."""
    if out.tool_calls:
        raw = out.text if out.text.strip() else template.render_calls(out.tool_calls)
        return raw, ParseResult.ok(list(out.tool_calls), thought=out.text or None)
    parsed = template.parse(out.text)
    if parsed.is_error and out.text.lstrip().startswith(f'{{"{DECISION_KEY}"'):
        alt = parse_constrained(out.text)
        if not alt.is_error:
            return out.text, alt.model_copy(
                update={"details": {**alt.details, "read_as": "constrained"}}
            )
    return out.text, parsed


def failed_parse(error: str) -> ParseResult:
    """The parse recorded for an instance whose model call failed: it scores as a failure."""
    return ParseResult.fail(f"no model output: {error}")


async def execute_call(env: CallExecutor, call: ToolCall) -> tuple[Any, str | None]:
    """Run one call in ``env``: ``(observation, error)``; never raises."""
    try:
        result = env.execute(call)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        msg = f"{type(exc).__name__}: {exc}"
        return {"error": msg}, msg
    return result, None
