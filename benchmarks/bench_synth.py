"""Teacher benchmarks for the data-generation pipelines, against a real OpenAI-compatible server
(llama-cpp-python's, serving the bundled model on 127.0.0.1).

Figures (printed as one JSON object):

* ``throughput``: requests/s of the pipeline's teacher (:class:`toollab.synth.Teacher`: cache,
  checks, retries, progress hook) ÷ the same backend driven directly with ``Model.batch``, same
  requests (DEER's example-writing prompts for the first N tools), same concurrency (goal ≥ 0.95).
  After one warm-up request the two alternate (ABBA...), ``--repeats`` times each, with a fresh
  cache for every teacher run.
* ``resume``: a teacher run over the same requests in a subprocess is killed (SIGKILL) after
  ``--kill-after`` answers; a second run with the same cache asks only what is missing: its cache
  hit rate and the requests it sent.

Usage::

    flock /tmp/toollab-heavy.lock python benchmarks/bench_synth.py --n 16 --max-tokens 48
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the server helpers of the OpenAI tests

from toollab.models import ChatRequest, load_model  # noqa: E402
from toollab.models.bundled import bundled_gguf_path  # noqa: E402
from toollab.synth import Teacher, TeacherConfig  # noqa: E402
from toollab.synth.deer import EXAMPLES_PROMPT, read_tools  # noqa: E402
from toollab.synth.teacher import AnswerCache  # noqa: E402

DEFAULT_TOOLS = (
    Path(os.environ.get("TOOLLAB_SHARED_DATA", REPO.parent / "shared" / "data"))
    / "deer"
    / "tool.json"
)

CHILD = """
import sys
from toollab.models import load_model
from toollab.models.base import run_sync
from toollab.synth import Teacher, TeacherConfig
import json
prompts = json.load(open(sys.argv[3]))
cfg = TeacherConfig(model="openai", concurrency=int(sys.argv[4]), max_tokens=int(sys.argv[5]),
                    temperature=0.7)
teacher = Teacher(load_model(sys.argv[1], max_concurrency=int(sys.argv[4]), timeout=300), cfg,
                  cache=sys.argv[2])
async def one(p):
    return (await teacher.ask("bench", lambda a: teacher.request_for(p, attempt=a), str)).value
