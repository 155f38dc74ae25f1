"""The failed samples of each run, classified by the error taxonomy
(:mod:`toollab.eval.metrics.errors`), and the error table over runs and models.

A sample is one prediction (one repeat of one instance) of a run; its class is the one its
``results.json`` holds (``per_sample["taxonomy"]``, written when the run was scored), else
(a run scored before the taxonomy existed) the one :func:`~toollab.eval.metrics.errors.classify`
gives from the instance's answer key and the prediction.  So the table counts what went wrong
whatever scorer the run used.  A run scored before the taxonomy whose instances cannot be read
(its dataset moved or changed) has no classes; the report says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from toollab.eval.log import TAXONOMY
from toollab.eval.metrics.errors import (
    CLASSES,
    ErrorClass,
    SampleClass,
    classify,
    has_answer_key,
)
from toollab.eval.task import SampleLog
from toollab.report.runs import RunView, fmt_figure, models_of
from toollab.schema import Instance


@dataclass
class Failure:
    """One failed sample: its record, its instance (``None`` when the run's dataset cannot be
    read) and why it failed."""

    sample: SampleLog
    instance: Instance | None
    error: SampleClass


@dataclass
class RunFailures:
    """The classified samples of one run."""

    run: RunView
    #: samples classified (those with an answer key)
    classified: int = 0
    #: classified samples that are correct
    correct: int = 0
    failures: list[Failure] = field(default_factory=list)
    #: why the samples could not be classified
    problem: str | None = None


def _stored(sample: SampleLog) -> SampleClass | None:
    row = sample.scores.get(TAXONOMY)
    return SampleClass.from_row(row) if row is not None else None


def run_failures(run: RunView) -> RunFailures:
    """Classify every sample of a run (the stored class, else :func:`classify`)."""
    out = RunFailures(run=run)
    stored = any(TAXONOMY in s.scores for s in run.log.samples)
    if not stored and run.instances.problem is not None:
        out.problem = run.instances.problem
        return out
    unknown = 0
    for sample in run.log.samples:
        inst = run.instances.by_id.get(sample.id)
        got = _stored(sample) if stored else None
        if got is None and not stored:
            if inst is None:
                unknown += 1
                continue
            got = classify(inst, sample.prediction) if has_answer_key(inst) else None
        if got is None:
            continue  # no answer key to check against
        out.classified += 1
        if got.failed:
            out.failures.append(Failure(sample, inst, got))
        else:
            out.correct += 1
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
        return ErrorClass(key.split(":", 1)[0]).rank
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


def correct_counts(columns: Sequence[Sequence[RunFailures]]) -> list[int]:
    """The correct samples of each column."""
    return [sum(rf.correct for rf in col) for col in columns]


def count_share(count: int, classified: int) -> str:
    """A class's count and its share of the classified samples: ``3 (37.5 %)``."""
    return f"{count} ({fmt_figure(count / classified)} %)" if classified else str(count)


def definition_rows() -> list[tuple[str, str, str]]:
    """(label, stage, definition) of every class of the taxonomy, in precedence order."""
    return [(c.label, c.stage or "—", c.definition) for c in CLASSES]


def summary_counts(col: Sequence[RunFailures]) -> tuple[int, int]:
    """(failed samples, classified samples) over some runs."""
    return sum(len(rf.failures) for rf in col), sum(rf.classified for rf in col)
