"""The CPU proxy of training overhead: ``toollab train`` (this tree and an old commit) against a
plain PyTorch loop over the very same batches, on a model whose compute is small.

The model is the one ``../shared/tools/gpu-train/gpu_bench.py --tiny`` builds: the bundled
SmolLM2-135M's config cut to 2 layers of hidden size 64 (random weights, seed 0) with the real
tokenizer and its 49,152-token vocabulary, written once into a transformers folder that both
trainers take as ``base``.  All runs train the shipped recipe (``smollm2-135m-tools``: its data,
its batch shape, its bookkeeping) for ``--steps`` optimizer steps, LoRA r 16 on the 7
projections, float32, ``--threads`` threads, each in its own process:

- ``old``: ``toollab train`` of commit ``--old`` (default 02107a5, checked out with
  ``git worktree`` into ``--old-dir``) with the recipe of that commit (padded batches);
- ``new``: ``toollab train`` of this tree with this tree's recipe (packed sequences);
- ``plain``: a plain loop (peft LoRA, ``torch.optim.AdamW``, the loss of the model's forward,
  gradient accumulation) over the very batches the ``new`` trainer draws (its own data loader,
  same seed), with the same gradient checkpointing setting.

Tokens/s is training tokens (non-padding input tokens) / the seconds of the training loop (the
trainer's ``train_runtime``, validation passes and checkpoints inside it included; the plain
loop's wall time).  The ratio toollab ÷ plain loop is the figure the proxy is for.

    python benchmarks/bench_train_proxy.py [--steps 20] [--threads 2] [--max-examples 0]
        [--runs old,new,plain] [--profile DIR] [--json OUT.json]

``--profile DIR`` writes a cProfile of each run (``DIR/<run>.prof``).  Needs the recipe data
(``scripts/recipe-data.sh ../shared/data``, writes ./sft-data/).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
RECIPE = "src/toollab/resources/train/recipes/smollm2-135m-tools.yaml"


def tiny_model(folder: Path) -> Path:
    """gpu_bench.py --tiny's model: the bundled config cut to 2 layers x hidden 64, seed 0."""
    if (folder / "config.json").is_file():
        return folder
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from toollab.train.base import resolve_base

    src = resolve_base("bundled").folder
    cfg = AutoConfig.from_pretrained(str(src))
    cfg.num_hidden_layers, cfg.hidden_size, cfg.intermediate_size = 2, 64, 128
    cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim = 4, 2, 16
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(src)).save_pretrained(str(folder))
    return folder


def _overrides(a: dict[str, Any]) -> dict[str, Any]:
    return {
        "base": a["base"],
        "output_dir": a["out"],
        "max_steps": a["steps"],
        "threads": a["threads"],
        "overwrite": True,
        **({"max_examples": a["max_examples"]} if a["max_examples"] else {}),
    }


def run_toollab(a: dict[str, Any]) -> dict[str, Any]:
    """One ``toollab train`` run of the recipe (the tree on sys.path decides old or new)."""
    from toollab.train.config import TrainConfig
    from toollab.train.sft import train_sft

    cfg = TrainConfig.load(a["recipe"], _overrides(a), paths_from=Path(a["cwd"]))
    t0 = time.perf_counter()
    res = train_sft(cfg, quiet=True)
    info = json.loads((Path(a["out"]) / "run.json").read_text())
    return {
        "tokens": res.train_tokens,
        "train_runtime_s": res.train_runtime_s,
        "tokens_per_s": res.train_tokens / res.train_runtime_s,
        "steps": res.global_step,
        "wall_s_with_setup": time.perf_counter() - t0,
        "sequences": info.get("sequences"),
        "peak_rss_mib": res.peak_rss_mib,
    }


