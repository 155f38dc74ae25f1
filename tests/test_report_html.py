"""``toollab report``: the self-contained HTML page (rendered in headless Chromium) and report.md."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.eval.runner import EvalConfig, run_eval
from toollab.models.fake import FakeModel
from toollab.report import fmt_figure, write_report

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
runner = CliRunner()


@pytest.fixture(scope="module")
def runs(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """An oracle run, a weak repeated run (mean ± CI, errors) and a BFCL run."""
    root = tmp_path_factory.mktemp("report")
    seal: dict[str, Any] = {
        "data": str(shared_data / "seal-tools"),
        "format": "seal-tools",
        "limit": 40,
    }
    run_eval(EvalConfig(model="oracle", **seal), root / "oracle")
    weak = FakeModel(
        outputs=[
            '[{"api": "getWeather", "parameters": {"city": "Paris"}, "responses": []}]',
            "I am not sure which tool to use.",
            "[{'api': broken",
        ],
        repeat=True,
        max_concurrency=1,
    )
    run_eval(EvalConfig(model="fake", repeats=2, **seal), root / "weak", model=weak)
    run_eval(
        EvalConfig(model="oracle", data=str(shared_data / "bfcl"), format="bfcl", limit=60),
        root / "bfcl",
    )
    return [root / "oracle", root / "weak", root / "bfcl"]


def _expected_texts(run: Path) -> list[str]:
    """Every headline figure of results.json, formatted the way reports format figures (a
    fraction as a percentage, as the terminal prints it)."""
    results = json.loads((run / "results.json").read_text())
    ci = results.get("ci95") or {}
    defs = results.get("definitions") or {}
    return [
        fmt_figure(
            value,
            ci.get(scorer, {}).get(name),
            (defs.get(scorer, {}).get(name) or {}).get("percent"),
        )
        for scorer, figures in results["metrics"].items()
        for name, value in figures.items()
    ]


def _require_chromium() -> None:
    """The rendering test is part of the suite: without Chromium it fails (never skips)."""
    if not CHROMIUM.is_file():
        pytest.fail(
            f"headless Chromium is needed at {CHROMIUM} for the report rendering test; "
            "run scripts/setup.sh --dev (it installs Debian's chromium)"
        )


def test_report_renders_in_chromium_with_the_numbers(runs: list[Path], tmp_path: Path) -> None:
    _require_chromium()
    from playwright.sync_api import sync_playwright

    r = runner.invoke(
        app, ["report", *map(str, runs), "--out", str(tmp_path / "report.html"), "--json"]
    )
    assert r.exit_code == 0, r.stderr
    written = json.loads(r.stdout)
    page_path = Path(written["html"])
    assert page_path.is_file() and Path(written["markdown"]).is_file()
    html = page_path.read_text()
    # self-contained: no external scripts, styles, images or fonts
    assert not re.search(r"""(src|href)=["'](https?:)?//""", html)
    assert "<svg" in html  # the charts are inline

    problems: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on(
                "console",
                lambda m: (
                    problems.append(f"{m.type}: {m.text}")
                    if m.type in ("error", "warning")
                    else None
                ),
            )
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda req: problems.append(f"request failed: {req.url}"))
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            text = page.inner_text("body")
            n_charts = page.locator(".chart svg").count()
            width = page.evaluate(
                "document.querySelector('.chart svg').getBoundingClientRect().width"
            )
        finally:
            browser.close()
    assert problems == []
    for run in runs:
        for expected in _expected_texts(run):
            assert expected in text, (run.name, expected)
        assert run.name in text
    assert "±" in text  # the repeated run shows its confidence intervals
    assert n_charts >= 3 and width > 200
    for heading in (
        "Models compared",
        "Summary",
        "Errors",
        "Failed samples",
        "Runs",
        "Counts and timing",
        "Per category",
        "Error types reported by the scorers",
    ):
        assert heading in text


def test_markdown_summary_has_the_same_numbers(runs: list[Path], tmp_path: Path) -> None:
    html_path, md_path, views = write_report(runs, tmp_path / "r" / "report.html")
    md = md_path.read_text()
    assert md_path == html_path.with_suffix(".md") and [v.label for v in views] == [
        "oracle", "weak", "bfcl",
    ]  # fmt: skip
    for run in runs:
        for expected in _expected_texts(run):
            assert expected in md
    assert "| figure | oracle | weak | bfcl |" in md
    assert "## bfcl: accuracy by category" in md and "## seal_tools: error types" in md
    # why the leaderboard's "simple" is n/a: the notes are in the summary too
    assert "## Notes" in md and "bfcl: simple: not reported, as on the leaderboard (N/A)" in md


