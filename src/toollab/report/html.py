"""The HTML report: one self-contained page (inline CSS and SVG charts, no external assets).

Sections: the models compared (environments or categories as rows, models as columns, the
difference, a chart) or, for one model, the summary table; the error table (per-sample error
classes by model and by run); the failed samples, each one opened in place (its query, the raw
output, the calls executed and their observations, why it failed); the runs' configuration,
counts and timing, per-category breakdowns and the scorers' own error types.  Every fraction is
a percentage with one decimal, as the terminal prints it.
"""

from __future__ import annotations

import datetime as _dt
import html
from typing import Any

from toollab.data.atomic import MARK_COMMENT
from toollab.report import charts, drilldown
from toollab.report.compare import MEAN_NOTE, Comparison, Table, comparisons
from toollab.report.failures import (
    ErrorRow,
    RunFailures,
    by_model,
    correct_counts,
    count_share,
    crash_rows,
    definition_rows,
    error_rows,
    run_failures,
    summary_counts,
)
from toollab.report.runs import (
    COUNT_FIELDS,
    RUN_FIELDS,
    RunView,
    breakdown_table,
    error_table,
    figure_label,
    fmt_figure,
    fmt_seconds,
    fmt_value,
    headline,
    models_of,
    runs_with,
    scorer_metrics,
)

CSS = """
:root { --fg:#1d2330; --muted:#5b6577; --line:#e3e7ee; --head:#f5f7fa; --accent:#0072B2; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color:var(--fg); background:#fbfcfd; }
main { max-width:1240px; margin:0 auto; padding:28px 32px 64px; }
h1 { font-size:24px; margin:0 0 4px; }
h2 { font-size:18px; margin:36px 0 10px; padding-bottom:6px; border-bottom:2px solid var(--line); }
h3 { font-size:15px; margin:22px 0 8px; color:var(--fg); }
p.sub { color:var(--muted); margin:0 0 18px; }
table { border-collapse:collapse; margin:6px 0 14px; background:#fff; font-variant-numeric:tabular-nums;
        box-shadow:0 1px 2px rgba(0,0,0,.04); }
th, td { border:1px solid var(--line); padding:4px 8px; text-align:left; vertical-align:top; }
th { background:var(--head); font-weight:600; }
td.num { text-align:right; white-space:nowrap; font-family:ui-monospace, SFMono-Regular, Menlo, monospace; font-size:13px; }
td.best { font-weight:700; color:var(--accent); }
td.scorer { font-weight:600; background:#fafbfc; }
.chart { background:#fff; border:1px solid var(--line); padding:8px; margin:8px 0 4px; max-width:760px; }
.chart svg { width:100%; height:auto; display:block; }
.note { color:var(--muted); font-size:13px; }
.pill { display:inline-block; padding:1px 8px; border-radius:10px; background:#eef3f8; margin-right:4px; font-size:12px; }
nav a { margin-right:14px; color:var(--accent); text-decoration:none; }
footer { margin-top:40px; color:var(--muted); font-size:12px; }
tr.mean th, tr.mean td { border-top:2px solid #b9c2cf; font-style:italic; }
td.delta { color:var(--muted); }
td.example { font-size:12.5px; color:var(--muted); max-width:520px; overflow-wrap:anywhere; }
th.model { white-space:nowrap; }
"""

CSS += drilldown.CSS


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _best(values: list[Any], higher_is_better: bool) -> Any:
    nums = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(nums) < 2 or len(set(nums)) < 2:
        return None
    return max(nums) if higher_is_better else min(nums)


def _grid(
    corner: str,
    items: list[str],
    runs: list[RunView],
    values: list[list[Any]],
    texts: list[list[str]],
    *,
    numeric: bool = True,
    higher_is_better: bool = True,
    highlight: bool = True,
) -> str:
    """A table of ``values[item][run]``: the runs as rows when there are more runs than items
    (so that a many-run report, e.g. a 13-environment bench, stays as wide as its figures),
    else the items as rows; the best run of each item in bold."""
    best = [_best(row, higher_is_better) if numeric and highlight else None for row in values]
    cls = "num" if numeric else ""

    def cell(i: int, j: int) -> str:
        v = values[i][j]
        mark = " best" if best[i] is not None and v == best[i] else ""
        return f'<td class="{cls}{mark}">{_e(texts[i][j])}</td>'

    if len(runs) > len(items):
        head = "".join(f"<th>{item}</th>" for item in items)
        rows = "".join(
            f"<tr><th>{_e(r.label)}</th>" + "".join(cell(i, j) for i in range(len(items))) + "</tr>"
            for j, r in enumerate(runs)
        )
        return f"<table><tr><th>run</th>{head}</tr>{rows}</table>"
    rows = "".join(
        f"<tr><th>{item}</th>" + "".join(cell(i, j) for j in range(len(runs))) + "</tr>"
        for i, item in enumerate(items)
    )
    return f"<table><tr><th>{_e(corner)}</th>{_run_header(runs)}</tr>{rows}</table>"


