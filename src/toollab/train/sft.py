"""Supervised fine-tuning on TRL's ``SFTTrainer`` with PEFT LoRA (or full fine-tuning).

:func:`train_sft` runs one :class:`~toollab.train.config.TrainConfig` on sequences tokenised
and packed once ahead of the steps (:mod:`toollab.train.packing`), with a loss computed on the
target positions only (:func:`target_loss`) and, on a GPU, the step's batch in as few
micro-batches as fit (:func:`device_batch`).  Everything that can be
wrong with the input is found before the first step: the config, the data (every line, every
span), the base model, the disk space, and — the silent failure of assistant-only loss — a
sample of real training batches is checked to carry loss tokens.  A run writes into
``output_dir``: ``checkpoint-N/`` folders (complete ones marked), ``run.json`` (config, data,
figures), and at the end ``adapter/`` (LoRA) or ``model/`` (full), plus ``merged/`` when asked,
each written beside its place and renamed into it.  Started again on the same ``output_dir`` a
run resumes from its newest complete checkpoint (optimizer, scheduler, RNG and data position).
"""

from __future__ import annotations

import errno
import functools
import json
import random
import resource
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from toollab.data.atomic import MARK, mark_folder, write_dir_atomic, write_text_atomic
from toollab.errors import BackendError, InputError
from toollab.models.bundled import BUNDLED_MODELS, bundled_adapter_path
from toollab.train import checkpoints as ckpt
from toollab.train.base import BaseModel, file_sha256, resolve_base
from toollab.train.card import CARD_NAME, render_run_card
from toollab.train.config import TrainConfig
from toollab.train.data import IGNORE_INDEX, Mixture, build_mixture
from toollab.train.export import import_adapter_gguf
from toollab.train.outputs import check_run_folder
from toollab.train.packing import PackedCollator, Sequences, build_sequences
from toollab.train.progress import ProgressCallback


@dataclass
class TrainResult:
    """What a finished run produced and measured (also written to ``run.json``)."""

    output_dir: Path
    final: Path
    global_step: int
    resumed_from: str | None
    train_tokens: int
    tokens_per_s: float
    train_runtime_s: float
    first_loss: float | None
    last_loss: float | None
    best_eval_loss: float | None
    best_checkpoint: str | None
    peak_rss_mib: float
    figures: dict[str, Any] = field(default_factory=dict)


def _device_precision(cfg: TrainConfig) -> dict[str, bool]:
    import torch

    p = cfg.precision
    if p == "auto":
        p = "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "fp32"
    return {"bf16": p == "bf16", "fp16": p == "fp16"}


@dataclass(frozen=True)
class DeviceBatch:
    """How one optimizer step's sequences run on this device."""

    micro_batch: int
    accumulation: int
    gradient_checkpointing: bool
    reason: str


def plan_micro_batch(
    total: int, max_length: int, bytes_per_token: float, budget_bytes: float
) -> int | None:
    """The largest divisor of ``total`` whose micro-batch's activations fit ``budget_bytes``."""
    for micro in range(total, 0, -1):
        if total % micro == 0 and micro * max_length * bytes_per_token <= budget_bytes:
            return micro
    return None


def _activation_bytes_per_token(config: Any, elt: int) -> float:
    """A generous estimate of what one token keeps for the backward pass without gradient
    checkpointing: per layer 16 hidden-sized and 6 intermediate-sized tensors, and the logits
    (in the model's type, their float32 copy and its gradient)."""
    h = int(config.hidden_size)
    inter = int(getattr(config, "intermediate_size", 4 * h))
    layers = int(config.num_hidden_layers)
    return layers * (16 * h + 6 * inter) * elt + int(config.vocab_size) * (elt + 8)


