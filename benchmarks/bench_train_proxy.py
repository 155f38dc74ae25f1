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
  same seed), with the same gradient checkpointing setting;
- ``plain_lean``: the same loop with toollab's loss (``target_loss``: the output layer and the
  softmax on the target positions only), so that toollab ÷ this loop is the trainer's overhead
  alone.

Tokens/s is training tokens (non-padding input tokens) / the seconds of the training loop (the
trainer's ``train_runtime``, validation passes and checkpoints inside it included; the plain
loop's wall time).  The ratio toollab ÷ plain loop is the figure the proxy is for.

    python benchmarks/bench_train_proxy.py [--steps 20] [--threads 2] [--max-examples 0]
        [--runs old,new,plain] [--profile DIR] [--json OUT.json] [--val-loss N]
        [--steps-new K] [--shape tiny|full|real] [--kit DIR] [--batch-size B]
        [--recipe NAME] [--old-recipe NAME]

``--recipe`` / ``--old-recipe`` name the recipe each tree trains (default the shipped
``smollm2-135m-tools`` of each tree); to compare the training settings alone on the same data,
train this tree's ``smollm2-135m-tools-v1`` (the first recipe's data, packed) against the old
commit's ``smollm2-135m-tools`` (the same data, padded).

``--profile DIR`` writes a cProfile of each run (``DIR/<run>.prof``).  ``--val-loss N``: after
training, the loss per target token of the adapter on the first N examples of the recipe's
validation split, one by one (the same measure for old and new); ``--steps-new K`` trains the
new run K steps (to match the old run's training tokens).  ``--shape real`` trains the bundled
model's real weights, ``full`` a random-weight model of its shape (the GPU comparison,
``benchmarks/gpu_train_compare.sh``), with ``--kit`` a folder of ``cfg/`` and ``tok/`` where the
bundled model is not installed.  On a GPU each run also reports the device, peak memory and
the model-FLOPs utilisation (6 x parameters per token, bf16 dense peak).  Needs the recipe data
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
RECIPES = Path("src/toollab/resources/train/recipes")
#: the recipe every run trains unless --recipe / --old-recipe name another (same name, each tree's file)
RECIPE_NAME = "smollm2-135m-tools"


def make_model(folder: Path, shape: str, kit: str = "") -> Path:
    """A random-weight model (seed 0) with the real tokenizer: ``tiny`` is gpu_bench.py --tiny's
    (the bundled config cut to 2 layers x hidden 64), ``full`` the bundled SmolLM2-135M's shape.
    ``kit``: a folder with ``cfg/`` and ``tok/`` (the gpu-train kit's export) instead of the
    bundled model's converted folder."""
    if (folder / "config.json").is_file():
        return folder
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    if kit:
        cfg_src, tok_src = Path(kit) / "cfg", Path(kit) / "tok"
    else:
        from toollab.train.base import resolve_base

        cfg_src = tok_src = resolve_base("bundled").folder
    cfg = AutoConfig.from_pretrained(str(cfg_src))
    if shape == "tiny":
        cfg.num_hidden_layers, cfg.hidden_size, cfg.intermediate_size = 2, 64, 128
        cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim = 4, 2, 16
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(str(tok_src)).save_pretrained(str(folder))
    return folder


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _device_figures() -> dict[str, Any]:
    """The device, and on a GPU its peak memory."""
    import torch

    if not _cuda():
        return {"device": "cpu"}
    torch.cuda.synchronize()
    return {
        "device": torch.cuda.get_device_name(0),
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
    }


def _overrides(a: dict[str, Any]) -> dict[str, Any]:
    return {
        "base": a["base"],
        "output_dir": a["out"],
        "max_steps": a["steps"],
        "threads": a["threads"],
        "overwrite": True,
        **({"max_examples": a["max_examples"]} if a["max_examples"] else {}),
        # --batch-size B: B sequences a step (no accumulation)
        **(
            {"batch_size": a["batch_size"], "gradient_accumulation_steps": 1}
            if a.get("batch_size")
            else {}
        ),
        **({"validation_fraction": 0.0} if a.get("no_eval") else {}),
        **({"torch_compile": True} if a.get("compile") else {}),
        **({"learning_rate": a["lr"]} if a.get("lr") else {}),
    }