def _run_header(runs: list[RunView]) -> str:
    return "".join(f"<th>{_e(r.label)}</th>" for r in runs)


def _overview(runs: list[RunView]) -> str:
    items = [_e(label) for _key, label in RUN_FIELDS]
    values = [[r.config.get(key) for r in runs] for key, _label in RUN_FIELDS]
    texts = [[fmt_value(v) for v in row] for row in values]
    dirs = "".join(f"<li><b>{_e(r.label)}</b>: {_e(r.path)}</li>" for r in runs)
    return _grid("", items, runs, values, texts, numeric=False) + f"<ul class='note'>{dirs}</ul>"


def _figure_head(runs: list[RunView], scorer: str, name: str) -> str:
    """A figure's header: the label every view uses, its definition as a tooltip."""
    label = figure_label(runs, scorer, name)
    for r in runs:
        definition = r.definition(scorer, name).get("definition")
        if definition:
            return f"<span title='{_e(definition)}'>{_e(label)}</span>"
    return _e(label)


def _legend(runs: list[RunView], scorer: str) -> str:
    defs: dict[str, Any] = {}
    for r in runs:
        defs.update(r.log.definitions.get(scorer) or {})
    items = "".join(
        f"<li><b>{_e(d.get('label', name))}</b>: {_e(d.get('definition', ''))}</li>"
        for name, d in defs.items()
        if isinstance(d, dict)
    )
    return f"<ul class='note'>{items}</ul>" if items else ""


def _summary(runs: list[RunView], skip: set[str] | frozenset[str] = frozenset()) -> str:
    """Every scorer's figures, runs side by side (but the scorers in ``skip``)."""
    parts = []
    for scorer, names in scorer_metrics(runs):
        if scorer in skip:
            continue
        scored = runs_with(runs, scorer)
        values = [[r.metrics.get(scorer, {}).get(n) for r in scored] for n in names]
        texts = [[r.metric(scorer, n) for r in scored] for n in names]
        heads = [_figure_head(scored, scorer, n) for n in names]
        parts.append(
            f"<h3>{_e(scorer)}</h3>"
            + _grid("figure", heads, scored, values, texts)
            + _legend(scored, scorer)
        )
    if not parts:
        return "<p class='note'>No scorer applied to these runs.</p>"
    ci = any(r.ci95 for r in runs)
    note = (
        "<p class='note'>Figures are means over repeats ± the half-width of the 95 % confidence "
        "interval (Student's t).</p>"
        if ci
        else ""
    )
    return "".join(parts) + note


def _counts(runs: list[RunView]) -> str:
    items: list[str] = []
    values: list[list[Any]] = []
    texts: list[list[str]] = []
    for key, label in COUNT_FIELDS:
        items.append(_e(label))
        row = [r.counts.get(key) for r in runs]
        values.append(row)
        texts.append([fmt_value(v) for v in row])
    for key, label in (
        ("instance_s_mean", "time per instance (mean)"),
        ("instance_s_p95", "time per instance (p95)"),
    ):
        items.append(_e(label))
        row = [r.timing.get(key) for r in runs]
        values.append(row)
        texts.append([fmt_seconds(v) for v in row])
    for key, label in (
        ("prompt_tokens", "prompt tokens"),
        ("completion_tokens", "completion tokens"),
    ):
        items.append(_e(label))
        row = [r.timing.get(key) for r in runs]
        values.append(row)
        texts.append([fmt_value(v) for v in row])
    return _grid("", items, runs, values, texts, highlight=False)


def _chart(svg: str | None) -> str:
    return f'<div class="chart">{svg}</div>' if svg else ""


