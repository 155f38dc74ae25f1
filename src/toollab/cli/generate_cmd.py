"""``toollab data generate``: programmatic instances from the built-in environments."""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import typer
from rich.table import Table

from toollab.cli.common import JsonOpt, console, emit_json, handle_errors
from toollab.cli.data_cmd import data_app
from toollab.envs import env_class, task_env_names
from toollab.envs.generate import SPLITS, combo_counts, generate, loo_complexity, split_complexity
from toollab.errors import InputError, UsageError, did_you_mean

#: size of the training set the validation / test complexity is measured against
REFERENCE_TRAIN = 200
#: how the reported API complexity is defined, per split (written to the sidecar file)
COMPLEXITY_DEFINITION = {
    "train": "leave-one-out: mean over the split's Call instances t of min d(t, e) over its "
    "other Call instances e",
    "validation": "S(T, X, D) of the split's Call instances T against a training split X of "
    "max(n, 200) Call instances generated with the same seed",
    "test": "S(T, X, D) of the split's Call instances T against a training split X of "
    "max(n, 200) Call instances generated with the same seed",
}


#: appended to the output file's full name to name the figures' sidecar file
STATS_SUFFIX = ".stats.json"


def stats_path(out: Path) -> Path:
    """The sidecar file next to a generated file, named after the file's *full* name:
    ``data/test.jsonl`` -> ``data/test.jsonl.stats.json`` (so ``test.jsonl`` and ``test.json``
    never share one)."""
    return out.with_name(out.name + STATS_SUFFIX)


def register(app: typer.Typer) -> None:

    data_app.command("generate")(generate_cmd)


def parse_mix(text: str) -> tuple[float, float, float]:
    parts = [p.strip() for p in text.split(",")]
    try:
        vals = [float(p) for p in parts]
    except ValueError as exc:
        raise UsageError(f"--mix takes three numbers CALL,NOCALL,NOSEARCH, got {text!r}") from exc
    if len(vals) != 3:
        raise UsageError(f"--mix takes three numbers CALL,NOCALL,NOSEARCH, got {text!r}")
    if not all(math.isfinite(v) and v >= 0 for v in vals) or sum(vals) <= 0:
        raise UsageError(
            f"--mix takes three finite, non-negative shares CALL,NOCALL,NOSEARCH with a positive "
            f"sum, got {text!r}"
        )
    return vals[0], vals[1], vals[2]


def resolve_envs(names: list[str]) -> list[str]:

    if not names or names == ["all"]:
        return task_env_names()
    out = []
    for n in names:
        for part in n.split(","):
            if part.strip():
                env_class(part.strip())  # did-you-mean on a typo
                out.append(part.strip())
    return out


@handle_errors
def generate_cmd(
    env: list[str] = typer.Option(
        ["all"],
        "--env",
        "-e",
        help="Environment(s); repeat or comma-separate; 'all' for every one with goal templates.",
    ),
    split: str = typer.Option("train", "--split", "-s", help="train, validation or test."),
    n: int = typer.Option(100, "--n", "-n", min=0, help="Instances per environment."),
    seed: int = typer.Option(
        0, "--seed", help="Generation seed; the same seed gives the same data."
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output JSONL file (one Instance per line)."),
    mix: str = typer.Option(
        "0.8,0.1,0.1", "--mix", help="Shares of Call, NoCall and NoSearch instances."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Generate goal/program instances (Call, NoCall, NoSearch) from the environments.

    The test split uses API combinations (and, for some environments, whole tools) that training
    and validation never use; each split's API complexity score is reported against a training
    set generated with the same seed (the training split's own score leaves each case out).
    The figures are also written next to OUT, to ``OUT.stats.json`` (``OUT``'s full name plus
    ``.stats.json``).  Read the file back with ``--format toollab``.
    """
    import json

    shares = parse_mix(mix)
    names = resolve_envs(env)
    if split not in SPLITS:
        raise UsageError(
            f"unknown split {split!r} (--split){did_you_mean(split, list(SPLITS))}; "
            f"known: {', '.join(SPLITS)}"
        )
    if out.is_dir():
        raise InputError("--out is a directory; give the JSONL file to write", path=out)
    rows: dict[str, dict[str, Any]] = {}
    total = 0
    # written to OUT.tmp and renamed when complete: a failure leaves no (half-written) OUT
    tmp = out.with_name(out.name + ".tmp")
    with _removed_on_error(tmp), _open_out(tmp) as fh:
        for name in names:
            insts = generate(name, split, n, seed, shares)
            for inst in insts:
                fh.write(inst.model_dump_json() + "\n")
            total += len(insts)
            if split == "train":
                cx = loo_complexity(name, insts)
            else:
                ref = generate(name, "train", max(n, REFERENCE_TRAIN), seed, (1, 0, 0))
                cx = split_complexity(name, insts, ref)
            counts = {
                d: sum(1 for i in insts if i.decision is not None and i.decision.value == d)
                for d in ("Call", "NoCall", "NoSearch")
            }
            rows[name] = {
                "instances": len(insts),
                **counts,
                "api_combinations": len(combo_counts(insts)),
                "api_complexity": cx,
            }
    try:
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write the output file: {exc.strerror or exc}", path=out) from None
    summary = {
        "out": str(out),
        "split": split,
        "seed": seed,
        "n": n,
        "mix": list(shares),
        "instances": total,
        "api_complexity_definition": COMPLEXITY_DEFINITION[split],
        "stats": str(stats_path(out)),
        "envs": rows,
    }
    try:
        stats_path(out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"cannot write the figures: {exc.strerror}", path=stats_path(out)
        ) from None
    if as_json:
        emit_json(summary)
        return
    table = Table(title=f"generated {total} {split} instances -> {out}", title_justify="left")
    for col in ("env", "instances", "Call", "NoCall", "NoSearch", "API combos", "API complexity"):
        table.add_column(col, justify="left" if col == "env" else "right", no_wrap=col == "env")
    for name, r in rows.items():
        cx = r["api_complexity"]
        table.add_row(
            name,
            str(r["instances"]),
            str(r["Call"]),
            str(r["NoCall"]),
            str(r["NoSearch"]),
            str(r["api_combinations"]),
            "-" if cx is None else f"{cx:.2f}",
        )
    console.print(table)
    console.print(f"API complexity: {COMPLEXITY_DEFINITION[split]}; figures in {stats_path(out)}")


@contextlib.contextmanager
def _removed_on_error(path: Path) -> Iterator[None]:
    """Remove ``path`` when the block fails (a bad option, an interrupt)."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            path.unlink()
        raise


def _open_out(out: Path) -> TextIO:
    """The output file opened for writing (its folder made); an :class:`InputError` naming the
    path when that is impossible (a directory, no permission, a file where a folder should be)."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        return out.open("w", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write the output file: {exc.strerror or exc}", path=out) from None
