"""``toollab data sft``: export checked, guarded SFT examples with a dataset card."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape
from rich.table import Table

from toollab.cli.common import JsonOpt, console, emit_json, handle_errors, progress
from toollab.cli.data_cmd import data_app
from toollab.errors import UsageError

if TYPE_CHECKING:
    from toollab.sft.options import SFTOptions  # numpy: the [retrieval] extra


def register(app: typer.Typer) -> None:

    data_app.command("sft")(sft_cmd)


def _sources(
    data: list[Path], fmt: list[str], options: list[str], env: list[str], n: int | None,
    env_seed: int, source: list[str],
) -> list[Any]:  # fmt: skip
    from toollab.sft.sources import SourceSpec, parse_source  # numpy: the [retrieval] extra

    specs = [parse_source(s) for s in source]
    if len(fmt) not in (0, 1, len(data)):
        raise UsageError("give one --format for all --data paths, or one per --data")
    if data and not fmt:
        raise UsageError("--data needs --format (an adapter name, or deer-examples)")
    opts: dict[str, str] = {}
    for item in options:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"--option takes KEY=VALUE, got {item!r}")
        opts[key.strip().replace("-", "_")] = value.strip()
    for i, path in enumerate(data):
        kind = fmt[i] if len(fmt) > 1 else fmt[0]
        specs.append(SourceSpec(kind=kind, target=str(path), n=n, options=dict(opts)))
    for name in env:
        for part in name.split(","):
            if part.strip():
                if n is None:
                    raise UsageError("--env needs --n (how many train instances per environment)")
                specs.append(SourceSpec(kind="env", target=part.strip(), n=n, seed=env_seed))
    return specs


def _options(ctx: typer.Context, config: Path | None) -> SFTOptions:
    """The typed options: a ``--config`` YAML file (its keys are the options' names with
    underscores: ``pack_size``, ``source``, ...) and the flags given on the command line, which
    win; both checked by :class:`~toollab.sft.options.SFTOptions` before anything is loaded."""
    from toollab.sft.options import SFTOptions  # numpy: the [retrieval] extra

    flags: dict[str, Any] = {}
    for param, value in ctx.params.items():
        if param in ("config", "json_out"):
            continue
        source = ctx.get_parameter_source(param)
        if source is None or source.name == "DEFAULT":
            continue
        if isinstance(value, Path):
            value = str(value)
        elif isinstance(value, list):
            value = [str(v) if isinstance(v, Path) else v for v in value]
        flags["format" if param == "fmt" else param] = value
    return SFTOptions.load(config, flags)


@handle_errors
def sft_cmd(
    ctx: typer.Context,
    config: Path | None = typer.Option(
        None, "--config", help="A YAML file of these options (option names with underscores)."
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="The .jsonl file to write (README.md goes beside it)."),
    data: list[Path] = typer.Option([], "--data", help="A dataset file or folder (repeatable)."),
    fmt: list[str] = typer.Option(
        [], "--format", "-f", help="Its adapter format (seal-tools, bfcl, deer, ...) or deer-examples."
    ),
    option: list[str] = typer.Option([], "--option", help="Adapter option KEY=VALUE (repeatable)."),
    env: list[str] = typer.Option([], "--env", "-e", help="An environment whose train split to export (repeatable)."),
    n: int | None = typer.Option(None, "--n", help="Instances per --env (and at most per --data)."),
    env_seed: int = typer.Option(0, "--env-seed", help="Seed of the environment train splits."),
    source: list[str] = typer.Option(
        [], "--source", "-s",
        help="KIND:TARGET[,weight=W,n=N,...]: env:weather,n=200 | seal-tools:PATH | deer-examples:PATH/tool.json.",
    ),
    total: int | None = typer.Option(None, "--total", help="Draw this many instances from the sources by weight."),
    template: str = typer.Option("json", "--template", "-t", help="Prompt template (json, hermes, python, seal, chat ...)."),
    target: str = typer.Option(
        "constrained", "--target",
        help="constrained: what constrained decoding admits (default); template: the template's own rendering.",
    ),
    loss: str = typer.Option(
        "target", "--loss",
        help="target: the loss on the whole target (default); written: only on what the model writes at inference "
        "(DEER: not on the API pool its agent supplies).",
    ),
    chat_template: str = typer.Option(
        "bundled", "--chat-template", help="bundled (the bundled GGUF's), chatml, a .gguf or a .jinja file."
    ),
    pack: str = typer.Option("none", "--pack", help="none | all-shot (SambaNova: several goal/action pairs per sequence)."),
    pack_size: int = typer.Option(4, "--pack-size", help="Pairs per all-shot sequence at most."),
    max_tokens: int = typer.Option(2048, "--max-tokens", help="Token budget of a packed sequence."),
    distractors: int = typer.Option(0, "--distractors", help="Top the offered tools up to K (0: off)."),
    distractor_mode: str = typer.Option("random", "--distractor-mode", help="random | intra | inter | mix (DEER 2:1:2)."),
    nocall: float = typer.Option(0.0, "--nocall", help="Share of Call examples copied as NoCall without their gold tool."),
    hard_nocall: float = typer.Option(
        0.0, "--hard-nocall",
        help="Share of single-call examples copied as NoCall offering the gold tool's nearest neighbours instead.",
    ),
    reduce: float = typer.Option(
        0.0, "--reduce",
        help="Share of Call examples offered only their gold tools and a few others (see --reduce-extra).",
    ),
    reduce_extra: int = typer.Option(4, "--reduce-extra", help="--reduce: 0 to this many other tools beside the gold ones."),
    mask: float = typer.Option(0.0, "--mask", help="Share of examples with masked tool/parameter names (Hammer)."),
    vary: float = typer.Option(0.0, "--vary", help="Share of examples with argument-order and value-format variety."),
    compose: float = typer.Option(0.0, "--compose", help="Share of single-call examples composed into several-call ones."),
    compose_max: int = typer.Option(3, "--compose-max", help="At most this many examples per composition."),
    guard: list[str] = typer.Option([], "--guard", help="NAME=PATH of an evaluation set to stay clear of (bfcl, seal-tools, deer)."),
    guard_root: Path | None = typer.Option(
        None, "--guard-root", help="A folder holding bfcl/, seal-tools/, deer/ (default: $TOOLLAB_SHARED_DATA)."
    ),
    unguarded: list[str] = typer.Option([], "--unguarded", help="A default evaluation set skipped on purpose."),
    env_test_seed: list[int] = typer.Option([0], "--env-test-seed", help="Seeds of the environment test splits guarded against."),
    near: float = typer.Option(0.9, "--near", help="Query similarity that counts as a near duplicate."),
    near_same_tools: float = typer.Option(0.75, "--near-same-tools", help="Lower similarity that counts with the same gold tools."),
    drop_null_args: bool = typer.Option(
        False, "--drop-null-args", help="Leave out gold arguments that are None for optional parameters."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of sampling and augmentations."),
    no_tokens: bool = typer.Option(False, "--no-tokens", help="Skip token counting (no lengths in the card, no packing)."),
    conversations: bool = typer.Option(
        False, "--conversations",
        help="Whole conversations of the environment sources (n = conversations): calls, real results, answers, follow-ups.",
    ),
    followups: int = typer.Option(2, "--followups", help="--conversations: at most this many user turns after the first."),
    force: bool = typer.Option(
        False, "--force", help="Replace a README.md beside --out that toollab did not write."
    ),
    json_out: bool = JsonOpt,
) -> None:  # fmt: skip
    """Export SFT examples (messages, tools, rendered text, loss spans) with a dataset card.

    The card is README.md beside --out; a README.md there that toollab did not write (it has no
    toollab mark) is kept and the export refused, before any work, unless --force."""
    _export(_options(ctx, config), json_out)


def _export(p: SFTOptions, json_out: bool) -> None:
    # numpy (the [retrieval] extra): the export samples candidates with embeddings
    from toollab.sft import AugmentConfig, SFTConfig, export_sft
    from toollab.sft.card import check_export_paths
    from toollab.sft.guard import resolve_guards

    if p.out is None:
        raise UsageError("give --out FILE.jsonl (or out: in --config)")
    check_export_paths(Path(p.out), force=p.force)  # before any work
    root = Path(p.guard_root) if p.guard_root is not None else None
    if root is None and os.environ.get("TOOLLAB_SHARED_DATA"):
        root = Path(os.environ["TOOLLAB_SHARED_DATA"])
    cfg = SFTConfig(
        sources=_sources(
            [Path(d) for d in p.data], p.format, p.option, p.env, p.n, p.env_seed, p.source
        ),
        out=Path(p.out),
        template=p.template,
        target=p.target,
        loss=p.loss,
        chat_template=p.chat_template,
        total=p.total,
        seed=p.seed,
        pack=p.pack,
        pack_size=p.pack_size,
        max_tokens=p.max_tokens,
        augment=AugmentConfig(
            distractors=p.distractors,
            distractor_mode=p.distractor_mode,
            nocall=p.nocall,
            hard_nocall=p.hard_nocall,
            reduce=p.reduce,
            reduce_extra=p.reduce_extra,
            mask=p.mask,
            vary=p.vary,
            compose=p.compose,
            compose_max=p.compose_max,
            seed=p.seed,
        ),
        guards=resolve_guards(p.guard, root, p.unguarded),
        unguarded=list(p.unguarded),
        env_seeds=list(p.env_test_seed),
        near=p.near,
        near_same_tools=p.near_same_tools,
        count_tokens=not p.no_tokens,
        drop_null_args=p.drop_null_args,
        conversations=p.conversations,
        followups=p.followups,
    )
    with progress(transient=True) as bar:
        tasks: dict[str, Any] = {}

        def report(what: str, done: int, total_n: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(what, total=total_n)
            bar.update(tasks[what], completed=done)

        result = export_sft(cfg, report, force=p.force)
    fig = result.figures
    if json_out:
        emit_json(
            {
                "path": str(result.path),
                "card": str(result.card),
                "seconds": result.seconds,
                "timings": result.timings,
                **fig,
            }
        )
        return
    table = Table(title=f"wrote {escape(str(result.path))}", title_justify="left")
    table.add_column("what")
    table.add_column("value", justify="right")
    table.add_row("records", str(fig["records"]))
    table.add_row("examples", str(fig["examples"]))
    for k, v in fig["by_decision"].items():
        table.add_row(f"  {k}", str(v))
    table.add_row("rejected", str(sum(fig["rejected"].values())))
    table.add_row("dropped by the guard", str(sum(fig["dropped"].values())))
    table.add_row("seconds", f"{result.seconds:.1f}")
    console.print(table)
    for k, v in fig["rejected"].items():
        console.print(f"  rejected: {escape(k)} ×{v}", highlight=False)
    for k, v in fig["dropped"].items():
        console.print(f"  dropped: {escape(k)} ×{v}", highlight=False)
    console.print(f"card: {escape(str(result.card))}", highlight=False)