def held_out_loss(cfg: Any, adapter: Path, n: int) -> dict[str, float]:
    """Loss per target token of the trained adapter on the first ``n`` examples of the run's
    validation split (one by one, unpacked: the same measure for every trainer)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from toollab.train.base import resolve_base
    from toollab.train.data import IGNORE_INDEX, build_mixture, encode

    mix = build_mixture(cfg.data, [], 0.02, cfg.seed)  # the recipe's split, whatever was trained
    folder = str(resolve_base(cfg.base).folder)
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model = PeftModel.from_pretrained(model, str(adapter)).eval()
    total = count = 0.0
    with torch.no_grad():
        for ex in mix.validation[:n]:
            e = encode(ex, tok, cfg.max_length, cfg.truncation)
            labels = torch.tensor([e.labels])
            k = int((labels[:, 1:] != IGNORE_INDEX).sum())
            if k:
                out = model(input_ids=torch.tensor([e.input_ids]), labels=labels)
                total += float(out.loss) * k
                count += k
    return {"held_out_loss": total / count, "held_out_targets": count, "held_out_examples": n}


def run_toollab(a: dict[str, Any]) -> dict[str, Any]:
    """One ``toollab train`` run of the recipe (the tree on sys.path decides old or new)."""
    from toollab.train.config import TrainConfig
    from toollab.train.sft import train_sft

    cfg = TrainConfig.load(a["recipe"], _overrides(a), paths_from=Path(a["cwd"]))
    t0 = time.perf_counter()
    res = train_sft(cfg, quiet=True)
    wall = time.perf_counter() - t0
    info = json.loads((Path(a["out"]) / "run.json").read_text())
    held = (
        held_out_loss(cfg, Path(a["out"]) / "adapter", a["val_loss"]) if a.get("val_loss") else {}
    )
    return {
        **held,
        "tokens": res.train_tokens,
        "train_runtime_s": res.train_runtime_s,
        "tokens_per_s": res.train_tokens / res.train_runtime_s,
        "tokens_per_s_steps": res.tokens_per_s,  # at the last step, before the final eval
        "steps": res.global_step,
        "wall_s_with_setup": wall,
        "sequences": info.get("sequences"),
        "device_batch": info.get("device_batch"),
        "peak_rss_mib": res.peak_rss_mib,
        **_device_figures(),
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
    dev = "cuda" if _cuda() else "cpu"
    dtype = torch.bfloat16 if sft._device_precision(cfg)["bf16"] else torch.float32
    model = AutoModelForCausalLM.from_pretrained(str(base.folder), dtype=dtype).to(dev)
    model.config.use_cache = False
    if batch.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    model = get_peft_model(model, peft_config)
    model.train()
    if a.get("compile"):  # as transformers' torch_compile switch does
        model = torch.compile(model)
    opt = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=cfg.learning_rate,
        weight_decay=0.0,
        fused=dev == "cuda",
    )
    batches = [{k: v.to(dev) for k, v in b.items()} for b in batches]
    if dev == "cuda":
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
    tokens = sum(int(b["input_ids"].numel()) for b in batches)
    real = sum(row_tokens[: len(batches)])
    lean = a.get("lean", False)
    t0 = time.perf_counter()
    for i, b in enumerate(batches):
        # plain_lean: toollab's loss (the output layer on target positions only)
        out = sft.target_loss(model, dict(b), None)[0] if lean else model(**b).loss
        loss = out / accum
        loss.backward()
        if (i + 1) % accum == 0:
            opt.step()
            opt.zero_grad(set_to_none=True)
    if dev == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    return {
        "tokens": tokens,
        "real_tokens": real,
        "padding_share": 1 - real / tokens,
        "train_runtime_s": dt,
        "tokens_per_s": tokens / dt,
        "steps": len(batches) // accum,
        "micro_batches": len(batches),
        "gradient_checkpointing": batch.gradient_checkpointing,
        **_device_figures(),
    }


def _child(which: str, a: dict[str, Any]) -> dict[str, Any]:
    import torch

    torch.set_num_threads(a["threads"])
    fn = run_plain if which.startswith("plain") else run_toollab
    a["lean"] = which == "plain_lean"
    if a.get("profile"):
        import cProfile

        prof = cProfile.Profile()
        res = prof.runcall(fn, a)
        prof.dump_stats(str(Path(a["profile"]) / f"{which}.prof"))
        return res
    return fn(a)


# dense bf16 peak FLOP/s of the cards a session may be lent, for MFU (6 x parameters per token)
PEAK_BF16 = {"H100": 989.4e12, "H200": 989.4e12}


def _bundled_folder() -> Path:
    from toollab.train.base import resolve_base

    return resolve_base("bundled").folder


def _n_params(base: Path) -> int:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with torch.device("meta"):
        m = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(base)))
    return sum(p.numel() for p in m.parameters())


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
    ap.add_argument("--runs", default="old,new,plain,plain_lean")
    ap.add_argument("--old", default="02107a5")
    ap.add_argument("--old-dir", default="/tmp/toollab-old")
    ap.add_argument(
        "--shape", choices=["tiny", "full", "real"], default="tiny", help="real: bundled weights"
    )
    ap.add_argument("--no-eval", action="store_true", help="no validation split, no eval passes")
    ap.add_argument("--val-loss", type=int, default=0, help="held-out loss on N examples after")
    ap.add_argument("--steps-new", type=int, default=0, help="steps of the new run (same tokens)")
    ap.add_argument("--lr-new", type=float, default=0.0, help="learning rate of the new run")
    ap.add_argument("--kit", default="", help="folder with cfg/ and tok/ (no bundled model)")
    ap.add_argument("--batch-size", type=int, default=0, help="sequences a step, no accumulation")
    ap.add_argument("--recipe", default=RECIPE_NAME, help="recipe of this tree (new, plain)")
    ap.add_argument("--old-recipe", default=RECIPE_NAME, help="recipe of the old commit")
    ap.add_argument("--model-dir", default="")
    ap.add_argument("--compile", action="store_true", help="torch.compile (toollab and plain)")
    ap.add_argument("--profile", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--args", default="", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.child:
        print("RESULT " + json.dumps(_child(ns.child, json.loads(ns.args))), flush=True)
        return
    model_dir = ns.model_dir or str(Path(tempfile.gettempdir()) / f"toollab-{ns.shape}")
    base = "bundled" if ns.shape == "real" else make_model(Path(model_dir), ns.shape, ns.kit)
    old = ensure_old(ns.old, Path(ns.old_dir)) if "old" in ns.runs else None
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for which in ns.runs.split(","):
            tree = old if which == "old" else REPO
            assert tree is not None
            a = {
                "base": str(base),
                "out": str(Path(tmp) / which),
                "steps": ns.steps_new if which != "old" and ns.steps_new else ns.steps,
                "threads": ns.threads,
                "max_examples": ns.max_examples,
                "recipe": str(
                    tree / RECIPES / f"{ns.old_recipe if which == 'old' else ns.recipe}.yaml"
                ),
                "cwd": str(REPO),  # the recipe's data paths: ./sft-data of this tree
                "profile": ns.profile,
                "batch_size": ns.batch_size,
                "no_eval": ns.no_eval,
                "val_loss": ns.val_loss,
                "compile": ns.compile and which != "old",
                "lr": ns.lr_new if which != "old" else 0.0,
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
    for ref in ("plain", "plain_lean"):
        plain = results.get(ref, {}).get("tokens_per_s")
        for which in ("old", "new"):
            if plain and which in results:
                results[f"{which}_over_{ref}"] = results[which]["tokens_per_s"] / plain
    params = _n_params(Path(base) if base != "bundled" else _bundled_folder())
    for r in results.values():
        if isinstance(r, dict) and "tokens_per_s" in r and r.get("device", "cpu") != "cpu":
            peak = PEAK_BF16.get(r["device"].split()[1] if " " in r["device"] else "", 0.0)
            r["mfu_6n"] = 6 * params * r["tokens_per_s"] / peak if peak else None
    results["params"] = params
    if "old" in results and "new" in results:
        results["new_over_old"] = results["new"]["tokens_per_s"] / results["old"]["tokens_per_s"]
    print(json.dumps(results, indent=1))
    if ns.json:
        Path(ns.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
