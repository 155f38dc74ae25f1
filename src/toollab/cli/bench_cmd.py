"""``toollab bench``: the executable-environment suite on a model (the bundled one by default)."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import typer
from rich import box
from rich.console import Console
from rich.progress import Progress as RichProgress
from rich.progress import TaskID
from rich.table import Table

from toollab.cli.alpha_umi_cmd import RoleOpt, close_agent, role_agent
from toollab.cli.common import JsonOpt, console, emit_json, handle_errors, progress
from toollab.cli.eval_cmd import print_taxonomy
from toollab.cli.generate_cmd import resolve_envs
from toollab.data.atomic import MARK, write_text_atomic
from toollab.errors import UsageError
from toollab.eval.bench import (
    DEFAULT_BENCH_MODELS,
    DEFAULT_LIMIT,
    FIGURES,
    BenchResult,
    check_bench_out,
    run_bench,
)
from toollab.eval.progress import NoProgress
from toollab.models.registry import check_model_string
from toollab.report import write_bench_report
from toollab.schema.record import Prediction


def register(app: typer.Typer) -> None:
    app.command("bench")(bench_cmd)


class _Bars(NoProgress):
    """The bench's progress: one bar per environment on a shared display."""

    def __init__(self, quiet: bool) -> None:
        self.bar: RichProgress | None = None if quiet else progress()
        self.tasks: dict[str, TaskID] = {}
        if self.bar is not None:
            self.bar.start()

    def task_started(self, name: str, total: int, completed: int) -> None:
        if self.bar is not None:
            self.tasks[name] = self.bar.add_task(name, total=total, completed=completed)

    def sample_done(self, name: str, prediction: Prediction) -> None:
        if self.bar is not None and name in self.tasks:
            self.bar.advance(self.tasks[name])

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _fmt(v: float | None, pct: bool = True) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.1f}" if pct else f"{v:.1f}"


def columns() -> list[tuple[str, str]]:
    """(header, meaning) of every column: the figures under their one label and definition."""

    figs = [(f.label, f"(%) {f.definition}") for f in FIGURES if f.name != "lcs"]
    return [
        ("env", "environment"),
        ("n", "test instances"),
        *figs,
        ("cx", "API complexity of the test split"),
    ]


def _table(title: str) -> Table:
    """A compact table that stays readable at 80 columns."""
    return Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
    )


FIGURE_ORDER = ("success", "crash_rate", "dict_f1", "tool_f1", "param_f1", "decision_acc")


def print_table(result: BenchResult, out: Console | None = None) -> None:
    """The per-environment table (readable at 80 columns), a legend and the plan LCS."""

    out = out or console
    cols = columns()
    table = _table(
        f"toollab bench: {result.model} ({'constrained' if result.constrained else 'free'} "
        f"decoding, {result.limit} test instances per environment, {result.wall_s:.0f} s)"
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
    pooled = result.taxonomy()
    if pooled is not None:
        print_taxonomy(pooled, out, "error taxonomy, every environment")
    if result.report:
        out.print(f"report: {result.report}")


def print_comparison(results: list[BenchResult], out: Console | None = None) -> None:
    """The models side by side: each figure's mean over the environments, and each
    environment's success."""
    out = out or console
    table = _table("toollab bench: models side by side (mean over environments, %)")
    table.add_column("figure", no_wrap=True)
    for r in results:
        name = r.model if len(r.model) <= 28 else "…" + r.model[-27:]
        table.add_column(name, justify="right", no_wrap=True)
    labels = {h: h for h, _ in columns()}
    overall = [r.overall() for r in results]
    for k, (head, _m) in zip(FIGURE_ORDER, columns()[2:], strict=False):
        table.add_row(labels.get(head, k), *[_fmt(o[k]) for o in overall])
    table.add_row("seconds", *[f"{r.wall_s:.0f}" for r in results])
    table.add_section()
    for i, e in enumerate(results[0].envs):
        row = [_fmt(r.envs[i].success) if i < len(r.envs) else "-" for r in results]
        table.add_row(f"{e.env} {labels.get(columns()[2][0], 'success')}", *row)
    out.print(table)


def bench_dirs(models: list[str], out: Path) -> dict[str, Path]:
    """Where each model's runs go: ``out`` itself for one model, ``out/<model>`` for several."""
    if len(models) == 1:
        return {models[0]: out}
    dirs: dict[str, Path] = {}
    for m in models:
        if m in dirs:
            raise UsageError(f"--model {m!r} is given twice")
        slug = re.sub(r"[^A-Za-z0-9._-]+", "-", m).strip("-")[:80] or "model"
        dirs[m] = out / slug
    return dirs


@handle_errors
def bench_cmd(
    model: list[str] = typer.Option(
        list(DEFAULT_BENCH_MODELS),
        "--model",
        "-m",
        help="Model string (bundled:..., llamacpp:..., openai:...@URL, hf:..., oracle); "
        "repeatable or comma-separated: the models run one after another and are compared "
        "side by side. Default: the bundled model and its tool-tuned version.",
    ),
    agent: str = typer.Option(
        None,
        "--agent",
        "-a",
        help="Agent (default: single; action: SambaNova's action generator; alpha-umi: "
        "α-UMi's planner, caller and summarizer; alpha-umi-backbone: its single-LLM baseline).",
    ),
    role: list[str] = RoleOpt,
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
    force: bool = typer.Option(
        False,
        "--force",
        help="Replace bench.json / report.html / report.md in OUT that toollab did not write.",
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Run the executable-environment suite: generate each environment's test split, let the
    model act, execute its calls, and report success, crash rate, dict-F1, Tool/Param F1 and
    decision accuracy per environment, plus an HTML report in OUT/report.html."""

    names = resolve_envs(envs)
    models = [m.strip() for item in model for m in item.split(",") if m.strip()]
    if not models:
        raise UsageError("--model: give at least one model string")
    for m in models:
        check_model_string(m)  # a bad string fails before any model runs or a file is written
    outs = bench_dirs(models, out)
    for folder in {out, *outs.values()}:
        check_bench_out(folder, force=force)  # a file toollab did not write: refused now
    chosen = role_agent(agent, role, "single")
    results = []
    for m in models:
        bars = _Bars(quiet=as_json)
        try:
            result = run_bench(
                model=m,
                agent=chosen,
                template=template,
                envs=names,
                limit=limit or DEFAULT_LIMIT,
                out=outs[m],
                seed=seed,
                constrained=constrained,
                max_tokens=max_tokens,
                progress=bars,
                reporter=partial(write_bench_report, force=force),
                force=force,
            )
        finally:
            bars.close()
            close_agent(chosen)
        results.append(result)
        if not as_json:
            print_table(result)
    if len(results) == 1:
        if as_json:
            emit_json(results[0].to_json())
        return
    report = write_bench_report(
        [Path(e.run_dir) for r in results for e in r.envs], out, force=force
    )
    combined = {"written_by": MARK, "models": [r.to_json() for r in results], "report": report}
    write_text_atomic(out / "bench.json", json.dumps(combined, indent=2), keep_foreign=not force)
    if as_json:
        emit_json(combined)
    else:
        print_comparison(results)
        console.print(f"report (all models): {report}")
