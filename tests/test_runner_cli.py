"""``toollab eval`` and ``toollab score`` on the command line, bad input included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.eval.store import PREDICTIONS, RESULTS
from toollab.models.fake import FakeModel

runner = CliRunner()


@pytest.fixture(scope="module")
def seal_run(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "run"
    r = runner.invoke(
        app,
        [
            "eval",
            "--model",
            "oracle",
            "--data",
            str(shared_data / "seal-tools"),
            "--format",
            "seal-tools",
            "-o",
            "splits=test_in_domain",
            "--limit",
            "15",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)  # exactly one JSON object on stdout
    assert data["out"] == str(out) and data["counts"]["predictions"] == 15
    assert data["metrics"]["seal_tools"]["tool_f1"] == 1.0
    return out


def test_eval_human_output_goes_to_stderr(shared_data: Path, tmp_path: Path) -> None:
    r = runner.invoke(
        app,
        [
            "eval",
            "-m",
            "oracle",
            "-d",
            str(shared_data / "bfcl"),
            "-f",
            "bfcl",
            "-o",
            "categories=simple_python",
            "-n",
            "5",
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert r.exit_code == 0, r.stderr
    assert r.stdout == ""
    assert "bfcl" in r.stderr and "results:" in r.stderr


def test_score_rescores_with_no_model(seal_run: Path) -> None:
    r = runner.invoke(app, ["score", str(seal_run / PREDICTIONS), "--json"])
    assert r.exit_code == 0, r.stderr
    scored = json.loads(r.stdout)
    original = json.loads((seal_run / RESULTS).read_text())
    assert scored["metrics"] == original["metrics"]
    assert scored["breakdown"] == original["breakdown"]
    assert scored["dataset"]["fingerprint"] == original["run"]["dataset"]
    # a run directory works too, and --metrics narrows the scorers
    r = runner.invoke(app, ["score", str(seal_run), "--metrics", "seal_tools_strict", "--json"])
    assert r.exit_code == 0, r.stderr
    assert list(json.loads(r.stdout)["metrics"]) == ["seal_tools_strict"]


def test_score_writes_results_with_out(seal_run: Path, tmp_path: Path) -> None:
    r = runner.invoke(
        app, ["score", str(seal_run / PREDICTIONS), "--out", str(tmp_path / "r.json")]
    )
    assert r.exit_code == 0, r.stderr
    assert (
        json.loads((tmp_path / "r.json").read_text())["metrics"]["seal_tools"]["format_acc"] == 1.0
    )


def _copy_predictions(seal_run: Path, dest: Path, edit: object = None) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    lines = (seal_run / PREDICTIONS).read_text().splitlines()
    if callable(edit):
        lines = edit(lines)
    (dest / PREDICTIONS).write_text("\n".join(lines) + "\n")
    (dest / "run.json").write_text((seal_run / "run.json").read_text())
    return dest / PREDICTIONS


def test_score_unknown_ids_are_listed(seal_run: Path, tmp_path: Path) -> None:
    def rename(lines: list[str]) -> list[str]:
        out = []
        for i, line in enumerate(lines):
            rec = json.loads(line)
            if i < 7:
                rec["id"] = f"no-such-{i}"
            out.append(json.dumps(rec))
        return out

    path = _copy_predictions(seal_run, tmp_path / "ids", rename)
    r = runner.invoke(app, ["score", str(path)])
    assert r.exit_code == 2
    err = " ".join(r.stderr.split())
    assert "7 prediction id(s) are not instances" in err
    assert "'no-such-0'" in err and "'no-such-4'" in err and "and 2 more" in err


def test_score_refuses_predictions_from_another_dataset(seal_run: Path, shared_data: Path) -> None:
    r = runner.invoke(
        app,
        ["score", str(seal_run / PREDICTIONS), "--data", str(shared_data / "bfcl"), "-f", "bfcl"],
    )
    assert r.exit_code == 2
    err = " ".join(r.stderr.split())
    assert "made on another dataset" in err and "fingerprint" in err


def test_score_names_a_truncated_line(seal_run: Path, tmp_path: Path) -> None:
    def cut(lines: list[str]) -> list[str]:
        return [*lines[:4], lines[4][:40], *lines[5:]]

    path = _copy_predictions(seal_run, tmp_path / "cut", cut)
    r = runner.invoke(app, ["score", str(path)])
    assert r.exit_code == 2
    err = "".join(r.stderr.split())
    assert f"{path}:5".replace(" ", "") in err and "truncated" in err


def test_score_refuses_duplicates_and_non_predictions(seal_run: Path, tmp_path: Path) -> None:
    path = _copy_predictions(seal_run, tmp_path / "dup", lambda lines: [*lines, lines[0]])
    r = runner.invoke(app, ["score", str(path)])
    assert r.exit_code == 2 and "more than once" in r.stderr
    path = _copy_predictions(seal_run, tmp_path / "bad", lambda lines: [*lines[:2], '{"raw": 1}'])
    r = runner.invoke(app, ["score", str(path)])
    assert r.exit_code == 2 and ":3" in r.stderr and "not a prediction record" in r.stderr


def test_score_without_run_json_needs_data(seal_run: Path, tmp_path: Path) -> None:
    (tmp_path / PREDICTIONS).write_text((seal_run / PREDICTIONS).read_text())
    r = runner.invoke(app, ["score", str(tmp_path / PREDICTIONS)])
    assert r.exit_code == 2 and "--data" in r.stderr


def test_eval_bad_flags_are_clear(shared_data: Path, tmp_path: Path) -> None:
    base = [
        "eval",
        "-m",
        "oracle",
        "-d",
        str(shared_data / "seal-tools"),
        "--out",
        str(tmp_path / "r"),
    ]
    r = runner.invoke(app, [*base, "-f", "seal-tool"])
    assert r.exit_code == 2 and "seal-tools" in r.stderr
    r = runner.invoke(app, [*base, "-f", "seal-tools", "--agent", "reactt"])
    assert r.exit_code == 2 and "did you mean 'react'" in r.stderr
    r = runner.invoke(app, [*base, "-f", "seal-tools", "--metrics", "nope"])
    assert r.exit_code == 2 and "unknown scorer" in r.stderr
    r = runner.invoke(app, [*base, "-f", "seal-tools", "--metrics", "bfcl", "-n", "2"])
    assert r.exit_code == 2 and "does not apply" in r.stderr


def test_score_runs_the_faithful_scorers_by_default(seal_run: Path) -> None:
    r = runner.invoke(app, ["score", str(seal_run), "--json"])
    assert r.exit_code == 0, r.stderr
    scored = json.loads(r.stdout)
    assert scored["scorers"] == ["seal_tools"]  # seal_tools_strict only when named
    assert scored["coverage"]["complete"] is True and scored["warnings"] == []
    r = runner.invoke(app, ["score", str(seal_run), "--metrics", "seal_tools*", "--json"])
    assert json.loads(r.stdout)["scorers"] == ["seal_tools", "seal_tools_strict"]


def test_score_of_a_partial_file_reports_what_is_missing(
    seal_run: Path, shared_data: Path, tmp_path: Path
) -> None:
    """5 of the run's 15 predictions: the figures are over the 5, coverage and a warning say
    that 10 instances have none and name them."""
    path = _copy_predictions(seal_run, tmp_path / "part", lambda lines: lines[:5])
    r = runner.invoke(app, ["score", str(path), "--json"])
    assert r.exit_code == 0, r.stderr
    scored = json.loads(r.stdout)
    cov = scored["coverage"]
    all_ids = [json.loads(line)["id"] for line in (seal_run / PREDICTIONS).read_text().splitlines()]
    assert cov["complete"] is False
    assert (cov["expected_instances"], cov["predictions"], cov["missing_instances"]) == (15, 5, 10)
    assert cov["fraction"] == pytest.approx(5 / 15)
    assert sorted(cov["missing_ids"]) == sorted(all_ids[5:])
    err = " ".join(r.stderr.split())
    assert "warning" in err and "5 of 15 expected" in err and "10 of 15 instances have none" in err
    assert repr(cov["missing_ids"][0]) in err
    assert scored["warnings"] and scored["counts"]["predictions"] == 5
    # the human table says so too
    r = runner.invoke(app, ["score", str(path)])
    assert "coverage: 5 of 15 expected predictions" in " ".join(r.stderr.split())
    # with --data and no run.json the whole split is expected
    (tmp_path / "part" / "run.json").unlink()
    r = runner.invoke(
        app,
        [
            "score",
            str(path),
            "--data",
            str(shared_data / "seal-tools"),
            "-f",
            "seal-tools",
            "-o",
            "splits=test_in_domain",
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    cov = json.loads(r.stdout)["coverage"]
    assert (cov["expected_instances"], cov["missing_instances"]) == (700, 695)
    assert len(cov["missing_ids"]) == 50


@pytest.mark.parametrize("bad_model", ["nosuch:x", "llamacpp:/nonexistent/model.gguf"])
def test_a_bad_model_leaves_no_run_behind(
    bad_model: str, shared_data: Path, tmp_path: Path
) -> None:
    """The model is loaded before run.json is written: the corrected command then runs in the
    same --out instead of finding "a run with a different configuration"."""
    args = ["-d", str(shared_data / "bfcl"), "-f", "bfcl", "-o", "categories=simple_python"]
    for out in (tmp_path / "new", tmp_path / "existing"):
        if out.name == "existing":
            out.mkdir()
        r = runner.invoke(app, ["eval", "-m", bad_model, *args, "-n", "3", "--out", str(out)])
        assert r.exit_code in (2, 3), r.output
        assert ("nosuch" in r.stderr) or ("nonexistent/model.gguf" in r.stderr), r.stderr
        assert not (out / "run.json").exists() and not (out / ".toollab.lock").exists()
        assert out.exists() is (out.name == "existing")  # a directory it made is removed
        r = runner.invoke(app, ["eval", "-m", "oracle", *args, "-n", "3", "--out", str(out)])
        assert r.exit_code == 0, r.stderr
        assert json.loads((out / "run.json").read_text())["model"] == "oracle"


class _Judges:
    """Stands in for the model loader: every model string becomes a scripted FakeModel judge
    (or an echoing one for the run itself), all kept to count their requests."""

    def __init__(self) -> None:
        self.made: list[FakeModel] = []

    def __call__(self, spec: str) -> FakeModel:
        if spec.startswith("judge"):
            model = FakeModel(fn=lambda m, t: "Evaluation Score: 7", name=spec)
        else:
            model = FakeModel(name=spec)
        self.made.append(model)
        return model

    def calls(self, spec: str) -> int:
        return sum(m.calls for m in self.made if m.name == spec)


def test_judge_answers_are_cached_on_disk(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toollab.models.registry as registry_module

    judges = _Judges()
    monkeypatch.setattr(registry_module, "load_model", judges)  # every model loads through here
    monkeypatch.setattr(registry_module, "check_model_string", lambda spec: spec)
    out = tmp_path / "te"
    base = ["-d", str(shared_data / "tooleyes"), "-f", "tooleyes", "-n", "2", "--max-turns", "1"]
    r = runner.invoke(
        app, ["eval", "-m", "fake:", *base, "--out", str(out), "--judge", "judge:a", "--json"]
    )
    assert r.exit_code == 0, r.stderr
    first = json.loads(r.stdout)["metrics"]["tooleyes"]
    asked = judges.calls("judge:a")
    assert asked > 0 and first["IU"] == pytest.approx(0.7)
    cache = out / "judge_cache.jsonl"
    assert len(cache.read_text().splitlines()) == asked
    # scoring again (a new process would load a new judge) asks nothing: the file answers
    r = runner.invoke(app, ["score", str(out), "--judge", "judge:a", "--json"])
    assert r.exit_code == 0, r.stderr
    assert judges.calls("judge:a") == asked
    assert json.loads(r.stdout)["metrics"]["tooleyes"] == first
    # --judge-cache elsewhere starts empty, is filled, then answers in turn
    other = tmp_path / "elsewhere" / "answers.jsonl"
    for expected in (2 * asked, 2 * asked):
        r = runner.invoke(
            app, ["score", str(out), "--judge", "judge:a", "--judge-cache", str(other)]
        )
        assert r.exit_code == 0, r.stderr
        assert judges.calls("judge:a") == expected
    assert len(other.read_text().splitlines()) == asked


def test_a_judge_cache_that_cannot_be_written_exits_2(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Refused before any model or judge is loaded, naming the path; never a run that loses
    its judged figures at the end."""
    import toollab.models.registry as registry_module

    judges = _Judges()
    monkeypatch.setattr(registry_module, "load_model", judges)  # every model loads through here
    monkeypatch.setattr(registry_module, "check_model_string", lambda spec: spec)
    blocker = tmp_path / "afile"
    blocker.write_text("")
    bad = blocker / "judge_cache.jsonl"
    out = tmp_path / "te"
    base = ["-d", str(shared_data / "tooleyes"), "-f", "tooleyes", "-n", "2", "--max-turns", "1"]
    judge = ["--judge", "judge:a", "--judge-cache", str(bad)]
    r = runner.invoke(app, ["eval", "-m", "fake:", *base, "--out", str(out), *judge])
    assert r.exit_code == 2, r.output
    assert str(bad) in r.stderr and "not a directory" in r.stderr
    assert judges.made == [] and not (out / "run.json").exists()
    r = runner.invoke(app, ["eval", "-m", "fake:", *base, "--out", str(out), "--json"])
    assert r.exit_code == 0, r.stderr
    r = runner.invoke(app, ["score", str(out), *judge])
    assert r.exit_code == 2, r.output
    assert str(bad) in r.stderr
    assert [m.name for m in judges.made] == ["fake:"]  # the run's model; no judge was loaded
