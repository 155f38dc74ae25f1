"""The ``bfcl-multi-turn`` agent: plays one BFCL multi-turn entry as BFCL's prompting loop does.

``BaseHandler.inference_multi_turn_prompting`` (``bfcl-eval``), step for step: the system
prompt is the template's (the ``python`` template: BFCL's own, its multi-turn paragraph
included) over the functions offered at the start; each user turn's messages are appended in
order (a turn of ``missed_function`` instead gets BFCL's "I have updated some more functions"
user message listing the held-out docs, and they are offered from then on).  Within a turn the
model is asked again and again: an output that cannot be decoded, or decodes to no call, ends
the turn; otherwise its calls run on BFCL's backend (:class:`~toollab.envs.bfcl_multi_turn.
Episode`) and each result goes back as a ``tool`` message named by the call.  After
``MAXIMUM_STEP_LIMIT`` (20) steps in one turn the episode is force-terminated (BFCL fails such an
entry); ``--max-turns`` does not apply.

Decoding follows the template: with ``python`` BFCL's prompting decoder
(``default_decode_execute_prompting``), with another template its parser, and with constrained
decoding the constrained answer (decide call / no call, then the calls) — the last two play the
part of BFCL's function-calling handlers.  The prediction keeps every step in
``metadata["bfcl_multi_turn"]`` (:class:`~toollab.data.bfcl_multi_turn.EpisodeLog`), which the
``bfcl_multi_turn`` scorer reads.  An instance that is not a BFCL multi-turn entry is played
turn by turn with no backend (every call gets an error result).
"""

from __future__ import annotations

import time
from typing import Any

from toollab.agents.base import AgentOptions, register_agent, timings_of, usage_of
from toollab.agents.converse import user_turns
from toollab.data.adapters.bfcl_multi_turn import doc_tool
from toollab.data.bfcl_multi_turn import KEY, EpisodeInputs, EpisodeLog, StepLog, TurnLog
from toollab.envs.bfcl_multi_turn import Episode, added_functions_prompt, step_calls, step_limit
from toollab.models.base import ChatRequest, GenerateOptions, Message, Model, ModelOutput
from toollab.models.policy import CallPolicy, run_policy
from toollab.parsing import ParseResult
from toollab.schema import Instance, Tool, ToolCall
from toollab.schema.json import JsonObject
from toollab.schema.record import ExecutionRecord, Prediction, Step
from toollab.templates.base import Template

#: the result of a call in an instance that has no BFCL backend
NO_BACKEND = "Error during execution: no BFCL backend for this instance"
#: the step limit of an instance without a backend (BFCL's own needs the package)
FALLBACK_STEP_LIMIT = 20
#: every step under constrained decoding: decide call / no call, then any number of calls
POLICY = CallPolicy.decision_first(max_calls=None)


def episode_inputs(instance: Instance) -> EpisodeInputs | None:
    raw = instance.metadata.get(KEY)
    return EpisodeInputs.model_validate(raw) if isinstance(raw, dict) else None


