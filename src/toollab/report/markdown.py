"""The markdown summary written beside the HTML report (``report.md``)."""

from __future__ import annotations

from toollab.report.runs import (
    COUNT_FIELDS,
    RUN_FIELDS,
    RunView,
    breakdown_table,
    error_table,
    figure_label,
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


def render_markdown(runs: list[RunView], title: str = "toollab evaluation report") -> str:
    labels = [r.label for r in runs]
    lines = [f"# {title}", ""]

    lines += ["## Summary", ""]
    rows = []
    for scorer, names in scorer_metrics(runs):
        for name in names:
            label = figure_label(runs, scorer, name)
            rows.append([f"{scorer} · {label}", *(r.metric(scorer, name) for r in runs)])
    lines += _table(["figure", *labels], rows) if rows else ["No scorer applied to these runs."]
    if any(r.ci95 for r in runs):
        lines += [
            "",
            "Means over repeats ± half-width of the 95 % confidence interval (Student's t).",
        ]

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
                    [g, *(fmt_value(v) for v in vals)]
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
    notes = [
        f"- {r.label} · warning: {w}" for r in runs for w in r.results.get("warnings") or []
    ] + [
        f"- {r.label} · {scorer}: {note}"
        for r in runs
        for scorer, items in (r.results.get("notes") or {}).items()
        for note in items
    ]
    if notes:
        lines += ["", "## Notes", "", *notes]
    return "\n".join(lines) + "\n"
