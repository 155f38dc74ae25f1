"""The report of a two-model bench with failures: models as columns with their difference,
figures verbatim from results.json, the per-sample error table, the failed samples' drill-down,
the page without matplotlib, and the inspect_ai export read back."""

from __future__ import annotations

import json
import re
import shutil
from html import escape
from pathlib import Path

import pytest
from report_bench import ENVS, NO_CALL, UNPARSABLE, make_bench, planted_outputs
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.report import charts, drilldown, load_runs, write_report
from toollab.report.failures import run_failures
from toollab.report.runs import fmt_delta, fmt_figure

runner = CliRunner()


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    return make_bench(tmp_path_factory.mktemp("bench"))


def _run_dirs(out: Path) -> list[Path]:
    return sorted(out.glob("*/runs/*"))


def _figures(run: Path) -> dict[str, float | None]:
    figures: dict[str, float | None] = json.loads((run / "results.json").read_text())["metrics"][
        "environment"
    ]
    return figures


def test_models_are_columns_with_the_difference(bench: tuple[Path, str]) -> None:
    out, replay = bench
    html = (out / "report.html").read_text()
    first = html[html.index("<table class='cmp'>") :]
    first = first[: first.index("</table>")]
    heads = re.findall(r"<th[^>]*>(.*?)</th>", first.split("</tr>")[0])
    assert heads == ["environment", "oracle", escape(replay), "Δ"]
    for env in ENVS:
        oracle = _figures(out / "oracle" / "runs" / env)
        other = next(
            p for p in _run_dirs(out) if p.name == env and p.parent.parent.name != "oracle"
        )
        tuned = _figures(other)
        row = re.search(rf"<tr><th>{env}</th>(.*?)</tr>", first)
        assert row is not None
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))
        # verbatim from results.json, as percentages, and the difference in points
        assert cells == [
            fmt_figure(oracle["success"], None, True),
            fmt_figure(tuned["success"], None, True),
            fmt_delta(tuned["success"], oracle["success"]),
        ]
    assert fmt_figure(0.4375, 0.0123, True) == "43.8 ± 1.2" and fmt_delta(0.25, 1.0) == "-75.0"
    # the labels say which model ran which environment
    assert f"weather · {escape(replay)}" in html and "weather (2)" not in html


def test_the_error_table_counts_each_planted_mistake(bench: tuple[Path, str]) -> None:
    out, _replay = bench
    runs = load_runs(_run_dirs(out))
    planted = planted_outputs()
    for run in runs:
        rf = run_failures(run)
        assert rf.problem is None and rf.classified == 4
        got = {f.sample.id: f.error.kind.value for f in rf.failures}
        want = (
            {}
            if run.model == "oracle"
            else {
                k: v for k, (_o, v) in planted.items() if v is not None and k.startswith(run.task)
            }
        )
        assert got == want, run.label
    html = (out / "report.html").read_text()
    errors = html[html.index('<h2 id="errors">') : html.index('<h2 id="failures">')]
    assert "<td class='num'>0 of 8</td><td class='num'>5 of 8</td>" in errors
    for label in ("non-executable: unparsed", "no call where a call was due", "wrong tool"):
        assert (
            f"<tr><th>{label}</th><td class='num'>0 (0.0 %)</td><td class='num'>1 (12.5 %)</td>"
            in errors
        )
    # the crash reasons, by the environment's reason code, with its message
    assert "<tr><th>not_found</th>" in errors and escape("city not found: 'Atlantis'") in errors
    md = (out / "report.md").read_text()
    assert (
        "| wrong call count | 0 (0.0 %) | 1 (12.5 %) |" in md
        and "## Errors (per-sample classes)" in md
    )