def run_plain(a: dict[str, Any]) -> dict[str, Any]:
    """The new trainer's own batches, through a plain LoRA loop."""
    import torch
    from peft import get_peft_model
    from rich.console import Console

    from toollab.train import sft
    from toollab.train.config import TrainConfig

    cfg = TrainConfig.load(a["recipe"], _overrides(a), paths_from=Path(a["cwd"]))
    torch.set_num_threads(cfg.threads)
    console = Console(stderr=True, quiet=True)
    base, _, tok, seqs = sft.prepare(cfg, console)
    model = sft._load_model(cfg, base)
    peft_config = sft._peft_config(cfg, model)
    batch = sft.device_batch(cfg, model)
    trainer, _, _ = sft._make_trainer(cfg, model, tok, peft_config, seqs, batch, console, True)
    accum = batch.accumulation
    collate = trainer.data_collator
    row_tokens: list[int] = []

    def counting(rows: list[dict[str, Any]]) -> Any:  # the real (unpadded) tokens of a batch
        row_tokens.append(sum(len(r["input_ids"]) for r in rows))
        return collate(rows)

    trainer.data_collator = counting
    batches: list[dict[str, Any]] = []
    for b in trainer.get_train_dataloader():  # the trainer's sampler, seed and collator
        batches.append({k: v.to("cpu") for k, v in b.items()})
        if len(batches) == a["steps"] * accum:
            break
    del trainer, model
    from transformers import AutoModelForCausalLM, set_seed

    set_seed(cfg.seed)
    model = AutoModelForCausalLM.from_pretrained(str(base.folder), dtype=torch.float32)
    model.config.use_cache = False
    if batch.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    model = get_peft_model(model, peft_config)
    model.train()
    opt = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad], lr=cfg.learning_rate, weight_decay=0.0
    )
    tokens = sum(int(b["input_ids"].numel()) for b in batches)
    real = sum(row_tokens[: len(batches)])
    t0 = time.perf_counter()
    for i, b in enumerate(batches):
        loss = model(**b).loss / accum
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad(set_to_none=True)
    dt = time.perf_counter() - t0
    return {
        "tokens": tokens,
        "real_tokens": real,
        "padding_share": 1 - real / tokens,
        "train_runtime_s": dt,
        "tokens_per_s": tokens / dt,
        "steps": len(batches) // accum,
        "micro_batches": len(batches),
    }


def _child(which: str, a: dict[str, Any]) -> dict[str, Any]:
    import torch

    torch.set_num_threads(a["threads"])
    fn = run_plain if which == "plain" else run_toollab
    if a.get("profile"):
        import cProfile

        prof = cProfile.Profile()
        res = prof.runcall(fn, a)
        prof.dump_stats(str(Path(a["profile"]) / f"{which}.prof"))
        return res
    return fn(a)


def ensure_old(commit: str, folder: Path) -> Path:
    if not (folder / "src" / "toollab").is_dir():
        subprocess.run(
            ["git", "-C", str(REPO), "worktree", "add", "--detach", str(folder), commit],
            check=True,
            capture_output=True,
        )
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-examples", type=int, default=0)
    ap.add_argument("--runs", default="old,new,plain")
    ap.add_argument("--old", default="02107a5")
    ap.add_argument("--old-dir", default="/tmp/toollab-old")
    ap.add_argument("--model-dir", default=str(Path(tempfile.gettempdir()) / "toollab-tiny"))
    ap.add_argument("--profile", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--args", default="", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.child:
        print("RESULT " + json.dumps(_child(ns.child, json.loads(ns.args))), flush=True)
        return
    base = tiny_model(Path(ns.model_dir))
    old = ensure_old(ns.old, Path(ns.old_dir)) if "old" in ns.runs else None
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for which in ns.runs.split(","):
            tree = old if which == "old" else REPO
            assert tree is not None
            a = {
                "base": str(base),
                "out": str(Path(tmp) / which),
                "steps": ns.steps,
                "threads": ns.threads,
                "max_examples": ns.max_examples,
                "recipe": str(tree / RECIPE),
                "cwd": str(REPO),  # the recipe's data paths: ./sft-data of this tree
                "profile": ns.profile,
            }
            env = {**os.environ, "PYTHONPATH": str(tree / "src")}
            proc = subprocess.run(
                [sys.executable, __file__, "--child", which, "--args", json.dumps(a)],
                env=env,
                capture_output=True,
                text=True,
                cwd=str(REPO),
            )
            line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
            if proc.returncode or not line:
                sys.exit(f"{which} failed:\n{proc.stderr[-4000:]}")
            results[which] = json.loads(line[-1][7:])
            print(which, json.dumps(results[which]), flush=True)
    plain = results.get("plain", {}).get("tokens_per_s")
    if plain:
        for which in ("old", "new"):
            if which in results:
                results[f"{which}_over_plain"] = results[which]["tokens_per_s"] / plain
    if "old" in results and "new" in results:
        results["new_over_old"] = results["new"]["tokens_per_s"] / results["old"]["tokens_per_s"]
    print(json.dumps(results, indent=1))
    if ns.json:
        Path(ns.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
