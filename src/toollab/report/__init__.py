"""Reports over run directories: a self-contained HTML page and a markdown summary.

``write_report(["runs/a", "runs/b"], "report.html")`` writes ``report.html`` and ``report.md``
beside it: the models side by side (environments or categories as rows, models as columns, the
difference), the per-sample error classes, and every failed sample opened in place.
``export_inspect(runs, DIR)`` writes the runs as inspect_ai logs (the ``[inspect]`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from toollab.data.atomic import check_replaceable, check_target, write_text_atomic
from toollab.report.html import render_html
from toollab.report.inspect_log import export_inspect
from toollab.report.logs import read_instances, read_task_log
from toollab.report.markdown import render_markdown
from toollab.report.runs import RunView, fmt_figure, fmt_value, load_run, load_runs


def write_report(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    title: str = "toollab evaluation report",
    *,
    force: bool = False,
) -> tuple[Path, Path, list[RunView]]:
    """Write the HTML page to ``out`` and the markdown summary beside it (``.md``).  A ``.md``
    file there that toollab did not write is kept (an :class:`InputError`, before any work)
    unless ``force``."""
    html_path = Path(out)
    md_path = html_path.with_suffix(".md")
    check_target(html_path)
    check_replaceable(md_path, force=force)
    runs = load_runs(run_dirs)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(html_path, _encodable(render_html(runs, title)))
    write_text_atomic(md_path, _encodable(render_markdown(runs, title)), keep_foreign=not force)
    return html_path, md_path, runs


def _encodable(text: str) -> str:
    """The page as UTF-8 can hold it: model output is data, and a lone surrogate in it is shown
    as its escape (``\\ud83d``) rather than failing the write."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


__all__ = [
    "RunView",
    "export_inspect",
    "fmt_figure",
    "fmt_value",
    "load_run",
    "load_runs",
    "read_instances",
    "read_task_log",
    "render_html",
    "render_markdown",
    "write_bench_report",
    "write_report",
]


def write_bench_report(run_dirs: Sequence[Path], out: Path, *, force: bool = False) -> str | None:
    """The environment suite's report (``OUT/report.html``); its path, or None without runs.
    A ``report.md`` there that toollab did not write is kept unless ``force``."""
    if not run_dirs:
        return None
    html, _md, _runs = write_report(
        list(run_dirs),
        out / "report.html",
        title="toollab bench: executable environments",
        force=force,
    )
    return str(html)
