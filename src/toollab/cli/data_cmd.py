"""``toollab data``: read benchmark files and report what is in them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from toollab.cli.common import JsonOpt, console, emit_json, handle_errors
from toollab.data import Dataset, available_formats, get_adapter, load_dataset
from toollab.data.samples import sample_names, sample_path
from toollab.errors import UsageError

data_app = typer.Typer(
    name="data",
    help="Read benchmark datasets (Seal-Tools, BFCL, DEER, ToolEyes) and report their contents.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    app.add_typer(data_app, name="data")


def parse_options(items: list[str]) -> dict[str, Any]:
    """``["splits=test,valid", "tools=x.jsonl"]`` → ``{"splits": "test,valid", ...}``."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--option takes KEY=VALUE, got {item!r}")
        out[key.strip().replace("-", "_")] = value.strip()
    return out


def resolve_source(path: Path | None, fmt: str | None, sample: str | None) -> tuple[Path, str]:
    """The dataset path and format from PATH/--format or --sample."""
    if sample is not None:
        if path is not None:
            raise UsageError("give either PATH or --sample, not both")
        spath, sfmt = sample_path(sample)
        if fmt is not None and get_adapter(fmt).name != sfmt:
            raise UsageError(f"sample {sample!r} is in format {sfmt!r}, not {fmt!r}")
        return spath, sfmt
    if path is None:
        raise UsageError(f"give a dataset PATH (or --sample {'|'.join(sample_names())})")
    if fmt is None:
        raise UsageError(f"--format is required; one of: {', '.join(available_formats())}")
    get_adapter(fmt)  # unknown format → did-you-mean before touching the path
    return path, fmt


def load_from_cli(
    path: Path | None, fmt: str | None, sample: str | None, options: list[str]
) -> Dataset:
    """Shared by every verb that reads a dataset from the command line."""
    src, fmt_name = resolve_source(path, fmt, sample)
    return load_dataset(src, fmt_name, **parse_options(options))


def _counts_table(title: str, counts: dict[str, int], total: int) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column("value")
    table.add_column("count", justify="right")
    table.add_column("share", justify="right")
    for key, n in counts.items():
        table.add_row(key, str(n), f"{100 * n / total:.1f}%" if total else "-")
    return table


def print_stats(stats: dict[str, Any]) -> None:
    head = Table(title=f"dataset {stats['name']} ({stats['format']})", title_justify="left")
    head.add_column("what")
    head.add_column("value", justify="right")
    for key in ("instances", "tools", "gold_calls", "nested", "mean_tools_offered", "fingerprint"):
        head.add_row(key, str(stats[key]))
    head.add_row("path", str(stats.get("path")))
    unknown = stats.get("unknown_types") or {}
    head.add_row("unknown type names", str(unknown.get("count", 0)))
    console.print(head)
    if unknown.get("count"):
        names = ", ".join(f"{k!r} ×{v}" for k, v in unknown["names"].items())
        console.print(
            f"[bold yellow]warning:[/] {unknown['count']} unknown type name(s), kept as "
            f"x-original-type and not checked: {escape(names)}",
            highlight=False,
        )
        for place in unknown["places"]:
            console.print(f"  {escape(place)}", highlight=False)
    total = stats["instances"]
    sections = [
        ("calls per instance", stats["calls_per_instance"]),
        ("by category", stats["by_category"]),
        ("by decision", stats["by_decision"]),
        ("by split", stats["by_split"]),
    ]
    if "by_difficulty" in stats:
        sections.append(("by difficulty", stats["by_difficulty"]))
    for title, counts in sections:
        console.print(_counts_table(title, counts, total))
    details = stats.get("details") or {}
    if details:
        table = Table(title="details", title_justify="left", show_edge=False)
        table.add_column("what")
        table.add_column("value")
        for key, value in details.items():
            if isinstance(value, dict):
                value = ", ".join(f"{k}: {v}" for k, v in value.items())
            table.add_row(key, str(value))
        console.print(table)