def device_batch(cfg: TrainConfig, model: Any) -> DeviceBatch:
    """The config's micro-batch and accumulation, or on a GPU (``fit_batch_to_device``) the same
    global batch in as few micro-batches as fit in 60 % of the free memory, without gradient
    checkpointing."""
    given = DeviceBatch(
        cfg.batch_size, cfg.gradient_accumulation_steps, cfg.gradient_checkpointing, "config"
    )
    if not (cfg.fit_batch_to_device and _cuda()):
        return given
    import torch

    free, _ = torch.cuda.mem_get_info()
    elt = 2 if _device_precision(cfg)["bf16"] or _device_precision(cfg)["fp16"] else 4
    weights = sum(p.numel() for p in model.parameters()) * elt
    total = cfg.batch_size * cfg.gradient_accumulation_steps
    per_token = _activation_bytes_per_token(model.config, elt)
    micro = plan_micro_batch(total, cfg.max_length, per_token, 0.6 * free - weights)
    if micro is None:
        return given
    return DeviceBatch(micro, total // micro, False, f"fits {free / 2**30:.0f} GiB free")


def check_label_mask(
    collator: Any, dataset: Any, batch_size: int, n_batches: int, seed: int
) -> dict[str, float]:
    """Collate ``n_batches`` random batches with the trainer's own collator; refuse to train
    when one of them has no loss token (labels all -100)."""
    if n_batches == 0:
        return {}
    bs = batch_size
    order = list(range(len(dataset)))
    random.Random(seed).shuffle(order)
    targets = tokens = 0
    checked = 0
    for b in range(min(n_batches, (len(order) + bs - 1) // bs)):
        rows = [dataset[i] for i in order[b * bs : (b + 1) * bs]]
        batch = collator(rows)
        labels = batch["labels"]
        n_target = int((labels != IGNORE_INDEX).sum())
        n_tok = int(batch["attention_mask"].sum()) if "attention_mask" in batch else labels.numel()
        if n_target == 0:
            raise InputError(
                f"training batch {b} (of the {n_batches} checked before the first step) has no "
                "loss token: every label is masked, so the model would learn nothing. Check that "
                "the examples' spans cover the assistant outputs and survive max_length/truncation",
                where="label mask",
            )
        targets += n_target
        tokens += n_tok
        checked += 1
    return {
        "batches": checked,
        "target_tokens": targets,
        "tokens": tokens,
        "target_share": targets / max(tokens, 1),
    }


def _need_bytes(model: Any, cfg: TrainConfig) -> int:
    """Disk the run will take: its checkpoints (weights trained, optimizer state) and the final
    weights, counted from the model before anything is wrapped or written."""
    import torch

    total = sum(p.numel() for p in model.parameters())
    if hasattr(model, "peft_config"):  # an adapter already on it (init_adapter)
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    elif cfg.method == "lora":
        targets = set(cfg.lora_targets)
        trainable = sum(
            cfg.lora_r * (m.in_features + m.out_features)
            for name, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) and name.rsplit(".", 1)[-1] in targets
        )
    else:
        trainable = total
    per_ckpt = trainable * 4 * 3 + (4 << 20)  # weights + AdamW's two moments, float32
    final = trainable * 4 + (total * 4 if cfg.save_merged else 0)
    return per_ckpt * (cfg.save_total_limit + 2) + final + (16 << 20)


def _sft_args(cfg: TrainConfig, has_eval: bool, batch: DeviceBatch) -> Any:
    from trl import SFTConfig

    eval_steps = cfg.eval_steps or cfg.save_steps
    kw: dict[str, Any] = dict(_device_precision(cfg))
    if has_eval:
        kw |= {
            "eval_strategy": "steps",
            "eval_steps": eval_steps,
            "load_best_model_at_end": True,
            "metric_for_best_model": "eval_loss",
            "greater_is_better": False,
            "per_device_eval_batch_size": batch.micro_batch,
        }
    return SFTConfig(
        output_dir=cfg.output_dir,
        per_device_train_batch_size=batch.micro_batch,
        gradient_accumulation_steps=batch.accumulation,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type=cfg.lr_scheduler,
        warmup_steps=float(cfg.warmup_ratio),  # a float in [0, 1): a share of the steps
        weight_decay=cfg.weight_decay,
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps or -1,
        gradient_checkpointing=batch.gradient_checkpointing,
        seed=cfg.seed,
        data_seed=cfg.seed,
        logging_steps=cfg.logging_steps,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=cfg.save_total_limit,
        max_length=None,
        completion_only_loss=False,  # the labels column already masks all but the spans
        packing=False,  # packed ahead of the steps (toollab.train.packing), once, cached
        use_liger_kernel=cfg.liger_kernel,
        torch_compile=cfg.torch_compile,
        report_to=[],
        disable_tqdm=True,
        # packed rows have no attention mask, and their pad id (<|im_end|> here) is also a real
        # token: count them all (the padding is only the few tokens at the end of a short row)
        include_num_input_tokens_seen="all" if cfg.packing else "non_padding",
        dataloader_num_workers=0,
        use_cpu=not _cuda(),
        **kw,
    )


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def prepare(cfg: TrainConfig, console: Console) -> tuple[BaseModel, Mixture, Any, Sequences]:
    """Everything before the model: base, data, tokenizer, the training sequences (encoded and
    packed once, cached; errors here)."""
    mixture = build_mixture(
        cfg.data, cfg.validation_data, cfg.validation_fraction, cfg.seed, cfg.max_examples
    )
    base = resolve_base(cfg.base)
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(base.folder))
    except (OSError, ValueError) as exc:
        raise BackendError(f"could not load the tokenizer of {base.folder}: {exc}") from exc
    if not getattr(tok, "is_fast", False):
        raise InputError(
            "the base model's tokenizer is not a fast tokenizer (no offset mapping)",
            path=base.folder,
        )
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    seqs = build_sequences(
        mixture.train, mixture.validation, tok, cfg.max_length, cfg.truncation, cfg.packing
    )
    dropped = seqs.dropped
    if dropped:
        console.print(
            f"note: {len(dropped)} training example(s) keep no target token within max_length="
            f"{cfg.max_length} and are left out (first: {dropped[0]})"
        )
    if seqs.train is None:
        raise InputError(
            "no training example keeps a target token within max_length "
            f"{cfg.max_length} (truncation {cfg.truncation})",
            where="data",
        )
    return base, mixture, tok, seqs


def _load_model(cfg: TrainConfig, base: BaseModel) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    dtype = torch.bfloat16 if _device_precision(cfg)["bf16"] else torch.float32
    try:
        model = AutoModelForCausalLM.from_pretrained(str(base.folder), dtype=dtype)
    except (OSError, ValueError, RuntimeError) as exc:
        raise BackendError(f"could not load the base model {base.folder}: {exc}") from exc
    model.config.use_cache = False  # training never uses the key/value cache
    return model


def _check_liger(cfg: TrainConfig) -> None:
    if not cfg.liger_kernel:
        return
    try:  # an optional dependency: imported only when asked for
        import liger_kernel  # noqa: F401
    except ImportError:
        raise InputError(
            "liger_kernel: true needs the liger-kernel package (pip install liger-kernel), "
            "which runs on CUDA GPUs",
            where="liger_kernel",
        ) from None


def _peft_config(cfg: TrainConfig, model: Any) -> Any:
    if cfg.method != "lora":
        return None
    from peft import LoraConfig

    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    missing = [t for t in cfg.lora_targets if t not in names]
    if missing:
        raise InputError(
            f"LoRA target module(s) {', '.join(missing)} are not in the base model "
            f"(its linear layers include {', '.join(sorted(n for n in names if n.endswith('proj')))})",
            where="lora_targets",
        )
    return LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=list(cfg.lora_targets),
        bias="none",
        task_type="CAUSAL_LM",
    )


