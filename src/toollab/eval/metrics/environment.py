"""The ``environment`` scorer: the figures of toollab's executable environments (``toollab
bench``), one sample at a time.

Per sample it reads the prediction's calls and its :class:`~toollab.schema.record.ExecutionRecord`
(written by the agent that executed the program in the instance's environment).  The figures:

* **success** — over Call instances: the final state equals a label's (dict-F1 = 1);
* **crash rate** — over Call instances: the program did not execute (or could not be parsed, or
  the model failed);
* **dict-F1** — over Call instances: F1 between the predicted and the best label's final state
  (0 for a crash);
* **Tool F1 / Param F1** — over every instance, micro: predicted calls against the reference
  calls (one-to-one matching by name, then equal argument values; numbers compare by value, so
  ``185`` matches ``185.0``; an argument also matches any of the gold call's ``acceptable``
  values); a parameter one side states at its schema default and the other leaves out counts as
  stated alike on both sides (``k=3`` vs. no ``k``), defaults neither side mentions are not
  counted; the reference is whichever of the gold program and its acceptable alternatives
  scores best for the instance;
* **decision accuracy** — over every instance: call vs. no call against the label (Call vs.
  NoCall / NoSearch);
* **LCS** — over Call instances of environments that score plans (household): the VirtualHome
  plan similarity to the closest reference (0 for a prediction with no plan).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from toollab.eval.metrics.registry import scorer
from toollab.eval.metrics.sample import Figure, Row, SampleScorer, mean_of, micro_f1
from toollab.schema import Decision, GoldCall, Instance, Tool, ToolCall
from toollab.schema.measures import Number, f1, mean, same_value
from toollab.schema.record import Prediction

# -- per-call matching ------------------------------------------------------------------------------


def _arg_matches(value: Any, gold: ToolCall, key: str) -> bool:
    if key not in gold.arguments:
        return False
    ok = [gold.arguments[key]]
    if isinstance(gold, GoldCall):
        ok.extend(gold.acceptable.get(key, []))
    return any(same_value(value, v) for v in ok)


def _filled(
    pred: ToolCall, gold: ToolCall, tools: Mapping[str, Tool]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two calls' arguments with a schema default filled in on each side for every
    parameter that the other side states (so ``k=3`` stated and ``k`` left out at its default
    of 3 agree, while defaults neither side mentions are not counted)."""
    tool = tools.get(gold.name)
    if tool is None:
        return dict(pred.arguments), dict(gold.arguments)
    defaults = {
        k: spec["default"]
        for k, spec in tool.properties.items()
        if isinstance(spec, dict) and "default" in spec
    }
    said = set(pred.arguments) | set(gold.arguments)
    fill = {k: v for k, v in defaults.items() if k in said}
    return {**fill, **pred.arguments}, {**fill, **gold.arguments}


Counts = tuple[int, int, int, int, int, int]


def call_counts(
    pred: Sequence[ToolCall],
    gold: Sequence[ToolCall],
    tools: Mapping[str, Tool] | None = None,
) -> Counts:
    """(correct tools, predicted tools, gold tools, correct params, predicted params, gold params).

    Calls are matched one to one: each gold call takes the not-yet-matched predicted call of the
    same name that agrees on the most argument values (a value agrees when it equals the gold
    value or one of the gold call's ``acceptable`` values; numbers by value).  With ``tools``
    (name -> offered tool) a matched pair has the schema defaults filled in on both sides for
    the parameters either side states (:func:`_filled`) before its parameters are counted.
    """
    tools = tools or {}
    free = list(range(len(pred)))
    ct = cp = pp = gp = 0
    for g in gold:
        best: int | None = None
        best_score = -1
        best_args: tuple[dict[str, Any], dict[str, Any]] = ({}, dict(g.arguments))
        for j in free:
            if pred[j].name != g.name:
                continue
            p_args, g_args = _filled(pred[j], g, tools)
            filled = g.model_copy(update={"arguments": g_args})
            score = sum(1 for k, v in p_args.items() if _arg_matches(v, filled, k))
            if score > best_score:
                best, best_score, best_args = j, score, (p_args, g_args)
        gp += len(best_args[1])
        if best is not None:
            free.remove(best)
            ct += 1
            cp += best_score
            pp += len(best_args[0])
    pp += sum(len(pred[j].arguments) for j in free)
    return ct, len(pred), len(gold), cp, pp, gp


