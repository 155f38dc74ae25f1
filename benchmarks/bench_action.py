"""The ``action`` agent (SambaNova's action generator) sized and tuned on VALIDATION data only.

Two parts, both over the environments' validation splits (generated with seed 0; their API
combinations are the training ones and their query texts are reserved for evaluation, so no
demonstration shares a goal with them):

* ``tokens`` — prompt tokens per instance (SmolLM2's tokenizer and chat template) of the
  ``single`` agent and of the ``action`` agent at each ``--k-api``;
* ``success`` — the bench figures of each ``--model`` with the ``action`` agent at each
  ``--settings`` entry ``K_API:K_DEMOS[:DECLINES]`` (``DECLINES``: the share of declining
  demonstrations in the pool, default 0 as upstream), or the ``single`` agent for the entry
  ``single`` (constrained decoding, the bench's token budgets), mean over environments.

The test splits are never read here: ``toollab bench --agent action`` measures the chosen
setting on them once.

    python benchmarks/bench_action.py --parts tokens --k-api 5,8,10,15
    python benchmarks/bench_action.py --parts success --settings 10:3,20:3,20:0 --n 4 \\
        --model bundled:smollm2-135m-tools --out /tmp/action_val
    python benchmarks/bench_action.py --parts success --settings single,20:3,20:3:0.3 --n 6
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from toollab.agents import Agent, AgentOptions, get_agent
from toollab.agents.action import ActionAgent
from toollab.envs.base import env_names
from toollab.envs.generate import generate
from toollab.eval.bench import bench_tasks, summary_of
from toollab.eval.task import evaluate
from toollab.schema import Instance
from toollab.templates.base import get_template


def _counter() -> Any:
    import llama_cpp

    from toollab.models.bundled import bundled_gguf_path

    llm = llama_cpp.Llama(model_path=str(bundled_gguf_path()), vocab_only=True, verbose=False)
    fmt = llama_cpp.llama_chat_format.Jinja2ChatFormatter(
        template=llm.metadata["tokenizer.chat_template"], eos_token="", bos_token=""
    )

    def count(messages: list[dict[str, object]]) -> int:
        text = fmt(messages=messages).prompt
        return len(llm.tokenize(text.encode(), add_bos=False, special=True))

    return count


def tokens(splits: dict[str, list[Instance]], ks: list[int]) -> dict[str, Any]:
    count = _counter()
    template = get_template("json")
    options = AgentOptions(constrained=True)
    agents: dict[str, Any] = {"single": get_agent("single")}
    agents.update({f"action k_api={k}": ActionAgent(k_api=k) for k in ks})
    per: dict[str, list[int]] = {name: [] for name in agents}
    for insts in splits.values():
        for name, agent in agents.items():
            per[name].extend(count(agent.ask(i, template, options).messages) for i in insts)
    return {
        name: {"mean": round(statistics.mean(v)), "max": max(v), "n": len(v)}
        for name, v in per.items()
    }


def make_agent(setting: str) -> tuple[Agent, str]:
    """``single``, or ``K_API:K_DEMOS[:DECLINES]`` for the action agent; with its label."""
    if setting == "single":
        return get_agent("single"), "single"
    k, k_demos, *rest = setting.split(":")
    declines = float(rest[0]) if rest else 0.0
    agent = ActionAgent(k_api=int(k), k_demos=int(k_demos), declines=declines)
    label = f"k_api={k} k_demos={k_demos}" + (f" declines={declines}" if declines else "")
    return agent, label


def success(n: int, settings: list[str], models: list[str], out: Path) -> dict[str, Any]:
    """The bench's own tasks (token budgets, retrieved tools) over the validation splits."""
    figures: dict[str, Any] = {}
    for model in models:
        for setting in settings:
            t0 = time.perf_counter()
            agent, label = make_agent(setting)
            tasks = bench_tasks(env_names(), limit=n, seed=0, agent=agent, split="validation")
            name = f"{model} {label}"
            slug = f"{model.replace(':', '-')}-" + setting.replace(":", "-")
            log = evaluate(tasks, model, log_dir=out / slug, seed=0)
            envs = [summary_of(t) for t in log.tasks]
            row: dict[str, Any] = {"seconds": round(time.perf_counter() - t0, 1)}
            for fig in ("success", "crash_rate", "tool_f1", "param_f1", "decision_acc"):
                vals = [getattr(e, fig) for e in envs if getattr(e, fig) is not None]
                row[fig] = round(100 * sum(vals) / len(vals), 1) if vals else None
            row["per_env_success"] = {
                e.env: None if e.success is None else round(100 * e.success, 1) for e in envs
            }
            figures[name] = row
            print(json.dumps({name: row}), flush=True)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="tokens,success")
    ap.add_argument("--k-api", default="5,8,10,15,20", help="k_api values (tokens part)")
    ap.add_argument(
        "--settings", default="10:3,20:3,20:0", help="single or K_API:K_DEMOS[:DECLINES] (success)"
    )
    ap.add_argument("--n", type=int, default=6, help="validation instances per environment")
    ap.add_argument("--model", action="append", default=[])
    ap.add_argument("--out", type=Path, default=Path("/tmp/action_val"))
    args = ap.parse_args()
    ks = [int(k) for k in args.k_api.split(",")]
    splits = {env: generate(env, "validation", args.n, 0) for env in env_names()}
    result: dict[str, Any] = {}
    if "tokens" in args.parts:
        result["tokens"] = tokens(splits, ks)
    if "success" in args.parts:
        models = args.model or ["bundled:smollm2-135m-tools"]
        settings = [x.strip() for x in args.settings.split(",") if x.strip()]
        result["success"] = success(args.n, settings, models, args.out)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