def init_adapter_folder(spec: str, base: BaseModel, out: Path) -> Path:
    """The PEFT adapter folder ``init_adapter`` names: a folder as it is; a llama.cpp adapter
    GGUF, or ``bundled:NAME``'s shipped one, imported once into ``out/init-adapter`` (again only
    when the file changed)."""
    if spec.startswith("bundled:"):
        name = spec.removeprefix("bundled:")
        shipped_gguf = bundled_adapter_path(name) if name in BUNDLED_MODELS else None
        if shipped_gguf is None:
            shipped = [m.name for m in BUNDLED_MODELS.values() if m.adapter is not None]
            raise InputError(
                f"{spec} is no bundled model with a shipped adapter (those with one: "
                f"{', '.join('bundled:' + n for n in shipped)})",
                where="init_adapter",
            )
        gguf = shipped_gguf
    else:
        folder = Path(spec)
        if folder.is_dir():
            if not (folder / "adapter_config.json").is_file():
                raise InputError(
                    "init_adapter is not a LoRA adapter folder (no adapter_config.json; give a "
                    "finished run's adapter/, an adapter GGUF or bundled:NAME)",
                    path=folder,
                    where="init_adapter",
                )
            return folder
        if not folder.is_file():
            raise InputError("init_adapter is not there", path=folder, where="init_adapter")
        gguf = folder
    dest = out / "init-adapter"
    source = dest / "toollab-source.json"
    if source.is_file():
        try:
            same = json.loads(source.read_text(encoding="utf-8")).get("sha256") == file_sha256(gguf)
        except (OSError, ValueError, AttributeError):
            same = False
        if same:
            return dest
    return import_adapter_gguf(gguf, base.folder, dest)


