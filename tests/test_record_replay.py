"""Stored runs read back through the typed record and re-scored give the figures they were
written with.

``tests/fixtures/runs/bfcl-*`` are run directories written by an earlier version of toollab
(the bundled model on 8 BFCL instances of three categories): ``run.json``, ``predictions.jsonl``
and ``results.json`` as that version wrote them.  Re-scoring the predictions with today's code
(``toollab score``'s path) must reproduce every figure, breakdown, error count and per-sample row
they hold, and the directories must read back as a :class:`~toollab.eval.log.TaskLog` (new
figures may be added beside the old ones, never changed).  Their dataset fingerprints were
migrated once, when the fingerprint stopped counting the folder the data was read from.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toollab.eval.log import read_task_log
from toollab.eval.rescore import rescore

FIXTURES = Path(__file__).parent / "fixtures" / "runs"
RUNS = sorted(FIXTURES.glob("bfcl-*"))


def _stored(run: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((run / "results.json").read_text(encoding="utf-8"))
    return data


def test_the_fixtures_are_there() -> None:
    assert len(RUNS) == 3, RUNS


@pytest.mark.parametrize("run", RUNS, ids=[r.name for r in RUNS])
def test_a_stored_run_reads_back_as_a_task_log(run: Path) -> None:
    stored = _stored(run)
    log = read_task_log(run)
    assert log.spec.format == "bfcl" and log.spec.model == "bundled:smollm2-135m"
    assert log.scores.metrics == stored["metrics"]
    assert len(log.samples) == 8 and all("bfcl" in s.scores for s in log.samples)
    assert log.scores.counts.predictions == 8


@pytest.mark.parametrize("run", RUNS, ids=[r.name for r in RUNS])
def test_rescoring_a_stored_run_reproduces_its_figures(run: Path, shared_data: Path) -> None:
    stored = _stored(run)
    category = run.name.removeprefix("bfcl-")
    now = rescore(
        run / "predictions.jsonl",
        data=str(shared_data / "bfcl"),
        fmt="bfcl",
        options={"categories": category},
    )
    assert now.coverage.complete
    for kind in ("metrics", "breakdown", "errors", "scorer_counts"):
        old = stored[kind]
        assert isinstance(old, dict)
        new = getattr(now, kind)
        for scorer, figures in old.items():
            for name, value in figures.items():
                if isinstance(value, dict):  # a breakdown group: its figures (new ones may join)
                    got = {k: new[scorer][name].get(k) for k in value}
                    assert got == value, (kind, scorer, name)
                else:
                    assert new[scorer][name] == value, (kind, scorer, name)
    old_rows = stored["per_sample"]
    assert isinstance(old_rows, dict)
    for scorer, rows in old_rows.items():
        for key, row in rows.items():
            assert {k: now.per_sample[scorer][key].get(k) for k in row} == row, (scorer, key)
    counts = stored["counts"]
    assert isinstance(counts, dict)
    assert now.counts.model_dump() == counts


def test_the_same_data_in_another_folder_rescores_the_run(
    shared_data: Path, tmp_path: Path
) -> None:
    """Where the data lies is not part of its fingerprint: a run made on one machine (or clone)
    rescores against the same files read from another folder."""
    elsewhere = tmp_path / "another" / "clone" / "bfcl"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.symlink_to(shared_data / "bfcl", target_is_directory=True)
    run = FIXTURES / "bfcl-multiple"
    now = rescore(
        run / "predictions.jsonl",
        data=str(elsewhere),
        fmt="bfcl",
        options={"categories": "multiple"},
    )
    assert now.coverage.complete
    assert now.metrics["bfcl"] == _stored(run)["metrics"]["bfcl"]  # type: ignore[index]
