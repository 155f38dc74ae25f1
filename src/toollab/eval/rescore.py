"""``toollab score``: rescore a predictions file with no model.

The dataset comes from the ``run.json`` beside the file unless given.  The file must belong to the
dataset: every prediction's dataset fingerprint must match, every id must be an instance of it,
and each ``(id, repeat)`` may appear once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toollab.errors import InputError, UsageError
from toollab.eval.record import Prediction
from toollab.eval.runner import score_with_judge
from toollab.eval.store import RUN_JSON, read_json, read_predictions

#: how many offending ids an error message lists
SHOW_IDS = 5


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


def check_predictions(preds: list[Prediction], dataset: Any, path: Path) -> None:
    """Refuse predictions from another dataset, unknown ids and duplicated (id, repeat) pairs."""
    if not preds:
        raise InputError("the predictions file holds no predictions", path=path)
    known = set(dataset.ids)
    unknown = list(dict.fromkeys(p.id for p in preds if p.id not in known))
    prints = sorted({p.dataset for p in preds if p.dataset})
    if prints and prints != [dataset.fingerprint]:
        hint = f"; {len(unknown)} of its ids are not in it ({_some(unknown)})" if unknown else ""
        raise InputError(
            f"these predictions were made on another dataset (fingerprint {', '.join(prints)}) "
            f"than {dataset.name!r} at {dataset.path} (fingerprint {dataset.fingerprint}){hint}. "
            "Give the dataset (and --option values) the run used",
            path=path,
        )
    if unknown:
        raise InputError(
            f"{len(unknown)} prediction id(s) are not instances of dataset {dataset.name!r}: "
            f"{_some(unknown)}",
            path=path,
        )
    seen: set[tuple[str, int]] = set()
    dups: list[str] = []
    for p in preds:
        key = (p.id, p.repeat)
        if key in seen:
            dups.append(f"{p.id}@{p.repeat}")
        seen.add(key)
    if dups:
        raise InputError(
            f"{len(dups)} prediction(s) appear more than once (id@repeat): {_some(dups)}", path=path
        )


def rescore(
    predictions: str | Path,
    *,
    data: str | None = None,
    fmt: str | None = None,
    options: dict[str, Any] | None = None,
    metrics: Sequence[str] | None = None,
    judge: str | None = None,
) -> dict[str, Any]:
    """Score a predictions file; returns the same structure as a run's ``results.json``."""
    from toollab.data import load_dataset

    path = Path(predictions)
    preds = read_predictions(path)
    data_path, fmt_name, opts, config = dataset_source(path, data, fmt, options)
    dataset = load_dataset(data_path, fmt_name, **opts)
    check_predictions(preds, dataset, path)
    ids = {p.id for p in preds}
    instances = {inst.id: inst for inst in dataset.instances if inst.id in ids}
    # every applicable scorer unless told otherwise: one file yields every metric family
    results = score_with_judge(preds, instances, list(metrics) if metrics else None, judge)
    return {
        "predictions": str(path),
        "dataset": {
            "path": data_path,
            "format": fmt_name,
            "name": dataset.name,
            "fingerprint": dataset.fingerprint,
        },
        "run": config or {},
        **results,
    }
