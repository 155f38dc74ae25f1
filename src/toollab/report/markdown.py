"""The markdown summary written beside the HTML report (``report.md``)."""

from __future__ import annotations

from toollab.data.atomic import MARK_COMMENT
from toollab.report.compare import Table, comparisons
from toollab.report.failures import (
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
    runs_with,
    scorer_metrics,
)

#: at most this many error types per scorer in the markdown summary
MAX_ERROR_ROWS = 12


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(_cell(h) for h in header) + " |"]
    out.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
    out.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)
    return out


def _cmp_lines(t: Table) -> list[str]:
    deltas = [f"Δ {m}" for m in t.models[1:]]
    rows = [
        [
            row,
            *(t.text(i, j) for j in range(len(t.models))),
            *(t.delta(i, j) for j in range(1, len(t.models))),
        ]
        for i, row in enumerate(t.rows)
    ]
    return ["", f"### {t.title}", "", *_table([t.corner, *t.models, *deltas], rows)]


def _errors_lines(runs: list[RunView]) -> list[str]:
    models, cols = by_model([run_failures(r) for r in runs])
    totals = [summary_counts(col) for col in cols]
    out: list[str] = []
    if any(n for _f, n in totals):
        ns = [n for _f, n in totals]
        rows = [["failed samples", *(f"{f} of {n}" for f, n in totals), ""]]
        rows += [
            [r.label, *(count_share(c, n) for c, n in zip(r.counts, ns, strict=True)), r.example]
            for r in error_rows(cols)
        ]
        rows.append(
            [
                "correct",
                *(count_share(c, n) for c, n in zip(correct_counts(cols), ns, strict=True)),
                "",
            ]
        )
        out += ["", "## Errors (per-sample classes)", ""]
        out += _table(["error class", *models, "example"], rows)
        out += [
            "",
            "Each sample is in exactly one class: the first check that fails, in pipeline order "
            "(count, and share of the classified samples).",
            "",
        ]
        out += _table(["class", "stage", "definition"], [list(d) for d in definition_rows()])
    crashes = [[r.label, *map(str, r.counts), r.example] for r in crash_rows(cols)]
    if crashes:
        out += ["", "### Crashed programs by reason", ""]
        out += _table(["reason", *models, "example"], crashes)
    return out


def render_markdown(runs: list[RunView], title: str = "toollab evaluation report") -> str:
    labels = [r.label for r in runs]
    lines = [MARK_COMMENT, f"# {title}", ""]
    cmps = comparisons(runs)
    for c in cmps:
        lines += ["", f"## Models compared: {c.scorer}"]
        for t in c.tables:
            lines += _cmp_lines(t)
    if cmps:
        lines += ["", "Δ: each model minus the first, in percentage points.", ""]
    done = {c.scorer for c in cmps}

    lines += ["## Summary", ""]
    rows = []
    for scorer, names in scorer_metrics(runs):
        if scorer in done:
            continue
        for name in names:
            label = figure_label(runs, scorer, name)
            rows.append([f"{scorer} · {label}", *(r.metric(scorer, name) for r in runs)])
    lines += (
        _table(["figure", *labels], rows)
        if rows
        else ["Every scorer's figures are compared above."]
    )
    if any(r.ci95 for r in runs):
        lines += [
            "",
            "Means over repeats ± half-width of the 95 % confidence interval (Student's t).",
        ]
    lines += _errors_lines(runs)

    lines += ["", "## Runs", ""]
    rows = [[label, *(fmt_value(r.config.get(key)) for r in runs)] for key, label in RUN_FIELDS]
    lines += _table(["", *labels], rows)

    lines += ["", "## Counts and timing", ""]
    rows = [[label, *(fmt_value(r.counts.get(key)) for r in runs)] for key, label in COUNT_FIELDS]
    rows.append(
        ["time per instance (mean)", *(fmt_seconds(r.timing.get("instance_s_mean")) for r in runs)]
    )
    lines += _table(["", *labels], rows)

    for scorer, _names in scorer_metrics(runs):
        scored = runs_with(runs, scorer)
        scored_labels = [r.label for r in scored]
        figure, groups, values = breakdown_table(scored, scorer)
        if figure is not None and groups:
            lines += ["", f"## {scorer}: {figure} by category", ""]
            lines += _table(
                ["category", *scored_labels],
                [
                    [g, *(fmt_figure(v, None, scored[0].percent(scorer, figure)) for v in vals)]
                    for g, vals in zip(groups, values, strict=True)
                ],
            )
        kinds, counts = error_table(scored, scorer)
        if kinds:
            lines += ["", f"## {scorer}: error types", ""]
            shown = list(zip(kinds, counts, strict=True))[:MAX_ERROR_ROWS]
            lines += _table(
                ["error type", *scored_labels], [[k, *map(str, row)] for k, row in shown]
            )
            if len(kinds) > MAX_ERROR_ROWS:
                lines += [
                    "",
                    f"({len(kinds) - MAX_ERROR_ROWS} more error types in the HTML report)",
                ]
    notes = [f"- {r.label} · warning: {w}" for r in runs for w in r.warnings] + [
        f"- {r.label} · {scorer}: {note}"
        for r in runs
        for scorer, items in r.notes.items()
        for note in items
    ]
    if notes:
        lines += ["", "## Notes", "", *notes]
    return "\n".join(lines) + "\n"
