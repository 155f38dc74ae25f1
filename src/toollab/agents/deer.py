"""DEER's two-round inference (ToolDEER ``src/inference.py``).

Round 1 completes DEER's raw prompt (``<system> Human: q Assistant:``) and stops at a decision
marker (``#SearchAPI#``, ``#APIResponse#``, ``#End#``, ``#NoCallAPI#``; as upstream, a marker
completed across the prompt boundary stops too: round 2 stops at ``NoCallAPI#`` after the forced
``#``).  If round 1 takes the ``#SearchAPI#`` branch and the gold chain looked up the pool too,
round 2 is *teacher-forced*: the prompt, the gold API pool and a ``#``, which the model continues
with ``CallAPI# f(...) #APIResponse#`` or ``NoCallAPI# ...``.  No tool is executed.

``steps[0]`` holds round 1, ``steps[1]`` round 2 (the forced pool text, kept in its
``observation``, followed by the model's continuation); ``raw`` is both concatenated, so it reads
as one chain.  Upstream decodes the whole sequence, so a chain holds the marker generation
stopped at.  Backends leave the stop string out of their text and say which one it was
(:attr:`ModelOutput.stop`); the agent writes exactly that marker back, and nothing else: an
output that ended at end of sequence or at the token limit (``finish_reason`` ``"length"``)
holds no marker it did not write, and text that already holds its marker (a replayed upstream
output, ``NoCallAPI#`` after the forced ``#``) is kept as it is.  Round 2 follows when upstream's
reading order (``#End#``, ``#NoCallAPI#``, ``#CallAPI#``, ``#SearchAPI#``) takes the
``#SearchAPI#`` branch on round 1.
"""

from __future__ import annotations

import time

from toollab.agents.base import AgentOptions, failed_parse, register_agent, timings_of, usage_of
from toollab.errors import UsageError
from toollab.models.base import ChatRequest, Model, ModelOutput
from toollab.parsing.deer import BEGIN, END, NO_CALL, RESPONSE, SEARCH, UPSTREAM_ORDER
from toollab.schema import Decision, Instance
from toollab.schema.record import Prediction, Step
from toollab.templates.base import RawPrompts, Template

DEER_STOP = [SEARCH, RESPONSE, END, NO_CALL]
#: round 2 continues a teacher-forced "#", so "#NoCallAPI#" completes as "NoCallAPI#"
DEER_STOP_ROUND2 = [*DEER_STOP, NO_CALL[1:]]
#: DEER generates at most 128 new tokens per round
DEER_MAX_TOKENS = 128


def stop_marker(out: ModelOutput, markers: list[str]) -> str:
    """The marker ``out`` stopped at and its backend left out of the text ('' if none).

    Only what the backend reports (:attr:`ModelOutput.stop`) is written back, and only when it
    is one of the round's ``markers``: nothing is inferred, so an output that ended at end of
    sequence or at the token limit, or whose backend does not say, gets no marker.
    """
    if out.finish_reason == "length" or out.stop is None:
        return ""
    return out.stop if out.stop in markers else ""


def upstream_searches(text: str) -> bool:
    """Whether upstream's reading of round 1 takes the ``#SearchAPI#`` branch (the next round)."""
    return BEGIN in text and next((m for m in UPSTREAM_ORDER if m in text), None) == SEARCH


@register_agent("deer")
class DeerAgent:
    """Round 1, and a teacher-forced round 2 after ``#SearchAPI#``."""

    name = "deer"
    stepwise = False
    #: upstream's inference is teacher-forced: round two is given the gold candidate pool, and a
    #: NoSearch-labelled instance gets no round two
    reads_answer_key: str | None = (
        "teacher-forced second round: the gold candidate pool is injected after #SearchAPI# "
        "(and skipped for NoSearch labels), as DEER's own inference does"
    )
    #: DEER generates at most 128 new tokens per round
    default_max_tokens = DEER_MAX_TOKENS
    #: template methods this agent calls (checked before a run starts)
    needs_template_methods = ("prompt", "teacher_forced_prompt")

    def first_request(self, instance: Instance, template: Template) -> ChatRequest:
        """Round 1's request: the template's raw DEER prompt."""
        if not isinstance(template, RawPrompts):
            raise UsageError(f"agent 'deer' needs a template with prompt, not {template.name!r}")
        return ChatRequest(prompt=template.prompt(instance), tag=instance.id)

    async def run(
        self, instance: Instance, model: Model, template: Template, options: AgentOptions
    ) -> Prediction:
        t0 = time.perf_counter()
        if not isinstance(template, RawPrompts):
            raise UsageError(
                f"the deer agent needs a template with DEER's raw prompts (--template deer), "
                f"not {template.name!r}"
            )
        gen = options.generate.model_copy(deep=True)
        gen.stop = list(dict.fromkeys([*gen.stop, *DEER_STOP]))
        first_prompt = template.prompt(instance)
        outputs: list[ModelOutput] = []

        out1 = await model.safe_request(
            ChatRequest(prompt=first_prompt, options=gen, tag=instance.id)
        )
        outputs.append(out1)
        if out1.error:
            return self._failed(instance, first_prompt, outputs, out1.error, t0)
        marker = stop_marker(out1, DEER_STOP)
        round1 = out1.text + marker
        steps = [Step(role="round1", text=round1)]
        raw = round1
        metadata: dict[str, object] = {
            "rounds": 1,
            "finish_reason": out1.finish_reason,
            "stops": [marker or None],
        }

        if upstream_searches(round1) and instance.label() is not Decision.NO_SEARCH:
            forced_prompt = template.teacher_forced_prompt(instance)
            tail = _after_search(forced_prompt[len(first_prompt) :])
            gen2 = gen.model_copy(
                update={"stop": list(dict.fromkeys([*gen.stop, *DEER_STOP_ROUND2]))}
            )
            out2 = await model.safe_request(
                ChatRequest(prompt=forced_prompt, options=gen2, tag=instance.id)
            )
            outputs.append(out2)
            if out2.error:
                return self._failed(instance, first_prompt, outputs, out2.error, t0)
            marker2 = stop_marker(out2, DEER_STOP_ROUND2)
            text2 = tail + out2.text + marker2
            steps.append(Step(role="round2", text=text2, observation=tail))
            raw = round1 + text2
            metadata.update(
                rounds=2,
                finish_reason=out2.finish_reason,
                stops=[marker or None, marker2 or None],
                teacher_forced=tail,
            )

        timings = timings_of(outputs)
        timings["total_s"] = time.perf_counter() - t0
        return Prediction(
            id=instance.id,
            prompt=first_prompt,
            raw=raw,
            parsed=template.parse(raw),
            steps=steps,
            usage=usage_of(outputs),
            timings=timings,
            metadata=metadata,
        )

    def _failed(
        self,
        instance: Instance,
        prompt: str,
        outputs: list[ModelOutput],
        error: str,
        t0: float,
    ) -> Prediction:
        timings = timings_of(outputs)
        timings["total_s"] = time.perf_counter() - t0
        return Prediction(
            id=instance.id,
            prompt=prompt,
            raw="",
            parsed=failed_parse(error),
            steps=[
                Step(role=f"round{i + 1}", text=o.text, error=o.error)
                for i, o in enumerate(outputs)
            ],
            error=error,
            usage=usage_of(outputs),
            timings=timings,
        )


def _after_search(forced: str) -> str:
    """The teacher-forced text that follows round 1's ``#SearchAPI#``: the pool and a ``#``."""
    pos = forced.find(SEARCH)
    return forced[pos + len(SEARCH) :] if pos >= 0 else forced
