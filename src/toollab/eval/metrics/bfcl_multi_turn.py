"""BFCL multi-turn accuracy: BFCL's own state- and response-based checker, per category.

For each entry, as ``eval_runner._evaluate_single_multi_turn_entry`` does: an episode with fewer
turns than the ground truth was force-terminated (``multi_turn:force_terminated``); otherwise
every step's output is decoded again (BFCL's prompting decoder on the raw text, or the calls of
a structured step: :func:`toollab.envs.bfcl_multi_turn.step_calls`), steps that fail to
decode or hold no call are dropped, and BFCL's ``multi_turn_checker`` (from the installed
``bfcl-eval``) executes the decoded calls and the ground truth from the initial state, turn by
turn, comparing every involved instance's state and checking that the ground truth's execution
results appear among the model's.  Error types are BFCL's (``multi_turn:instance_state_mismatch``,
``multi_turn:execution_response_mismatch``, ``multi_turn:empty_turn_model_response``, ...).

Figures: each category's accuracy under its name (``multi_turn_base``, ...); ``multi_turn_overall``
is the leaderboard's unweighted mean of the four categories, a category that was not scored
counted as 0 (with a note; ``None`` when none was); ``pooled_accuracy`` (toollab's) pools every
scored entry.  A prediction without a recorded episode (a failed run) is a failure, never an
error of the scorer.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import ValidationError

from toollab.data.bfcl_multi_turn import (
    CATEGORIES,
    GROUND_TRUTH,
    KEY,
    EpisodeInputs,
    EpisodeLog,
    Verdict,
)
from toollab.envs.bfcl_multi_turn import check_episode, step_calls
from toollab.eval.metrics.registry import MetricResult, Scorer, instance_key, scorer
from toollab.schema import Instance
from toollab.schema.record import Prediction


def decoded_turns(log: EpisodeLog) -> list[list[list[str]]]:
    """Per turn, the executor texts of every step that decodes to at least one call."""
    out: list[list[list[str]]] = []
    for turn in log.turns:
        kept: list[list[str]] = []
        for step in turn.steps:
            try:
                calls = step_calls(step.raw, step.decoded, step.prompting)
            except Exception:  # BFCL: a step that fails to decode is dropped
                continue
            if calls:
                kept.append(calls)
        out.append(kept)
    return out


def check_prediction(pred: Prediction, inst: Instance) -> Verdict:
    """BFCL's verdict on one prediction."""
    truth = inst.metadata.get(GROUND_TRUTH)
    try:
        inputs = EpisodeInputs.model_validate(inst.metadata.get(KEY))
    except ValidationError:
        return Verdict(valid=False, error_type="multi_turn:no_episode", error_message="no inputs")
    if not isinstance(truth, list):
        return Verdict(valid=False, error_type="multi_turn:no_ground_truth", error_message="")
    raw_log = pred.metadata.get(KEY)
    try:
        log = EpisodeLog.model_validate(raw_log)
    except ValidationError:
        return Verdict(
            valid=False,
            error_type="multi_turn:inference_error",
            error_message=pred.error or "no episode was recorded",
        )
    if len(log.turns) != len(truth):
        return Verdict(
            valid=False,
            error_type="multi_turn:force_terminated",
            error_message=f"{len(log.turns)} turns played of {len(truth)}",
        )
    decoded = decoded_turns(log)
    category = inst.category or inst.id.rsplit("_", 1)[0]
    try:
        return check_episode(decoded, truth, inputs, inst.id, category)
    except Exception as exc:  # BFCL's asserts: a failure of this entry, not of the scorer
        return Verdict(
            valid=False,
            error_type="multi_turn:checker_exception",
            error_message=f"{type(exc).__name__}: {exc}",
        )


@scorer(
    "bfcl_multi_turn",
    formats=("bfcl-multi-turn",),
    needs=("raw", "steps"),
    description="BFCL multi-turn accuracy per category with BFCL's own state/response checker",
)
class BFCLMultiTurnScorer(Scorer):
    """BFCL's ``multi_turn_checker`` on the recorded episodes (see the module docs)."""

    @classmethod
    def definitions(cls) -> dict[str, dict[str, Any]]:
        out = {
            c: {
                "label": c,
                "definition": f"BFCL {c} accuracy: entries whose every turn leaves the backend "
                "state of the ground truth and whose results include the ground truth's",
                "percent": True,
            }
            for c in CATEGORIES
        }
        out["multi_turn_overall"] = {
            "label": "multi_turn_overall",
            "definition": "BFCL's multi-turn figure: the unweighted mean of the four categories "
            "(a category not scored counts as 0)",
            "percent": True,
        }
        return out

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = self.new_result()
        per_cat: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for pred, inst in self.pairs(predictions, instances, res):
            check = check_prediction(pred, inst)
            category = inst.category or "multi_turn"
            per_cat[category][1] += 1
            valid = check.valid
            if valid:
                per_cat[category][0] += 1
            else:
                res.add_error(str(check.error_type))
            res.per_instance[instance_key(pred)] = {
                "category": category,
                "valid": valid,
                "error_type": check.error_type,
                "error": [] if valid else [check.error_message[:300]],
            }
        acc = {c: k / n for c, (k, n) in sorted(per_cat.items()) if n}
        res.metrics = dict(acc)
        missing = [c for c in CATEGORIES if c not in acc]
        scored = [c for c in CATEGORIES if c in acc]
        res.metrics["multi_turn_overall"] = (
            sum(acc.get(c, 0.0) for c in CATEGORIES) / len(CATEGORIES) if scored else None
        )
        if scored and missing:
            res.notes.append(
                f"multi_turn_overall: as on the leaderboard, {', '.join(missing)} not scored "
                "and counted as 0"
            )
        total_n = sum(n for _, n in per_cat.values())
        res.metrics["pooled_accuracy"] = (
            sum(k for k, _ in per_cat.values()) / total_n if total_n else None
        )
        res.breakdown = {
            c: {"accuracy": k / n if n else None, "correct": float(k), "total": float(n)}
            for c, (k, n) in sorted(per_cat.items())
        }
        res.counts = {"n": total_n, **res.counts}
        return res


__all__ = ["BFCLMultiTurnScorer", "check_prediction", "decoded_turns"]