def _from_adapter(cfg: TrainConfig, model: Any, folder: Path) -> Any:
    """The base with ``folder``'s LoRA adapter on it, trainable: the run goes on from those
    weights (GLPFT's stage 2 from stage 1; a shipped adapter trained further)."""
    from peft import PeftModel

    try:
        peft_model = PeftModel.from_pretrained(model, str(folder), is_trainable=True)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise BackendError(f"could not load the adapter {folder}: {exc}") from exc
    if cfg.gradient_checkpointing:
        peft_model.enable_input_require_grads()  # the frozen embeddings feed the checkpoints
    return peft_model


def _write_json(path: Path, obj: Any) -> None:
    write_text_atomic(path, json.dumps(obj, indent=1, ensure_ascii=False, default=str))


def _finished(out: Path) -> dict[str, Any] | None:
    p = out / "run.json"
    if not p.is_file():
        return None
    try:
        info = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return None
    return info if info.get("status") == "finished" else None


def target_loss(model: Any, inputs: dict[str, Any], num_items: Any) -> tuple[Any, Any]:
    """Cross-entropy summed over the target tokens and divided by ``num_items`` (the target
    tokens of the whole optimizer step; those of this batch when None).  Only the positions
    that predict a target go through the output layer and the softmax
    (transformers' ``logits_to_keep``), not all the positions of the batch."""
    import torch

    labels = inputs.pop("labels")
    shifted = labels[:, 1:]
    keep = torch.zeros_like(labels, dtype=torch.bool)
    keep[:, :-1] = shifted != IGNORE_INDEX
    if _keeps_masks():
        # a boolean (batch, length) mask: exactly the target positions, flattened
        outputs = model(**inputs, use_cache=False, logits_to_keep=keep)
        logits = outputs.logits
    else:
        # transformers before the mask form takes one list of positions for every row: the
        # positions some row needs, then each row's own
        cols = keep.any(dim=0).nonzero().squeeze(-1)
        outputs = model(**inputs, use_cache=False, logits_to_keep=cols)
        logits = outputs.logits[keep[:, cols]]
    logits = logits.reshape(-1, logits.shape[-1]).float()
    total = torch.nn.functional.cross_entropy(
        logits, shifted[shifted != IGNORE_INDEX], reduction="sum"
    )
    n = num_items if num_items is not None else keep.sum()
    return total / torch.as_tensor(n, device=total.device).clamp(min=1), outputs


@functools.cache
def _keeps_masks() -> bool:
    """Whether this transformers takes a boolean (batch, length) ``logits_to_keep`` mask (it
    has ``slice_logits_to_keep``; 5.17, for one, indexes the sequence axis with it and fails)."""
    from transformers import modeling_utils

    return hasattr(modeling_utils, "slice_logits_to_keep")