def print_examples(ds: Dataset, n: int) -> None:
    for inst in ds.instances[:n]:
        label = inst.decision.value if inst.decision is not None else "-"
        console.rule(f"{inst.id}  [{inst.category or '-'} / {label}]")
        console.print(f"[bold]query:[/] {inst.query}", highlight=False)
        console.print(f"[bold]tools:[/] {', '.join(inst.tool_names) or '-'}", highlight=False)
        for call in inst.gold:
            args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
            out = f" -> {', '.join(call.outputs)}" if call.outputs else ""
            console.print(f"[bold]gold:[/] {call.name}({args}){out}", highlight=False)


@data_app.command("inspect")
@handle_errors
def inspect_cmd(
    path: Path | None = typer.Argument(
        None, help="Dataset folder or file in its upstream layout.", show_default=False
    ),
    fmt: str | None = typer.Option(
        None,
        "--format",
        "-f",
        help="Dataset format: seal-tools, bfcl, deer, tooleyes or toollab.",
        show_default=False,
    ),
    sample: str | None = typer.Option(
        None, "--sample", help="Inspect a bundled sample instead: seal-tools or bfcl."
    ),
    option: list[str] = typer.Option(
        [],
        "--option",
        "-o",
        help="Adapter option KEY=VALUE, repeatable (e.g. splits=test_in_domain, "
        "categories=simple_python,parallel, tools=PATH).",
    ),
    show: int = typer.Option(0, "--show", min=0, help="Also print the first N instances."),
    json_out: bool = JsonOpt,
) -> None:
    """Load a dataset and report its counts (instances, tools, calls, nested, categories).

    Counts cover instances, the tool pool, gold calls per instance, nested calls and the
    breakdown by category, decision label and split.  With --json, one JSON object on stdout.
    """
    ds = load_from_cli(path, fmt, sample, option)
    stats = ds.stats()
    if json_out:
        emit_json(stats)
        return
    print_stats(stats)
    if show:
        print_examples(ds, show)


@data_app.command("holdout")
@handle_errors
def holdout_cmd(
    path: Path = typer.Argument(..., help="Dataset folder or file in its upstream layout.", show_default=False),
    fmt: str = typer.Option(..., "--format", "-f", help="Dataset format (toollab data formats).", show_default=False),
    option: list[str] = typer.Option([], "--option", "-o", help="Adapter option KEY=VALUE, repeatable."),
    share: float = typer.Option(0.15, "--share", help="Share of the called tools held out."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the draw of tools."),
    out: Path = typer.Option(..., "--out", help="Folder for train.jsonl, validation.jsonl, held-out-tools.txt."),
    json_out: bool = JsonOpt,
) -> None:  # fmt: skip
    """Split a dataset by tools: a seeded share of the tools its gold calls use held out.

    validation.jsonl holds every instance that calls a held-out tool; train.jsonl every instance
    that neither calls nor offers one; instances that only offer one are left out and counted.
    Both files are in toollab's format (--format toollab), scored as the source was. Use it to
    train on a dataset and still choose with tools the model never saw."""
    from toollab.data.holdout import hold_out_tools, write_holdout

    ds = load_from_cli(path, fmt, None, option)
    split = hold_out_tools(ds.instances, share, seed)
    paths = write_holdout(split, ds, out)
    figures = {**split.summary(), "files": {k: str(v) for k, v in paths.items()}}
    if json_out:
        emit_json(figures)
        return
    console.print(
        f"held out {len(split.held_out_tools)} of the tools called: "
        f"{len(split.validation)} validation instances ({escape(str(paths['validation']))}), "
        f"{len(split.train)} train instances ({escape(str(paths['train']))}), "
        f"{len(split.left_out)} left out (they offer a held-out tool without calling it)"
    )


@data_app.command("formats")
@handle_errors
def formats_cmd(json_out: bool = JsonOpt) -> None:
    """List the dataset formats and their options."""
    rows: list[dict[str, Any]] = []
    for name in available_formats():
        adapter = get_adapter(name)
        rows.append(
            {
                "format": name,
                "aliases": list(adapter.aliases),
                "options": adapter.option_names(),
                "description": adapter.description,
            }
        )
    if json_out:
        emit_json({"formats": rows, "samples": sample_names()})
        return
    table = Table(title="dataset formats", title_justify="left")
    for col in ("format", "options", "description"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["format"], ", ".join(r["options"]) or "-", r["description"])
    console.print(table)
    console.print(f"samples: {', '.join(sample_names())}")
