"""Dataset adapter benchmark: load time and memory of each benchmark's full data.

For each dataset: the median wall time of ``--repeats`` loads, instances per second, and the
peak Python memory of one load (tracemalloc).  Prints one JSON object.

Usage::

    flock /tmp/toollab-heavy.lock python benchmarks/bench_data.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Any

from toollab.data import load_dataset

REPO = Path(__file__).resolve().parents[1]
DATASETS: list[tuple[str, str, dict[str, Any]]] = [
    ("seal-tools", "seal-tools", {}),
    ("bfcl", "bfcl", {}),
    ("deer", "deer", {}),
    ("deer", "deer", {"splits": "tool_bench,tool_corpus"}),
    ("tooleyes", "tooleyes", {}),
]


def bench_one(path: Path, fmt: str, options: dict[str, Any], repeats: int) -> dict[str, Any]:
    times = []
    n = tools = 0
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        ds = load_dataset(path, fmt, **options)
        times.append(time.perf_counter() - t0)
        n, tools = len(ds), len(ds.tools)
        del ds
    gc.collect()
    tracemalloc.start()
    ds = load_dataset(path, fmt, **options)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del ds
    median = statistics.median(times)
    return {
        "instances": n,
        "tools": tools,
        "load_s": round(median, 3),
        "instances_per_s": round(n / median, 1) if median else None,
        "peak_mib": round(peak / 2**20, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    out: dict[str, Any] = {}
    for folder, fmt, options in DATASETS:
        key = folder + (
            "[" + ",".join(f"{k}={v}" for k, v in options.items()) + "]" if options else ""
        )
        out[key] = bench_one(args.data / folder, fmt, options, args.repeats)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
