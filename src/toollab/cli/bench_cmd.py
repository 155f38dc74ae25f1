"""``toollab bench``: the executable-environment suite on a model (the bundled one by default)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich import box
from rich.console import Console
from rich.progress import Progress as RichProgress
from rich.progress import TaskID
from rich.table import Table

from toollab.cli.common import JsonOpt, console, emit_json, handle_errors, progress
from toollab.schema.record import Prediction


def register(app: typer.Typer) -> None:
    app.command("bench")(bench_cmd)


class _Sink:
    """The runner's progress sink for one environment: a task on a shared bar."""

    def __init__(self, bar: RichProgress, task: TaskID) -> None:
        self.bar, self.task = bar, task

    def start(self, total: int, completed: int) -> None:
        self.bar.update(self.task, total=total, completed=completed)

    def advance(self, pred: Prediction) -> None:
        self.bar.advance(self.task)


class _Bars:
    def __init__(self, quiet: bool) -> None:
        self.bar: RichProgress | None = None if quiet else progress()
        if self.bar is not None:
            self.bar.start()

    def env_started(self, env: str, total: int) -> Any:
        if self.bar is None:
            return None
        return _Sink(self.bar, self.bar.add_task(env, total=total))

    def env_finished(self, summary: Any) -> None:
        return None

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _fmt(v: float | None, pct: bool = True) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.1f}" if pct else f"{v:.1f}"


def columns() -> list[tuple[str, str]]:
    """(header, meaning) of every column: the figures under their one label and definition."""
    from toollab.eval.bench import FIGURES

    figs = [(f.label, f"(%) {f.definition}") for f in FIGURES if f.name != "lcs"]
    return [
        ("env", "environment"),
        ("n", "test instances"),
        *figs,
        ("cx", "API complexity of the test split"),
    ]


FIGURE_ORDER = ("success", "crash_rate", "dict_f1", "tool_f1", "param_f1", "decision_acc")


def print_table(result: Any, out: Console | None = None) -> None:
    """The per-environment table (readable at 80 columns), a legend and the plan LCS."""
    from toollab.eval.bench import FIGURES

    out = out or console
    cols = columns()
    table = Table(
        title=f"toollab bench: {result.model} ({'constrained' if result.constrained else 'free'} "
        f"decoding, {result.limit} test instances per environment, {result.wall_s:.0f} s)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
    )
    for head, _meaning in cols:
        table.add_column(head, justify="left" if head == "env" else "right", no_wrap=True)
    for e in result.envs:
        table.add_row(
            e.env,
            str(e.n),
            *[_fmt(getattr(e, k)) for k in FIGURE_ORDER],
            _fmt(e.api_complexity, False),
        )
    o = result.overall()
    table.add_section()
    table.add_row("mean", "", *[_fmt(o[k]) for k in FIGURE_ORDER], "")
    out.print(table)
    for head, meaning in cols[2:]:
        out.print(f"{head}: {meaning}", soft_wrap=False, highlight=False)
    lcs = next(f for f in FIGURES if f.name == "lcs")
    for e in result.envs:
        if e.lcs is not None:
            out.print(f"{e.env}: {lcs.label} {_fmt(e.lcs)} % ({lcs.definition})", highlight=False)
    if result.report:
        out.print(f"report: {result.report}")


@handle_errors
def bench_cmd(
    model: str = typer.Option(
        "bundled:smollm2-135m",
        "--model",
        "-m",
        help="Model string (bundled:..., llamacpp:..., openai:...@URL, hf:..., oracle).",
    ),
    agent: str = typer.Option(None, "--agent", "-a", help="Agent (default: single)."),
    template: str = typer.Option(None, "--template", "-t", help="Prompt template (default: json)."),
    envs: list[str] = typer.Option(
        [],
        "--envs",
        "-e",
        help="Environments to run (repeatable or comma-separated; default: all).",
    ),
    limit: int = typer.Option(
        None, "--limit", "-n", min=1, help="Test instances per environment (default: 6)."
    ),
    out: Path = typer.Option(
        Path("runs/bench"), "--out", "-o", help="Output directory (runs, data, report)."
    ),
    seed: int = typer.Option(0, "--seed", help="Data and decoding seed."),
    constrained: bool = typer.Option(
        True,
        "--constrained/--no-constrained",
        help="Constrain decoding to valid calls where the backend can.",
    ),
    max_tokens: int = typer.Option(
        None,
        "--max-tokens",
        min=1,
        help="Generation budget (default: 96, more for long-program environments).",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Run the executable-environment suite: generate each environment's test split, let the
    model act, execute its calls, and report success, crash rate, dict-F1, Tool/Param F1 and
    decision accuracy per environment, plus an HTML report in OUT/report.html."""
    from toollab.cli.generate_cmd import resolve_envs
    from toollab.eval.bench import DEFAULT_LIMIT, run_bench
    from toollab.report import write_bench_report

    names = resolve_envs(envs)
    bars = _Bars(quiet=as_json)
    try:
        result = run_bench(
            model=model,
            agent=agent,
            template=template,
            envs=names,
            limit=limit or DEFAULT_LIMIT,
            out=out,
            seed=seed,
            constrained=constrained,
            max_tokens=max_tokens,
            progress=bars,
            reporter=write_bench_report,
        )
    finally:
        bars.close()
    if as_json:
        emit_json(result.as_dict())
    else:
        print_table(result)
