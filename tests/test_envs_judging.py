"""Judging in the scorer: a stored bench run re-judged from its execution records.

``fixtures/bench_replay`` is a ``toollab bench`` run made before judging moved from the agents to
the ``environment`` scorer (six environments, eight test instances each, seed 0; the outputs are
the gold programs and perturbed ones: a call left out, a value changed, the calls reversed, an
alternative program, unreadable text, a call where none is due, replayed through the ``json``
template).  Its records hold the verdict the agent made then, and its ``results.json`` the
figures of that path.  The new path judges from the recorded final states alone and must give
the same figures, with and without the stored verdict, through the API and ``toollab score``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.data import load_dataset
from toollab.eval.metrics.environment import EnvironmentScorer
from toollab.eval.results import score_predictions
from toollab.eval.store import read_predictions
from toollab.schema.record import Prediction

RUN = Path(__file__).parent / "fixtures" / "bench_replay"
ENVS = sorted(p.name for p in (RUN / "runs").iterdir())
#: the fields of a verdict a record held when the agent judged
VERDICT = ("success", "precision", "recall", "f1", "label", "labels_states", "labels_actions",
           "lcs", "label_error", "details")  # fmt: skip


def _stored(env: str) -> dict[str, Any]:
    results: dict[str, Any] = json.loads((RUN / "runs" / env / "results.json").read_text())
    return results


def _run(env: str) -> tuple[list[Prediction], dict[str, Any]]:
    preds = read_predictions(RUN / "runs" / env / "predictions.jsonl")
    data = load_dataset(RUN / "data" / f"{env}.jsonl", "toollab")
    return preds, {i.id: i for i in data.instances}


def _without_verdict(preds: list[Prediction]) -> list[Prediction]:
    out = []
    for p in preds:
        if p.execution is not None:
            fresh = type(p.execution)().model_dump()
            ex = p.execution.model_copy(update={k: fresh[k] for k in VERDICT})
            p = p.model_copy(update={"execution": ex})
        out.append(p)
    return out


def test_the_fixture_holds_failures_crashes_and_plans() -> None:
    figures = [_stored(env)["metrics"]["environment"] for env in ENVS]
    assert "household" in ENVS and any(f["lcs"] is not None for f in figures)
    assert any(0 < (f["success"] or 0) < 1 for f in figures)
    assert any((f["crash_rate"] or 0) > 0 for f in figures)
    held = [p for env in ENVS for p in _run(env)[0] if p.execution and p.execution.success]
    assert held and all(p.execution and p.execution.labels_states for p in held)


@pytest.mark.parametrize("env", ENVS)
def test_rejudged_figures_equal_the_stored_ones(env: str) -> None:
    preds, instances = _run(env)
    stored = _stored(env)
    for records in (preds, _without_verdict(preds)):
        got = score_predictions(records, instances, ["environment"])
        assert got.metrics["environment"] == stored["metrics"]["environment"]
        assert got.per_sample["environment"] == stored["per_sample"]["environment"]


def test_the_scorer_judges_from_the_final_state_not_the_stored_verdict() -> None:
    """A record whose stored verdict is wrong is judged by its final state."""
    preds, instances = _run("home_search")
    judged = [p for p in preds if p.execution and p.execution.state is not None]
    flipped = [
        p.model_copy(
            update={
                "execution": p.execution.model_copy(update={"success": not p.execution.success})
            }
        )
        for p in judged
        if p.execution is not None
    ]
    scorer = EnvironmentScorer()
    for original, wrong in zip(judged, flipped, strict=True):
        inst = instances[original.id]
        assert scorer.score_sample(wrong, inst) == scorer.score_sample(original, inst)


def test_score_rejudges_a_run_with_a_scorer_option(tmp_path: Path) -> None:
    env = "household"
    run = tmp_path / env
    shutil.copytree(RUN / "runs" / env, run)
    preds = _without_verdict(read_predictions(run / "predictions.jsonl"))
    (run / "predictions.jsonl").write_text("".join(p.model_dump_json() + "\n" for p in preds))
    data = str(RUN / "data" / f"{env}.jsonl")
    cli = CliRunner()
    args = ["score", str(run), "--data", data, "--format", "toollab", "--json"]
    r = cli.invoke(app, args)
    assert r.exit_code == 0, r.stderr
    same = json.loads(r.stdout)
    assert same["metrics"]["environment"] == _stored(env)["metrics"]["environment"]
    # a lower bar: every final state with dict-F1 >= 0.5 is a success
    r = cli.invoke(app, [*args, "--scorer-option", "environment.success_f1=0.5"])
    assert r.exit_code == 0, r.stderr
    lower = json.loads(r.stdout)
    rows = lower["per_sample"]["environment"].values()
    calls = [row for row in rows if row["call"]]
    expected = sum(1 for row in calls if not row["crashed"] and row["dict_f1"] >= 0.5) / len(calls)
    assert lower["metrics"]["environment"]["success"] == pytest.approx(expected)
    assert lower["metrics"]["environment"]["success"] > same["metrics"]["environment"]["success"]
    for row in calls:
        assert row["success"] == float(not row["crashed"] and row["dict_f1"] >= 0.5)
    # an option no scorer takes, a value out of range: clear errors
    r = cli.invoke(app, [*args, "-s", "environment.succes_f1=0.5"])
    assert r.exit_code == 2 and "did you mean 'success_f1'" in r.stderr
    r = cli.invoke(app, [*args, "-s", "environment.success_f1=2"])
    assert r.exit_code == 2 and "success_f1 must be a number in [0, 1]" in r.stderr
    r = cli.invoke(app, [*args, "-s", "environment.success_f1=0.5", "-s", "no_such.x=1"])
    assert r.exit_code == 2 and "no_such" in r.stderr
