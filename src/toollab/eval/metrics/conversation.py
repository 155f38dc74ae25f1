"""The ``conversation`` scorer: whole conversations over held-out environment episodes.

An episode (:mod:`toollab.eval.conversations`) is an instance whose ``messages`` are the user
turns of one conversation in one environment world and whose answer key
(``metadata["conversation"]``, :class:`ReferenceTurn` s) says, per turn, what the reference
conversation did: its kind (a call, a follow-up call, a request no tool fits, a question answered
without a tool), how many calls, and the observed values its answer writes.  The ``conversation``
agent plays the turns one after another and records per turn how it went
(:class:`~toollab.agents.conversation.TurnRecord`, ``Prediction.metadata["turns"]``); this
scorer compares the two, one sample (one conversation) at a time.  Every figure is defined once,
in :data:`FIGURES`; the rows hold counts, so the turn figures are shares over all the turns of
the run.

**Carrying a value** (:func:`carries`), deterministic, no judge: both texts are case-folded and
their whitespace collapsed; a value that reads as a number is carried when the answer holds a
number equal to it (``115.0`` ~ ``115``; thousands separators ``2,697.92`` read as ``2697.92``),
any other value when it occurs in the answer as a whole phrase (not inside a longer word:
``Emma`` is not carried by ``Emmanuel``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from toollab.agents.conversation import (
    ANSWERED,
    FINAL,
    MODEL_ERROR,
    REPEATED,
    STEP_LIMIT,
    TurnRecord,
)
from toollab.eval.metrics.registry import MetricResult, scorer
from toollab.eval.metrics.sample import Aggregate, Figure, Row, SampleScorer, mean_of
from toollab.schema import Instance
from toollab.schema.measures import Number
from toollab.schema.record import Prediction

#: the key of the reference turns in an episode's metadata, and of the played turns in a
#: prediction's metadata
REFERENCE_KEY = "conversation"
RECORD_KEY = "turns"

#: kinds of user turn (those of :mod:`toollab.sft.episodes`)
CALL_KINDS = ("call", "follow-up call")
NO_TOOL_KINDS = ("no-call", "no-search")


class ReferenceTurn(BaseModel):
    """What the reference conversation did in one user turn (the answer key)."""

    #: the instance the turn came from
    id: str
    #: ``call``, ``follow-up call``, ``no-call`` (no tool fits), ``no-search`` (no tool needed)
    kind: str
    #: calls of its reference program
    calls: int = 0
    #: the observed values its reference answer writes (not those the calls state)
    values: list[str] = Field(default_factory=list)
    #: the reference answer
    answer: str = ""


def reference_turns(instance: Instance) -> list[ReferenceTurn] | None:
    """An episode's reference turns, or ``None`` for an instance that is not an episode."""
    raw = instance.metadata.get(REFERENCE_KEY)
    if not isinstance(raw, list) or not raw:
        return None
    try:
        return [ReferenceTurn.model_validate(t) for t in raw]
    except ValidationError:
        return None


def played_turns(prediction: Prediction) -> list[TurnRecord]:
    """The turns a prediction played (none for a failed prediction or an unreadable record)."""
    raw = prediction.metadata.get(RECORD_KEY)
    if not isinstance(raw, list):
        return []
    try:
        return [TurnRecord.model_validate(t) for t in raw]
    except ValidationError:
        return []


