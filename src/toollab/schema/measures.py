"""The low-level measures every figure is built from, in one place.

Precision / recall / F1 over counts (:func:`prf`, :func:`f1`), value equality of JSON values
(:func:`same_value`), the dict-F1 of two final states (:func:`dict_prf`), longest common
subsequences (:func:`normalized_lcs`, :func:`best_lcs`), the multiset F1 of two name lists and the
API complexity score of SambaNova ToolBench (Appendix D).  Environments and scorers both import
from here, so each formula exists once.

Conventions: a ratio whose denominator is zero is undefined (``None``), never silently 0;
:func:`dict_prf` and :func:`normalized_lcs` follow their upstream definitions, where two empty
sides agree perfectly.
"""

from __future__ import annotations

import json
import math
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

Number = float | None


def ratio(num: float, den: float) -> Number:
    """``num / den``; ``None`` when ``den`` is zero."""
    return num / den if den else None


def harmonic(p: float, r: float) -> float:
    """The harmonic mean of a precision and a recall (0 when both are 0)."""
    return 2 * p * r / (p + r) if p + r else 0.0


def prf(correct: float, predicted: float, gold: float) -> tuple[Number, Number, Number]:
    """Micro precision, recall and F1 over counts; ``None`` where a denominator is zero (and F1
    is ``None`` whenever precision or recall is)."""
    p = ratio(correct, predicted)
    r = ratio(correct, gold)
    if p is None or r is None:
        return p, r, None
    return p, r, harmonic(p, r)


def f1(correct: int, predicted: int, gold: int) -> Number:
    """F1 over counts where a side with nothing counts as recall / precision 0: ``None`` only when
    both sides are empty (nothing to score), else a number (``0`` when one side is empty)."""
    if predicted == 0 and gold == 0:
        return None
    return harmonic(correct / predicted if predicted else 0.0, correct / gold if gold else 0.0)


def mean(values: Iterable[float]) -> Number:
    """The arithmetic mean; ``None`` for no values."""
    vals = list(values)
    return sum(vals) / len(vals) if vals else None


# -- value equality ---------------------------------------------------------------------------


def canonical_json(v: Any) -> str:
    """A stable text form of a JSON value (sorted keys)."""
    return json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)


def same_value(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal, numbers by value at any depth (``160 == 160.0``, within
    1e-9); a boolean equals only a boolean; other values by their canonical JSON text."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, float) or isinstance(b, float):
        try:
            return abs(float(a) - float(b)) < 1e-9
        except (TypeError, ValueError):
            return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return canonical_json(a) == canonical_json(b)


# -- dict-F1 of final states ------------------------------------------------------------------


def dict_prf(
    pred: Mapping[str, object],
    label: Mapping[str, object],
    equal: Callable[[Any, Any], bool] = same_value,
) -> tuple[float, float, float]:
    """SambaNova's ``compute_f1_between_dicts``: overlap = keys of ``pred`` whose value equals
    ``label``'s (by ``equal``; :func:`same_value` unless told, ``operator.eq`` upstream).

    Two empty dicts agree perfectly (1, 1, 1); an empty side otherwise gives 0.
    """
    if not pred and not label:
        return 1.0, 1.0, 1.0
    overlap = sum(1 for k, v in pred.items() if k in label and equal(label[k], v))
    p = overlap / len(pred) if pred else 0.0
    r = overlap / len(label) if label else 0.0
    return p, r, harmonic(p, r)


def compute_f1_between_dicts(
    pred: Mapping[str, object], label: Mapping[str, object]
) -> tuple[float, float, float]:
    """:func:`dict_prf` with upstream's plain ``==``."""
    return dict_prf(pred, label, operator.eq)


def best_label_f1(
    pred: Mapping[str, object],
    labels: Sequence[Mapping[str, object]],
    equal: Callable[[Any, Any], bool] = same_value,
) -> tuple[float, float, float, int]:
    """The (P, R, F1) of the best-F1 label (the first on a tie) and its index (-1 without)."""
    best = (0.0, 0.0, 0.0, -1)
    for i, lab in enumerate(labels):
        p, r, f = dict_prf(pred, lab, equal)
        if best[3] == -1 or f > best[2]:
            best = (p, r, f, i)
    return best


# -- sequences --------------------------------------------------------------------------------


def lcs_length(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the longest common subsequence of two sequences."""
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
    """:func:`normalized_lcs` against the closest label; ``None`` without labels."""
    return max((normalized_lcs(pred, lab) for lab in labels), default=None)


def multiset_f1(a: Sequence[str], b: Sequence[str]) -> float:
    """F1 of two multisets (1 for two empty ones)."""
    if not a and not b:
        return 1.0
    common = sum((Counter(a) & Counter(b)).values())
    if not common:
        return 0.0
    return harmonic(common / len(a), common / len(b))


# -- API complexity (SambaNova ToolBench, Appendix D) -----------------------------------------


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


def api_rf1_score(tests: list[list[str]], examples: list[list[str]]) -> float:
    """The reversed-F1 comparison score: mean over tests of min over examples of (1 − F1)·100."""
    if not tests or not examples:
        raise ValueError("api_rf1_score needs tests and examples")
    return sum(min((1 - multiset_f1(e, t)) * 100 for e in examples) for t in tests) / len(tests)
