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
from typing import Any

from toollab.errors import InputError, UsageError
from toollab.eval.runner import score_with_judge
from toollab.eval.store import JUDGE_CACHE, RUN_JSON, read_json, read_predictions
from toollab.eval.store import check_predictions as store_check
from toollab.schema.record import Prediction

#: how many offending ids an error message lists
SHOW_IDS = 5
#: how many missing instance ids ``coverage`` lists
LIST_MISSING = 50


def _some(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:SHOW_IDS])
    more = f" and {len(ids) - SHOW_IDS} more" if len(ids) > SHOW_IDS else ""
    return shown + more


def dataset_source(
    predictions: Path, data: str | None, fmt: str | None, options: dict[str, Any] | None
) -> tuple[str, str, dict[str, Any], dict[str, Any] | None]:
    """(data path, format, adapter options, run config) for a predictions file."""
    run_path = predictions.parent / RUN_JSON
    config = read_json(run_path) if run_path.is_file() else None
    if data is None:
        if config is None:
            raise UsageError(
                f"no {RUN_JSON} beside {predictions}: give the dataset with --data PATH --format F"
            )
        if not config.get("data") or not config.get("format"):
            raise InputError("run.json names no dataset ('data' and 'format')", path=run_path)
        return (
            str(config["data"]),
            str(config["format"]),
            dict(options or config.get("data_options") or {}),
            config,
        )
    if fmt is None:
        if config is not None and config.get("format"):
            fmt = str(config["format"])
        else:
            raise UsageError("--format is required with --data")
    return data, fmt, dict(options or {}), config


def check_predictions(
    preds: list[Prediction], dataset: Any, path: Path, run: dict[str, Any] | None = None
) -> None:
    """Refuse predictions from another dataset, unknown ids, impossible repeats and duplicated
    (id, repeat) pairs (the run store's checks, shared with a resumed run).  ``run``: the
    ``run.json`` of the run that made them, when it describes this dataset: its ``limit`` and
    ``repeats`` bound the ids and repeats as they bound a resumed run."""
    if not preds:
        raise InputError("the predictions file holds no predictions", path=path)
    ids, repeats, label = list(dataset.ids), None, f"dataset {dataset.name!r} at {dataset.path}"
    if run is not None and run.get("dataset") == dataset.fingerprint:
        limit = run.get("limit")
        if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0:
            ids, label = ids[:limit], f"the run ({limit} instance(s) of {label})"
        if isinstance(run.get("repeats"), int) and not isinstance(run.get("repeats"), bool):
            repeats = int(run["repeats"])
    store_check(
        preds,
        ids=ids,
        fingerprint=dataset.fingerprint,
        path=path,
        repeats=repeats,
        dataset=label,
        advice="Give the dataset (and --option values) the run used",
    )


def coverage(
    preds: Sequence[Prediction], expected_ids: Sequence[str], repeats: int
) -> dict[str, Any]:
    """How much of the expected ``(instance, repeat)`` grid the predictions cover."""
    have = {(p.id, p.repeat) for p in preds}
    predicted = {p.id for p in preds}
    missing_ids = [i for i in expected_ids if i not in predicted]
    missing_pairs = sum(1 for i in expected_ids for r in range(repeats) if (i, r) not in have)
    expected = len(expected_ids) * repeats
    return {
        "complete": missing_pairs == 0,
        "expected_instances": len(expected_ids),
        "repeats": repeats,
        "expected_predictions": expected,
        "predictions": len(have),
        "fraction": (expected - missing_pairs) / expected if expected else None,
        "missing_predictions": missing_pairs,
        "missing_instances": len(missing_ids),
        "missing_ids": missing_ids[:LIST_MISSING],
    }


def coverage_warning(cov: dict[str, Any]) -> str | None:
    """One sentence for a file that does not cover the run, else ``None``."""
    if cov.get("complete", True):
        return None
    n_missing = int(cov["missing_instances"])
    ids = [str(i) for i in cov.get("missing_ids", [])]
    shown = ", ".join(repr(i) for i in ids[:SHOW_IDS])
    if n_missing > SHOW_IDS:
        shown += f" and {n_missing - SHOW_IDS} more"
    covered = int(cov["expected_predictions"]) - int(cov["missing_predictions"])
    text = (
        f"incomplete predictions: {covered} of {cov['expected_predictions']} expected "
        f"(instance, repeat) pairs have a prediction"
    )
    if n_missing:
        text += f"; {n_missing} of {cov['expected_instances']} instances have none ({shown})"
    return text + ". The figures cover only the predicted instances."


def _expected(
    dataset: Any, config: dict[str, Any] | None, preds: Sequence[Prediction]
) -> tuple[list[str], int]:
    """(expected instance ids, expected repeats) for the coverage check: the run's when the
    ``run.json`` describes this dataset, else every instance × the repeats seen."""
    ids = list(dataset.ids)
    repeats = max((p.repeat for p in preds), default=0) + 1
    if config is not None and config.get("dataset") == dataset.fingerprint:
        limit = config.get("limit")
        if isinstance(limit, int) and limit >= 0:
            ids = ids[:limit]
        if isinstance(config.get("repeats"), int):
            repeats = max(repeats, int(config["repeats"]))
    return ids, repeats


def rescore(
    predictions: str | Path,
    *,
    data: str | None = None,
    fmt: str | None = None,
    options: dict[str, Any] | None = None,
    metrics: Sequence[str] | None = None,
    judge: str | None = None,
    judge_cache: str | Path | None = None,
    scorer_options: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """Score a predictions file; returns the same structure as a run's ``results.json``, plus
    ``coverage`` (and ``warnings`` when the file does not cover the run).

    ``judge_cache`` (default: ``judge_cache.jsonl`` beside the file) keeps the judge's answers.
    ``scorer_options`` (scorer -> option -> value) go to the scorers: an environment run is
    re-judged from its stored execution records, e.g. with ``{"environment": {"success_f1":
    "0.8"}}``, with no model and no re-execution of the predicted programs.
    """
    from toollab.data import load_dataset

    path = Path(predictions)
    preds = read_predictions(path)
    data_path, fmt_name, opts, config = dataset_source(path, data, fmt, options)
    dataset = load_dataset(data_path, fmt_name, **opts)
    check_predictions(preds, dataset, path, config)
    ids = {p.id for p in preds}
    instances = {inst.id: inst for inst in dataset.instances if inst.id in ids}
    cache = judge_cache if judge_cache is not None else path.parent / JUDGE_CACHE
    # every applicable default scorer unless told otherwise: one file yields every metric family
    results = score_with_judge(
        preds,
        instances,
        list(metrics) if metrics else None,
        judge,
        judge_cache=cache,
        scorer_options=scorer_options,
    )
    expected_ids, repeats = _expected(dataset, config, preds)
    cov = coverage(preds, expected_ids, repeats)
    out: dict[str, Any] = {
        "predictions": str(path),
        "dataset": {
            "path": data_path,
            "format": fmt_name,
            "name": dataset.name,
            "fingerprint": dataset.fingerprint,
        },
        "run": config or {},
        **results,
        "coverage": cov,
    }
    warning = coverage_warning(cov)
    if warning:
        out["warnings"] = [warning]
    return out
