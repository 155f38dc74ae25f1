"""The ``oracle`` model: answers every instance with its gold calls, rendered in the active template.

``toollab eval --model oracle ...`` runs the whole pipeline (prompt → render → parse → execute →
score) with perfect answers, so any score below the benchmark's fixed points points at a bug in a
template, parser, environment or scorer rather than at a model.

The oracle must know which instance a request belongs to and which template is active: the runner
calls :meth:`OracleModel.bind` with the instances and the template, and every request carries the
instance id in :attr:`ChatRequest.tag`.

* Single-turn agents get the whole gold answer at once (:meth:`Template.target`).
* Step-by-step agents (ReAct: one call per turn) get the n-th gold call on their n-th turn and the
  final answer once the gold calls are used up (``stepwise=True``).
* Instances answered turn by turn (``metadata["gold_turns"]``: the number of gold calls of each
  user turn, as BFCL multi-turn entries have): at the first step of a user turn all of that
  turn's gold calls, then an answer with no call (which ends the turn).
* DEER's teacher-forced second round (a raw prompt ending in the gold pool and ``#``) gets the
  rest of the gold chain.

Model strings: ``oracle`` (or ``oracle:``); ``oracle:?latency=0.05`` answers after 50 ms.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from toollab.errors import BackendError
from toollab.models.base import (
    ChatRequest,
    GoldWriter,
    Model,
    ModelOutput,
    Timings,
    Usage,
    cut_at_stop,
)
from toollab.models.registry import ModelSpec, merge_options, register_provider
from toollab.schema import Instance

#: the round-two prompt of DEER's inference ends in this (the model continues the marker)
_DEER_FORCED_SUFFIX = " #"


class OracleModel(Model):
    """Gold answers in the template's own syntax.  Needs :meth:`bind` before the first request."""

    supports_constraints = False
    max_concurrency = 8
    reads_answer_key = "answers every request with the gold calls"

    def __init__(
        self, *, stepwise: bool = False, latency: float = 0.0, name: str = "oracle"
    ) -> None:
        self.name = name
        self.stepwise = stepwise
        #: seconds each answer takes (to watch progress, or to interrupt a run in tests)
        self.latency = max(0.0, float(latency))
        self.template: GoldWriter | None = None
        self._instances: dict[str, Instance] = {}

    def bind(
        self,
        instances: Iterable[Instance],
        template: GoldWriter,
        *,
        stepwise: bool | None = None,
    ) -> OracleModel:
        """Tell the oracle which instances it will be asked about and the template to answer in."""
        self._instances = {inst.id: inst for inst in instances}
        self.template = template
        if stepwise is not None:
            self.stepwise = stepwise
        return self

    def answer(self, req: ChatRequest) -> str:
        """The gold text for this request."""
        if self.template is None:
            raise BackendError(
                "the oracle model is not bound to a dataset: call OracleModel.bind(instances, "
                "template) first (toollab eval does this)"
            )
        inst = self._instances.get(req.tag or "")
        if inst is None:
            raise BackendError(
                f"the oracle has no instance {req.tag!r}: requests must carry the instance id in "
                "ChatRequest.tag"
            )
        tpl = self.template
        if req.prompt is not None and req.prompt.endswith(_DEER_FORCED_SUFFIX):
            # DEER's teacher-forced round two: the prompt ends in the gold pool and a "#"; the
            # gold continues with the rest of its decision marker
            full = tpl.target(inst)
            for marker in ("#CallAPI#", "#NoCallAPI#"):
                cut = full.find(marker)
                if cut >= 0:
                    return full[cut + 1 :]
            return full
        if not self.stepwise:
            return tpl.target(inst)
        per_turn = inst.metadata.get("gold_turns")
        if isinstance(per_turn, list):
            return _turn_answer(inst, [int(n) for n in per_turn], req.messages, tpl)
        step = _assistant_turns(req.messages) - _assistant_turns(inst.messages)
        gold = list(inst.gold)
        if step < len(gold):
            return tpl.render_calls([gold[step]])
        return tpl.render_answer(inst.answer)

    async def request(self, req: ChatRequest) -> ModelOutput:
        if self.latency:
            await asyncio.sleep(self.latency)
        # like a real backend, the text ends at a stop string (which is not returned)
        text, stop = cut_at_stop(self.answer(req), req.options.stop)
        words = sum(len(str(m.get("content") or "").split()) for m in req.messages)
        words += len((req.prompt or "").split())
        return ModelOutput(
            text=text,
            usage=Usage(prompt_tokens=words, completion_tokens=len(text.split())),
            timings=Timings(total_s=self.latency),
            finish_reason="stop",
            stop=stop,
            tag=req.tag,
        )


def _turn_answer(
    inst: Instance, per_turn: list[int], messages: list[dict[str, Any]], tpl: GoldWriter
) -> str:
    """The gold of a turn-by-turn instance: the request's user turn is its number of user
    messages, its step the assistant messages since the last one."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    turn = len(users) - 1
    step = _assistant_turns(messages[users[-1] :]) if users else 0
    if 0 <= turn < len(per_turn) and step == 0 and per_turn[turn]:
        start = sum(per_turn[:turn])
        return tpl.render_calls(list(inst.gold[start : start + per_turn[turn]]))
    return tpl.render_answer(None)


def _assistant_turns(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m.get("role") == "assistant")


@register_provider("oracle")
def _oracle_provider(spec: ModelSpec, **options: Any) -> Model:
    opts = merge_options(spec, options, ["stepwise", "latency"])
    return OracleModel(
        stepwise=bool(opts.get("stepwise", False)), latency=float(opts.get("latency", 0.0))
    )
