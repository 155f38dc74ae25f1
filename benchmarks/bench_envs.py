"""Speed of the environments, the data generator and ``toollab bench``.

Prints one JSON object:

* ``generate``: instances per second of ``generate(env, "train", N)`` per environment (every gold
  program is executed while generating);
* ``execute``: gold programs executed and checked per second, per environment;
* ``oracle_bench``: wall time of ``toollab bench --model oracle --limit 2`` (all environments);
* ``bench`` (with ``--bundled``): wall time and figures of the default ``toollab bench`` run on the
  bundled model (about ten minutes on 2 cores; wrap in ``flock /tmp/toollab-heavy.lock``).

Usage: ``python benchmarks/bench_envs.py [--n 200] [--bundled]``
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
    args = ap.parse_args()

    from toollab.envs import env_names, get_env
    from toollab.envs.generate import generate
    from toollab.eval.bench import run_bench

    out: dict[str, Any] = {"n": args.n, "generate": {}, "execute": {}}
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


if __name__ == "__main__":
    main()
