"""What an agent is: one instance in, one :class:`~toollab.eval.record.Prediction` out.

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

from toollab.eval.record import Prediction
from toollab.models.base import GenerateOptions, Model, ModelOutput
from toollab.parsing import ParseResult
from toollab.registry import Registry
from toollab.schema import Instance, ToolCall
from toollab.templates.base import Template


@runtime_checkable
class Environment(Protocol):
    """Something that executes tool calls: a simulated suite, a tool pool, a sandbox.

    ``execute`` may be a plain or an ``async`` method; it returns the observation (any JSON-able
    value) or raises (the agent turns the exception into an error observation).
    """

    def execute(self, call: ToolCall) -> Any: ...


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
    #: returns the environment that executes this instance's calls, or None when there is none
    environment: Callable[[Instance], Environment | None] | None = None


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
    """The raw text and its parse; native ``tool_calls`` are taken as they are."""
    if out.tool_calls:
        raw = out.text if out.text.strip() else template.render_calls(out.tool_calls)
        return raw, ParseResult.ok(list(out.tool_calls), thought=out.text or None)
    return out.text, template.parse(out.text)


def failed_parse(error: str) -> ParseResult:
    """The parse recorded for an instance whose model call failed: it scores as a failure."""
    return ParseResult.fail(f"no model output: {error}")


async def execute_call(env: Environment, call: ToolCall) -> tuple[Any, str | None]:
    """Run one call in ``env``: ``(observation, error)``; never raises."""
    try:
        result = env.execute(call)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        msg = f"{type(exc).__name__}: {exc}"
        return {"error": msg}, msg
    return result, None


# -- environments ------------------------------------------------------------------------------------

ENV_SOURCE_PREFIX = "env:"


def instance_seed(instance: Instance) -> int:
    """The environment seed an instance asks for (``metadata["seed"]``, default 0)."""
    seed = instance.metadata.get("seed", 0)
    try:
        return int(seed)
    except (TypeError, ValueError):
        return 0


def environment_for(instance: Instance) -> Environment | None:
    """The built-in environment of an ``env:<name>`` instance, reset to its seed; else None."""
    src = instance.source or ""
    if not src.startswith(ENV_SOURCE_PREFIX):
        return None
    from toollab.envs.base import get_env

    env: Environment = get_env(src[len(ENV_SOURCE_PREFIX) :], seed=instance_seed(instance))
    return env


def execute_program(env: Environment, instance: Instance, calls: list[ToolCall]) -> dict[str, Any]:
    """Run a whole predicted program in ``env`` and check its final state against the labels.

    Returns the ``Prediction.execution`` record: final ``state``, ``observations``, ``crashed``
    (with ``error`` / ``reason``), the executed ``actions`` and, when the environment can check
    outcomes, ``labels_states`` (the gold and alternative programs' final states) and ``success`` /
    ``precision`` / ``recall`` / ``f1`` against the best of them.
    """
    seed = instance_seed(instance)
    run = getattr(env, "run", None)
    if run is None:  # a bare executor: calls one by one, stop at the first failure
        observations: list[Any] = []
        for i, call in enumerate(calls):
            try:
                observations.append(env.execute(call))
            except Exception as exc:
                return {
                    "observations": observations,
                    "crashed": True,
                    "error": f"{type(exc).__name__}: {exc}",
                    "failed_call": i,
                    "n_calls": len(calls),
                    "actions": [render_action(env, c) for c in calls[: i + 1]],
                }
        return {
            "observations": observations,
            "crashed": False,
            "n_calls": len(calls),
            "actions": [render_action(env, c) for c in calls],
        }
    execution = run(calls, seed)
    record: dict[str, Any] = execution.model_dump(mode="json")
    done = calls if execution.failed_call is None else calls[: execution.failed_call + 1]
    record["actions"] = [render_action(env, c) for c in done]
    if execution.crashed:
        record.update(success=False, precision=0.0, recall=0.0, f1=0.0)
        return record
    record.update(check_state(env, instance, execution.state))
    return record


def check_state(env: Environment, instance: Instance, state: dict[str, Any]) -> dict[str, Any]:
    """``success`` / ``precision`` / ``recall`` / ``f1`` of a final state against the labels'
    final states (the best of the gold and alternative programs; an instance whose right answer
    is no call has the empty program as its label); ``{}`` when not checkable."""
    check = getattr(env, "check", None)
    label_states = getattr(env, "label_states", None)
    if check is None or label_states is None:
        return {}
    programs = [list(instance.gold), *[list(alt) for alt in instance.alternatives]]
    try:
        labels = label_states(programs, instance_seed(instance))
    except Exception as exc:  # the data's own label does not execute: say so, score as failure
        return {"label_error": f"{type(exc).__name__}: {exc}", "success": False}
    result = check(state, labels)
    out: dict[str, Any] = result.model_dump(mode="json")
    out["labels_states"] = labels
    out["labels_actions"] = [[render_action(env, c) for c in prog] for prog in programs if prog]
    return out


def render_action(env: Any, call: ToolCall) -> str:
    """A call as the action string sequence metrics compare, in the environment's own form when
    it has one (e.g. household object names normalised)."""
    text = getattr(env, "action_text", None)
    return str(text(call)) if callable(text) else call.action_text()
