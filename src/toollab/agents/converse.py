"""The ``conversation`` agent: plays a whole conversation, one user turn after another.

An instance's ``messages`` hold the user turns (an episode of ``toollab eval --conversations``;
an instance without them is one turn, its ``query``).  The agent sends them in order to one
conversation under the conversation protocol (:mod:`toollab.agents.conversation`, the loop
``toollab chat`` runs, with no call required: the model may answer at once): each user turn runs
at most ``max_turns`` model steps (``--max-turns``: the step limit per user turn), every call is
executed in the instance's environment — one world for the whole conversation, so later turns
see what earlier ones did — and its result goes back as a ``tool`` message; a repeated identical
call is handled by the repeat guard as in ``chat``.  A turn that ends without an answer (step
limit, an unreadable output) leaves its steps in the history and the next user turn follows; a
model failure ends the conversation (recorded, scored as a crash).

The prediction keeps every step (``steps``: a ``user`` step per turn, then the model's), the
executed calls and the final state (``execution``), and per turn a
:class:`~toollab.agents.conversation.TurnRecord` in ``metadata["turns"]``, which the
``conversation`` scorer reads.
"""

from __future__ import annotations

import time
from typing import Any

from toollab.agents.base import (
    AgentOptions,
    execute_call,
    register_agent,
    timings_of,
    usage_of,
)
from toollab.agents.conversation import (
    MODEL_ERROR,
    TurnRecord,
    TurnRunner,
    plain,
)
from toollab.envs.base import CallExecutor, HasState
from toollab.envs.execute import render_action
from toollab.models.base import Message, Model, ModelOutput
from toollab.parsing import ParseResult
from toollab.schema import Instance, ToolCall
from toollab.schema.record import ExecutionRecord, Prediction, Step
from toollab.templates.base import Template

NO_ENVIRONMENT = "no environment is available to execute this tool"


def user_turns(instance: Instance) -> list[str]:
    """The user messages of an instance, in order (its ``query`` when it has no messages)."""
    turns = [str(m.get("content") or "") for m in instance.messages if m.get("role") == "user"]
    return turns or [instance.query]


@register_agent("conversation")
class ConversationAgent:
    """Every user turn of the instance in one conversation (see the module docs)."""

    name = "conversation"
    stepwise = True
    reads_answer_key: str | None = None

    async def run(
        self, instance: Instance, model: Model, template: Template, options: AgentOptions
    ) -> Prediction:
        t0 = time.perf_counter()
        env: CallExecutor | None = options.environment(instance) if options.environment else None
        tools = list(instance.tools)
        system = template.system_prompt(tools)
        messages: list[Message] = [{"role": "system", "content": system}] if system else []
        prompt = [*messages, *({"role": "user", "content": t} for t in user_turns(instance))]
        made: list[ToolCall] = []
        observations: list[Any] = []

        async def execute(calls: list[ToolCall]) -> list[Any]:
            out: list[Any] = []
            for call in calls:
                if env is None:
                    obs: Any = {"error": NO_ENVIRONMENT}
                else:
                    obs, _err = await execute_call(env, call)
                made.append(call)
                observations.append(plain(obs))
                out.append(obs)
            return out

        runner = TurnRunner(
            model,
            template,
            tools,
            execute,
            options.generate,
            max_steps=max(1, options.max_turns),
            constrained=options.constrained and bool(tools),  # no tools: nothing to constrain
            require_call=False,
            tag=instance.id,
        )
        steps: list[Step] = []
        outputs: list[ModelOutput] = []
        records: list[TurnRecord] = []
        error: str | None = None
        for text in user_turns(instance):
            steps.append(Step(role="user", text=text))
            outcome = await runner.run_turn(messages, text)
            for ts in outcome.steps:
                outputs.append(ts.output)
                steps.append(
                    Step(
                        role="assistant",
                        text=ts.output.text,
                        parsed=ts.parsed,
                        observation=list(ts.results) if ts.calls else None,
                        error=ts.output.error or ts.parsed.error,
                    )
                )
            records.append(TurnRecord.of(outcome))
            if outcome.ended_by == MODEL_ERROR:
                error = outcome.error
                break
        answers = [r.answer for r in records if r.answer is not None]
        last = answers[-1] if answers else None
        if made:
            parsed = ParseResult.ok(list(made), text=last)
        elif answers:
            parsed = ParseResult.no_call(last)
        else:
            parsed = ParseResult.fail(error or "no call and no answer in the conversation")
        execution = ExecutionRecord(
            crashed=error is not None,
            error=error,
            actions=[render_action(env, c) for c in made],
            observations=observations,
            n_calls=len(made),
            turns=sum(r.steps for r in records),
            ended_by=records[-1].ended_by if records else None,
            finished=bool(records) and error is None,
            answer=last,
        )
        if isinstance(env, HasState):
            execution.state = env.state()
        timings = timings_of(outputs)
        timings["total_s"] = time.perf_counter() - t0
        return Prediction(
            id=instance.id,
            prompt=prompt,
            raw="\n\n".join(s.text for s in steps if s.role == "assistant"),
            parsed=parsed,
            steps=steps,
            execution=execution,
            error=error,
            usage=usage_of(outputs),
            timings=timings,
            metadata={"turns": [r.model_dump(mode="json") for r in records]},
        )