def _trainer_class() -> Any:
    from transformers import Trainer
    from trl import SFTTrainer

    class LeanSFTTrainer(SFTTrainer):  # type: ignore[misc]
        """TRL's SFTTrainer with a leaner loss (:func:`target_loss`).

        TRL's own loss runs its chunked log-probability kernel, which on every micro-batch also
        computes the per-token entropy and top-1 accuracy (more passes over the vocabulary) and
        syncs three figures to the host; toollab reports neither, and on the proxy model the
        kernel took more time than the rest of the step (the profile is in BENCHMARKS.md).
        With ``liger_kernel`` the loss is transformers' with Liger's fused cross-entropy."""

        def compute_loss(
            self,
            model: Any,
            inputs: dict[str, Any],
            return_outputs: bool = False,
            num_items_in_batch: Any = None,
        ) -> Any:
            if self.args.use_liger_kernel:
                inputs["use_cache"] = False
                return Trainer.compute_loss(
                    self,
                    model,
                    inputs,
                    return_outputs=return_outputs,
                    num_items_in_batch=num_items_in_batch,
                )
            loss, outputs = target_loss(model, dict(inputs), num_items_in_batch)
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                loss = loss * self.accelerator.num_processes
            return (loss, outputs) if return_outputs else loss

        def create_model_card(self, *args: Any, **kwargs: Any) -> None:
            """Nothing: TRL's card is a Hub template with empty fields; toollab writes its own
            at the end of the run (:mod:`toollab.train.card`)."""

    return LeanSFTTrainer


def _make_trainer(
    cfg: TrainConfig,
    model: Any,
    tok: Any,
    peft_config: Any,
    seqs: Sequences,
    batch: DeviceBatch,
    console: Console,
    quiet: bool,
) -> tuple[Any, Any, dict[str, float]]:
    """TRL's SFTTrainer on the prepared sequences, and the label-mask check of its batches."""
    from transformers.trainer_callback import PrinterCallback

    bar = ProgressCallback(console, quiet=quiet)
    trainer = _trainer_class()(
        model=model,
        args=_sft_args(cfg, seqs.validation is not None, batch),
        train_dataset=seqs.train,
        eval_dataset=seqs.validation,
        processing_class=tok,
        peft_config=peft_config,
        data_collator=PackedCollator(tok.pad_token_id) if cfg.packing else None,
        callbacks=[bar, ckpt.MarkComplete()],
    )
    trainer.remove_callback(PrinterCallback)  # it prints log dicts on stdout; ours uses stderr
    mask = check_label_mask(
        trainer.data_collator,
        trainer.train_dataset,  # as the trainer prepared it
        batch.micro_batch,
        cfg.mask_check_batches,
        cfg.seed,
    )
    return trainer, bar, mask


