"""The failed samples of each run, classified (:func:`toollab.eval.metrics.errors.classify`),
and the error table over runs and models.

A sample is one prediction (one repeat of one instance) of a run; its class comes from the
instance's answer key and the prediction alone, so the table counts what went wrong whatever
scorer the run used.  A run whose instances cannot be read (its dataset moved or changed) has no
classes; the report says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from toollab.eval.metrics.errors import ErrorClass, SampleError, classify
from toollab.eval.task import SampleLog
from toollab.report.runs import RunView, models_of
from toollab.schema import Instance


@dataclass
class Failure:
    """One failed sample: its record, its instance and why it failed."""

    sample: SampleLog
    instance: Instance
    error: SampleError


@dataclass
class RunFailures:
    """The classified samples of one run."""

    run: RunView
    #: samples classified (those whose instance is known)
    classified: int = 0
    failures: list[Failure] = field(default_factory=list)
    #: why the samples could not be classified
    problem: str | None = None


def run_failures(run: RunView) -> RunFailures:
    """Classify every sample of a run."""
    out = RunFailures(run=run, problem=run.instances.problem)
    if out.problem is not None:
        return out
    unknown = 0
    for sample in run.log.samples:
        inst = run.instances.by_id.get(sample.id)
        if inst is None:
            unknown += 1
            continue
        out.classified += 1
        err = classify(inst, sample.prediction)
        if err is not None:
            out.failures.append(Failure(sample, inst, err))
    if unknown:
        out.problem = f"{unknown} sample(s) answer instances that are not in the run's dataset"
    return out


@dataclass
class ErrorRow:
    """One row of the error table: an error class (a crash by its reason code)."""

    key: str
    label: str
    #: the first failure's detail, as an example (a crash's message)
    example: str
    #: counts per column (model or run)
    counts: list[int]


def _stage(key: str) -> int:
    try:
        return ErrorClass(key.split(":", 1)[0]).stage
    except ValueError:
        return len(ErrorClass)


def error_rows(columns: Sequence[Sequence[RunFailures]]) -> list[ErrorRow]:
    """The error table over columns (each column: the runs counted in it), rows in pipeline
    order (crashes by reason code, most frequent first)."""
    rows: dict[str, ErrorRow] = {}
    for j, col in enumerate(columns):
        for rf in col:
            for f in rf.failures:
                row = rows.get(f.error.key)
                if row is None:
                    row = ErrorRow(f.error.key, f.error.label, f.error.detail, [0] * len(columns))
                    rows[f.error.key] = row
                row.counts[j] += 1
    return sorted(rows.values(), key=lambda r: (_stage(r.key), -sum(r.counts), r.key))


def crash_rows(columns: Sequence[Sequence[RunFailures]]) -> list[ErrorRow]:
    """Every sample whose program crashed, by the environment's reason code (whatever class
    the sample has: a wrong argument is often what makes the program crash), most frequent
    first; the example is the first crash's message."""
    rows: dict[str, ErrorRow] = {}
    for j, col in enumerate(columns):
        for rf in col:
            for sample in rf.run.log.samples:
                ex = sample.prediction.execution
                if ex is None or not ex.crashed:
                    continue
                key = ex.reason or "unknown"
                row = rows.get(key)
                if row is None:
                    row = ErrorRow(key, key, ex.error or "", [0] * len(columns))
                    rows[key] = row
                row.counts[j] += 1
    return sorted(rows.values(), key=lambda r: (-sum(r.counts), r.key))


def by_model(items: Sequence[RunFailures]) -> tuple[list[str], list[list[RunFailures]]]:
    """(models, the runs of each model) in first-seen order."""
    models = models_of([rf.run for rf in items])
    return models, [[rf for rf in items if rf.run.model == m] for m in models]


def summary_counts(col: Sequence[RunFailures]) -> tuple[int, int]:
    """(failed samples, classified samples) over some runs."""
    return sum(len(rf.failures) for rf in col), sum(rf.classified for rf in col)
