"""``toollab score``: rescore a predictions file with no model.

The dataset comes from the ``run.json`` beside the file unless given.  The file must belong to the
dataset: every prediction's dataset fingerprint must match, every id must be an instance of it,
and each ``(id, repeat)`` may appear once.

A file may cover only part of the run (an interrupted run, a hand-made subset).  The figures are
then over the predicted instances only; ``coverage`` in the results says how many of the
expected ``(instance, repeat)`` pairs — the run's instances (its ``limit``) × its ``repeats``, or
every dataset instance when there is no ``run.json`` — have a prediction, and lists the
instances that have none, and ``warnings`` says so in words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, Field, JsonValue

from toollab.data import Dataset, load_dataset
from toollab.errors import InputError, UsageError
from toollab.eval.log import RunSpec, Scores, read_spec
from toollab.eval.runner import score_with_judge
from toollab.eval.store import JUDGE_CACHE, RUN_JSON, read_predictions
from toollab.eval.store import check_predictions as store_check
from toollab.models import registry as model_registry
from toollab.schema.record import Prediction

#: how many offending ids an error message lists
SHOW_IDS = 5
#: how many missing instance ids ``coverage`` lists
LIST_MISSING = 50

#: a dataset adapter's options (``--option KEY=VALUE``)
DataOptions = dict[str, JsonValue]


def _some(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:SHOW_IDS])
    more = f" and {len(ids) - SHOW_IDS} more" if len(ids) > SHOW_IDS else ""
    return shown + more


class Coverage(BaseModel):
    """How much of the expected ``(instance, repeat)`` grid a predictions file covers."""

    complete: bool
    expected_instances: int
    repeats: int
    expected_predictions: int
    predictions: int
    fraction: float | None
    missing_predictions: int
    missing_instances: int
    #: the first :data:`LIST_MISSING` instances with no prediction
    missing_ids: list[str] = Field(default_factory=list)


class DatasetRef(BaseModel):
    """The dataset a predictions file was scored against."""

    path: str
    format: str
    name: str
    fingerprint: str | None


class Rescored(Scores):
    """What ``toollab score`` computes: the :class:`Scores` of a predictions file, the run that
    made it (when its ``run.json`` is there), the dataset, and the coverage."""

    predictions: str
    dataset: DatasetRef
    run: RunSpec | None = None
    coverage: Coverage
    warnings: list[str] = Field(default_factory=list)


def dataset_source(
    predictions: Path, data: str | None, fmt: str | None, options: DataOptions | None
) -> tuple[str, str, DataOptions, RunSpec | None]:
    """(data path, format, adapter options, run spec) for a predictions file."""
    run_path = predictions.parent / RUN_JSON
    spec = read_spec(predictions.parent) if run_path.is_file() else None
    if data is None:
        if spec is None:
            raise UsageError(
                f"no {RUN_JSON} beside {predictions}: give the dataset with --data PATH --format F"
            )
        if not spec.data or not spec.format:
            raise InputError("run.json names no dataset ('data' and 'format')", path=run_path)
        return spec.data, spec.format, dict(options or spec.data_options), spec
    if fmt is None:
        if spec is not None and spec.format:
            fmt = spec.format
        else:
            raise UsageError("--format is required with --data")
    return data, fmt, dict(options or {}), spec


def check_predictions(
    preds: list[Prediction], dataset: Dataset, path: Path, run: RunSpec | None = None
) -> None:
    """Refuse predictions from another dataset, unknown ids, impossible repeats and duplicated
    (id, repeat) pairs (the run store's checks, shared with a resumed run).  ``run``: the
    ``run.json`` of the run that made them, when it describes this dataset: its ``limit`` and
    ``repeats`` bound the ids and repeats as they bound a resumed run."""
    if not preds:
        raise InputError("the predictions file holds no predictions", path=path)
    ids, repeats, label = list(dataset.ids), None, f"dataset {dataset.name!r} at {dataset.path}"
    if run is not None and run.dataset == dataset.fingerprint:
        if run.limit is not None and run.limit >= 0:
            ids, label = ids[: run.limit], f"the run ({run.limit} instance(s) of {label})"
        repeats = run.repeats
    store_check(
        preds,
        ids=ids,
        fingerprint=dataset.fingerprint,
        path=path,
        repeats=repeats,
        dataset=label,
        advice="Give the dataset (and --option values) the run used",
    )


def coverage(preds: Sequence[Prediction], expected_ids: Sequence[str], repeats: int) -> Coverage:
    """How much of the expected ``(instance, repeat)`` grid the predictions cover."""
    have = {(p.id, p.repeat) for p in preds}
    predicted = {p.id for p in preds}
    missing_ids = [i for i in expected_ids if i not in predicted]
    missing_pairs = sum(1 for i in expected_ids for r in range(repeats) if (i, r) not in have)
    expected = len(expected_ids) * repeats
    return Coverage(
        complete=missing_pairs == 0,
        expected_instances=len(expected_ids),
        repeats=repeats,
        expected_predictions=expected,
        predictions=len(have),
        fraction=(expected - missing_pairs) / expected if expected else None,
        missing_predictions=missing_pairs,
        missing_instances=len(missing_ids),
        missing_ids=missing_ids[:LIST_MISSING],
    )


def coverage_warning(cov: Coverage) -> str | None:
    """One sentence for a file that does not cover the run, else ``None``."""
    if cov.complete:
        return None
    n_missing = cov.missing_instances
    shown = ", ".join(repr(i) for i in cov.missing_ids[:SHOW_IDS])
    if n_missing > SHOW_IDS:
        shown += f" and {n_missing - SHOW_IDS} more"
    covered = cov.expected_predictions - cov.missing_predictions
    text = (
        f"incomplete predictions: {covered} of {cov.expected_predictions} expected "
        f"(instance, repeat) pairs have a prediction"
    )
    if n_missing:
        text += f"; {n_missing} of {cov.expected_instances} instances have none ({shown})"
    return text + ". The figures cover only the predicted instances."


def _expected(
    dataset: Dataset, run: RunSpec | None, preds: Sequence[Prediction]
) -> tuple[list[str], int]:
    """(expected instance ids, expected repeats) for the coverage check: the run's when the
    ``run.json`` describes this dataset, else every instance × the repeats seen."""
    ids = list(dataset.ids)
    repeats = max((p.repeat for p in preds), default=0) + 1
    if run is not None and run.dataset == dataset.fingerprint:
        if run.limit is not None and run.limit >= 0:
            ids = ids[: run.limit]
        repeats = max(repeats, run.repeats)
    return ids, repeats


def rescore(
    predictions: str | Path,
    *,
    data: str | None = None,
    fmt: str | None = None,
    options: DataOptions | None = None,
    metrics: Sequence[str] | None = None,
    judge: str | None = None,
    judge_cache: str | Path | None = None,
    scorer_options: Mapping[str, Mapping[str, str]] | None = None,
) -> Rescored:
    """Score a predictions file: the figures a run's ``results.json`` holds, plus
    ``coverage`` (and ``warnings`` when the file does not cover the run).

    ``judge_cache`` (default: ``judge_cache.jsonl`` beside the file) keeps the judge's answers.
    ``scorer_options`` (scorer -> option -> value) go to the scorers: an environment run is
    re-judged from its stored execution records, e.g. with ``{"environment": {"success_f1":
    "0.8"}}``, with no model and no re-execution of the predicted programs.
    """
    if judge:
        model_registry.check_model_string(judge)  # a bad judge string fails before anything is read
    path = Path(predictions)
    preds = read_predictions(path)
    data_path, fmt_name, opts, spec = dataset_source(path, data, fmt, options)
    dataset = load_dataset(data_path, fmt_name, **opts)
    check_predictions(preds, dataset, path, spec)
    ids = {p.id for p in preds}
    instances = {inst.id: inst for inst in dataset.instances if inst.id in ids}
    cache = judge_cache if judge_cache is not None else path.parent / JUDGE_CACHE
    # every applicable default scorer unless told otherwise: one file yields every metric family
    scores = score_with_judge(
        preds,
        instances,
        list(metrics) if metrics else None,
        judge,
        judge_cache=cache,
        scorer_options=scorer_options,
    )
    expected_ids, repeats = _expected(dataset, spec, preds)
    cov = coverage(preds, expected_ids, repeats)
    warning = coverage_warning(cov)
    return Rescored(
        **dict(scores),
        predictions=str(path),
        dataset=DatasetRef(
            path=data_path, format=fmt_name, name=dataset.name, fingerprint=dataset.fingerprint
        ),
        run=spec,
        coverage=cov,
        warnings=[warning] if warning else [],
    )
