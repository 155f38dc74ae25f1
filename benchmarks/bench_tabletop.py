"""The tabletop environment's execution costs: programs per second, plain calls against policies
run in the sandbox, the sandbox's overhead per program, and how long a bad program takes to stop.

Over the gold programs of the test split (seed 0, ``--n`` Call instances) and their alternatives
(each instance has a plain ``put_first_on_second`` program and a ``run_program`` policy):

* ``plain`` — plain call programs per second (``env.run``, in process);
* ``policy`` — policies per second through ``run_program`` (each one in the sandbox);
* ``in_process`` — the same policies run by :func:`run_policy` in this process (no sandbox);
* ``overhead`` — (policy - in_process) per program, ms: what the sandbox costs;
* ``cold`` — the first policy of a fresh process (the sandbox process starts and imports);
* ``stop`` — seconds until an endless loop, an allocation without bound, an import and a raise
  end as crashes.

    python benchmarks/bench_tabletop.py --n 40
"""

from __future__ import annotations

import argparse
import json
import time

from toollab.envs import get_env
from toollab.envs.generate import generate
from toollab.envs.tabletop_program import run_policy
from toollab.envs.tabletop_scene import Scene
from toollab.schema import Decision, ToolCall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--n", type=int, default=40)
    args = ap.parse_args()
    env = get_env("tabletop")
    t0 = time.perf_counter()
    env.run([ToolCall(name="run_program", arguments={"code": "say(1)"})], 0)
    cold = time.perf_counter() - t0
    insts = [
        i for i in generate("tabletop", "test", args.n, seed=0, mix=(1, 0, 0))
        if i.decision is Decision.CALL
    ]  # fmt: skip
    plain, policy = [], []
    for inst in insts:
        for prog in (inst.gold, *inst.alternatives):
            calls = [ToolCall(name=c.name, arguments=c.arguments) for c in prog]
            (policy if calls[0].name == "run_program" else plain).append((inst, calls))

    def rate(items: list[tuple[object, list[ToolCall]]]) -> tuple[float, float]:
        t = time.perf_counter()
        for inst, calls in items:
            ex = env.run(calls, inst.metadata["seed"])  # type: ignore[attr-defined]
            assert not ex.crashed, ex.error
        s = time.perf_counter() - t
        return len(items) / s, s / len(items)

    plain_rate, plain_each = rate(plain)
    policy_rate, policy_each = rate(policy)
    t = time.perf_counter()
    for inst, calls in policy:
        run_policy(calls[0].arguments["code"], Scene.generate(inst.metadata["seed"]).to_json())  # type: ignore[attr-defined]
    in_process = (time.perf_counter() - t) / len(policy)
    stops = {}
    for what, code in (
        ("loop", "while True:\n    pass"),
        ("allocation", "xs = []\nwhile True:\n    xs.append('x' * 100000)"),
        ("import", "import os"),
        ("raise", "raise ValueError('no')"),
    ):
        t = time.perf_counter()
        ex = env.run([ToolCall(name="run_program", arguments={"code": code})], 0)
        stops[what] = {"seconds": round(time.perf_counter() - t, 3), "reason": ex.reason}
    print(
        json.dumps(
            {
                "programs": {"plain": len(plain), "policy": len(policy)},
                "plain_per_s": round(plain_rate, 1),
                "policy_per_s": round(policy_rate, 1),
                "plain_ms": round(plain_each * 1000, 3),
                "policy_ms": round(policy_each * 1000, 2),
                "in_process_ms": round(in_process * 1000, 3),
                "overhead_ms": round((policy_each - in_process) * 1000, 2),
                "cold_s": round(cold, 3),
                "stop": stops,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