# -- carrying a value ------------------------------------------------------------------------------
_SPACE = re.compile(r"\s+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text.casefold()).strip()


def _as_number(text: str) -> float | None:
    if not _NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def carries(value: str, answer: str) -> bool:
    """Whether ``answer`` carries ``value`` (see the module docs)."""
    v, text = _norm(value), _norm(answer)
    if not v:
        return True
    number = _as_number(_THOUSANDS.sub("", v))
    if number is not None:
        found = (float(m) for m in _NUMBER.findall(_THOUSANDS.sub("", text)))
        return any(abs(x - number) <= 1e-9 * max(1.0, abs(number)) for x in found)
    return re.search(rf"(?<!\w){re.escape(v)}(?!\w)", text) is not None


# -- the figures -----------------------------------------------------------------------------------
def share(part: str, whole: str) -> Aggregate:
    """``sum(part) / sum(whole)`` over the rows (``None`` when ``whole`` sums to 0)."""

    def agg(rows: Sequence[Row]) -> Number:
        den = sum(float(r.get(whole) or 0) for r in rows)
        return sum(float(r.get(part) or 0) for r in rows) / den if den else None

    return agg


def total(key: str) -> Aggregate:
    def agg(rows: Sequence[Row]) -> Number:
        return sum(int(r.get(key) or 0) for r in rows) if rows else None

    return agg


FIGURES = (
    Figure(
        "answered",
        "answered",
        "user turns that need a call: the model called and then answered in text after the "
        "results (not stopped by the step limit, the repeat guard, an unreadable output or a "
        "model failure; an answer of the final step at the step limit counts)",
        share("answered", "call_turns"),
    ),
    Figure(
        "carries_values",
        "values",
        "user turns that need a call and whose reference answer writes observed values: the "
        "model's answer carries every one of them (deterministic text check, see "
        "docs/evaluation.md)",
        share("carried_all", "value_turns"),
    ),
    Figure(
        "value_recall",
        "val.rec",
        "the same turns: the share of the reference answer's observed values the model's answer "
        "carries (mean over turns)",
        share("value_recall", "value_turns"),
    ),
    Figure(
        "no_tool_answered",
        "no-tool",
        "user turns no tool serves (no tool fits, or none is needed): answered in text without a "
        "call",
        share("no_tool_answered", "no_tool_turns"),
    ),
    Figure(
        "repeat_turns",
        "rep.turns",
        "user turns with at least one repeated identical call (same name and arguments, "
        "nothing new learnt)",
        share("repeat_turns", "turns"),
    ),
    Figure(
        "repeated_calls",
        "repeats",
        "repeated identical calls over the whole run (a count)",
        total("repeated_calls"),
        percent=False,
    ),
    Figure(
        "step_limit",
        "limit",
        "user turns stopped by the step limit (every step a call, no answer)",
        share("step_limit", "turns"),
    ),
    Figure(
        "final_step",
        "final",
        "user turns that reached the step limit (every step a call) and were answered by the "
        "final step, whose grammar admits no call",
        share("final_step", "turns"),
    ),
    Figure(
        "guard_ended",
        "guard",
        "user turns the repeat guard ended (a second repeated call: its known result stands in "
        "for the answer)",
        share("guard_ended", "turns"),
    ),
    Figure(
        "unparsed",
        "unparsed",
        "model steps whose output could not be read",
        share("unparsed", "steps"),
    ),
    Figure(
        "crashed",
        "crash",
        "conversations cut short by a model failure, an agent crash or a timeout",
        mean_of("crashed"),
    ),
    Figure(
        "turns",
        "turns",
        "user turns played per conversation (mean)",
        mean_of("played"),
        percent=False,
    ),
    Figure(
        "steps",
        "steps",
        "model steps per conversation (mean)",
        mean_of("steps"),
        percent=False,
    ),
)


def turn_row(reference: ReferenceTurn, played: TurnRecord | None) -> Row:
    """The counts of one user turn (a turn never played counts as failed)."""
    needs_call = reference.kind in CALL_KINDS
    answered = played is not None and played.ended_by in (ANSWERED, FINAL)
    row: Row = {
        "turns": 1,
        "call_turns": int(needs_call),
        "no_tool_turns": int(reference.kind in NO_TOOL_KINDS),
        "answered": int(needs_call and answered and played is not None and played.calls > 0),
        "no_tool_answered": int(
            reference.kind in NO_TOOL_KINDS and answered and played is not None and not played.calls
        ),
        "value_turns": 0,
        "carried_all": 0,
        "value_recall": 0.0,
        "repeat_turns": int(played is not None and played.repeats > 0),
        "repeated_calls": played.repeats if played is not None else 0,
        "step_limit": int(played is not None and played.ended_by == STEP_LIMIT),
        "final_step": int(played is not None and played.ended_by == FINAL),
        "guard_ended": int(played is not None and played.ended_by == REPEATED),
        "unparsed": played.unparsed if played is not None else 0,
        "steps": played.steps if played is not None else 0,
    }
    if needs_call and reference.values:
        text = played.answer if played is not None and answered else None
        found = sum(1 for v in reference.values if text is not None and carries(v, text))
        row["value_turns"] = 1
        row["carried_all"] = int(found == len(reference.values))
        row["value_recall"] = found / len(reference.values)
    return row


_SUMMED = (
    "turns",
    "call_turns",
    "no_tool_turns",
    "answered",
    "no_tool_answered",
    "value_turns",
    "carried_all",
    "value_recall",
    "repeat_turns",
    "repeated_calls",
    "step_limit",
    "final_step",
    "guard_ended",
    "unparsed",
    "steps",
)


@scorer(
    "conversation",
    formats=("env:*",),
    needs=("metadata",),
    description="whole conversations over held-out environment episodes: answered after the "
    "results, answers carrying the observed values, no-tool turns, repeated calls, turns",
)
class ConversationScorer(SampleScorer):
    """How a model carries whole conversations (see the module docs); only episodes."""

    figures = FIGURES

    def accepts(self, instance: Instance) -> bool:
        return super().accepts(instance) and reference_turns(instance) is not None

    def score_sample(self, prediction: Prediction, instance: Instance) -> Row:
        refs = reference_turns(instance) or []
        played = played_turns(prediction)
        turns = [
            turn_row(ref, played[i] if i < len(played) else None) for i, ref in enumerate(refs)
        ]
        row: Row = {k: sum(t[k] for t in turns) for k in _SUMMED}
        crashed = bool(prediction.error) or any(p.ended_by == MODEL_ERROR for p in played)
        row["crashed"] = float(crashed)
        row["played"] = len(played)
        row["per_turn"] = [
            {"kind": ref.kind, "ended_by": p.ended_by if p is not None else None, **_short(t)}
            for ref, p, t in zip(refs, [*played, *[None] * len(refs)], turns, strict=False)
        ]
        return row

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        """The figures, and the same figures per environment (``breakdown``)."""
        res = super().score(predictions, instances)
        groups: dict[str, list[Row]] = {}
        for pred in predictions:
            inst = instances.get(pred.id)
            key = pred.id if not pred.repeat else f"{pred.id}@{pred.repeat}"
            if inst is not None and key in res.per_instance:
                env = str(inst.metadata.get("env") or inst.source or "")
                groups.setdefault(env, []).append(res.per_instance[key])
        if len(groups) > 1:
            res.breakdown = {
                env: {fig.name: fig.aggregate(rows) for fig in self.figures}
                for env, rows in groups.items()
            }
        return res


def _short(turn: Row) -> dict[str, Any]:
    """What a turn's entry in the per-sample row keeps (the report's drill-down reads it)."""
    keep = ("answered", "no_tool_answered", "value_recall", "repeated_calls", "steps")
    return {k: turn[k] for k in keep}
