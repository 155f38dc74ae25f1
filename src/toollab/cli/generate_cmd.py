"""``toollab data generate``: programmatic instances from the built-in environments."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import IO, Any

import typer
from rich.table import Table

from toollab.cli.common import STDOUT, JsonOpt, console, emit_json, handle_errors, track
from toollab.cli.data_cmd import data_app
from toollab.data.atomic import (
    MARK,
    atomic_write,
    check_replaceable,
    check_target,
    write_text_atomic,
)
from toollab.envs import env_class, task_env_names
from toollab.envs.generate import (
    MAX_INSTANCES,
    SPLITS,
    combo_counts,
    generate,
    loo_complexity,
    split_complexity,
)
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
    n: int = typer.Option(
        100, "--n", "-n", min=0, help=f"Instances per environment (at most {MAX_INSTANCES:,})."
    ),
    seed: int = typer.Option(
        0, "--seed", help="Generation seed; the same seed gives the same data."
    ),
    out: Path = typer.Option(
        ...,
        "--out",
        "-o",
        help="Output JSONL file (one Instance per line); - writes the instances to standard "
        "output (and no figures file).",
    ),
    mix: str = typer.Option(
        "0.8,0.1,0.1", "--mix", help="Shares of Call, NoCall and NoSearch instances."
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace OUT.stats.json even when toollab did not write it."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Generate goal/program instances (Call, NoCall, NoSearch) from the environments.

    The test split uses API combinations (and, for some environments, whole tools) that training
    and validation never use; each split's API complexity score is reported against a training
    set generated with the same seed (the training split's own score leaves each case out).
    The figures are also written next to OUT, to ``OUT.stats.json`` (``OUT``'s full name plus
    ``.stats.json``); a file there that toollab did not write is kept (an error) unless
    ``--force``.  Read the file back with ``--format toollab``.
    """
    import json

    to_stdout = str(out) == STDOUT
    if to_stdout and as_json:
        raise UsageError("--out - writes the instances to standard output; --json cannot share it")
    shares = parse_mix(mix)
    names = resolve_envs(env)
    if not names:
        raise UsageError(
            f"--env {' '.join(repr(e) for e in env)} names no environment; give a name, a "
            "comma-separated list, or all"
        )
    if split not in SPLITS:
        raise UsageError(
            f"unknown split {split!r} (--split){did_you_mean(split, list(SPLITS))}; "
            f"known: {', '.join(SPLITS)}"
        )
    if n > MAX_INSTANCES:
        raise UsageError(
            f"--n {n} is more than the {MAX_INSTANCES:,} instances per environment a split may "
            "have (see docs/input-limits.md); generate several files with different --seed"
        )
    if not to_stdout:  # refused before any work: a folder, a device, a foreign sidecar
        if out.is_dir():
            raise InputError("--out is a directory; give the JSONL file to write", path=out)
        check_target(out)
        check_replaceable(stats_path(out), force=force)
    if to_stdout:
        rows, total = _generate_into(sys.stdout, names, split, n, seed, shares, quiet=True)
        sys.stdout.flush()
    else:
        # written to a temporary file beside OUT and renamed when complete: a failure or an
        # interrupt leaves no (half-written) OUT
        with atomic_write(out) as fh:
            rows, total = _generate_into(fh, names, split, n, seed, shares, quiet=as_json)
    summary = {
        "out": str(out),
        "split": split,
        "seed": seed,
        "n": n,
        "mix": list(shares),
        "instances": total,
        "api_complexity_definition": COMPLEXITY_DEFINITION[split],
        "stats": None if to_stdout else str(stats_path(out)),
        "envs": rows,
        "written_by": MARK,
    }
    if not to_stdout:
        write_text_atomic(
            stats_path(out), json.dumps(summary, indent=2) + "\n", keep_foreign=not force
        )
    if as_json:
        emit_json(summary)
        return
    dest = "standard output" if to_stdout else str(out)
    table = Table(title=f"generated {total} {split} instances -> {dest}", title_justify="left")
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
    where = "" if to_stdout else f"; figures in {stats_path(out)}"
    console.print(f"API complexity: {COMPLEXITY_DEFINITION[split]}{where}")


def _generate_into(
    fh: IO[str],
    names: list[str],
    split: str,
    n: int,
    seed: int,
    shares: tuple[float, float, float],
    *,
    quiet: bool,
) -> tuple[dict[str, dict[str, Any]], int]:
    """Generate every environment's instances into ``fh``, one JSON line each; the per-environment
    figures and the total."""
    rows: dict[str, dict[str, Any]] = {}
    total = 0
    for name in track(names, len(names), f"generate {split}", quiet=quiet):
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
    return rows, total