def test_report_errors_are_clear(runs: list[Path], tmp_path: Path) -> None:
    r = runner.invoke(app, ["report", str(tmp_path / "missing"), "--out", str(tmp_path / "x.html")])
    assert r.exit_code == 2 and "not a run directory" in r.stderr
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    shutil.copy(runs[0] / "predictions.jsonl", unfinished / "predictions.jsonl")
    r = runner.invoke(app, ["report", str(unfinished), "--out", str(tmp_path / "x.html")])
    assert r.exit_code == 2 and "toollab score" in " ".join(r.stderr.split())
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_text("{not json")
    r = runner.invoke(app, ["report", str(bad), "--out", str(tmp_path / "x.html")])
    assert r.exit_code == 2 and "results.json:1" in r.stderr
    r = runner.invoke(app, ["report", str(runs[0]), "--out", str(tmp_path / "x.md")])
    assert r.exit_code == 2 and "HTML" in r.stderr


def test_same_directory_names_get_distinct_labels(runs: list[Path], tmp_path: Path) -> None:
    other = tmp_path / "elsewhere" / "oracle"
    shutil.copytree(runs[0], other)
    _, _, views = write_report([runs[0], other], tmp_path / "two.html")
    labels: list[Any] = [v.label for v in views]
    assert len(set(labels)) == 2 and all(label.endswith("oracle") for label in labels)


def test_a_13_environment_bench_report_fits_a_1280_px_page(tmp_path: Path) -> None:
    """Environments are rows where there are more of them than figures: no table is wider
    than the page, and the figures carry the labels the terminal table uses."""
    _require_chromium()
    from playwright.sync_api import sync_playwright

    from toollab.envs import env_names
    from toollab.eval.bench import FIGURES

    r = runner.invoke(app, ["bench", "-m", "oracle", "-n", "1", "--out", str(tmp_path), "--json"])
    assert r.exit_code == 0, r.stderr
    assert len(json.loads(r.stdout)["envs"]) == len(env_names()) == 15
    page_path = tmp_path / "report.html"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            widths = page.evaluate(
                "[document.documentElement.scrollWidth, "
                "...[...document.querySelectorAll('table')]"
                ".map(t => t.getBoundingClientRect().right)]"
            )
            heads = page.evaluate(
                "[...document.querySelectorAll('table')[0].querySelectorAll('tr:first-child th')]"
                ".map(th => th.innerText)"
            )
        finally:
            browser.close()
    assert max(widths) <= 1280, widths
    # the summary table: one row per environment, the figures as columns under their labels
    assert heads[1:] == [f.label for f in FIGURES]


def test_the_two_model_bench_report_in_chromium(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The default bench's question, read as a user: which model is which (columns named by
    the model strings), what failed (a non-empty error table) and, opened in place, what a
    failing sample's model wrote; nothing wider than a 1280 px page, even opened."""
    _require_chromium()
    from playwright.sync_api import sync_playwright
    from report_bench import UNPARSABLE, make_bench

    out, replay = make_bench(tmp_path_factory.mktemp("two"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto((out / "report.html").as_uri())
            page.wait_for_load_state("load")
            heads = page.evaluate(
                "[...document.querySelector('table.cmp tr').querySelectorAll('th')]"
                ".map(th => th.innerText)"
            )
            errors = page.evaluate(
                "[...document.querySelector('table.errors').querySelectorAll('tr')]"
                ".slice(1).map(tr => [...tr.children].map(c => c.innerText))"
            )
            hidden = page.locator(f"text={UNPARSABLE}").first.is_visible()
            run = page.locator("details.run", has_text=f"weather · {replay}")
            run.locator("summary").first.click()
            sample = run.locator("details.sample", has_text="non-executable: unparsed")
            sample.locator("summary").click()
            shown = sample.inner_text()
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            width = page.evaluate(
                "Math.max(document.documentElement.scrollWidth, "
                "...[...document.querySelectorAll('table, pre, .chart')]"
                ".map(e => e.getBoundingClientRect().right))"
            )
        finally:
            browser.close()
    assert heads == ["environment", "oracle", replay, "Δ"]
    assert errors[0][:3] == ["failed samples", "0 of 8", "5 of 8"] and len(errors) == 7
    assert errors[-1][:3] == ["correct", "8 (100.0 %)", "3 (37.5 %)"], errors[-1]
    assert not hidden  # the drill-down is folded until opened
    assert UNPARSABLE in shown and "raw output" in shown and "why it failed" in shown
    assert width <= 1280, width
