"""Mean ± 95 % confidence interval over repeated runs.

A run with ``--repeats N`` writes N predictions per instance (``Prediction.repeat``).  Each repeat
is scored on its own; :func:`aggregate_repeats` then reports, per figure, the mean over repeats
and the half-width of its Student-t 95 % confidence interval.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, Field

from toollab.eval.metrics.registry import MetricResult, Scorer
from toollab.schema import Instance
from toollab.schema.record import Prediction

# two-sided 97.5 % quantiles of Student's t for 1..30 degrees of freedom
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_quantile_975(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        return math.nan
    if df <= len(_T975):
        return _T975[df - 1]
    # Cornish-Fisher expansion around the normal quantile; exact to 3 decimals for df > 30
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


class Estimate(BaseModel):
    """A figure over repeats: ``mean ± ci95`` (``ci95`` is ``None`` with fewer than 2 values)."""

    mean: float | None
    ci95: float | None = None
    std: float | None = None
    n: int = 0
    values: list[float] = Field(default_factory=list)

    def __str__(self) -> str:
        if self.mean is None:
            return "n/a"
        if self.ci95 is None:
            return f"{self.mean:.4f}"
        return f"{self.mean:.4f} ± {self.ci95:.4f}"


def mean_ci(values: Sequence[float | None]) -> Estimate:
    """Mean and 95 % CI half-width of the defined values (``None`` values are left out)."""
    vals = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(vals)
    if n == 0:
        return Estimate(mean=None, n=0)
    m = sum(vals) / n
    if n == 1:
        return Estimate(mean=m, n=1, values=vals)
    var = sum((v - m) ** 2 for v in vals) / (n - 1)
    sd = math.sqrt(var)
    return Estimate(
        mean=m, ci95=t_quantile_975(n - 1) * sd / math.sqrt(n), std=sd, n=n, values=vals
    )


class RepeatedResult(BaseModel):
    """A scorer's figures over repeats."""

    scorer: str
    repeats: int
    metrics: dict[str, Estimate] = Field(default_factory=dict)
    breakdown: dict[str, dict[str, Estimate]] = Field(default_factory=dict)
    #: error counts summed over repeats
    errors: dict[str, int] = Field(default_factory=dict)
    runs: list[MetricResult] = Field(default_factory=list)


def aggregate_repeats(results: Sequence[MetricResult]) -> RepeatedResult:
    """Combine one :class:`MetricResult` per repeat into mean ± CI figures."""
    metric_vals: dict[str, list[float | None]] = defaultdict(list)
    br_vals: dict[str, dict[str, list[float | None]]] = defaultdict(lambda: defaultdict(list))
    errors: dict[str, int] = defaultdict(int)
    for res in results:
        for k, v in res.metrics.items():
            metric_vals[k].append(v)
        for group, figs in res.breakdown.items():
            for k, v in figs.items():
                br_vals[group][k].append(v)
        for k, n in res.errors.items():
            errors[k] += n
    return RepeatedResult(
        scorer=results[0].scorer if results else "",
        repeats=len(results),
        metrics={k: mean_ci(v) for k, v in metric_vals.items()},
        breakdown={g: {k: mean_ci(v) for k, v in figs.items()} for g, figs in br_vals.items()},
        errors=dict(errors),
        runs=list(results),
    )


def score_repeats(
    sc: Scorer, predictions: list[Prediction], instances: dict[str, Instance]
) -> RepeatedResult:
    """Score each repeat separately and aggregate."""
    by_repeat: dict[int, list[Prediction]] = defaultdict(list)
    for p in predictions:
        by_repeat[p.repeat].append(p)
    results = [sc.score(by_repeat[r], instances) for r in sorted(by_repeat)]
    return aggregate_repeats(results)
