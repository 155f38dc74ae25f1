"""The model card of a training run: ``README.md`` in ``output_dir`` and in its final folder.

TRL and PEFT write placeholder cards there (a Hub template with empty fields and links to a
model named ``None``); a finished toollab run replaces them with one that says what was
trained, from what, on which data with which settings, what it measured, and how to use it.
The figures are the run's own (:class:`~toollab.train.sft.TrainResult`, the mixture's counts);
``run.json`` beside the card holds all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from toollab.models.bundled import BUNDLED_NAME
from toollab.train.config import TrainConfig

if TYPE_CHECKING:  # the card is written by sft; a type-only import keeps them apart
    from toollab.train.sft import TrainResult

CARD_NAME = "README.md"


def _num(x: float | None, digits: int = 4) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _model_specs(
    cfg: TrainConfig, result: TrainResult, base_gguf: str | None
) -> tuple[str, str] | None:
    """The ``-m`` specs of the base and of the exported adapter on it (llama.cpp), if any."""
    if cfg.method != "lora" or base_gguf is None:
        return None
    base = f"bundled:{BUNDLED_NAME}" if cfg.base == "bundled" else f"llamacpp:{base_gguf}"
    return base, f"{base}+lora={result.output_dir / 'gguf' / 'adapter.gguf'}"


def render_run_card(
    cfg: TrainConfig,
    result: TrainResult,
    data: Mapping[str, Mapping[str, float]],
    base_gguf: str | None,
    command: list[str],
) -> str:
    """The card's Markdown: the run's name, base, method, data, settings, figures and use."""
    out = result.output_dir
    kind = (
        f"a LoRA adapter (r {cfg.lora_r}, alpha {cfg.lora_alpha}, dropout {cfg.lora_dropout}; "
        f"{', '.join(cfg.lora_targets)})"
        if cfg.method == "lora"
        else "a fully fine-tuned model"
    )
    lines = [
        f"# {out.name}",
        "",
        f"{kind[0].upper()}{kind[1:]}, trained by `toollab train sft` (TRL's `SFTTrainer`).",
        "",
        f"- base: `{cfg.base}`" + (f" (`{Path(base_gguf).name}`)" if base_gguf else ""),
    ]
    if cfg.init_adapter:
        lines.append(f"- started from the adapter `{cfg.init_adapter}`")
    lines += [
        f"- final weights: `{result.final.name}/`; the full record: `run.json`",
        f"- command: `{' '.join(command)}`",
        "",
        "## Data",
        "",
        "| file | examples | held out for validation | weight | drawn for training |",
        "|---|---:|---:|---:|---:|",
    ]
    for path, c in data.items():
        lines.append(
            f"| `{path}` | {int(c.get('examples', 0)):,} | {int(c.get('validation', 0)):,} | "
            f"{c.get('weight', 1.0):g} | {int(c.get('drawn', 0)):,} |"
        )
    if cfg.validation_data:
        lines.append("")
        lines.append("Validation files: " + ", ".join(f"`{v}`" for v in cfg.validation_data))
    accumulation = cfg.gradient_accumulation_steps
    lines += [
        "",
        "## Settings",
        "",
        f"- sequences of up to {cfg.max_length:,} tokens"
        + (", packed" if cfg.packing else ", padded")
        + f"; {cfg.batch_size} a micro-batch × {accumulation} accumulated a step",
        f"- learning rate {cfg.learning_rate:g}, {cfg.lr_scheduler}, warm-up {cfg.warmup_ratio:g}"
        f" of the steps; "
        + (f"{cfg.max_steps} steps" if cfg.max_steps else f"{cfg.epochs:g} epochs"),
        f"- precision {cfg.precision}, seed {cfg.seed}",
        "",
        "## Figures",
        "",
        "| steps | training tokens | tokens/s | seconds | first loss | last loss | "
        "best validation loss |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        f"| {result.global_step} | {result.train_tokens:,} | {result.tokens_per_s:.1f} | "
        f"{result.train_runtime_s:.0f} | {_num(result.first_loss)} | {_num(result.last_loss)} | "
        f"{_num(result.best_eval_loss)}"
        + (f" ({result.best_checkpoint})" if result.best_checkpoint else "")
        + " |",
    ]
    if result.resumed_from:
        lines += [
            "",
            f"Resumed from `{result.resumed_from}`; the figures are those of the resumed part.",
        ]
    specs = _model_specs(cfg, result, base_gguf)
    lines += ["", "## Use it", "", "```"]
    if specs:
        base_spec, spec = specs
        lines += [
            f"toollab train export {out} --what adapter",
            f'toollab chat -m "{spec}" --tools my_tools.py',
            f'toollab bench -m "{base_spec}" -m "{spec}"     # beside its base',
        ]
    else:
        lines += [f"toollab train export {out}          # merged GGUF files in {out}/gguf"]
    lines += ["```", ""]
    return "\n".join(lines)
