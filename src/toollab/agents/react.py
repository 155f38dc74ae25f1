"""A multi-step ReAct agent, as ToolEyes runs its models.

Each turn the model writes ``Thought / Action / Action Input``; the call is executed in the
instance's environment and its result goes back as an ``Observation``.  The episode ends when the
model calls ``finish`` (its ``answer`` is the final answer), calls ``ask_to_user`` (control goes
back to the user), gives an explicit answer without a call, or after ``max_turns`` turns (ToolEyes
allows 9).  Text with no ``Action`` at all is a format error: the model is reminded of the format
and the episode goes on.

When the environment also plays the user (:class:`~toollab.envs.base.AnswersUser`: the simulated
tool server), ``ask_to_user`` does not end the episode while the user answers: the reply is kept
as a ``role="user"`` step and sent as a user message, and the loop goes on (still within
``max_turns`` model turns).

Without an environment the calls cannot run: every call gets an observation saying so, and the
model may still finish.  A turn whose text cannot be parsed gets an observation naming the problem
(the model may repair it next turn); it is kept in ``steps`` for format-alignment scoring.
"""

from __future__ import annotations

import json
import time
from typing import Any

from toollab.agents.base import (
    AgentOptions,
    execute_call,
    failed_parse,
    read_output,
    register_agent,
    timings_of,
    usage_of,
)
from toollab.envs.base import AnswersUser, CallExecutor, HasState
from toollab.envs.execute import render_action
from toollab.models.base import ChatRequest, Message, Model, ModelOutput
from toollab.parsing import ParseResult
from toollab.schema import Instance, ToolCall
from toollab.schema.record import ExecutionRecord, Prediction, Step
from toollab.templates.base import RendersObservations, Template

FINISH = "finish"
ASK_TO_USER = "ask_to_user"
NO_ENVIRONMENT = "no environment is available to execute this tool"
FORMAT_REMINDER = (
    "Error: no action found. Reply with Thought, Action and Action Input; use the finish tool "
    "to give the final answer."
)
#: models trained on ReAct traces tend to write the observation themselves; it ends the turn
REACT_STOP = ["\nObservation:"]


def observation_message(template: Template, observation: Any) -> Message:
    """The message that carries an observation back (the template's own form when it has one)."""
    if isinstance(template, RendersObservations):
        msg = template.render_observation(observation)
        if isinstance(msg, dict):
            return msg
        return {"role": "user", "content": str(msg)}
    text = observation if isinstance(observation, str) else _dumps(observation)
    return {"role": "user", "content": f"Observation: {text}"}


def final_answer(call: ToolCall) -> str:
    """The answer text of a ``finish`` / ``ask_to_user`` call."""
    for key in ("answer", "final_answer", "question", "query", "text"):
        value = call.arguments.get(key)
        if isinstance(value, str):
            return value
    strings = [v for v in call.arguments.values() if isinstance(v, str)]
    return strings[0] if strings else _dumps(call.arguments)


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


@register_agent("react")
class ReactAgent:
    """Thought → Action → Observation, up to ``max_turns`` turns."""

    name = "react"
    stepwise = True
    reads_answer_key: str | None = None

    async def run(
        self, instance: Instance, model: Model, template: Template, options: AgentOptions
    ) -> Prediction:
        t0 = time.perf_counter()
        env: CallExecutor | None = options.environment(instance) if options.environment else None
        prompt = template.messages(instance)
        messages: list[Message] = list(prompt)
        gen = options.generate.model_copy(deep=True)
        gen.stop = list(dict.fromkeys([*gen.stop, *REACT_STOP]))
        outputs: list[ModelOutput] = []
        steps: list[Step] = []
        made: list[ToolCall] = []
        observations: list[Any] = []
        answer: str | None = None
        ended_by: str = "max_turns"
        error: str | None = None
        for _turn in range(max(1, options.max_turns)):
            req = ChatRequest(
                messages=messages, tools=list(instance.tools), options=gen, tag=instance.id
            )
            out = await model.safe_request(req)
            outputs.append(out)
            if out.error:
                steps.append(Step(role="assistant", text=out.text, error=out.error))
                error, ended_by = out.error, "error"
                break
            text, parsed = read_output(out, template)
            step = Step(role="assistant", text=text, parsed=parsed)
            steps.append(step)
            messages.append({"role": "assistant", "content": text})
            if parsed.is_error:
                step.error = parsed.error
                step.observation = f"Error: the output could not be read ({parsed.error})."
                messages.append(observation_message(template, step.observation))
                continue
            if not parsed.calls:
                if parsed.details.get("finish"):  # `Action: finish` read as the final answer
                    answer, ended_by = parsed.text, FINISH
                    break
                if parsed.details.get("plain_text"):  # no Action at all: ask for the format
                    step.error = "no Action in the output"
                    step.observation = FORMAT_REMINDER
                    messages.append(observation_message(template, step.observation))
                    continue
                answer, ended_by = parsed.text, "answer"  # an explicit answer without a call
                break
            turn_obs: list[Any] = []
            reply: str | None = None
            for call in parsed.calls:
                if call.name == ASK_TO_USER and isinstance(env, AnswersUser):
                    reply = await env.ask_user(final_answer(call))
                    if reply is not None:
                        break
                if call.name in (FINISH, ASK_TO_USER):
                    answer = final_answer(call)
                    ended_by = FINISH if call.name == FINISH else ASK_TO_USER
                    break
                made.append(call)
                if env is None:
                    obs: Any = {"error": NO_ENVIRONMENT}
                else:
                    obs, _err = await execute_call(env, call)
                observations.append(obs)
                turn_obs.append(obs)
            if turn_obs:
                step.observation = turn_obs[0] if len(turn_obs) == 1 else turn_obs
                messages.append(observation_message(template, step.observation))
            if reply is not None:  # the simulated user answered: the episode goes on
                steps.append(Step(role="user", text=reply))
                messages.append({"role": "user", "content": reply})
                continue
            if ended_by in (FINISH, ASK_TO_USER):
                break

        if error is not None and not made:
            parsed_all = failed_parse(error)
        elif made:
            parsed_all = ParseResult.ok(made, text=answer)
        elif answer is not None or ended_by in (FINISH, ASK_TO_USER):
            parsed_all = ParseResult.no_call(answer)
        else:
            reasons = [s.error for s in steps if s.error]
            parsed_all = ParseResult.fail(
                reasons[-1] if reasons else f"no call and no answer in {len(steps)} turns"
            )
        model_steps = [s for s in steps if s.role == "assistant"]
        execution = ExecutionRecord(
            crashed=error is not None,
            actions=[render_action(env, c) for c in made],
            observations=observations,
            turns=len(model_steps),
            ended_by=ended_by,
            finished=ended_by == FINISH,
            answer=answer,
        )
        if isinstance(env, HasState):
            execution.state = env.state()
        timings = timings_of(outputs)
        timings["total_s"] = time.perf_counter() - t0
        return Prediction(
            id=instance.id,
            prompt=prompt,
            raw="\n\n".join(s.text for s in model_steps),
            parsed=parsed_all,
            steps=steps,
            execution=execution,
            error=error,
            usage=usage_of(outputs),
            timings=timings,
            metadata={"finish_reason": outputs[-1].finish_reason if outputs else None},
        )
