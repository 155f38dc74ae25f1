"""DEER's two-round inference (ToolDEER ``src/inference.py``).

Round 1 completes DEER's raw prompt (``<system> Human: q Assistant:``) and stops at a decision
marker (``#SearchAPI#``, ``#APIResponse#``, ``#End#``, ``#NoCallAPI#``; as upstream, a marker
completed across the prompt boundary stops too: round 2 stops at ``NoCallAPI#`` after the forced
``#``).  If it stops at
``#SearchAPI#`` and the gold chain looked up the pool too, round 2 is *teacher-forced*: the prompt,
the gold API pool and a ``#``, which the model continues with ``CallAPI# f(...) #APIResponse#`` or
``NoCallAPI# ...``.  No tool is executed.

``steps[0]`` holds round 1, ``steps[1]`` round 2 (the forced pool text, kept in its
``observation``, followed by the model's continuation); ``raw`` is both concatenated, so it reads
as one chain.  Backends drop the stop string they stopped at; the agent puts back the marker the
chain's grammar implies there (``#Begin# Need to ...`` → ``#SearchAPI#``, a call → ``#APIResponse#``,
``#NoCallAPI# ...`` / ``Don't need ...`` → ``#End#``, a pool without a call → ``#NoCallAPI#``).
"""

from __future__ import annotations

import time

from toollab.agents.base import AgentOptions, failed_parse, register_agent, timings_of, usage_of
from toollab.errors import UsageError
from toollab.models.base import ChatRequest, Model, ModelOutput
from toollab.parsing.deer import BEGIN, CALL, END, NO_CALL, RESPONSE, SEARCH
from toollab.schema import Decision, Instance
from toollab.schema.record import Prediction, Step
from toollab.templates.base import RawPrompts, Template

DEER_STOP = [SEARCH, RESPONSE, END, NO_CALL]
_MARKERS = (BEGIN, SEARCH, CALL, NO_CALL, RESPONSE, END)
#: DEER generates at most 128 new tokens per round
DEER_MAX_TOKENS = 128


def stop_marker(context: str, text: str, finish_reason: str | None) -> str:
    """The marker generation stopped at, which the backend left out of ``text`` ('' if none).

    ``context`` is the chain text before ``text`` (round 2: the teacher-forced pool).
    """
    if finish_reason == "length":
        return ""
    stripped = text.rstrip()
    if any(stripped.endswith(m) for m in DEER_STOP):
        return ""  # this backend returns the stop string
    whole = context + text
    last, at = "", -1
    for m in _MARKERS:
        pos = whole.rfind(m)
        if pos > at:
            last, at = m, pos
    if last == BEGIN:
        marker = END if "Don't need" in whole[at:] else SEARCH
    else:
        marker = {SEARCH: NO_CALL, CALL: RESPONSE, NO_CALL: END, RESPONSE: END}.get(last, "")
    if marker and whole.endswith("#"):  # the teacher-forced "#" already opened the marker
        marker = marker[1:]
    return marker


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
        marker = stop_marker("", out1.text, out1.finish_reason)
        round1 = out1.text + marker
        steps = [Step(role="round1", text=round1)]
        raw = round1
        metadata: dict[str, object] = {"rounds": 1, "finish_reason": out1.finish_reason}

        searched = marker == SEARCH or (not marker and round1.rstrip().endswith(SEARCH))
        if searched and instance.label() is not Decision.NO_SEARCH:
            forced_prompt = template.teacher_forced_prompt(instance)
            tail = _after_search(forced_prompt[len(first_prompt) :])
            # the forced prompt ends in "#", so "#NoCallAPI#" completes as "NoCallAPI#"
            gen2 = gen.model_copy(update={"stop": [*gen.stop, NO_CALL[1:]]})
            out2 = await model.safe_request(
                ChatRequest(prompt=forced_prompt, options=gen2, tag=instance.id)
            )
            outputs.append(out2)
            if out2.error:
                return self._failed(instance, first_prompt, outputs, out2.error, t0)
            text2 = tail + out2.text + stop_marker(round1 + tail, out2.text, out2.finish_reason)
            steps.append(Step(role="round2", text=text2, observation=tail))
            raw = round1 + text2
            metadata.update(rounds=2, finish_reason=out2.finish_reason, teacher_forced=tail)

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
