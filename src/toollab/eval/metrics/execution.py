"""Execution-based metrics of the SambaNova ToolBench tasks, LCS, and the API complexity score.

Expected ``Prediction.execution`` (written by the executable environments):

* ``state`` — the final state dict the predicted program produced (``None`` if it crashed);
* ``crashed`` — ``True`` when executing the prediction raised;
* ``labels_states`` — the final state of every label program (several labels may be correct);
* ``actions`` — the executed action sequence (list of strings), for LCS;
* ``labels_actions`` — optional: the label action sequences (else the instance's gold and
  alternatives, rendered ``name(args)``).

Figures (upstream ``evaluator/utils.py: compute_f1_between_dicts``; the best-F1 label is kept):
``success_rate`` (F1 == 1, i.e. the final state equals a label's), ``precision`` / ``recall`` /
``f1`` means, ``crash_rate``, and ``lcs`` (longest common subsequence normalised by the longer
sequence, best over labels — VirtualHome; computed on the recorded actions even when
the program crashed) with ``executability`` = 1 − crash rate.
"""

from __future__ import annotations

import operator
from typing import Any

from toollab.eval.metrics.registry import MetricResult, Scorer, instance_key, mean, scorer
from toollab.schema import Instance
from toollab.schema.measures import (
    api_complexity_score,
    api_rf1_score,
    best_label_f1,
    best_lcs,
    complexity_distance,
    compute_f1_between_dicts,
    lcs_length,
    multiset_f1,
    normalized_lcs,
)
from toollab.schema.record import ExecutionRecord, Prediction

__all__ = [
    "ExecutionScorer",
    "api_complexity_score",
    "api_rf1_score",
    "best_label_f1",
    "best_lcs",
    "complexity_distance",
    "compute_f1_between_dicts",
    "lcs_length",
    "multiset_f1",
    "normalized_lcs",
]


# -- the scorer ------------------------------------------------------------------------------


def label_actions(inst: Instance, execution: ExecutionRecord) -> list[list[str]]:
    if execution.labels_actions is not None:
        return [[str(a) for a in x] for x in execution.labels_actions]
    programs = [list(inst.gold), *inst.alternatives]
    return [[c.action_text() for c in prog] for prog in programs if prog]


@scorer(
    "execution",
    formats=("sambanova*",),
    needs=("execution",),
    description="SambaNova ToolBench: execution success, dict P/R/F1 of final states (upstream "
    "==), crash rate and LCS over every instance",
)
class ExecutionScorer(Scorer):
    """Outcome metrics from executing the predicted program, as SambaNova ToolBench computes
    them over its own data (every instance is a call; values compare with ``==``).  toollab's
    own environments are scored by the ``environment`` scorer."""

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = self.new_result()
        succ: list[float] = []
        ps: list[float] = []
        rs: list[float] = []
        fs: list[float] = []
        crashed: list[float] = []
        lcs: list[float] = []
        for pred, inst in self.pairs(predictions, instances, res):
            ex = pred.execution
            row: dict[str, Any] = {}
            if ex is None:
                res.add_error("prediction_error" if pred.error else "no_execution_record")
                crash = True
            else:
                crash = ex.crashed or ex.state is None
            crashed.append(float(crash))
            labels = list(ex.labels_states or []) if ex is not None else []
            if crash:
                p = r = f = 0.0
                if ex is not None:
                    res.add_error("crashed")
            elif labels and ex is not None and ex.state is not None:
                p, r, f, idx = best_label_f1(ex.state, labels, operator.eq)
                row["label"] = idx
            else:
                p = r = f = 0.0
                res.add_error("no_label_state")
            ok = (not crash) and f == 1.0
            if ex is not None and ex.success is not None and not labels:
                ok = ex.success and not crash
            succ.append(float(ok))
            ps.append(p)
            rs.append(r)
            fs.append(f)
            if ex is not None and ex.actions is not None:
                label_seqs = label_actions(inst, ex)
                best = best_lcs([str(a) for a in ex.actions], label_seqs) if label_seqs else None
                if best is not None:
                    lcs.append(best)
                    row["lcs"] = lcs[-1]
            row.update({"success": ok, "crashed": crash, "precision": p, "recall": r, "f1": f})
            res.per_instance[instance_key(pred)] = row
        cr = mean(crashed)
        res.metrics = {
            "success_rate": mean(succ),
            "precision": mean(ps),
            "recall": mean(rs),
            "f1": mean(fs),
            "crash_rate": cr,
            "executability": None if cr is None else 1 - cr,
            "lcs": mean(lcs),
        }
        res.counts = {"n": len(succ), "lcs_scored": len(lcs), **res.counts}
        return res
