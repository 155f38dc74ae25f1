"""Speed of the environments, the data generator and ``toollab bench``.

Prints one JSON object:

* ``generate``: instances per second of ``generate(env, "train", N)`` per environment (every gold
  program is executed while generating);
* ``execute``: gold programs executed and checked per second, per environment;
* ``call_us``: microseconds per executed call (gold programs run with ``env.run``, reset and final
  state included), per environment and over all calls (``call_us.all``); run the script against
  two checkouts (``PYTHONPATH=<checkout>/src``) to compare the cost of the call path;
* ``oracle_bench``: wall time of ``toollab bench --model oracle --limit 2`` (all environments);
* ``bench`` (with ``--bundled``): wall time and figures of the default ``toollab bench`` run on the
  bundled model (about ten minutes on 2 cores; wrap in ``flock /tmp/toollab-heavy.lock``).

With ``--compare-src OTHER/src`` the script measures ``call_us`` and the generation time only,
for this checkout and for the other one (another version of toollab, e.g. a clone of an earlier
commit), alternately in fresh processes for three rounds, keeps each figure's minimum and prints
both with their ratio (this checkout / the other): the cost of a change to the call path.

Usage: ``python benchmarks/bench_envs.py [--n 200] [--bundled] [--calls-only] [--compare-src PATH]``
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=200, help="instances generated per environment")
    ap.add_argument(
        "--bundled", action="store_true", help="also run the default bench on the bundled model"
    )
    ap.add_argument(
        "--calls-only",
        action="store_true",
        help="only generation, execution and call_us (no oracle bench)",
    )
    ap.add_argument(
        "--compare-src",
        metavar="PATH",
        help="another checkout's src/: compare call_us and generation time with it",
    )
    args = ap.parse_args()
    if args.compare_src:
        compare(args.compare_src, args.n)
        return

    from toollab.envs import env_names, get_env
    from toollab.envs.generate import generate
    from toollab.eval.bench import run_bench

    out: dict[str, Any] = {"n": args.n, "generate": {}, "execute": {}, "call_us": {}}
    total_calls, total_s = 0, 0.0
    for name in env_names():
        generate(name, "train", 2, seed=99)  # warm the split plan (a one-off probe per environment)
        t0 = time.perf_counter()
        insts = generate(name, "train", args.n, seed=1)
        gen_s = time.perf_counter() - t0
        out["generate"][name] = round(args.n / gen_s, 1)
        env = get_env(name)
        calls = [i for i in insts if i.gold]
        t0 = time.perf_counter()
        for inst in calls:
            seed = inst.metadata["seed"]
            ex = env.run(list(inst.gold), seed)
            env.check(ex.state, env.label_states([inst.gold], seed))
        out["execute"][name] = round(len(calls) / (time.perf_counter() - t0), 1)
        programs = [(list(inst.gold), inst.metadata["seed"]) for inst in calls]
        n_calls = 3 * sum(len(p) for p, _ in programs)
        t0 = time.perf_counter()
        for _ in range(3):
            for prog, seed in programs:
                env.run(prog, seed)
        run_s = time.perf_counter() - t0
        out["call_us"][name] = round(1e6 * run_s / max(n_calls, 1), 1)
        total_calls += n_calls
        total_s += run_s
    out["call_us"]["all"] = round(1e6 * total_s / max(total_calls, 1), 1)
    if args.calls_only:
        print(json.dumps(out, indent=2))
        return

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        res = run_bench(model="oracle", limit=2, out=f"{tmp}/oracle")
        out["oracle_bench"] = {
            "wall_s": round(time.perf_counter() - t0, 2),
            "overall": res.overall(),
        }
        if args.bundled:
            t0 = time.perf_counter()
            res = run_bench(out=f"{tmp}/bundled")
            out["bench"] = {
                "wall_s": round(time.perf_counter() - t0, 1),
                "limit": res.limit,
                "instances": sum(e.n for e in res.envs),
                "overall": res.overall(),
                "per_env_s": {e.env: e.seconds for e in res.envs},
            }
    print(json.dumps(out, indent=2))


def compare(other_src: str, n: int, rounds: int = 3) -> None:
    """``call_us`` and generation seconds of this checkout and ``other_src``, alternately."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = str(Path(__file__).resolve().parents[1] / "src")
    runs: dict[str, list[dict[str, Any]]] = {"this": [], "other": []}
    for _ in range(rounds):
        for label, src in (("other", other_src), ("this", here)):
            env = {**os.environ, "PYTHONPATH": src}
            cmd = [sys.executable, __file__, "--n", str(n), "--calls-only"]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            runs[label].append(json.loads(done.stdout))
    out: dict[str, Any] = {"n": n, "rounds": rounds}
    for key in ("call_us", "generate_s"):
        best: dict[str, dict[str, float]] = {}
        for label, results in runs.items():
            if key == "call_us":
                best[label] = {
                    k: min(r["call_us"][k] for r in results) for k in results[0]["call_us"]
                }
            else:  # instances per second -> seconds for n instances, summed over environments
                per = {
                    k: min(n / r["generate"][k] for r in results) for k in results[0]["generate"]
                }
                per["all"] = sum(per.values())
                best[label] = {k: round(v, 3) for k, v in per.items()}
        out[key] = {
            k: {
                "this": best["this"][k],
                "other": best["other"][k],
                "ratio": round(best["this"][k] / best["other"][k], 2),
            }
            for k in best["this"]
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
