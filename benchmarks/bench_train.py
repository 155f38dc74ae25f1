"""Training throughput: ``toollab train sft`` against bare TRL ``SFTTrainer``, same data and settings.

Both runs train LoRA (r 16, alpha 32, the 7 linear projections) on the bundled SmolLM2-135M's
converted transformers folder, batch 4, max_length 512, gradient checkpointing, float32 on CPU,
seed 42, for ``--steps`` optimizer steps on the same token ids and labels (toollab's encoding of
the SFT file).  The bare TRL run is what a user would write by hand: an ``SFTTrainer`` with a
pre-tokenized dataset, a ``LoraConfig`` and an ``SFTConfig`` — no toollab callbacks, checks or
checkpoint bookkeeping.  Tokens/s is non-padding input tokens / the trainer's ``train_runtime``,
for both.  Each run is its own process (peak RSS is per process), alternating, ``--repeats`` times.

    python benchmarks/bench_train.py [--data FILE.jsonl] [--steps 8] [--repeats 2] [--threads 2]

Without ``--data`` it trains on 64 tool-use examples rendered with the model's chat template
(tests/train_data.py).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]


def _settings(
    out: Path, data: Path, steps: int, threads: int, precision: str, base: str = "bundled"
) -> dict[str, Any]:
    return {
        "base": base,
        "precision": precision,
        "output_dir": str(out),
        "data": [str(data)],
        "validation_fraction": 0.0,
        "max_steps": steps,
        "save_steps": 10**6,
        "logging_steps": 1,
        "batch_size": 4,
        "max_length": 512,
        "threads": threads,
        "seed": 42,
        "mask_check_batches": 8,
    }


def run_toollab(cfg: dict[str, Any]) -> dict[str, Any]:
    from toollab.train.config import TrainConfig
    from toollab.train.sft import train_sft

    res = train_sft(TrainConfig.from_dict(cfg), quiet=True)
    return {"tokens": res.train_tokens, "runtime_s": res.train_runtime_s, "steps": res.global_step}


def run_trl(cfg: dict[str, Any]) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from toollab.train.base import resolve_base
    from toollab.train.config import TrainConfig
    from toollab.train.data import build_mixture, encode_all

    c = TrainConfig.from_dict(cfg)
    torch.set_num_threads(c.threads)
    folder = str(resolve_base(c.base).folder)
    tok = AutoTokenizer.from_pretrained(folder)
    mix = build_mixture(c.data, [], 0.0, c.seed)
    enc, _ = encode_all(mix.train, tok, c.max_length, c.truncation)
    ds = Dataset.from_dict(
        {"input_ids": [e.input_ids for e in enc], "labels": [e.labels for e in enc]}
    )
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    model.config.use_cache = False
    args = SFTConfig(
        output_dir=c.output_dir,
        per_device_train_batch_size=c.batch_size,
        learning_rate=c.learning_rate,
        lr_scheduler_type=c.lr_scheduler,
        warmup_steps=float(c.warmup_ratio),
        max_steps=c.max_steps,
        gradient_checkpointing=True,
        seed=c.seed,
        data_seed=c.seed,
        logging_steps=1,
        save_strategy="no",
        max_length=None,
        report_to=[],
        disable_tqdm=True,
        include_num_input_tokens_seen="non_padding",
        use_cpu=True,
    )
    lora = LoraConfig(
        r=c.lora_r,
        lora_alpha=c.lora_alpha,
        lora_dropout=c.lora_dropout,
        target_modules=list(c.lora_targets),
        bias="none",
        task_type="CAUSAL_LM",
    )
    trainer = SFTTrainer(
        model=model, args=args, train_dataset=ds, processing_class=tok, peft_config=lora
    )
    out = trainer.train()
    return {
        "tokens": int(trainer.state.num_input_tokens_seen),
        "runtime_s": float(out.metrics["train_runtime"]),
        "steps": trainer.state.global_step,
    }


def _child(variant: str, cfg_json: str) -> None:
    cfg = json.loads(cfg_json)
    res = (run_toollab if variant == "toollab" else run_trl)(cfg)
    res["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    res["tokens_per_s"] = res["tokens"] / res["runtime_s"]
    print("RESULT " + json.dumps(res), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--base", default="bundled", help="bundled, a .gguf file or a model folder")
    ap.add_argument(
        "--precision",
        nargs="+",
        default=["fp32", "bf16"],
        help="precisions to compare at (both runs use the same one)",
    )
    ap.add_argument("--child", nargs=2, metavar=("VARIANT", "CONFIG"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(*a.child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        data = a.data
        if data is None:
            sys.path.insert(0, str(REPO / "tests"))
            import train_data
            from transformers import AutoTokenizer

            from toollab.train.base import resolve_base

            tok = AutoTokenizer.from_pretrained(str(resolve_base(a.base).folder))
            data = train_data.write_examples(Path(tmp) / "train.jsonl", tok, 64)
        results: dict[str, list[dict[str, Any]]] = {}
        for prec in a.precision:
            for r in range(a.repeats):
                order = ["trl", "toollab"] if r % 2 == 0 else ["toollab", "trl"]
                for name in order:
                    variant = f"{name}-{prec}"
                    results.setdefault(variant, [])
                    cfg = _settings(
                        Path(tmp) / f"{variant}-{r}", data, a.steps, a.threads, prec, a.base
                    )
                    path = [str(REPO / "src"), os.environ.get("PYTHONPATH", "")]
                    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
                    proc = subprocess.run(
                        [sys.executable, __file__, "--child", name, json.dumps(cfg)],
                        capture_output=True,
                        text=True,
                        env=env,
                        check=False,
                    )
                    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
                    if proc.returncode or not line:
                        sys.exit(f"{variant} failed:\n{proc.stderr[-3000:]}")
                    res = json.loads(line[-1][7:])
                    results[variant].append(res)
                    print(
                        f"{variant:8s} run {r}: {res['tokens_per_s']:.1f} tok/s, "
                        f"{res['tokens']} tokens in {res['runtime_s']:.1f} s, "
                        f"peak RSS {res['peak_rss_mib']:.0f} MiB",
                        file=sys.stderr,
                    )
    tps = {v: statistics.median(x["tokens_per_s"] for x in rs) for v, rs in results.items()}
    rss = {v: max(x["peak_rss_mib"] for x in rs) for v, rs in results.items()}
    summary = {
        "steps": a.steps,
        "repeats": a.repeats,
        "threads": a.threads,
        "tokens_per_s": tps,
        "ratio_toollab_over_trl": {p: tps[f"toollab-{p}"] / tps[f"trl-{p}"] for p in a.precision},
        "peak_rss_mib": rss,
        "runs": results,
    }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