def _categories(runs: list[RunView]) -> str:
    parts = []
    for i, (scorer, _names) in enumerate(scorer_metrics(runs)):
        scored = runs_with(runs, scorer)
        name, groups, values = breakdown_table(scored, scorer)
        if name is None or not groups:
            continue
        svg = charts.grouped_bars(
            groups,
            [(r.label, [row[j] for row in values]) for j, r in enumerate(scored)],
            xlabel=f"{figure_label(scored, scorer, name)} (%)",
            salt=f"cat{i}",
        )
        pct = next(
            (r.percent(scorer, name) for r in scored if r.percent(scorer, name) is not None), None
        )
        table = _grid(
            "category",
            [_e(g) for g in groups],
            scored,
            values,
            [[fmt_figure(v, None, pct) for v in row] for row in values],
        )
        label = figure_label(scored, scorer, name)
        parts.append(f"<h3>{_e(scorer)} — {_e(label)} by category</h3>{_chart(svg)}{table}")
    return "".join(parts) or "<p class='note'>No per-category figures in these runs.</p>"


def _errors(runs: list[RunView]) -> str:
    parts = []
    for i, (scorer, _names) in enumerate(scorer_metrics(runs)):
        scored = runs_with(runs, scorer)
        kinds, counts = error_table(scored, scorer)
        if not kinds:
            continue
        svg = charts.grouped_bars(
            kinds,
            [(r.label, [row[j] for row in counts]) for j, r in enumerate(scored)],
            xlabel="instances",
            salt=f"err{i}",
            fraction=False,
        )
        table = _grid(
            "error type",
            [_e(k) for k in kinds],
            scored,
            [list(row) for row in counts],
            [[str(c) for c in row] for row in counts],
            higher_is_better=False,
        )
        parts.append(f"<h3>{_e(scorer)}</h3>{_chart(svg)}{table}")
    return "".join(parts) or "<p class='note'>No errors recorded.</p>"


def _cmp_table(t: Table) -> str:
    """A comparison table: rows, one column per model (named by its model string), then the
    differences to the first model."""
    deltas = t.models[1:]
    dhead = "".join(
        f"<th class='model' title='{_e(m)} minus {_e(t.models[0])}, percentage points'>"
        f"{'Δ' if len(deltas) == 1 else 'Δ ' + _e(m)}</th>"
        for m in deltas
    )
    head = f"<tr><th>{_e(t.corner)}</th>{''.join(f'<th class=model>{_e(m)}</th>' for m in t.models)}{dhead}</tr>"
    rows = []
    for i, row in enumerate(t.rows):
        cls = " class='mean'" if i == t.mean_row else ""
        cells = "".join(f"<td class='num'>{_e(t.text(i, j))}</td>" for j in range(len(t.models)))
        dcells = "".join(
            f"<td class='num delta'>{_e(t.delta(i, j))}</td>" for j in range(1, len(t.models))
        )
        rows.append(f"<tr{cls}><th>{_e(row)}</th>{cells}{dcells}</tr>")
    what = f"<p class='note'>{_e(t.definition)}.</p>" if t.definition else ""
    if t.mean_row is not None:
        what += f"<p class='note'>{_e(MEAN_NOTE)}.</p>"
    delta_note = (
        f"<p class='note'>Δ: {_e(deltas[0])} minus {_e(t.models[0])}, in percentage points.</p>"
        if len(deltas) == 1
        else f"<p class='note'>Δ: each model minus {_e(t.models[0])}, in percentage points.</p>"
    )
    return (
        f"<h4>{_e(t.title)}</h4>{what}<table class='cmp'>{head}{''.join(rows)}</table>{delta_note}"
    )


def _comparison(c: Comparison, i: int) -> str:
    first, rest = c.tables[0], c.tables[1:]
    svg = charts.grouped_bars(
        first.chart_rows(),
        first.series(),
        xlabel=first.title,
        salt=f"cmp{i}",
        fraction=first.percent[0] is not False,
    )
    shown, folded = rest[:1], rest[1:]
    more = (
        f"<details><summary>every other figure by {_e(c.rows_are)} "
        f"({len(folded)} table{'s' if len(folded) != 1 else ''})</summary>"
        + "".join(_cmp_table(t) for t in folded)
        + "</details>"
        if folded
        else ""
    )
    charted = "".join(
        _cmp_table(t)
        + _chart(
            charts.grouped_bars(
                t.chart_rows(),
                t.series(),
                xlabel=t.title,
                salt=f"cmp{i}-{k}",
                fraction=all(p is not False for p in t.percent),
            )
        )
        for k, t in enumerate(shown)
    )
    return f"<h3>{_e(c.scorer)} scorer</h3>{_cmp_table(first)}{_chart(svg)}{charted}{more}"