def best_call_counts(
    pred: Sequence[ToolCall],
    references: Sequence[Sequence[ToolCall]],
    tools: Mapping[str, Tool] | None = None,
) -> Counts:
    """:func:`call_counts` against the reference program that suits ``pred`` best: the highest
    Tool F1 + Param F1 for this instance, the first (the gold program) on a tie.  Without any
    reference (a NoCall / NoSearch instance) the counts are those against an empty program."""
    best: Counts = call_counts(pred, [], tools)
    best_score = -1.0
    for ref in references or [[]]:
        counts = call_counts(pred, ref, tools)
        ct, pt, gt, cp, pp, gp = counts
        score = (f1(ct, pt, gt) or 0.0) + (f1(cp, pp, gp) or 0.0)
        if score > best_score:
            best, best_score = counts, score
    return best


# -- the scorer -------------------------------------------------------------------------------------


def _plan_lcs(rows: Sequence[Row]) -> Number:
    """Mean plan LCS over Call instances, where the environment scores plans (a sample with no
    plan scores 0); ``None`` when no sample has one."""
    if not any(r.get("lcs") is not None for r in rows):
        return None
    return mean(float(r.get("lcs") or 0.0) for r in rows if r.get("call"))


FIGURES = (
    Figure(
        "success",
        "success",
        "Call instances whose final state equals a label's (dict-F1 = 1)",
        mean_of("success"),
    ),
    Figure(
        "crash_rate",
        "crash",
        "Call instances whose program did not execute (unparsable output, model failure or a "
        "call the environment refused)",
        mean_of("crashed"),
    ),
    Figure(
        "dict_f1",
        "dictF1",
        "Call instances: mean F1 between the final state and the best label's (0 for a crash)",
        mean_of("dict_f1"),
    ),
    Figure(
        "tool_f1",
        "toolF1",
        "every instance: micro F1 of the predicted call names against the best reference "
        "program (one-to-one matching)",
        micro_f1("tool_correct", "tool_predicted", "tool_gold"),
    ),
    Figure(
        "param_f1",
        "parF1",
        "every instance: micro F1 of the matched calls' argument values (numbers by value, "
        "acceptable values and stated schema defaults count)",
        micro_f1("param_correct", "param_predicted", "param_gold"),
    ),
    Figure(
        "decision_acc",
        "dec",
        "every instance: call vs. no call agrees with the label (Call vs. NoCall / NoSearch)",
        mean_of("decision"),
    ),
    Figure(
        "lcs",
        "LCS",
        "Call instances of environments that score plans (household): normalised LCS of the "
        "plan to the closest reference plan",
        _plan_lcs,
    ),
)


@scorer(
    "environment",
    formats=("env:*",),
    needs=("execution",),
    description="toollab's environments: success, crash rate and dict-F1 over Call instances; "
    "Tool/Param F1 and decision accuracy over every instance; plan LCS",
)
class EnvironmentScorer(SampleScorer):
    """The figures of ``toollab bench``, one sample at a time."""

    figures = FIGURES

    def score_sample(self, prediction: Prediction, instance: Instance) -> Row:
        calls = prediction.calls
        is_call = instance.label() is Decision.CALL
        made_call = bool(calls)
        parsed = prediction.parsed
        if parsed is not None and parsed.decision is not None:
            made_call = parsed.decision is Decision.CALL
        refs = (
            [list(instance.gold), *[list(a) for a in instance.alternatives]]
            if instance.gold
            else []
        )
        ct, pt, gt, cp, pp, gp = best_call_counts(calls, refs, {t.name: t for t in instance.tools})
        row: Row = {
            "call": is_call,
            "decision": float(made_call == is_call),
            "tool_correct": ct,
            "tool_predicted": pt,
            "tool_gold": gt,
            "param_correct": cp,
            "param_predicted": pp,
            "param_gold": gp,
        }
        if not is_call:
            return row
        ex = prediction.execution
        crashed = bool(prediction.error) or ex is None or ex.crashed
        row["crashed"] = float(crashed)
        row["success"] = float(not crashed and ex is not None and bool(ex.success))
        row["dict_f1"] = 0.0 if crashed or ex is None else float(ex.f1 or 0.0)
        row["lcs"] = ex.lcs if ex is not None else None
        return row
