"""The ``environment`` scorer: the figures of toollab's executable environments (``toollab
bench``), one sample at a time.

The scorer judges; the agent only executed.  Per sample it reads the prediction's calls and its
:class:`~toollab.schema.record.ExecutionRecord` (the final state, the observations, the executed
actions, how it crashed), and decides whether the outcome is right with the environment the
instance names (``env:<name>``): the environment runs the instance's gold program and its
acceptable alternatives from the instance's seed (deterministic execution of the answer key,
never of the model's output; :meth:`~toollab.envs.base.Environment.labels_of`, which an
environment judging by predicate overrides) and compares the recorded final state with theirs
(:meth:`~toollab.envs.base.Environment.check`).  So ``toollab score RUN`` re-judges a run from
its stored records, with no model and no re-execution of the predicted program.  A record that
cannot be re-judged (no final state, or an environment that is not installed) is read as it was
stored: runs made before the scorers judged kept their verdict in the record.

The figures:

* **success** — over Call instances: the final state equals a label's (dict-F1 = 1; the scorer
  option ``success_f1`` lowers the bar to a dict-F1 of at least that value);
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
  plan similarity of a single-turn prediction's plan to the closest reference (0 for a
  prediction with no plan; multi-turn loops, whose plan is built turn by turn, are not scored).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toollab.envs.base import (
    Environment,
    PlanScored,
    env_class,
    env_name_of,
    label_programs,
)
from toollab.errors import UsageError
from toollab.eval.metrics.registry import scorer
from toollab.eval.metrics.sample import Figure, Row, SampleScorer, mean_of, micro_f1
from toollab.schema import Decision, GoldCall, Instance, Tool, ToolCall
from toollab.schema.measures import Number, f1, mean, same_value
from toollab.schema.record import ExecutionRecord, Prediction

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


@dataclass(frozen=True)
class Verdict:
    """Whether a recorded final state meets the instance's labels."""

    success: bool
    #: dict-F1 of the final state against the best label's
    f1: float
    precision: float = 0.0
    recall: float = 0.0
    #: index of the best label (0 = the gold program, 1.. = alternatives)
    label: int | None = None
    #: the data's own label program did not execute
    label_error: str | None = None


FAILED = Verdict(success=False, f1=0.0)


class Judge:
    """Judges recorded executions against the labels of their instances, with the environment
    each instance names (one environment per name, label states cached per instance)."""

    def __init__(self, success_f1: float | None = None) -> None:
        self.success_f1 = success_f1
        self._envs: dict[str, Environment] = {}
        self._labels: dict[tuple[str, str], list[dict[str, Any]] | str] = {}

    def environment(self, instance: Instance) -> Environment | None:
        """The registered environment the instance names, or ``None``."""
        name = env_name_of(instance)
        if name is None:
            return None
        if name not in self._envs:
            self._envs[name] = env_class(name)()
        return self._envs[name]

    def label_states(self, env: Environment, instance: Instance) -> list[dict[str, Any]] | str:
        """The final states of the instance's label programs, or why they cannot be had."""
        key = (env.name, instance.id)
        if key not in self._labels:
            try:
                self._labels[key] = env.labels_of(instance)
            except Exception as exc:  # the data's own label does not execute: a failure
                self._labels[key] = f"{type(exc).__name__}: {exc}"
        return self._labels[key]

    def verdict(self, record: ExecutionRecord, instance: Instance) -> Verdict:
        """The verdict on an execution that did not crash: re-judged from its final state when
        the instance's environment is here, else the verdict stored in the record (runs made
        before judging moved to the scorers), else a failure."""
        env = self.environment(instance)
        if env is None or record.state is None:
            return Verdict(success=bool(record.success), f1=float(record.f1 or 0.0))
        labels = self.label_states(env, instance)
        if isinstance(labels, str):
            return Verdict(success=False, f1=0.0, label_error=labels)
        result = env.check(record.state, labels)
        success = bool(result.success)
        if self.success_f1 is not None:
            success = result.f1 >= self.success_f1 - 1e-12
        return Verdict(
            success=success,
            f1=float(result.f1),
            precision=float(result.precision),
            recall=float(result.recall),
            label=result.label,
        )

    def plan_lcs(self, prediction: Prediction, instance: Instance) -> float | None:
        """The plan similarity of the prediction's calls to the label programs, where the
        instance's environment scores plans and the prediction is one whole plan (a multi-turn
        loop's record, built turn by turn, has none); else what the record stored."""
        env = self.environment(instance)
        ex = prediction.execution
        whole_plan = ex is None or ex.turns is None
        if isinstance(env, PlanScored) and whole_plan:
            return float(env.plan_lcs(prediction.calls, label_programs(instance)))
        return ex.lcs if ex is not None and env is None else None


def _success_f1(value: float | str | None) -> float | None:
    if value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        out = float("nan")
    if not 0.0 <= out <= 1.0:
        raise UsageError(
            f"environment scorer: success_f1 must be a number in [0, 1], got {value!r}"
        )
    return out


@scorer(
    "environment",
    formats=("env:*",),
    needs=("execution",),
    description="toollab's environments: success, crash rate and dict-F1 over Call instances; "
    "Tool/Param F1 and decision accuracy over every instance; plan LCS",
)
class EnvironmentScorer(SampleScorer):
    """The figures of ``toollab bench``, one sample at a time.

    ``success_f1``: the dict-F1 a final state needs to count as a success (default: the
    environment's own rule, a state equal to a label's)."""

    figures = FIGURES

    def __init__(self, success_f1: float | str | None = None) -> None:
        self.judge = Judge(_success_f1(success_f1))

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
        verdict = FAILED if crashed or ex is None else self.judge.verdict(ex, instance)
        row["crashed"] = float(crashed)
        row["success"] = float(verdict.success)
        row["dict_f1"] = verdict.f1
        row["lcs"] = self.judge.plan_lcs(prediction, instance) if ex is not None else None
        return row
