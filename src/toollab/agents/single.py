"""The default agent: one prompt, one model call, one parse.

The prompt is the template's messages for the instance; the model's text is read back with the
template's parser (native ``tool_calls`` from the backend are taken as they are).

With ``constrained`` on, decoding follows the call policy the instance implies
(:meth:`toollab.models.policy.CallPolicy.for_instance`: one call for single-call tasks, a
call / no-call decision first where no-call is legal) through a JSON Schema the backend enforces.
The constrained JSON is kept in ``metadata["constrained_raw"]`` and the calls are rendered in the
template's syntax as ``raw``, so scorers that re-read ``raw`` with a benchmark's own rule see the
same calls.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from toollab.agents.base import (
    AgentOptions,
    failed_parse,
    read_output,
    register_agent,
    timings_of,
    usage_of,
)
from toollab.envs.execute import record_program, record_unreadable
from toollab.models.base import ChatRequest, GenerateOptions, Model, ModelOutput
from toollab.models.policy import CallPolicy, run_policy
from toollab.parsing import ParseResult
from toollab.schema import Instance, Tool
from toollab.schema.record import Prediction
from toollab.templates.base import Template


@dataclass
class Ask:
    """What one request asks: the messages, the tools offered (and constrained to), the
    decoding options, and what to record about them in the prediction's metadata."""

    messages: list[dict[str, object]]
    tools: list[Tool]
    options: GenerateOptions
    metadata: dict[str, object] = field(default_factory=dict)


@register_agent("single")
class SingleTurnAgent:
    """Prompt → model → parse, once."""

    name = "single"
    stepwise = False
    reads_answer_key: str | None = None

    def ask(self, instance: Instance, template: Template, options: AgentOptions) -> Ask:
        """The template's messages for the instance, its tools, and the run's decoding options
        with the template's stop strings (an agent with its own prompt overrides this)."""
        gen = options.generate.model_copy(deep=True)
        if template.stop:
            gen.stop = list(dict.fromkeys([*gen.stop, *template.stop]))
        return Ask(template.messages(instance), list(instance.tools), gen)

    async def run(
        self, instance: Instance, model: Model, template: Template, options: AgentOptions
    ) -> Prediction:
        t0 = time.perf_counter()
        ask = self.ask(instance, template, options)
        messages, gen = ask.messages, ask.options
        if options.constrained and ask.tools:  # no tools: a no-call is the only answer
            pred = await self._constrained(instance, model, template, ask, t0)
            return _execute(pred, instance, options)
        req = ChatRequest(messages=messages, tools=ask.tools, options=gen, tag=instance.id)
        out = await model.safe_request(req)
        if out.error:
            return _failure(instance, messages, [out], out.error, t0)
        raw, parsed = read_output(out, template)
        metadata: dict[str, object] = {
            "finish_reason": out.finish_reason,
            "parser": template.parser,
            **ask.metadata,
        }
        if out.tool_calls:
            metadata["native_tool_calls"] = True
        pred = Prediction(
            id=instance.id,
            prompt=messages,
            raw=raw,
            parsed=parsed,
            usage=usage_of([out]),
            timings=_timings([out], t0),
            metadata=metadata,
        )
        return _execute(pred, instance, options)

    async def _constrained(
        self,
        instance: Instance,
        model: Model,
        template: Template,
        ask: Ask,
        t0: float,
    ) -> Prediction:

        messages = ask.messages
        policy = CallPolicy.for_instance(instance)
        # the schema ends the answer, not stop strings
        gen = ask.options.model_copy(update={"stop": []})
        outcome = await run_policy(model, messages, ask.tools, policy, gen, tag=instance.id)
        errors = [o.error for o in outcome.outputs if o.error]
        if errors:
            return _failure(instance, messages, outcome.outputs, errors[-1], t0)
        parsed: ParseResult = outcome.result
        if parsed.calls:
            raw = template.render_calls(list(parsed.calls))
        elif not parsed.is_error:
            raw = template.render_answer(parsed.text)
        else:
            raw = outcome.raw
        return Prediction(
            id=instance.id,
            prompt=messages,
            raw=raw,
            parsed=parsed,
            usage=usage_of(outcome.outputs),
            timings=_timings(outcome.outputs, t0),
            metadata={
                "constrained_raw": outcome.raw,
                "policy": policy.model_dump(mode="json"),
                "finish_reason": outcome.outputs[-1].finish_reason if outcome.outputs else None,
                **ask.metadata,
            },
        )


def _execute(pred: Prediction, instance: Instance, options: AgentOptions) -> Prediction:
    """Run the parsed program in the instance's environment, when it has one, and record what
    it did (the ``environment`` scorer judges the record)."""
    if pred.error or pred.parsed is None or options.environment is None:
        return pred
    env = options.environment(instance)
    if env is None:
        return pred
    if pred.parsed.is_error:
        pred.execution = record_unreadable(pred.parsed.error)
    else:
        pred.execution = record_program(env, instance, list(pred.parsed.calls))
    return pred


def _timings(outputs: list[ModelOutput], t0: float) -> dict[str, float]:
    timings = timings_of(outputs)
    timings["total_s"] = time.perf_counter() - t0
    return timings


def _failure(
    instance: Instance,
    messages: list[dict[str, object]],
    outputs: list[ModelOutput],
    error: str,
    t0: float,
) -> Prediction:
    """The record of an instance whose model call failed: scored as a failure."""
    return Prediction(
        id=instance.id,
        prompt=messages,
        raw="",
        parsed=failed_parse(error),
        error=error,
        usage=usage_of(outputs),
        timings=_timings(outputs, t0),
        metadata={"finish_reason": outputs[-1].finish_reason if outputs else None},
    )
