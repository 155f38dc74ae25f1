"""``toollab data synth deer|seal``: the papers' data-generation pipelines with any teacher."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from pydantic import BaseModel
from rich.table import Table

from toollab.cli.common import JsonOpt, console, emit_json, handle_errors, progress
from toollab.cli.data_cmd import data_app
from toollab.data.atomic import check_output_folder
from toollab.data.config_file import typed_options
from toollab.errors import UsageError
from toollab.synth import Teacher, TeacherConfig
from toollab.synth.options import DeerOptions, SealOptions

synth_app = typer.Typer(
    name="synth",
    help="Generate training data with the papers' pipelines (DEER, Seal-Tools) and a teacher.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:

    data_app.add_typer(synth_app, name="synth")


# -- teacher flags, shared by both pipelines ------------------------------------------------------
TeacherOpt = typer.Option(
    None,
    "--teacher",
    "-m",
    help="Teacher model string: openai:<model>@<url> (vLLM, llama.cpp server), "
    "bundled:smollm2-135m, fake:SCRIPT.",
)
ConcurrencyOpt = typer.Option(
    None, "--concurrency", min=1, help="Teacher requests in flight (default: the backend's)."
)
RetriesOpt = typer.Option(3, "--retries", min=0, help="Retries of a failed teacher request.")
TimeoutOpt = typer.Option(300.0, "--timeout", min=0.001, help="Seconds one request may take.")
AttemptsOpt = typer.Option(
    3, "--attempts", min=1, help="Times a question is asked while its answers are rejected."
)
MaxTokensOpt = typer.Option(1024, "--max-tokens", min=1, help="Teacher answer length limit.")
TemperatureOpt = typer.Option(1.0, "--temperature", min=0.0, help="Teacher sampling temperature.")
CacheOpt = typer.Option(
    None,
    "--cache",
    help="Teacher answer cache (JSON lines; default OUT/teacher_cache.jsonl). A re-run asks "
    "nothing already answered.",
)
QuietOpt = typer.Option(False, "--quiet", "-q", help="No progress bar.")
ForceOpt = typer.Option(
    False,
    "--force",
    help="Replace files in OUT that toollab did not write (kept and refused by default).",
)


@contextmanager
def open_teacher(
    model: str | None,
    out: Path,
    cache: Path | None,
    quiet: bool,
    **config: Any,
) -> Iterator[Any]:
    """A :class:`~toollab.synth.Teacher` with a progress bar per stage (``None`` without a
    model)."""
    if model is None:
        yield None
        return

    cfg = TeacherConfig(model=model, **config)
    with progress() as bar:
        tasks: dict[str, Any] = {}

        def hook(stage: str, done: int) -> None:
            if quiet:
                return
            if done < 0:
                tasks[stage] = bar.add_task(stage, total=-done)
            elif stage in tasks:
                bar.update(tasks[stage], completed=done)

        teacher = Teacher(model, cfg, cache=cache or out / "teacher_cache.jsonl", progress=hook)
        try:
            if teacher.cache.repaired:
                console.print(f"note: cut a torn last line off {teacher.cache.path}")
            yield teacher
        finally:
            teacher.close()


def show_report(report: dict[str, Any]) -> None:
    stats = report.get("teacher_stats")
    if stats:
        console.print(
            f"teacher {report.get('teacher')}: {stats['requests']} requests, "
            f"{stats['cache_hits']} cache hits ({stats['cache_hit_rate']:.0%}), "
            f"{stats['retries']} retries, failures {stats['failures'] or 'none'}, "
            f"tokens {stats['prompt_tokens']} in / {stats['completion_tokens']} out"
        )
        table = Table(title="teacher answers checked")
        for col in ("stage", "checked", "accepted", "pass rate", "rejected (reason: n)"):
            table.add_column(col)
        for stage, row in stats["checks"].items():
            rate = row["pass_rate"]
            table.add_row(
                stage,
                str(row["checked"]),
                str(row["accepted"]),
                "-" if rate is None else f"{rate:.1%}",
                "; ".join(f"{k}: {v}" for k, v in row["rejected"].items()),
            )
        console.print(table)
    counts = report.get("counts")
    if counts:
        console.print(f"counts: {counts}")


@synth_app.command("deer")
@handle_errors
def deer_cmd(
    ctx: typer.Context,
    tools: Path = typer.Option(
        ...,
        "--tools",
        help="DEER tool.json (published examples) or ChatGPT plugin manifests (teacher needed).",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (DEER's file formats)."),
    nosearch: Path | None = typer.Option(
        None,
        "--nosearch",
        help="Conversations whose first user turns become NoSearch samples (WizardLM "
        "evol-instruct JSON, OpenAI messages, {query} lines or strings).",
    ),
    exclude: list[Path] = typer.Option(
        [],
        "--exclude",
        help="Query files (e.g. DEER's released test.json) kept out of train / valid; repeatable.",
    ),
    seen: int = typer.Option(900, "--seen", min=1, help="Seen tools (train/valid); rest unseen."),
    call_ratio: float = typer.Option(0.6, "--call-ratio", help="Share of Call samples."),
    k: int = typer.Option(5, "--k", min=1, help="Candidate tools per sample."),
    mode: str = typer.Option("mix", "--mode", help="Sampling of the seen pool: mix or random."),
    mix: str = typer.Option("0.4,0.2,0.4", "--mix", help="Random,intra,inter shares."),
    clusters: int = typer.Option(30, "--clusters", min=1, help="K-means clusters (seen tools)."),
    nosearch_size: int = typer.Option(2000, "--nosearch-size", min=0, help="NoSearch samples."),
    valid_ratio: float = typer.Option(0.1, "--valid-ratio", help="Share of seen samples in valid."),
    seed: int = typer.Option(42, "--seed", help="Python random seed (DEER: 42)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Use the first N tools only."),
    teacher: str | None = TeacherOpt,
    concurrency: int | None = ConcurrencyOpt,
    retries: int = RetriesOpt,
    timeout: float = TimeoutOpt,
    attempts: int = AttemptsOpt,
    max_tokens: int = MaxTokensOpt,
    temperature: float = TemperatureOpt,
    cache: Path | None = CacheOpt,
    quiet: bool = QuietOpt,
    force: bool = ForceOpt,
    as_json: bool = JsonOpt,
) -> None:
    """DEER's pipeline: (with --teacher) query -> call examples per tool with the second-pass
    check, then Call / NoCall / NoSearch decision samples: train.json, valid.json, test.json,
    tool.json, split.json and report.json in OUT."""

    opts = typed_options(DeerOptions, {}, _flags(ctx, DeerOptions, mix=_floats(mix, "--mix", 3)))
    from toollab.synth import deer  # its retrieval needs numpy (the [retrieval] extra)

    config = deer.DeerConfig(
        seen=seen,
        call_ratio=call_ratio,
        k=k,
        mode=opts.mode,
        mix=opts.mix,
        clusters=clusters,
        nosearch=nosearch_size,
        valid_ratio=valid_ratio,
        seed=seed,
    )
    check_output_folder(out, deer.OUTPUT_FILES, force=force)  # before a teacher loads
    with open_teacher(
        teacher,
        out,
        cache,
        quiet or as_json,
        concurrency=concurrency,
        retries=retries,
        timeout_s=timeout,
        attempts=attempts,
        max_tokens=max_tokens,
        temperature=temperature,
    ) as t:
        report = deer.run(tools, out, config, t, nosearch, exclude, limit, force=force)
    _finish(report, out, as_json)


@synth_app.command("seal")
@handle_errors
def seal_cmd(
    ctx: typer.Context,
    out: Path = typer.Option(..., "--out", "-o", help="Output folder (Seal-Tools' file formats)."),
    teacher: str = typer.Option(
        "bundled:smollm2-135m",
        "--teacher",
        "-m",
        help="Teacher model string: openai:<model>@<url> (vLLM, llama.cpp server), "
        "bundled:smollm2-135m, fake:SCRIPT.",
    ),
    fields: Path | None = typer.Option(
        None, "--fields", help="Start from this field.jsonl instead of generating fields."
    ),
    tools: Path | None = typer.Option(
        None, "--tools", help="Start from this tool.jsonl (value pools, instances) instead."
    ),
    max_tools: int | None = typer.Option(
        None, "--max-tools", min=1, help="Use the first N tools of --tools."
    ),
    split: str = typer.Option("train", "--split", help="Name of the split written."),
    max_fields: int | None = typer.Option(None, "--max-fields", min=1, help="Keep N fields."),
    max_subfields: int | None = typer.Option(
        None, "--max-subfields", min=1, help="Keep N subfields per field."
    ),
    min_field_count: int = typer.Option(
        2, "--min-field-count", min=1, help="Keep fields named in at least N generated lists."
    ),
    max_rounds: int = typer.Option(20, "--max-rounds", min=1, help="Rounds per subfield, at most."),
    difficult: int = typer.Option(1000, "--difficult", min=0, help="Difficult instances asked."),
    retriever: str = typer.Option("bm25", "--retriever", help="Retriever of the 5 offered tools."),
    exclude: list[Path] = typer.Option(
        [], "--exclude", help="Seal-Tools instance files whose queries are kept out; repeatable."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of every random draw."),
    concurrency: int | None = ConcurrencyOpt,
    retries: int = RetriesOpt,
    timeout: float = TimeoutOpt,
    attempts: int = AttemptsOpt,
    max_tokens: int = MaxTokensOpt,
    temperature: float = TemperatureOpt,
    cache: Path | None = CacheOpt,
    quiet: bool = QuietOpt,
    force: bool = ForceOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Seal-Tools' self-instruct pipeline: fields -> subfields -> tools -> value pools -> easy
    and difficult (nested) instances -> fine-tuning prompts with 5 retrieved tools: tool.jsonl,
    field.jsonl, SPLIT.jsonl, dataset_for_finetune/SPLIT.json and report.json in OUT."""

    typed_options(SealOptions, {}, _flags(ctx, SealOptions))
    from toollab.synth import seal  # its retrieval needs numpy (the [retrieval] extra)

    config = seal.SealConfig(
        split=split,
        min_field_count=min_field_count,
        max_fields=max_fields,
        max_subfields=max_subfields,
        max_rounds=max_rounds,
        difficult=difficult,
        retriever=retriever,
        seed=seed,
    )
    config.check()  # before the teacher starts
    check_output_folder(out, seal.output_files(split), force=force)  # before a teacher loads
    with open_teacher(
        teacher,
        out,
        cache,
        quiet or as_json,
        concurrency=concurrency,
        retries=retries,
        timeout_s=timeout,
        attempts=attempts,
        max_tokens=max_tokens,
        temperature=temperature,
    ) as t:
        report = seal.run(out, t, config, fields, exclude, tools, max_tools, force=force)
    _finish(report, out, as_json)


def _finish(report: dict[str, Any], out: Path, as_json: bool) -> None:
    if as_json:
        emit_json(report)
        return
    show_report(report)
    console.print(f"wrote {out}")


def _flags(ctx: typer.Context, model: type[BaseModel], **parsed: Any) -> dict[str, Any]:
    """The command's options that ``model`` checks (``parsed``: those read from text)."""
    values = {k: v for k, v in ctx.params.items() if k in model.model_fields}
    return {**values, **parsed}


def _floats(text: str, flag: str, n: int) -> tuple[float, ...]:
    """``n`` comma-separated numbers (their ranges are the options model's to check)."""
    try:
        vals = tuple(float(p) for p in text.split(","))
    except ValueError:
        vals = ()
    if len(vals) != n:
        raise UsageError(f"{flag} takes {n} numbers, comma-separated, got {text!r}")
    return vals
