"""Scoring a set of predictions into the ``results.json`` of a run.

Used by ``toollab eval`` (after the last instance) and ``toollab score`` (any predictions file,
no model).  Every applicable default scorer (or those named) runs on each repeat separately; with
more than one repeat the headline figures are the mean over repeats and ``ci95`` holds the
half-width of the Student-t 95 % confidence interval.
"""

from __future__ import annotations

import fnmatch
import inspect
import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from toollab.errors import UsageError, did_you_mean
from toollab.eval.log import (
    TAXONOMY,
    ClassCount,
    Counts,
    Estimate,
    FigureDef,
    Scores,
    Taxonomy,
    Timing,
)
from toollab.eval.metrics.errors import CLASSES, SampleClass, classify_all
from toollab.eval.metrics.judge import as_judge
from toollab.eval.metrics.registry import (
    MetricResult,
    applicable_scorers,
    get_scorer,
    score_all,
    scorer_class,
    scorer_names,
)
from toollab.eval.metrics.retrieval import RetrievalScorer, retrieval_groups
from toollab.eval.metrics.sample import figure_definitions
from toollab.eval.metrics.stats import aggregate_repeats
from toollab.schema import Instance
from toollab.schema.record import Prediction

#: ``Prediction.metadata["failure"]`` of instances the runner could not finish
TIMEOUT = "timeout"
CRASH = "crash"


def select_scorers(
    instances: dict[str, Instance],
    metrics: Sequence[str] | None,
    judge: Any = None,
    judge_cache: str | Path | None = None,
    scorer_options: Mapping[str, Mapping[str, str]] | None = None,
) -> list[Any]:
    """The scorers to run: every applicable default (upstream-faithful) scorer, or those named
    (``--metrics``; corrected variants such as ``seal_tools_strict`` run only when named).

    A name may be a scorer name or a glob (``seal_tools*``); an unknown name is an error with a
    did-you-mean hint; a named scorer that reads none of these instances is an error too.
    ``judge`` (a model) goes to every scorer that needs an LLM judge, as one
    :class:`~toollab.eval.metrics.judge.Judge` whose answers are kept in ``judge_cache``.
    ``scorer_options`` (scorer name -> option -> value) go to the scorers' constructors (e.g.
    ``{"environment": {"success_f1": "0.5"}}``); an option for a scorer that does not run, or
    one its constructor does not take, is an error.
    """

    names = scorer_names()
    options: dict[str, dict[str, Any]] = {}
    if judge is not None:
        shared = as_judge(judge, judge_cache)
        options = {n: {"judge": shared} for n in names if "judge" in scorer_class(n).needs}
    for name, given in (scorer_options or {}).items():
        _check_options(scorer_class(name), name, given)
        options[name] = {**options.get(name, {}), **given}
    if not metrics:
        out = applicable_scorers(instances, options=options)
    else:
        out = [get_scorer(name, **options.get(name, {})) for name in _named(metrics, names)]
        for sc in out:
            if not any(sc.accepts(inst) for inst in instances.values()):
                sources = sorted({inst.source or "?" for inst in instances.values()})
                raise UsageError(
                    f"scorer {sc.name!r} does not apply to this dataset "
                    f"(sources: {', '.join(sources)})"
                )
    unused = sorted(set(scorer_options or {}) - {sc.name for sc in out})
    if unused:
        raise UsageError(f"options given for scorer(s) that do not run: {', '.join(unused)}")
    return out


def _named(metrics: Sequence[str], names: list[str]) -> list[str]:
    """The scorer names ``--metrics`` gives (names or globs, comma-separated or repeated)."""
    chosen: list[str] = []
    for item in metrics:
        for name in (n.strip() for n in item.split(",")):
            if not name:
                continue
            matched = (
                [n for n in names if fnmatch.fnmatchcase(n, name)]
                if any(ch in name for ch in "*?[")
                else [name]
            )
            if not matched:
                raise UsageError(f"--metrics {name!r} matches no scorer; known: {', '.join(names)}")
            chosen.extend(m for m in matched if m not in chosen)
    return chosen


def _check_options(cls: type, name: str, given: Mapping[str, str]) -> None:
    """Refuse options the scorer's constructor does not take."""
    params = inspect.signature(cls).parameters
    takes = [p for p in params if p not in ("self", "judge")]
    for key in given:
        if key not in takes:
            raise UsageError(
                f"scorer {name!r} has no option {key!r}{did_you_mean(key, takes)}; "
                f"its options: {', '.join(takes) or 'none'}"
            )


