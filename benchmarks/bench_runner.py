"""Runner overhead: the oracle over a whole benchmark (no model time), resuming, rescoring.

    python benchmarks/bench_runner.py --data ../shared/data [--format seal-tools]

Prints one JSON object: instances/s of a full run (prompt → render → parse → durable append →
score), the cost of reopening a finished run (read + repair check + skip + rescore) and of
``toollab score`` on its predictions file.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from toollab.eval.rescore import rescore
from toollab.eval.runner import EvalConfig, run_eval
from toollab.eval.store import PREDICTIONS

FOLDERS = {"seal-tools": "seal-tools", "bfcl": "bfcl", "deer": "deer"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--format", default="seal-tools", choices=sorted(FOLDERS))
    args = ap.parse_args()
    config = EvalConfig(
        model="oracle", data=str(args.data / FOLDERS[args.format]), format=args.format
    )
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        t0 = time.perf_counter()
        first = run_eval(config, out)
        full = time.perf_counter() - t0
        t0 = time.perf_counter()
        again = run_eval(config, out)
        reopen = time.perf_counter() - t0
        t0 = time.perf_counter()
        rescore(out / PREDICTIONS)
        score = time.perf_counter() - t0
        size = (out / PREDICTIONS).stat().st_size
    n = first.results.counts.predictions
    print(
        json.dumps(
            {
                "format": args.format,
                "predictions": n,
                "full_run_s": round(full, 3),
                "instances_per_s": round(n / full, 1),
                "reopen_finished_run_s": round(reopen, 3),
                "reopen_new_predictions": again.new,
                "rescore_s": round(score, 3),
                "predictions_mb": round(size / 2**20, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
