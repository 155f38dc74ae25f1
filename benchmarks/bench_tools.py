"""Tool layer speed: pool validation, argument validation, executor overhead and concurrency,
sandbox cost.  Prints one JSON object.

    python benchmarks/bench_tools.py --data ../shared/data
    python benchmarks/bench_tools.py --sandbox-only     # the confined path alone (seconds)
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from toollab.schema import ToolCall
from toollab.tools import Executor, Sandbox, ToolPool, read_pool_file, validate_arguments
from toollab.tools.toolfile import FileTool


def _median_time(fn: Any, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    ap.add_argument(
        "--sandbox-only", action="store_true", help="Measure only the sandbox and executor paths."
    )
    args = ap.parse_args()
    out: dict[str, Any] = {}
    if not args.sandbox_only:
        _pools_and_executor(args.data / "seal-tools", out)
    _confined(out)
    print(json.dumps(out))


def _pools_and_executor(seal: Path, out: dict[str, Any]) -> None:

    # 1. validate the Seal-Tools pool (parse + JSON Schema meta-check of 4076 tools)
    tools, problems = read_pool_file(seal / "tool.jsonl")
    out["seal_pool_tools"] = len(tools)
    out["seal_pool_problems"] = len(problems)
    out["seal_pool_validate_s"] = round(
        _median_time(lambda: read_pool_file(seal / "tool.jsonl")), 3
    )
    pool = ToolPool(t for _, t in tools)

    # 2. validate every gold call of the Seal-Tools test sets against its schema
    calls: list[ToolCall] = []
    for name in ("test_in_domain.jsonl", "test_out_domain.jsonl"):
        for line in (seal / name).read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            calls.extend(
                Executor(pool).link(
                    [
                        ToolCall(name=c["api"], arguments=c["parameters"], outputs=c["responses"])
                        for c in rec["calling"]
                    ]
                )
            )
    invalid = 0

    def check_all() -> None:
        nonlocal invalid
        invalid = sum(1 for c in calls if validate_arguments(pool.tool(c.name), c.arguments))

    secs = _median_time(check_all)
    out["gold_calls"] = len(calls)
    out["gold_calls_not_fitting_schema"] = invalid
    out["argument_validation_calls_per_s"] = round(len(calls) / secs)

    # 3. executor overhead: 500 trivial calls, concurrent and one at a time
    tiny = ToolPool()

    @tiny.register
    def echo(x: int) -> int:
        """Echo."""
        return x

    batch = [ToolCall(name="echo", arguments={"x": i}) for i in range(500)]
    for label, parallel in (("concurrent", True), ("sequential", False)):
        secs = _median_time(lambda p=parallel: Executor(tiny, parallel=p).execute(batch))
        out[f"executor_overhead_ms_per_call_{label}"] = round(secs / len(batch) * 1000, 3)

    # 4. concurrency: 8 independent tools sleeping 0.25 s each
    sleepy = ToolPool()

    @sleepy.register
    def nap(seconds: float) -> float:
        """Sleep."""
        time.sleep(seconds)
        return seconds

    naps = [ToolCall(name="nap", arguments={"seconds": 0.25}) for _ in range(8)]
    out["eight_0.25s_calls_wall_s"] = round(_median_time(lambda: Executor(sleepy).execute(naps)), 3)


def _confined(out: dict[str, Any]) -> None:
    # 5. sandbox: a call behind the OS boundary (the sandbox process is started once, on the
    # first call; every call forks a fresh child with the limits and kills what it leaves)
    with Sandbox(cpu_seconds=5, memory_mb=256, timeout=10) as box:
        t0 = time.perf_counter()
        box.run_callable(len, "")
        out["sandbox_start_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        runs = []
        for i in range(50):
            t0 = time.perf_counter()
            box.run_callable(len, "x" * i)
            runs.append(time.perf_counter() - t0)
        out["sandbox_call_ms_median"] = round(statistics.median(runs) * 1000, 2)
        out["sandbox_call_ms_p90"] = round(sorted(runs)[int(len(runs) * 0.9)] * 1000, 2)
        out["sandbox_network_isolation"] = box.network_isolation
        # a tool of a module (a tool file): imported once, in the module's own process
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "bench_tool_file.py"
            path.write_text("import json\n\ndef size(text: str) -> int:\n    return len(text)\n")
            module_tool = FileTool(str(path), "size")
            t0 = time.perf_counter()
            box.call(module_tool, (), {"text": ""})
            out["sandbox_module_first_call_ms"] = round((time.perf_counter() - t0) * 1000, 1)
            runs = []
            for i in range(50):
                t0 = time.perf_counter()
                box.call(module_tool, (), {"text": "x" * i})
                runs.append(time.perf_counter() - t0)
            out["sandbox_module_call_ms_median"] = round(statistics.median(runs) * 1000, 2)
        out["sandbox_confinement"] = box.describe()
    # the same trivial tool through the executor: in-process vs confined, per call
    trivial = ToolPool()

    @trivial.register
    def double(n: int) -> int:
        """Double."""
        return 2 * n

    one = [ToolCall(name="double", arguments={"n": 3})]
    for label, confine in (("in_process", False), ("confined", True)):
        with Executor(trivial, confine=confine) as ex:
            ex.execute(one)  # warm
            per = []
            for _ in range(50):
                t0 = time.perf_counter()
                ex.execute(one)
                per.append(time.perf_counter() - t0)
        out[f"executor_{label}_call_ms_median"] = round(statistics.median(per) * 1000, 2)


if __name__ == "__main__":
    main()