def _clean(value: Any) -> Any:
    """JSON-safe numbers: NaN/inf become None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def score_predictions(
    predictions: Sequence[Prediction],
    instances: dict[str, Instance],
    metrics: Sequence[str] | None = None,
    *,
    judge: Any = None,
    judge_cache: str | Path | None = None,
    scorer_options: Mapping[str, Mapping[str, str]] | None = None,
) -> Scores:
    """``metrics`` / ``breakdown`` / ``errors`` (and ``ci95`` / ``repeats`` for repeated runs)
    of every selected scorer, plus counts and timing over the predictions (``scorer_options``:
    see :func:`select_scorers`)."""

    scorers = select_scorers(instances, metrics, judge, judge_cache, scorer_options)
    if any(p.offered_tools is not None for p in predictions) and not any(
        isinstance(sc, RetrievalScorer) for sc in scorers
    ):
        scorers.append(RetrievalScorer())  # a retriever chose the tools: score it apart
    order = {inst_id: i for i, inst_id in enumerate(instances)}
    preds = sorted(predictions, key=lambda p: (p.repeat, order.get(p.id, len(order)), p.id))
    by_repeat: dict[int, list[Prediction]] = {}
    for p in preds:
        by_repeat.setdefault(p.repeat, []).append(p)
    per_repeat: dict[str, list[MetricResult]] = {sc.name: [] for sc in scorers}
    for r in sorted(by_repeat):
        scored = score_all(by_repeat[r], instances, scorers)
        for sc in scorers:
            retrieval_groups(sc, scored[sc.name], by_repeat[r], instances)
        for name, res in scored.items():
            per_repeat[name].append(res)

    scores = Scores(scorers=[sc.name for sc in scorers])
    repeats = len(by_repeat)
    ci95: dict[str, dict[str, float | None]] = {}
    estimates: dict[str, dict[str, Estimate]] = {}
    for name, results in per_repeat.items():
        if not results:
            continue
        if repeats == 1:
            res = results[0]
            scores.metrics[name] = {k: _clean(v) for k, v in res.metrics.items()}
            scores.breakdown[name] = {
                g: {k: _clean(v) for k, v in figs.items()} for g, figs in res.breakdown.items()
            }
            scores.errors[name] = dict(res.errors)
            scores.scorer_counts[name] = dict(res.counts)
        else:
            agg = aggregate_repeats(results)
            scores.metrics[name] = {k: _clean(e.mean) for k, e in agg.metrics.items()}
            ci95[name] = {k: _clean(e.ci95) for k, e in agg.metrics.items()}
            scores.breakdown[name] = {
                g: {k: _clean(e.mean) for k, e in figs.items()} for g, figs in agg.breakdown.items()
            }
            scores.errors[name] = dict(agg.errors)
            scores.scorer_counts[name] = dict(results[0].counts)
            estimates[name] = {
                k: Estimate(mean=_clean(e.mean), ci95=_clean(e.ci95), std=_clean(e.std),
                            n=e.n, values=[_clean(v) for v in e.values])
                for k, e in agg.metrics.items()
            }  # fmt: skip
        notes = sorted({n for res in results for n in res.notes})
        if notes:
            scores.notes[name] = notes
    if repeats > 1:
        scores.ci95, scores.repeats = dict(ci95), estimates
    # the definitions of the figures each scorer reported (all of them for per-sample scorers)
    scores.definitions = {
        name: {fig: FigureDef.model_validate(d) for fig, d in defs.items()}
        for name, defs in figure_definitions(scorers, scores.metrics).items()
    }
    # every sample's scores, by scorer, keyed ``id`` (``id@repeat`` for repeats > 0)
    scores.per_sample = {
        name: {k: row for res in results for k, row in res.per_instance.items()}
        for name, results in per_repeat.items()
    }
    classes = classify_all(preds, instances)
    if classes:
        scores.per_sample[TAXONOMY] = {k: dict(c.row()) for k, c in classes.items()}
        scores.taxonomy = taxonomy_of(classes.values(), unclassified=len(preds) - len(classes))
    scores.counts = prediction_counts(preds, len(instances), repeats)
    scores.timing = timing_summary(preds)
    return scores


def taxonomy_of(classes: Iterable[SampleClass], unclassified: int = 0) -> Taxonomy:
    """Every class of the taxonomy (:data:`~toollab.eval.metrics.errors.CLASSES`, in precedence
    order, zeros included) with its count and share of ``classes``."""
    counted = Counter(c.kind for c in classes)
    n = sum(counted.values())
    return Taxonomy(
        classified=n,
        unclassified=unclassified,
        classes=[
            ClassCount(
                key=c.kind.value,
                stage=c.stage,
                label=c.label,
                definition=c.definition,
                count=counted.get(c.kind, 0),
                share=counted.get(c.kind, 0) / n if n else None,
            )
            for c in CLASSES
        ],
    )


def prediction_counts(preds: Sequence[Prediction], n_instances: int, repeats: int) -> Counts:
    """How many predictions, failures, format errors, no-calls and calls a run has."""
    failures = Counter(str(p.metadata.get("failure")) for p in preds if p.error)
    # a failed instance (backend error, timeout, crash) counts once, as failed, never also as
    # unparsable: its parse records only that there was no output
    status = Counter(
        p.parsed.status.value if p.parsed is not None else "none" for p in preds if not p.error
    )
    return Counts(
        instances=n_instances,
        repeats=max(repeats, 1),
        predictions=len(preds),
        errors=sum(1 for p in preds if p.error),
        timeouts=failures.get(TIMEOUT, 0),
        crashes=failures.get(CRASH, 0),
        parse_errors=status.get("error", 0),
        no_call=status.get("no_call", 0),
        with_calls=status.get("calls", 0),
        calls=sum(len(p.parsed.calls) for p in preds if p.parsed is not None),
    )


def timing_summary(preds: Sequence[Prediction]) -> Timing:
    """Per-instance latency (mean, p50, p95) and token totals."""
    lat = sorted(float(p.timings.get("total_s", 0.0)) for p in preds)
    prompt = sum(int(p.usage.get("prompt_tokens", 0)) for p in preds)
    completion = sum(int(p.usage.get("completion_tokens", 0)) for p in preds)
    model_s = sum(float(p.timings.get("model_s", 0.0)) for p in preds)

    def pct(q: float) -> float | None:
        if not lat:
            return None
        return lat[min(len(lat) - 1, max(0, math.ceil(q * len(lat)) - 1))]

    return Timing(
        instance_s_mean=statistics.fmean(lat) if lat else None,
        instance_s_p50=pct(0.5),
        instance_s_p95=pct(0.95),
        instance_s_total=sum(lat),
        model_s=model_s,
        prompt_tokens=prompt,
        completion_tokens=completion,
        completion_tokens_per_s=completion / model_s if model_s > 0 else None,
    )