@register_agent("bfcl-multi-turn")
class BfclMultiTurnAgent:
    """One BFCL multi-turn entry as BFCL's prompting loop plays it (see the module docs)."""

    name = "bfcl-multi-turn"
    stepwise = True
    reads_answer_key: str | None = None

    async def _ask(
        self,
        model: Model,
        template: Template,
        messages: list[Message],
        tools: list[Tool],
        options: AgentOptions,
        tag: str,
    ) -> tuple[list[ModelOutput], str, ParseResult, bool]:
        """(every output, raw text, parse, structured) of one step."""
        gen: GenerateOptions = options.generate.model_copy(deep=True)
        if options.constrained and tools:
            outcome = await run_policy(
                model, list(messages), tools, POLICY, gen.model_copy(update={"stop": []}), tag=tag
            )
            parsed = outcome.result
            if parsed.calls:
                raw = template.render_calls(list(parsed.calls))
            elif not parsed.is_error:
                raw = template.render_answer(parsed.text)
            else:
                raw = outcome.raw
            return outcome.outputs, raw, parsed, True
        if template.stop:
            gen.stop = list(dict.fromkeys([*gen.stop, *template.stop]))
        out = await model.safe_request(
            ChatRequest(messages=list(messages), tools=tools, options=gen, tag=tag)
        )
        if out.tool_calls:
            return (
                [out],
                template.render_calls(list(out.tool_calls)),
                ParseResult.ok(list(out.tool_calls)),
                True,
            )
        return [out], out.text, template.parse(out.text), False

    async def run(
        self, instance: Instance, model: Model, template: Template, options: AgentOptions
    ) -> Prediction:
        t0 = time.perf_counter()
        inputs = episode_inputs(instance)
        turns: list[list[JsonObject]] = (
            inputs.turns
            if inputs is not None
            else [[{"role": "user", "content": t}] for t in user_turns(instance)]
        )
        tools = list(instance.tools)
        system = template.system_prompt(tools)
        first_system = [m for m in (turns[0] if turns else []) if m.get("role") == "system"]
        if first_system:  # BFCL: the entry's own system text follows the default prompt
            system = "\n\n".join([system, *(str(m["content"]) for m in first_system)])
        messages: list[Message] = [{"role": "system", "content": system}] if system else []
        prompt: list[dict[str, object]] = [dict(m) for m in messages]
        prompt += [
            {"role": "user", "content": m.get("content")}
            for turn in turns
            for m in turn
            if m.get("role") == "user"
        ]
        episode = Episode(inputs, instance.id) if inputs is not None else None
        limit = step_limit() if episode is not None else FALLBACK_STEP_LIMIT
        log = EpisodeLog()
        steps: list[Step] = []
        outputs: list[ModelOutput] = []
        executed: list[str] = []
        made: list[ToolCall] = []
        results: list[str] = []
        error: str | None = None
        try:
            for t, turn in enumerate(turns):
                added = inputs.missed_function.get(str(t)) if inputs is not None else None
                if added:
                    turn = [{"role": "user", "content": added_functions_prompt(added)}]
                    tools = [*tools, *(doc_tool(d) for d in added)]
                new = [m for m in turn if not (t == 0 and m.get("role") == "system")]
                messages.extend(dict(m) for m in new)
                steps.extend(Step(role="user", text=str(m.get("content", ""))) for m in new)
                turn_log = TurnLog()
                log.turns.append(turn_log)
                for count in range(1, limit + 2):
                    outs, raw, parsed, structured = await self._ask(
                        model, template, messages, tools, options, instance.id
                    )
                    outputs.extend(outs)
                    failure = next((o.error for o in outs if o.error), None)
                    prompting = not structured and template.parser == "python"
                    step = StepLog(
                        raw=raw,
                        decoded=None
                        if prompting or parsed.is_error
                        else [{c.name: dict(c.arguments)} for c in parsed.calls],
                        prompting=prompting,
                        error=failure,
                    )
                    turn_log.steps.append(step)
                    steps.append(Step(role="assistant", text=raw, parsed=parsed, error=failure))
                    if failure is not None:
                        error = failure
                        break
                    messages.append({"role": "assistant", "content": raw})
                    try:
                        calls = step_calls(raw, step.decoded, prompting)
                    except Exception:
                        break  # BFCL: not decoded, proceed to the next turn
                    if not calls:
                        break
                    got = episode.execute(calls) if episode else [NO_BACKEND] * len(calls)
                    step.executed, step.results = calls, got
                    steps[-1].observation = list(got)
                    executed.extend(calls)
                    made.extend(parsed.calls)
                    results.extend(got)
                    messages.extend(
                        {"role": "tool", "name": c, "content": r}
                        for c, r in zip(calls, got, strict=True)
                    )
                    if count > limit:
                        log.force_quit = True
                        break
                if error is not None or log.force_quit:
                    break
        finally:
            if episode is not None:
                episode.close()
        pred = _prediction(
            instance, log, steps, outputs, (executed, made, results), error, t0, template
        )
        pred.prompt = prompt  # the system prompt and every user message, in order
        return pred


def _prediction(
    instance: Instance,
    log: EpisodeLog,
    steps: list[Step],
    outputs: list[ModelOutput],
    calls: tuple[list[str], list[ToolCall], list[str]],
    error: str | None,
    t0: float,
    template: Template,
) -> Prediction:
    executed, made, results = calls
    parsed = ParseResult.ok(made) if made else ParseResult.no_call(None)
    if error is not None and not made:
        parsed = ParseResult.fail(f"no model output: {error}")
    ended = "error" if error else ("max_turns" if log.force_quit else "finish")
    execution = ExecutionRecord(
        observations=list(results),
        actions=list(executed),
        n_calls=len(executed),
        crashed=error is not None,
        error=error,
        turns=len(log.turns),
        ended_by=ended,
        finished=error is None and not log.force_quit,
    )
    timings = timings_of(outputs)
    timings["total_s"] = time.perf_counter() - t0
    metadata: dict[str, Any] = {KEY: log.model_dump(mode="json"), "parser": template.parser}
    return Prediction(
        id=instance.id,
        raw="\n\n".join(s.text for s in steps if s.role == "assistant"),
        parsed=parsed,
        steps=steps,
        execution=execution,
        error=error,
        usage=usage_of(outputs),
        timings=timings,
        metadata=metadata,
    )
