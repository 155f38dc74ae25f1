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

from toollab.models.base import ChatRequest, GenerateOptions, Model, ModelOutput
from toollab.models.policy import DECISION_KEY, parse_constrained
from toollab.parsing import ParseResult
from toollab.registry import Registry
from toollab.schema import Instance, ToolCall
from toollab.schema.record import ExecutionRecord, Prediction
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


@runtime_checkable
class BindsInstances(Protocol):
    """A model that answers from the instances themselves (the oracle, a replay of recorded
    outputs): it is given them before the run."""

    def bind(self, instances: list[Instance], template: Template, *, stepwise: bool) -> None: ...


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


@runtime_checkable
class RunsPrograms(Protocol):
    """An environment that runs a whole program from a seeded start and reports its outcome
    (an object with ``state``, ``observations``, ``crashed``, ``error``, ``reason``,
    ``failed_call`` and ``n_calls``)."""

    def run(self, calls: list[ToolCall], seed: int) -> Any: ...


@runtime_checkable
class ChecksOutcomes(Protocol):
    """An environment that judges a final state against the label programs' final states."""

    def label_states(self, programs: list[list[ToolCall]], seed: int) -> list[dict[str, Any]]: ...

    def check(self, state: dict[str, Any], labels: list[dict[str, Any]]) -> Any: ...


@runtime_checkable
class HasState(Protocol):
    """An environment whose current state can be read."""

    def state(self) -> dict[str, Any]: ...


@runtime_checkable
class RendersActions(Protocol):
    """An environment with its own text form of a call (e.g. household's normalised names)."""

    def action_text(self, call: ToolCall) -> str: ...


@runtime_checkable
class ScoresPlans(Protocol):
    """An environment that defines a plan similarity (household: VirtualHome's LCS)."""

    def plan_lcs(self, pred: list[ToolCall], refs: list[list[ToolCall]]) -> float: ...


def instance_seed(instance: Instance) -> int:
    """The environment seed an instance asks for (``metadata["seed"]``, default 0)."""
    seed = instance.metadata.get("seed", 0)
    try:
        return int(seed)
    except (TypeError, ValueError):
        return 0


def label_programs(instance: Instance) -> list[list[ToolCall]]:
    """The gold program and its acceptable alternatives (the empty program for a no-call)."""
    programs: list[list[ToolCall]] = [list(instance.gold)]
    programs.extend(list(alt) for alt in instance.alternatives)
    return programs


def execute_program(env: Environment, instance: Instance, calls: list[ToolCall]) -> ExecutionRecord:
    """Run a whole predicted program in ``env`` and check its final state against the labels.

    The record holds the final ``state``, ``observations``, ``crashed`` (with ``error`` /
    ``reason``), the executed ``actions`` and, when the environment checks outcomes,
    ``labels_states`` (the gold and alternative programs' final states) and ``success`` /
    ``precision`` / ``recall`` / ``f1`` against the best of them; an environment that scores
    plans adds ``lcs``.
    """
    if not isinstance(env, RunsPrograms):  # a bare executor: calls one by one, stop at a failure
        observations: list[Any] = []
        for i, call in enumerate(calls):
            try:
                observations.append(env.execute(call))
            except Exception as exc:
                return ExecutionRecord(
                    observations=observations,
                    crashed=True,
                    error=f"{type(exc).__name__}: {exc}",
                    failed_call=i,
                    n_calls=len(calls),
                    actions=[render_action(env, c) for c in calls[: i + 1]],
                )
        return ExecutionRecord(
            observations=observations,
            n_calls=len(calls),
            actions=[render_action(env, c) for c in calls],
        )
    execution = env.run(calls, instance_seed(instance))
    done = calls if execution.failed_call is None else calls[: execution.failed_call + 1]
    record = ExecutionRecord(
        state=None if execution.crashed else dict(execution.state),
        observations=list(execution.observations),
        crashed=bool(execution.crashed),
        error=execution.error,
        reason=execution.reason,
        failed_call=execution.failed_call,
        n_calls=int(execution.n_calls),
        actions=[render_action(env, c) for c in done],
    )
    if isinstance(env, ScoresPlans):
        record.lcs = float(env.plan_lcs(list(calls), label_programs(instance)))
    if execution.crashed:
        record.success, record.precision, record.recall, record.f1 = False, 0.0, 0.0, 0.0
        return record
    return check_state(env, instance, record)


def check_state(env: Environment, instance: Instance, record: ExecutionRecord) -> ExecutionRecord:
    """Fill ``record``'s check fields: ``success`` / ``precision`` / ``recall`` / ``f1`` of its
    final state against the labels' final states (the best of the gold and alternative programs;
    an instance whose right answer is no call has the empty program as its label).  Unchanged
    when the environment cannot check outcomes or there is no state."""
    if not isinstance(env, ChecksOutcomes) or record.state is None:
        return record
    programs = label_programs(instance)
    try:
        labels = env.label_states(programs, instance_seed(instance))
    except Exception as exc:  # the data's own label does not execute: say so, score as failure
        record.label_error = f"{type(exc).__name__}: {exc}"
        record.success = False
        return record
    result = env.check(record.state, labels)
    record.success = bool(result.success)
    record.precision = float(result.precision)
    record.recall = float(result.recall)
    record.f1 = float(result.f1)
    record.label = result.label
    record.details = dict(getattr(result, "details", {}) or {})
    record.labels_states = labels
    record.labels_actions = [[render_action(env, c) for c in prog] for prog in programs if prog]
    return record


def render_action(env: Any, call: ToolCall) -> str:
    """A call as the action string sequence metrics compare, in the environment's own form when
    it has one (e.g. household object names normalised)."""
    return str(env.action_text(call)) if isinstance(env, RendersActions) else call.action_text()