def _single_model_chart(runs: list[RunView], skip: set[str]) -> str:
    """The headline figure of each scorer (but those in ``skip``) by run."""
    parts = []
    for i, (scorer, _names) in enumerate(scorer_metrics(runs)):
        scored = runs_with(runs, scorer)
        if len(scored) < 2 or scorer in skip:
            continue
        figures: dict[str, Any] = {}
        for r in scored:
            figures.update(r.metrics.get(scorer, {}))
        name = headline(figures)
        if name is None:
            continue
        label = figure_label(scored, scorer, name)
        svg = charts.grouped_bars(
            [r.label for r in scored],
            [(", ".join(models_of(scored)), [r.metrics.get(scorer, {}).get(name) for r in scored])],
            xlabel=f"{label} (%)",
            salt=f"one{i}",
        )
        if svg:
            parts.append(f"<h4>{_e(scorer)} — {_e(label)} by run</h4>{_chart(svg)}")
    return "".join(parts)


def _compared(cmps: list[Comparison]) -> str:
    if not cmps:
        return ""
    return f"<h2 id='models'>Models compared</h2>{''.join(_comparison(c, i) for i, c in enumerate(cmps))}"


def _error_classes(items: list[RunFailures]) -> str:
    """The per-sample error classes: by model, then by run."""
    models, cols = by_model(items)
    rows = error_rows(cols)
    totals = [summary_counts(col) for col in cols]
    problems = "".join(
        f"<li><b>{_e(rf.run.label)}</b>: {_e(rf.problem)}</li>" for rf in items if rf.problem
    )
    problems = f"<ul class='note'>{problems}</ul>" if problems else ""
    crashes = crash_rows(cols)
    crash_table = (
        "<h3>Crashed programs by reason</h3><p class='note'>Every sample whose program the "
        "environment refused, by the environment's reason code, whatever its class above (a "
        "wrong argument is often what makes a program crash).</p>"
        + _rows_table("reason", models, crashes)
        if crashes
        else ""
    )
    if not any(t[1] for t in totals):
        return "<p class='note'>No sample could be classified.</p>" + problems + crash_table
    head = "".join(f"<th class='model'>{_e(m)}</th>" for m in models)
    body = [
        "<tr><th>failed samples</th>"
        + "".join(f"<td class='num'>{f} of {n}</td>" for f, n in totals)
        + "<td class='example'></td></tr>"
    ]
    ns = [n for _f, n in totals]
    for row in rows:
        body.append(
            f"<tr><th>{_e(row.label)}</th>"
            + "".join(
                f"<td class='num'>{count_share(c, n)}</td>"
                for c, n in zip(row.counts, ns, strict=True)
            )
            + f"<td class='example'>{_e(row.example)}</td></tr>"
        )
    if not rows:
        body.append(f"<tr><td colspan='{len(models) + 2}'>No sample failed.</td></tr>")
    body.append(
        "<tr><th>correct</th>"
        + "".join(
            f"<td class='num'>{count_share(c, n)}</td>"
            for c, n in zip(correct_counts(cols), ns, strict=True)
        )
        + "<td class='example'></td></tr>"
    )
    table = (
        f"<table class='errors'><tr><th>error class</th>{head}<th>example</th></tr>"
        f"{''.join(body)}</table>"
    )
    svg = (
        charts.grouped_bars(
            [r.label for r in rows],
            [(m, [r.counts[j] for r in rows]) for j, m in enumerate(models)],
            xlabel="failed samples",
            salt="errcls",
            fraction=False,
        )
        if rows
        else None
    )
    per_run = "".join(
        f"<tr><th>{_e(rf.run.label)}</th><td class='num'>{len(rf.failures)} of {rf.classified}</td>"
        f"<td>{_e(_classes_text(rf))}</td></tr>"
        for rf in items
    )
    return (
        table
        + _chart(svg)
        + _definitions()
        + crash_table
        + "<h3>By run</h3><table class='errors'><tr><th>run</th><th>failed</th>"
        + f"<th>error classes</th></tr>{per_run}</table>"
        + problems
    )


