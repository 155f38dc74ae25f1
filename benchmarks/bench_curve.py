"""A training curve: the same figures measured at several checkpoints of one run.

Each point is an adapter (a training checkpoint, a packed adapter folder that
``scripts/recipe-gpu.sh fetch`` unpacked, or an adapter GGUF) or ``base``, the bundled model
itself. Folders are exported to an adapter GGUF once (``toollab train export``); then every
figure runs through toollab's own commands on the bundled Q4_1 base under llama.cpp with
constrained decoding, as every held-out figure in BENCHMARKS.md does. A figure already measured
(its output folder holds its results) is read back, not run again, so a killed curve resumes.

    python benchmarks/bench_curve.py base step-150=runs/R/checkpoint-150/packed \\
        step-450=runs/R/checkpoint-450/packed --out runs/curve-R \\
        --val runs/select2/val.jsonl --bfcl ../shared/data/bfcl --figures val,multiple,irrelevance

Figures: ``val`` (success on the environments' validation split: the figure a checkpoint is
chosen by), ``multiple`` and ``irrelevance`` (BFCL, the first ``--n`` entries, ``json``
template), ``bench`` (``toollab bench`` at its default size: success over its Call instances).
The held-out figures show where the recipe's limit lies; they are never used to choose a point.
The table goes to OUT/curve.md and OUT/curve.json, with one standard error of each share.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TOOLLAB = str(Path(sys.executable).with_name("toollab"))
BASE = "bundled:smollm2-135m"


@dataclass(frozen=True)
class Point:
    label: str
    source: str  # "base", an adapter GGUF, or a folder to export


@dataclass(frozen=True)
class Figure:
    key: str
    title: str
    argv: Callable[[argparse.Namespace, str, Path], list[str]]
    done: str  # the file, under the figure's folder, that says it has been measured
    read: Callable[[Path], tuple[float, int]]  # figure folder -> (share, denominator)


def _calls(files: list[Path]) -> int:
    """Instances that need a call (decision ``Call``) in toollab JSONL files."""
    n = 0
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and json.loads(line).get("decision") == "Call":
                n += 1
    return n


def _read_val(args: argparse.Namespace) -> Callable[[Path], tuple[float, int]]:
    def read(out: Path) -> tuple[float, int]:
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        return results["metrics"]["environment"]["success"], _calls([Path(args.val)])

    return read


def _read_bfcl(category: str) -> Callable[[Path], tuple[float, int]]:
    def read(out: Path) -> tuple[float, int]:
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        total = results["breakdown"]["bfcl"][category]["total"]
        return results["metrics"]["bfcl"][category], int(total)

    return read


def _read_bench(out: Path) -> tuple[float, int]:
    bench = json.loads((out / "bench.json").read_text(encoding="utf-8"))
    return bench["overall"]["success"], _calls(sorted((out / "data").glob("*.jsonl")))


def _val_argv(args: argparse.Namespace, model: str, out: Path) -> list[str]:
    return [
        TOOLLAB,
        "eval",
        "--data",
        args.val,
        "--format",
        "toollab",
        "-m",
        model,
        "--out",
        str(out),
        "--json",
    ]


def _bfcl_argv(category: str) -> Callable[[argparse.Namespace, str, Path], list[str]]:
    def argv(args: argparse.Namespace, model: str, out: Path) -> list[str]:
        return [
            TOOLLAB,
            "eval",
            "-m",
            model,
            "-d",
            args.bfcl,
            "-f",
            "bfcl",
            "-o",
            f"categories={category}",
            "-t",
            "json",
            "-n",
            str(args.n),
            "--out",
            str(out),
            "--json",
        ]

    return argv


def figures(args: argparse.Namespace) -> dict[str, Figure]:
    return {
        f.key: f
        for f in (
            Figure(
                "val",
                "validation success",
                _val_argv,
                "results.json",
                _read_val(args),
            ),
            Figure(
                "multiple",
                "BFCL multiple",
                _bfcl_argv("multiple"),
                "results.json",
                _read_bfcl("multiple"),
            ),
            Figure(
                "irrelevance",
                "BFCL irrelevance",
                _bfcl_argv("irrelevance"),
                "results.json",
                _read_bfcl("irrelevance"),
            ),
            Figure(
                "bench",
                "bench success",
                lambda a, m, o: [TOOLLAB, "bench", "-m", m, "--out", str(o), "--json"],
                "bench.json",
                _read_bench,
            ),
        )
    }


def parse_point(spec: str) -> Point:
    label, sep, source = spec.partition("=")
    if not sep:
        source = spec
        step = re.search(r"checkpoint-(\d+)", spec)
        label = "base" if spec == "base" else f"step-{step[1]}" if step else Path(spec).stem
    if source != "base" and not Path(source).exists():
        raise SystemExit(f"{spec}: no such adapter file or folder: {source}")
    return Point(label, source)


def _order(point: Point) -> tuple[int, int]:
    """base first, then checkpoints by step (a shell glob sorts checkpoint-50 after -450)."""
    step = re.fullmatch(r"step-(\d+)", point.label)
    return (0, 0) if point.source == "base" else (1, int(step[1])) if step else (2, 0)


def _run(argv: list[str], log: Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as f:
        proc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, check=False)
    if proc.returncode:
        raise SystemExit(f"failed (exit {proc.returncode}): {' '.join(argv)}; see {log}")


def model_of(point: Point, out: Path) -> str:
    """The model string of a point, exporting a folder to an adapter GGUF once."""
    if point.source == "base":
        return BASE
    source = Path(point.source)
    if source.is_file():
        return f"{BASE}+lora={source}"
    gguf_dir = out / "adapters" / point.label
    gguf = gguf_dir / "adapter.gguf"
    if not gguf.is_file():
        _run(
            [
                TOOLLAB,
                "train",
                "export",
                str(source),
                "--what",
                "adapter",
                "--adapter-dtype",
                "f16",
                "--base",
                "bundled",
                "--out",
                str(gguf_dir),
            ],
            out / "logs" / f"export-{point.label}.log",
        )
    return f"{BASE}+lora={gguf}"


def se(share: float, n: int) -> float:
    return math.sqrt(share * (1 - share) / n) if n else float("nan")


def table(points: list[Point], chosen: list[Figure], values: dict[str, dict[str, list]]) -> str:
    head = "| point | " + " | ".join(f.title for f in chosen) + " |"
    rows = [head, "|---|" + "---:|" * len(chosen)]
    for p in points:
        cells = []
        for f in chosen:
            share, n = values[p.label][f.key]
            cells.append(f"{100 * share:.1f} ± {100 * se(share, n):.1f} ({n})")
        rows.append(f"| {p.label} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("points", nargs="+", help="base, PATH or LABEL=PATH (adapter GGUF or folder)")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--figures", default="val,multiple,irrelevance,bench")
    ap.add_argument("--val", default="", help="the environments' validation split (toollab JSONL)")
    ap.add_argument("--bfcl", default="../shared/data/bfcl", help="BFCL's data folder")
    ap.add_argument("-n", type=int, default=100, help="first N entries of each BFCL category")
    args = ap.parse_args()
    known = figures(args)
    keys = [k.strip() for k in args.figures.split(",") if k.strip()]
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise SystemExit(f"--figures: unknown {unknown}; known: {', '.join(known)}")
    if "val" in keys and not Path(args.val).is_file():
        raise SystemExit(
            "--val: the validation split is needed for the val figure, e.g. toollab data "
            "generate --env all --split validation --n 6 --seed 0 --out val.jsonl"
        )
    chosen = [known[k] for k in keys]
    points = sorted(map(parse_point, args.points), key=_order)
    labels = [p.label for p in points]
    if len(set(labels)) != len(labels):
        raise SystemExit(f"two points share a label: {labels}; name them LABEL=PATH")
    values: dict[str, dict[str, list]] = {}
    total = len(points) * len(chosen)
    k = 0
    for p in points:
        model = model_of(p, args.out)
        values[p.label] = {}
        for f in chosen:
            k += 1
            folder = args.out / p.label / f.key
            if (folder / f.done).is_file():
                state = "measured before"
            else:
                start = time.monotonic()
                _run(f.argv(args, model, folder), args.out / "logs" / f"{p.label}-{f.key}.log")
                state = f"{time.monotonic() - start:.0f} s"
            share, n = f.read(folder)
            values[p.label][f.key] = [share, n]
            print(f"[{k}/{total}] {p.label} {f.title}: {100 * share:.1f} ({state})", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    doc = {
        "points": [{"label": p.label, "source": p.source} for p in points],
        "figures": {f.key: f.title for f in chosen},
        "values": values,
    }
    (args.out / "curve.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    md = table(points, chosen, values)
    (args.out / "curve.md").write_text(md, encoding="utf-8")
    print(md, end="")


if __name__ == "__main__":
    main()
