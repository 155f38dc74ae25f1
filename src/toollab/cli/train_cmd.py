"""``toollab train``: fine-tune a model on SFT example files, and export it for llama.cpp."""

from __future__ import annotations

from pathlib import Path

import typer

from toollab.cli.common import JsonOpt, console, emit_json, handle_errors
from toollab.errors import UsageError
from toollab.train.config import TrainConfig, flags_help, parse_flags
from toollab.train.glpft import GlpftConfig, train_glpft
from toollab.train.outputs import check_run_folder
from toollab.train.recipes import DEFAULT_RECIPE, recipe_path
from toollab.train.serve import export_run

train_app = typer.Typer(
    name="train",
    help="Fine-tuning: LoRA or full SFT on TRL + PEFT, and GGUF export for llama.cpp.",
    no_args_is_help=True,
)

_EXTRA = {"allow_extra_args": True, "ignore_unknown_options": True}


def register(app: typer.Typer) -> None:
    app.add_typer(train_app, name="train")


def _options_help() -> str:

    return flags_help().replace("\n", "\n\n")


def _sft_help() -> str:
    return (
        "Supervised fine-tuning (LoRA or full) of a causal LM on SFT example files.\n\n"
        "Options come from a YAML file (--config) and/or flags; flags win. Every option of the "
        "config file is also a flag:\n\n" + _options_help()
    )


def _run(
    ctx: typer.Context,
    config: Path | None,
    as_json: bool,
    quiet: bool,
    paths_from: Path | None = None,
) -> None:

    overrides = parse_flags(list(ctx.args))
    cfg = (
        TrainConfig.load(config, overrides, paths_from)
        if config is not None
        else TrainConfig.from_dict(overrides)
    )
    check_run_folder(cfg.output_dir, force=cfg.force)  # before torch is imported
    from toollab.train.sft import train_sft  # torch, transformers: once the input is good

    res = train_sft(cfg, console=console, quiet=quiet or as_json)
    summary = {
        "output_dir": str(res.output_dir),
        "final": str(res.final),
        "global_step": res.global_step,
        "resumed_from": res.resumed_from,
        "first_loss": res.first_loss,
        "last_loss": res.last_loss,
        "best_eval_loss": res.best_eval_loss,
        "best_checkpoint": res.best_checkpoint,
        "tokens_per_s": round(res.tokens_per_s, 1),
        "train_runtime_s": round(res.train_runtime_s, 1),
        "peak_rss_mib": round(res.peak_rss_mib),
    }
    if as_json:
        emit_json(summary)
        return
    console.print(
        f"trained {res.global_step} steps"
        + (f" (resumed from {res.resumed_from})" if res.resumed_from else "")
        + f": loss {res.first_loss} → {res.last_loss}"
        + (
            f", best validation loss {res.best_eval_loss:.4f} ({res.best_checkpoint})"
            if res.best_eval_loss is not None
            else ""
        )
        + f", {res.tokens_per_s:,.0f} tokens/s; wrote {res.final}"
    )


@train_app.command("sft", context_settings=_EXTRA, help=_sft_help())
@handle_errors
def sft_cmd(
    ctx: typer.Context,
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML training config."),
    as_json: bool = JsonOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display."),
) -> None:
    _run(ctx, config, as_json, quiet)


def _glpft_help() -> str:

    return (
        "α-UMi's GLPFT: stage 1 fine-tunes a backbone on the whole task, stage 2 a planner, a "
        "caller and a summarizer, each started from stage 1, on the role data of α-UMi-format "
        "traces (train split; toollab data alpha-umi). Resumable: run it again to go on.\n\n"
        "Options come from a YAML file (--config) and/or flags; flags win:\n\n"
        + flags_help(GlpftConfig).replace("\n", "\n\n")
    )


@train_app.command("glpft", context_settings=_EXTRA, help=_glpft_help())
@handle_errors
def glpft_cmd(
    ctx: typer.Context,
    config: Path | None = typer.Option(None, "--config", "-c", help="YAML GLPFT config."),
    as_json: bool = JsonOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display."),
) -> None:

    overrides = parse_flags(list(ctx.args), GlpftConfig)
    cfg = (
        GlpftConfig.load(config, overrides)
        if config is not None
        else GlpftConfig.from_dict(overrides)
    )
    check_run_folder(cfg.output_dir, force=cfg.force)  # before torch is imported

    res = train_glpft(cfg, console=console, quiet=quiet or as_json)
    if as_json:
        emit_json(
            {
                "output_dir": str(res.output_dir),
                "outputs": res.outputs,
                "stages": {
                    s: {k: r.get(k) for k in ("kept", "global_step", "last_loss", "resumed_from")}
                    for s, r in res.stages.items()
                },
                "commands": res.commands,
            }
        )
        return
    for stage, r in res.stages.items():
        how = "kept" if r.get("kept") else f"{r.get('global_step')} steps"
        console.print(f"{stage}: {how}, last loss {r.get('last_loss')} → {res.outputs[stage]}")
    console.print("Export the roles, then run the agent and the backbone:", highlight=False)
    for line in res.commands:
        console.print(f"  {line}", highlight=False, soft_wrap=True)


@train_app.command("recipe", context_settings=_EXTRA)
@handle_errors
def recipe_cmd(
    ctx: typer.Context,
    name: str = typer.Argument(
        "smollm2-135m-tools", help="A shipped recipe, or a YAML file with cwd-relative paths."
    ),
    as_json: bool = JsonOpt,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display."),
) -> None:
    """Run a shipped training recipe (resumable: run it again to go on); flags override it."""

    if name.startswith("--"):  # no name given: the first flag landed here
        ctx.args.insert(0, name)
        name = DEFAULT_RECIPE
    _run(ctx, recipe_path(name), as_json, quiet, paths_from=Path.cwd())


@train_app.command("export")
@handle_errors
def export_cmd(
    run: Path = typer.Argument(
        ..., help="A run's output_dir, an adapter folder or a model folder."
    ),
    out: Path = typer.Option(
        None, "--out", "-o", help="Folder for the GGUF files (default RUN/gguf)."
    ),
    what: list[str] = typer.Option(
        ["adapter", "f16", "q8_0"],
        "--what",
        "-w",
        help="adapter (LoRA GGUF), f32, f16, q8_0 (merged model GGUFs); repeatable.",
    ),
    base: str = typer.Option(
        "",
        "--base",
        help="The base GGUF (metadata, tokenizer), or `bundled`; default: the run's base.",
    ),
    adapter_dtype: str = typer.Option(
        "f32", "--adapter-dtype", help="The adapter GGUF's matrices: f32 or f16 (half the size)."
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace GGUF files in the folder that toollab did not write."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Export a trained adapter / model to GGUF for llama.cpp (adapter, f16, q8_0)."""

    bad = [w for w in what if w not in ("adapter", "f32", "f16", "q8_0")]
    if bad:
        raise UsageError(f"--what {bad[0]!r}: choose adapter, f32, f16 or q8_0")
    if adapter_dtype not in ("f32", "f16"):
        raise UsageError(f"--adapter-dtype {adapter_dtype!r}: choose f32 or f16")
    written = export_run(
        run,
        out,
        what,
        base or None,
        console=console,
        adapter_dtype=adapter_dtype,  # type: ignore[arg-type]
        force=force,
    )
    if as_json:
        emit_json({k: str(v) for k, v in written.items()})
        return
    for kind, path in written.items():
        console.print(f"{kind}: {path}")