def test_a_failed_sample_opens_with_its_prompt_output_calls_and_reason(
    bench: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, _replay = bench
    html = (out / "report.html").read_text()
    drill = html[html.index('<h2 id="failures">') : html.index('<h2 id="runs">')]
    assert escape(UNPARSABLE) in drill and escape(NO_CALL) in drill
    assert "Compare the current weather in Madrid and Paris" in drill  # the query
    assert escape("crashed (not_found): city not found: 'Atlantis'") in drill
    assert "(not run: an earlier call crashed)" in drill
    assert "No failed sample in: weather · oracle, favourites · oracle" in drill
    # bounded: the first MAX_SHOWN failures of a run, then how many more
    monkeypatch.setattr(drilldown, "MAX_SHOWN", 1)
    page, _md, _ = write_report(_run_dirs(out), tmp_path / "small.html")
    text = page.read_text()
    assert text.count("<details class='sample'>") == 2
    assert "… and 2 more failed sample(s)" in text and "… and 1 more failed sample(s)" in text


def test_the_page_renders_without_matplotlib(
    bench: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out, replay = bench
    monkeypatch.setattr(charts, "available", lambda: False)
    page, _md, _ = write_report(_run_dirs(out), tmp_path / "plain.html")
    text = page.read_text()
    assert "<svg" not in text and "Charts need matplotlib" in text
    assert f"<th class=model>{escape(replay)}</th>" in text and "5 of 8" in text


def test_a_run_whose_dataset_is_gone_still_reports(bench: tuple[Path, str], tmp_path: Path) -> None:
    out, _replay = bench
    src = next(
        p for p in _run_dirs(out) if p.name == "weather" and p.parent.parent.name != "oracle"
    )
    moved = tmp_path / "lonely" / "weather"
    shutil.copytree(src, moved)
    run = json.loads((moved / "run.json").read_text())
    run["data"] = str(tmp_path / "nowhere.jsonl")
    (moved / "run.json").write_text(json.dumps(run))
    page, _md, _ = write_report([moved], tmp_path / "gone.html")
    text = page.read_text()
    # the classes come from the run's own record: no dataset needed
    assert "4 of 4" not in text and "<td class='num'>3 of 4</td>" in text
    assert "<tr><th>non-executable: unparsed</th><td class='num'>1 (25.0 %)</td>" in text
    assert "(the run's dataset cannot be read)" in text  # the drill-down says what it lacks
    assert "<tr><th>not_found</th>" in text  # the crash reasons need only the predictions
    # a run scored before the taxonomy, whose dataset is gone: no classes, and why
    results = json.loads((moved / "results.json").read_text())
    results["per_sample"].pop("taxonomy")
    results.pop("taxonomy")
    (moved / "results.json").write_text(json.dumps(results))
    page, _md, _ = write_report([moved], tmp_path / "gone2.html")
    text = page.read_text()
    assert "its dataset" in text and "is not there any more" in text


def test_runs_export_to_inspect_logs_and_read_back(bench: tuple[Path, str], tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    out, replay = bench
    r = runner.invoke(
        app,
        [
            "report",
            *map(str, _run_dirs(out)),
            "--out",
            str(tmp_path / "r.html"),
            "--inspect",
            str(tmp_path / "logs"),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    paths = [Path(p) for p in json.loads(r.stdout)["inspect_logs"]]
    assert len(paths) == 4 and all(p.suffix == ".eval" and p.is_file() for p in paths)
    planted = planted_outputs()
    for path in paths:
        log = read_eval_log(str(path))
        run = next(
            p
            for p in _run_dirs(out)
            if p.name == log.eval.task
            and log.eval.model in ("oracle" if p.parent.parent.name == "oracle" else replay,)
        )
        assert log.status == "success" and log.results is not None
        metrics = log.results.scores[0].metrics
        assert {k: m.value for k, m in metrics.items()} == {
            k: v for k, v in _figures(run).items() if v is not None
        }
        assert log.samples is not None and len(log.samples) == 4
        for s in log.samples:
            want = "ok" if log.eval.model == "oracle" else planted[str(s.id)][1] or "ok"
            assert s.scores is not None and s.scores["error_class"].value == want
            assert s.output.completion == next(
                json.loads(line)["raw"]
                for line in (run / "predictions.jsonl").read_text().splitlines()
                if json.loads(line)["id"] == s.id
            )
            assert [m.role for m in s.messages][-1] in ("assistant", "tool")


def test_inspect_export_without_inspect_ai_is_a_clear_error(
    bench: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toollab.report import inspect_log

    monkeypatch.setattr(inspect_log, "available", lambda: False)
    out, _replay = bench
    r = runner.invoke(
        app,
        [
            "report",
            str(_run_dirs(out)[0]),
            "--out",
            str(tmp_path / "r.html"),
            "--inspect",
            str(tmp_path / "logs"),
        ],
    )
    assert r.exit_code == 2 and "toollab[inspect]" in r.stderr
