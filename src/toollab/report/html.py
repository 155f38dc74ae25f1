"""The HTML report: one self-contained page (inline CSS and SVG charts, no external assets).

Sections: the runs compared (configuration), the summary table (every scorer's figures, runs side
by side, the best per row in bold), counts and timing, per-category breakdowns (bars + table) and
the error-type breakdown (bars + table).
"""

from __future__ import annotations

import datetime as _dt
import html
from typing import Any

from toollab.report import charts
from toollab.report.runs import (
    COUNT_FIELDS,
    RUN_FIELDS,
    RunView,
    breakdown_table,
    error_table,
    figure_definition,
    figure_label,
    fmt_seconds,
    fmt_value,
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
"""


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
        definition = figure_definition(r.results, scorer, name).get("definition")
        if definition:
            return f"<span title='{_e(definition)}'>{_e(label)}</span>"
    return _e(label)


def _legend(runs: list[RunView], scorer: str) -> str:
    defs: dict[str, Any] = {}
    for r in runs:
        defs.update((r.results.get("definitions") or {}).get(scorer) or {})
    items = "".join(
        f"<li><b>{_e(d.get('label', name))}</b>: {_e(d.get('definition', ''))}</li>"
        for name, d in defs.items()
        if isinstance(d, dict)
    )
    return f"<ul class='note'>{items}</ul>" if items else ""


def _summary(runs: list[RunView]) -> str:
    parts = []
    for scorer, names in scorer_metrics(runs):
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
            xlabel=name,
            salt=f"cat{i}",
        )
        table = _grid(
            "category",
            [_e(g) for g in groups],
            scored,
            values,
            [[fmt_value(v) for v in row] for row in values],
        )
        parts.append(f"<h3>{_e(scorer)} — {_e(name)} by category</h3>{_chart(svg)}{table}")
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


def _notes(runs: list[RunView]) -> str:
    items = []
    for r in runs:
        for warning in r.results.get("warnings") or []:
            items.append(f"<li><b>{_e(r.label)}</b> · warning: {_e(warning)}</li>")
        for scorer, notes in (r.results.get("notes") or {}).items():
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
    pills = "".join(f"<span class='pill'>{_e(r.label)}</span>" for r in runs)
    return f"""<!DOCTYPE html>
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
<p class="sub">{len(runs)} run{"s" if len(runs) != 1 else ""}: {pills} · generated {now}</p>
<nav><a href="#summary">Summary</a><a href="#runs">Runs</a><a href="#counts">Counts</a>
<a href="#categories">Categories</a><a href="#errors">Errors</a></nav>
{chart_note}
<h2 id="summary">Summary</h2>
{_summary(runs)}
<h2 id="runs">Runs</h2>
{_overview(runs)}
<h2 id="counts">Counts and timing</h2>
{_counts(runs)}
<h2 id="categories">Per category</h2>
{_categories(runs)}
<h2 id="errors">Error types</h2>
<p class="note">How many predictions each scorer put in each error class (fewer is better).</p>
{_errors(runs)}
{_notes(runs)}
<footer>toollab report · figures are fractions in [0, 1] unless counted</footer>
</main>
</body>
</html>
"""