run_sync(teacher.map("bench", prompts, one))
"""


def prompts_for(tools_path: Path, n: int) -> list[str]:
    tools = read_tools(tools_path)[:n]
    return [
        EXAMPLES_PROMPT.format(
            name=t.api_name, human=t.description_for_human, model=t.description_for_model[:600]
        )
        for t in tools
    ]


def teacher_config(concurrency: int, max_tokens: int) -> TeacherConfig:
    return TeacherConfig(
        model="openai", concurrency=concurrency, max_tokens=max_tokens, temperature=0.7
    )


async def direct(model: Any, reqs: list[ChatRequest], concurrency: int) -> float:
    t0 = time.perf_counter()
    outs = await model.batch(reqs, concurrency=concurrency)
    dt = time.perf_counter() - t0
    errors = [o.error for o in outs if o.error]
    if errors:
        raise RuntimeError(f"direct requests failed: {errors[:3]}")
    return dt


async def through_teacher(teacher: Teacher, prompts: list[str]) -> float:
    async def one(p: str) -> str | None:
        got = await teacher.ask("bench", lambda a: teacher.request_for(p, attempt=a), str)
        return got.value

    t0 = time.perf_counter()
    values = await teacher.map("bench", prompts, one)
    dt = time.perf_counter() - t0
    if any(v is None for v in values):
        raise RuntimeError(f"teacher requests failed: {teacher.stats.failures}")
    return dt


def bench_throughput(
    url: str, prompts: list[str], concurrency: int, max_tokens: int, repeats: int
) -> dict[str, Any]:
    model = load_model(f"openai:smollm2@{url}", max_concurrency=concurrency, timeout=300)
    cfg = teacher_config(concurrency, max_tokens)
    helper = Teacher(model, cfg, cache=None)
    reqs = [helper.request_for(p, attempt=0) for p in prompts]
    times: dict[str, list[float]] = {"direct": [], "teacher": []}
    stats: dict[str, Any] = {}
    # warm the server up with a prompt of neither set (the server reuses the last prompt's
    # prefix: warming up with the first request would favour whichever run comes first)
    asyncio.run(direct(model, [helper.request_for("Say hello.", attempt=0)], 1))
    for r in range(repeats):
        for way in ("direct", "teacher") if r % 2 == 0 else ("teacher", "direct"):
            if way == "direct":
                times["direct"].append(asyncio.run(direct(model, reqs, concurrency)))
                continue
            with tempfile.TemporaryDirectory() as tmp:
                teacher = Teacher(
                    model, cfg, cache=Path(tmp) / "cache.jsonl", progress=lambda s, d: None
                )
                times["teacher"].append(asyncio.run(through_teacher(teacher, prompts)))
                stats = teacher.stats.to_dict()
    direct_rps = len(prompts) * repeats / sum(times["direct"])
    teacher_rps = len(prompts) * repeats / sum(times["teacher"])
    return {
        "requests": len(prompts),
        "repeats": repeats,
        "concurrency": concurrency,
        "max_tokens": max_tokens,
        "direct_s": [round(t, 2) for t in times["direct"]],
        "teacher_s": [round(t, 2) for t in times["teacher"]],
        "direct_requests_per_s": round(direct_rps, 3),
        "teacher_requests_per_s": round(teacher_rps, 3),
        "ratio": round(teacher_rps / direct_rps, 3),
        "ratio_of_medians": round(
            statistics.median(times["direct"]) / statistics.median(times["teacher"]), 3
        ),
        "teacher_tokens": {
            "prompt": stats["prompt_tokens"],
            "completion": stats["completion_tokens"],
        },
    }


def bench_resume(
    url: str, prompts: list[str], concurrency: int, max_tokens: int, kill_after: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache.jsonl"
        plist = Path(tmp) / "prompts.json"
        plist.write_text(json.dumps(prompts))
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, f"openai:smollm2@{url}", str(cache), str(plist),
             str(concurrency), str(max_tokens)],
            env=env,
        )  # fmt: skip
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            if cache.exists() and cache.read_bytes().count(b"\n") >= kill_after:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        cached = len(AnswerCache(cache))
        model = load_model(f"openai:smollm2@{url}", max_concurrency=concurrency, timeout=300)
        teacher = Teacher(model, teacher_config(concurrency, max_tokens), cache=cache)
        t0 = time.perf_counter()
        asyncio.run(through_teacher(teacher, prompts))
        return {
            "questions": len(prompts),
            "cached_before_resume": cached,
            "resumed_requests": teacher.stats.requests,
            "cache_hits": teacher.stats.cache_hits,
            "cache_hit_rate": round(teacher.stats.cache_hit_rate, 3),
            "expected_hit_rate": round(cached / len(prompts), 3),
            "resume_s": round(time.perf_counter() - t0, 2),
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", type=Path, default=DEFAULT_TOOLS)
    ap.add_argument("--n", type=int, default=16, help="requests (DEER tools) per measurement")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--kill-after", type=int, default=6)
    ap.add_argument("--parts", default="throughput,resume")
    args = ap.parse_args()

    from test_models_openai_server import free_port, start_llama_server, stop_server

    prompts = prompts_for(args.tools, args.n)
    port = free_port()
    server = start_llama_server(bundled_gguf_path(), port, n_ctx=4096)
    url = f"http://127.0.0.1:{port}/v1"
    report: dict[str, Any] = {}
    try:
        for part in args.parts.split(","):
            if part == "throughput":
                report[part] = bench_throughput(
                    url, prompts, args.concurrency, args.max_tokens, args.repeats
                )
            elif part == "resume":
                report[part] = bench_resume(
                    url, prompts, args.concurrency, args.max_tokens, args.kill_after
                )
            print(json.dumps({part: report[part]}), file=sys.stderr, flush=True)
    finally:
        stop_server(server)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