def _definitions() -> str:
    """The taxonomy's classes with their definitions (folded), in precedence order."""
    body = "".join(
        f"<tr><th>{_e(label)}</th><td>{_e(stage)}</td><td>{_e(text)}</td></tr>"
        for label, stage, text in definition_rows()
    )
    return (
        "<details><summary>The error classes: precedence and definitions</summary>"
        "<table class='errors'><tr><th>class</th><th>stage</th><th>definition</th></tr>"
        f"{body}</table></details>"
    )


def _rows_table(corner: str, models: list[str], rows: list[ErrorRow]) -> str:
    head = "".join(f"<th class='model'>{_e(m)}</th>" for m in models)
    body = "".join(
        f"<tr><th>{_e(r.label)}</th>"
        + "".join(f"<td class='num'>{c}</td>" for c in r.counts)
        + f"<td class='example'>{_e(r.example)}</td></tr>"
        for r in rows
    )
    return (
        f"<table class='errors'><tr><th>{_e(corner)}</th>{head}<th>example</th></tr>{body}</table>"
    )


def _classes_text(rf: RunFailures) -> str:
    rows = error_rows([[rf]])
    return ", ".join(f"{r.label} {r.counts[0]}" for r in rows) or "—"


def _notes(runs: list[RunView]) -> str:
    items = []
    for r in runs:
        for warning in r.warnings:
            items.append(f"<li><b>{_e(r.label)}</b> · warning: {_e(warning)}</li>")
        for scorer, notes in r.notes.items():
            for note in notes:
                items.append(f"<li><b>{_e(r.label)}</b> · {_e(scorer)}: {_e(note)}</li>")
    return f"<h2 id='notes'>Notes</h2><ul>{''.join(items)}</ul>" if items else ""


def render_html(runs: list[RunView], title: str = "toollab evaluation report") -> str:
    """The whole page as one string."""
    now = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    chart_note = (
        ""
        if charts.available()
        else "<p class='note'>Charts need matplotlib (pip install 'toollab[eval]'); tables only.</p>"
    )
    models = models_of(runs)
    pills = "".join(f"<span class='pill'>{_e(m)}</span>" for m in models)
    failures = [run_failures(r) for r in runs]
    cmps = comparisons(runs)
    compared = _compared(cmps)
    done = {c.scorer for c in cmps}
    rest = [r for r in runs if set(r.metrics) - done]
    summary = (
        f"<h2 id='summary'>Summary</h2>{_summary(rest, done)}{_single_model_chart(rest, done)}"
        if rest or not runs
        else ""
    )
    first = ("<a href='#models'>Models compared</a>" if compared else "") + (
        "<a href='#summary'>Summary</a>" if summary else ""
    )
    return f"""<!DOCTYPE html>
{MARK_COMMENT}
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{CSS}</style>
</head>
<body>
<main>
<h1>{_e(title)}</h1>
<p class="sub">{len(models)} model{"s" if len(models) != 1 else ""}: {pills} · {len(runs)} run{"s" if len(runs) != 1 else ""} · generated {now}</p>
<nav>{first}<a href="#errors">Errors</a><a href="#failures">Failed samples</a>
<a href="#runs">Runs</a><a href="#counts">Counts</a><a href="#categories">Categories</a></nav>
{chart_note}
{compared}{summary}
<h2 id="errors">Errors</h2>
<p class="note">The error taxonomy: each sample is in exactly one class, the first check that
fails in pipeline order (retrieval, output format, call or no call, tool choice, call count,
arguments, execution), else correct; a crash is split by the environment's reason code.  Count
and share of the classified samples per model over its runs; each run below.</p>
{_error_classes(failures)}
<h2 id="failures">Failed samples</h2>
<p class="note">Open a run, then a sample: what the model saw, what it wrote, the calls executed
and their observations, what was expected and why it failed (the first
{drilldown.MAX_SHOWN} failed samples of each run).</p>
{drilldown.drilldown_html(failures, [r.label for r in runs])}
<h2 id="runs">Runs</h2>
{_overview(runs)}
<h2 id="counts">Counts and timing</h2>
{_counts(runs)}
<h2 id="categories">Per category</h2>
{_categories(runs)}
<h2 id="scorer-errors">Error types reported by the scorers</h2>
<p class="note">How many predictions each scorer put in each of its own error classes (fewer is better).</p>
{_errors(runs)}
{_notes(runs)}
<footer>toollab report · fractions are percentages with one decimal, as the terminal prints them;
counts are counts</footer>
</main>
</body>
</html>
"""
