"""The error taxonomy through the CLI: ``toollab score`` of stored BFCL runs, the terminal
summary and ``--json`` (the same figures as ``results.json``)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.eval.metrics.errors import CLASSES

RUNS = Path(__file__).parent / "fixtures" / "runs"
runner = CliRunner()


def _score(run: str, shared_data: Path, *extra: str) -> object:
    category = run.removeprefix("bfcl-")
    return runner.invoke(
        app,
        [
            "score",
            str(RUNS / run / "predictions.jsonl"),
            "--data",
            str(shared_data / "bfcl"),
            "--format",
            "bfcl",
            "--option",
            f"categories={category}",
            *extra,
        ],
    )


def test_score_json_carries_the_taxonomy_and_agrees_with_bfcl(shared_data: Path) -> None:
    r = _score("bfcl-parallel_multiple", shared_data, "--json")
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    tax = data["taxonomy"]
    assert [c["key"] for c in tax["classes"]] == [c.kind.value for c in CLASSES]
    counts = {c["key"]: c["count"] for c in tax["classes"] if c["count"]}
    assert counts == {"unparsed": 1, "wrong_tool": 2, "wrong_value": 1, "correct": 4}
    assert tax["classified"] == 8 and tax["unclassified"] == 0
    shares = {c["key"]: c["share"] for c in tax["classes"]}
    assert shares["correct"] == 0.5 and shares["retriever_miss"] == 0.0
    rows = data["per_sample"]["taxonomy"]
    assert rows["parallel_multiple_0"]["class"] == "unparsed"
    # correct exactly where BFCL's own checker says valid
    for key, row in rows.items():
        assert (row["class"] == "correct") is bool(data["per_sample"]["bfcl"][key]["valid"]), key


def test_the_terminal_summary_prints_counts_shares_and_definitions(shared_data: Path) -> None:
    r = _score("bfcl-irrelevance", shared_data)
    assert r.exit_code == 0, r.stderr
    out = r.stderr + r.stdout
    assert "error taxonomy (8 samples classified)" in out
    assert "call where no call was due" in out and "37.5 %" in out and "62.5 %" in out
    assert "call where no call was due: the instance needs no call" in out
