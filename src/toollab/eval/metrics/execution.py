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

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from toollab.eval.metrics.registry import MetricResult, Scorer, instance_key, mean, scorer
from toollab.eval.record import Prediction
from toollab.schema import Instance


def compute_f1_between_dicts(
    pred: dict[str, Any], label: dict[str, Any]
) -> tuple[float, float, float]:
    """(P, R, F1) where overlap = keys of ``pred`` whose value equals ``label``'s.

    Two empty dicts are equal (1, 1, 1); an empty side otherwise gives 0.
    """
    if not pred and not label:
        return 1.0, 1.0, 1.0
    overlap = sum(1 for k, v in pred.items() if k in label and label[k] == v)
    p = overlap / len(pred) if pred else 0.0
    r = overlap / len(label) if label else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def best_label_f1(
    pred: dict[str, Any], labels: Sequence[dict[str, Any]]
) -> tuple[float, float, float, int]:
    """The (P, R, F1) of the best-F1 label and its index (-1 without labels)."""
    best = (0.0, 0.0, 0.0, -1)
    for i, lab in enumerate(labels):
        p, r, f = compute_f1_between_dicts(pred, lab)
        if best[3] == -1 or f > best[2]:
            best = (p, r, f, i)
    return best


def lcs_length(a: Sequence[Any], b: Sequence[Any]) -> int:
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def normalized_lcs(pred: Sequence[Any], label: Sequence[Any]) -> float:
    """LCS length divided by the length of the longer sequence (1.0 for two empty ones)."""
    longest = max(len(pred), len(label))
    return lcs_length(pred, label) / longest if longest else 1.0


def best_lcs(pred: Sequence[Any], labels: Sequence[Sequence[Any]]) -> float | None:
    return max((normalized_lcs(pred, lab) for lab in labels), default=None)


# -- API complexity (SambaNova ToolBench, Appendix D) --------------------------------------------


def complexity_distance(
    test: Sequence[str], example: Sequence[str], api_set_size: int, *, base: float = math.e
) -> float:
    """d(t, e) = log 1/p(t|e, D) with p = (1/2)^|e| · (1/|D|)^|t \\ e| (multisets, order ignored)."""
    if api_set_size < 1:
        raise ValueError("api_set_size must be at least 1")
    uncovered = sum((Counter(test) - Counter(example)).values())
    return (len(example) * math.log(2) + uncovered * math.log(api_set_size)) / math.log(base)


def api_complexity_score(
    tests: list[list[str]],
    examples: list[list[str]],
    api_set_size: int,
    *,
    base: float = math.e,
) -> float:
    """S(T, X, D) = mean over tests of the minimum over examples of d(t, e).

    Each test and example is the list of API names it calls (a repeated call counts again).
    The paper does not name the logarithm's base: natural log by default, ``base=2`` for bits.
    """
    if not tests:
        raise ValueError("api_complexity_score needs at least one test case")
    if not examples:
        raise ValueError("api_complexity_score needs at least one demonstration example")
    total = 0.0
    for t in tests:
        total += min(complexity_distance(t, e, api_set_size, base=base) for e in examples)
    return total / len(tests)


def multiset_f1(a: Sequence[str], b: Sequence[str]) -> float:
    common = sum((Counter(a) & Counter(b)).values())
    if not a and not b:
        return 1.0
    if not common:
        return 0.0
    p, r = common / len(a), common / len(b)
    return 2 * p * r / (p + r)


def api_rf1_score(tests: list[list[str]], examples: list[list[str]]) -> float:
    """The reversed-F1 comparison score: mean over tests of min over examples of (1 − F1)·100."""
    if not tests or not examples:
        raise ValueError("api_rf1_score needs tests and examples")
    return sum(min((1 - multiset_f1(e, t)) * 100 for e in examples) for t in tests) / len(tests)


# -- the scorer ------------------------------------------------------------------------------


def label_actions(inst: Instance, execution: dict[str, Any]) -> list[list[str]]:
    la = execution.get("labels_actions")
    if isinstance(la, list) and all(isinstance(x, list) for x in la):
        return [[str(a) for a in x] for x in la]
    programs = [list(inst.gold), *inst.alternatives]
    return [[c.action_text() for c in prog] for prog in programs if prog]


@scorer(
    "execution",
    formats=("env:*", "sambanova*"),
    needs=("execution",),
    description="Execution success, dict P/R/F1 of final states, crash rate and LCS",
)
class ExecutionScorer(Scorer):
    """Outcome metrics from executing the predicted program."""

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = self.new_result()
        succ: list[float] = []
        ps: list[float] = []
        rs: list[float] = []
        fs: list[float] = []
        crashed: list[float] = []
        lcs: list[float] = []
        for pred, inst in self.pairs(predictions, instances, res):
            ex = pred.execution if isinstance(pred.execution, dict) else None
            row: dict[str, Any] = {}
            if ex is None:
                res.add_error("prediction_error" if pred.error else "no_execution_record")
                crash = True
            else:
                crash = bool(ex.get("crashed")) or ex.get("state") is None
            crashed.append(float(crash))
            labels = [s for s in (ex or {}).get("labels_states") or [] if isinstance(s, dict)]
            if crash:
                p = r = f = 0.0
                if ex is not None:
                    res.add_error("crashed")
            elif labels:
                p, r, f, idx = best_label_f1(ex["state"], labels)  # type: ignore[index]
                row["label"] = idx
            else:
                p = r = f = 0.0
                res.add_error("no_label_state")
            ok = (not crash) and f == 1.0
            if ex is not None and isinstance(ex.get("success"), bool) and not labels:
                ok = ex["success"] and not crash
            succ.append(float(ok))
            ps.append(p)
            rs.append(r)
            fs.append(f)
            actions = (ex or {}).get("actions")
            if isinstance(actions, list):
                label_seqs = label_actions(inst, ex or {})
                best = best_lcs([str(a) for a in actions], label_seqs) if label_seqs else None
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