def train_sft(
    cfg: TrainConfig, *, console: Console | None = None, quiet: bool = False
) -> TrainResult:
    """Run (or resume) one supervised fine-tuning run; see the module docstring."""
    console = console or Console(stderr=True)
    cfg.validate()
    out = check_run_folder(cfg.output_dir, force=cfg.force)  # before the base model loads
    if _finished(out) and not cfg.overwrite:
        raise InputError(
            "output_dir holds a finished run (give another output_dir, or overwrite: true)",
            path=out,
        )
    if cfg.threads:
        import torch

        torch.set_num_threads(cfg.threads)

    _check_liger(cfg)
    base, mixture, tok, seqs = prepare(cfg, console)
    model = _load_model(cfg, base)
    if cfg.init_adapter:
        folder = init_adapter_folder(cfg.init_adapter, base, out)
        model, peft_config = _from_adapter(cfg, model, folder), None
    else:
        peft_config = _peft_config(cfg, model)
    batch = device_batch(cfg, model)

    resume_from: Path | None = None
    if cfg.overwrite and out.exists():
        for _, p, _ok in ckpt.checkpoints(out):
            shutil.rmtree(p, ignore_errors=True)
    elif cfg.resume:
        for gone in ckpt.drop_incomplete(out):
            console.print(f"note: removed the unfinished checkpoint {gone.name}")
        resume_from = ckpt.last_complete(out)

    ckpt.check_disk(out, _need_bytes(model, cfg))
    from transformers import set_seed

    set_seed(cfg.seed)
    existed = out.exists()
    try:
        trainer, bar, mask = _make_trainer(
            cfg, model, tok, peft_config, seqs, batch, console, quiet
        )
    except BaseException:
        if not existed:  # the trainer may have made output_dir: leave nothing behind
            shutil.rmtree(out, ignore_errors=True)
        raise

    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "written_by": MARK,
        "status": "running",
        "config": cfg.to_dict(),
        "base": {
            "folder": str(base.folder),
            "gguf": str(base.gguf) if base.gguf else None,
            "gguf_sha256": base.gguf_sha256,
        },
        "data": mixture.counts,
        "examples": {"train": seqs.n_train_examples, "validation": seqs.n_validation_examples},
        "sequences": {
            "packed": cfg.packing,
            "train": len(seqs.train),
            "validation": len(seqs.validation) if seqs.validation is not None else 0,
            "from_cache": seqs.cached,
            "key": seqs.key,
        },
        "device_batch": batch.__dict__,
        "label_mask_check": mask,
        "command": sys.argv,
    }
    # under accelerate, every process trains; only the main one writes the run's files
    main = bool(trainer.is_world_process_zero())
    if main:
        mark_folder(out)
        _write_json(out / "run.json", record)
    t0 = time.perf_counter()
    try:
        result = trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            last = ckpt.last_complete(out)
            raise BackendError(
                f"the disk filled while writing to {out}; the last complete checkpoint is "
                f"{last.name if last else 'none'} — free space and run the same command to resume"
            ) from exc
        raise
    wall = time.perf_counter() - t0
    final = _save_final(trainer, cfg, out, tok) if main else out / _final_name(cfg)
    trainer.accelerator.wait_for_everyone()  # the others return once the model is on disk

    history = trainer.state.log_history
    losses = [h["loss"] for h in history if "loss" in h]
    evals = [h["eval_loss"] for h in history if "eval_loss" in h]
    steps_run = trainer.state.global_step - (
        int(resume_from.name.split("-")[1]) if resume_from else 0
    )
    tokens = int(trainer.state.num_input_tokens_seen or 0)
    runtime = float(result.metrics.get("train_runtime", wall))
    res = TrainResult(
        output_dir=out,
        final=final,
        global_step=trainer.state.global_step,
        resumed_from=resume_from.name if resume_from else None,
        train_tokens=tokens,
        tokens_per_s=bar.tokens_per_s,
        train_runtime_s=runtime,
        first_loss=losses[0] if losses else None,
        last_loss=losses[-1] if losses else None,
        best_eval_loss=min(evals) if evals else None,
        best_checkpoint=(
            Path(trainer.state.best_model_checkpoint).name
            if trainer.state.best_model_checkpoint
            else None
        ),
        peak_rss_mib=_peak_rss_mib(),
        figures={"steps_this_session": steps_run},
    )
    record.update(
        status="finished",
        result={k: (str(v) if isinstance(v, Path) else v) for k, v in res.__dict__.items()},
        log_history=history,
    )
    if main:
        _write_json(out / "run.json", record)
        gguf = str(base.gguf) if base.gguf else None
        card = render_run_card(cfg, res, mixture.counts, gguf, sys.argv)
        for folder in (out, final):  # over PEFT's and TRL's placeholder cards
            write_text_atomic(folder / CARD_NAME, card)
    return res


def _final_name(cfg: TrainConfig) -> str:
    return "adapter" if cfg.method == "lora" else "model"


def _save_final(trainer: Any, cfg: TrainConfig, out: Path, tok: Any) -> Path:
    """``adapter/`` (LoRA) or ``model/`` (full), and ``merged/`` if asked; each renamed into
    place once complete."""
    final = out / _final_name(cfg)
    _save_into(
        final, lambda d: (trainer.model.save_pretrained(str(d)), tok.save_pretrained(str(d)))
    )
    if cfg.save_merged and cfg.method == "lora":
        merged = (
            trainer.model.merge_and_unload()
            if hasattr(trainer.model, "merge_and_unload")
            else trainer.model
        )
        _save_into(
            out / "merged", lambda d: (merged.save_pretrained(str(d)), tok.save_pretrained(str(d)))
        )
    return final


def _save_into(final: Path, write: Any) -> None:
    try:
        write_dir_atomic(final, write)
    except OSError as exc:
        raise BackendError(f"could not write {final}: {exc}") from exc
