"""Backend benchmarks with the bundled model on BFCL simple_python instances.

Figures (printed as one JSON object):

* ``overhead``: toollab's llama.cpp backend wall time ÷ raw llama-cpp-python for the same
  prompts and max tokens (goal ≤ 1.05).  Requests alternate between the two, each with its own
  ``Llama``, so drift hits both equally.
* ``prefix_reuse``: throughput with prefix reuse ÷ without, on a suite whose tool docs (the
  tools of the first instances) are shared by every instance (goal ≥ 3×).
* ``constrained``: generation tokens/s with a JSON-Schema grammar ÷ without (goal ≥ 0.8).
* ``openai``: the OpenAI backend with 8 concurrent requests against a local llama.cpp server ÷
  that server's throughput measured directly with plain HTTP requests, also 8 at a time (goal ≥ 0.9).

Usage::

    flock /tmp/toollab-heavy.lock python benchmarks/bench_backends.py --n 200 --max-tokens 48
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the server helpers of the OpenAI tests

from toollab.data.base import load_dataset  # noqa: E402
from toollab.models import ChatRequest, GenerateOptions  # noqa: E402
from toollab.models.bundled import bundled_gguf_path  # noqa: E402
from toollab.models.constrain import call_schema  # noqa: E402
from toollab.models.llamacpp import LlamaCppModel  # noqa: E402
from toollab.schema import Instance, Tool  # noqa: E402
from toollab.templates import get_template  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "bfcl" / "BFCL_v4_simple_python.json"


def _requests(
    instances: list[Instance], max_tokens: int, tools: list[Tool] | None = None
) -> list[ChatRequest]:
    tpl = get_template("json")
    return [
        ChatRequest(
            messages=tpl.messages(inst, tools),
            tools=tools if tools is not None else inst.tools,
            options=GenerateOptions(max_tokens=max_tokens),
            tag=inst.id,
        )
        for inst in instances
    ]


def bench_overhead(
    gguf: Path, instances: list[Instance], max_tokens: int, n_ctx: int
) -> dict[str, Any]:
    import llama_cpp

    ours = LlamaCppModel(gguf, n_ctx=n_ctx)
    raw = llama_cpp.Llama(
        model_path=str(gguf),
        n_ctx=n_ctx,
        n_threads=ours.n_threads,
        n_threads_batch=ours.n_threads,
        verbose=False,
    )
    reqs = _requests(instances, max_tokens)
    prompts = [ours.render(r) for r in reqs]
    t_ours = t_raw = 0.0
    same = 0

    def run_raw(prompt: str) -> tuple[str, float]:
        t0 = time.perf_counter()
        r = raw.create_completion(
            prompt,
            max_tokens=max_tokens,
            temperature=0.0,
            top_k=1,
            top_p=1.0,
            min_p=0.0,
            repeat_penalty=1.0,
            seed=0,
            stop=["<|im_end|>"],
        )
        return r["choices"][0]["text"], time.perf_counter() - t0  # type: ignore[index]

    def run_ours(req: ChatRequest) -> tuple[str, float]:
        t0 = time.perf_counter()
        out = asyncio.run(ours.request(req))
        return out.text, time.perf_counter() - t0

    # alternate which side goes first, so neither always follows the other's work
    for k, (req, prompt) in enumerate(zip(reqs, prompts, strict=True)):
        if k % 2 == 0:
            raw_text, dt_raw = run_raw(prompt)
            our_text, dt_ours = run_ours(req)
        else:
            our_text, dt_ours = run_ours(req)
            raw_text, dt_raw = run_raw(prompt)
        t_raw += dt_raw
        t_ours += dt_ours
        same += our_text == raw_text
    ours.close()
    raw.close()
    return {
        "n": len(reqs),
        "toollab_s": round(t_ours, 3),
        "raw_llama_cpp_s": round(t_raw, 3),
        "ratio": round(t_ours / t_raw, 4),
        "identical_outputs": same,
        "goal": "<= 1.05",
    }


def bench_prefix(
    gguf: Path, instances: list[Instance], max_tokens: int, n_ctx: int, n_tools: int
) -> dict[str, Any]:
    shared: list[Tool] = []
    for inst in instances:
        for t in inst.tools:
            if t.name not in {s.name for s in shared}:
                shared.append(t)
        if len(shared) >= n_tools:
            break
    reqs = _requests(instances, max_tokens, tools=shared)
    reuse = LlamaCppModel(gguf, n_ctx=n_ctx, prefix_reuse=True)
    fresh = LlamaCppModel(gguf, n_ctx=n_ctx, prefix_reuse=False)
    # alternate between the two models request by request, so load changes hit both alike
    walls = {"with_reuse": 0.0, "without_reuse": 0.0}
    cached = {"with_reuse": 0, "without_reuse": 0}
    for req in reqs:
        for label, model in (("with_reuse", reuse), ("without_reuse", fresh)):
            t0 = time.perf_counter()
            out = asyncio.run(model.request(req))
            walls[label] += time.perf_counter() - t0
            cached[label] += out.usage.cached_tokens
    result: dict[str, Any] = {
        "n": len(reqs),
        "shared_tools": len(shared),
        "prompt_tokens": len(reuse.tokenize(reqs[0])),
    }
    for label in walls:
        result[label] = {
            "wall_s": round(walls[label], 3),
            "instances_per_s": round(len(reqs) / walls[label], 4),
            "cached_tokens": cached[label],
        }
    reuse.close()
    fresh.close()
    result["speedup"] = round(walls["without_reuse"] / walls["with_reuse"], 3)
    result["goal"] = ">= 3"
    return result


def bench_constrained(
    gguf: Path, instances: list[Instance], max_tokens: int, n_ctx: int
) -> dict[str, Any]:
    model = LlamaCppModel(gguf, n_ctx=n_ctx)
    base = _requests(instances, max_tokens)
    result: dict[str, Any] = {"n": len(base)}
    stats = {k: {"tokens": 0, "gen_s": 0.0, "valid": 0} for k in ("unconstrained", "constrained")}
    for req in base:
        opts = req.options.model_copy(update={"json_schema": call_schema(req.tools)})
        for label, r in (
            ("unconstrained", req),
            ("constrained", req.model_copy(update={"options": opts})),
        ):
            out = asyncio.run(model.request(r))
            st = stats[label]
            st["tokens"] += out.usage.completion_tokens
            st["gen_s"] += out.timings.generation_s or 0.0
            try:
                json.loads(out.text)
                st["valid"] += 1
            except ValueError:
                pass
    for label, st in stats.items():
        result[label] = {
            "completion_tokens": st["tokens"],
            "generation_s": round(st["gen_s"], 3),
            "tokens_per_s": round(st["tokens"] / st["gen_s"], 2),
            "valid_json": st["valid"],
        }
    model.close()
    result["ratio"] = round(
        result["constrained"]["tokens_per_s"] / result["unconstrained"]["tokens_per_s"], 4
    )
    result["goal"] = ">= 0.8"
    return result


def bench_openai(
    gguf: Path, instances: list[Instance], max_tokens: int, concurrency: int
) -> dict[str, Any]:
    from test_models_openai_server import free_port, start_llama_server, stop_server

    from toollab.models import load_model

    port = free_port()
    proc = start_llama_server(gguf, port, n_ctx=4096)
    url = f"http://127.0.0.1:{port}/v1"
    reqs = _requests(instances, max_tokens)
    for r in reqs:
        r.options.native_tools = False  # the prompt carries the tool docs
    try:
        bodies = [
            json.dumps(
                {
                    "model": "smollm2",
                    "messages": r.messages,
                    "max_tokens": max_tokens,
                    "temperature": 0.0,
                    "top_p": 1.0,
                    "seed": 0,
                }
            ).encode()
            for r in reqs
        ]

        def post(body: bytes) -> int:
            req = urllib.request.Request(
                f"{url}/chat/completions", data=body, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(req, timeout=120) as resp:
                data = json.loads(resp.read())
            return int(data["usage"]["completion_tokens"])

        post(bodies[0])  # warm-up
        model = load_model(f"openai:smollm2@{url}", max_concurrency=concurrency, timeout=120)
        direct = ours = 0.0
        direct_tokens = 0
        outs = []
        # alternate chunks of `concurrency` requests (and which side goes first) so load
        # changes on the machine hit both measurements alike
        for k, start in enumerate(range(0, len(reqs), concurrency)):
            chunk = slice(start, start + concurrency)
            for side in ("direct", "toollab") if k % 2 == 0 else ("toollab", "direct"):
                t0 = time.perf_counter()
                if side == "direct":
                    with ThreadPoolExecutor(concurrency) as pool:
                        direct_tokens += sum(pool.map(post, bodies[chunk]))
                    direct += time.perf_counter() - t0
                else:
                    outs += asyncio.run(model.batch(reqs[chunk], concurrency=concurrency))
                    ours += time.perf_counter() - t0
        model.close()
    finally:
        stop_server(proc)
    return {
        "n": len(reqs),
        "concurrency": concurrency,
        "direct_s": round(direct, 3),
        "toollab_s": round(ours, 3),
        "direct_completion_tokens": direct_tokens,
        "toollab_completion_tokens": sum(o.usage.completion_tokens for o in outs),
        "errors": sum(o.error is not None for o in outs),
        "ratio": round(direct / ours, 4),
        "goal": ">= 0.9",
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BFCL simple_python JSON lines")
    ap.add_argument("--n", type=int, default=200, help="instances per measurement")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument(
        "--shared-tools", type=int, default=8, help="tools in the shared prompt of the prefix suite"
    )
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--parts", default="overhead,prefix,constrained,openai")
    args = ap.parse_args()

    instances = load_dataset(args.data, "bfcl").instances[: args.n]
    gguf = bundled_gguf_path()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    report: dict[str, Any] = {
        "model": "bundled:smollm2-135m",
        "n": len(instances),
        "max_tokens": args.max_tokens,
    }
    for part in parts:
        t0 = time.perf_counter()
        if part == "overhead":
            report[part] = bench_overhead(gguf, instances, args.max_tokens, args.n_ctx)
        elif part == "prefix":
            report[part] = bench_prefix(
                gguf, instances, args.max_tokens, args.n_ctx, args.shared_tools
            )
        elif part == "constrained":
            report[part] = bench_constrained(gguf, instances, args.max_tokens, args.n_ctx)
        elif part == "openai":
            report[part] = bench_openai(gguf, instances, args.max_tokens, args.concurrency)
        else:
            ap.error(f"unknown part {part!r}")
        print(
            f"{part}: {json.dumps(report[part])} ({time.perf_counter() - t0:.0f} s)",
            file=sys.stderr,
        )
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
