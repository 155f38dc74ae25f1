"""Fine-tuning: supervised fine-tuning (LoRA or full) on TRL + PEFT, and GGUF export.

Heavy libraries (torch, transformers, TRL, PEFT) are imported only by the functions that need
them; importing this package is cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toollab.train.config import DataSource, TrainConfig
from toollab.train.serve import export_run as export

if TYPE_CHECKING:
    from toollab.train.sft import TrainResult

__all__ = ["DataSource", "TrainConfig", "TrainResult", "export_run", "train_sft"]


def train_sft(config: TrainConfig, **kw: Any) -> TrainResult:
    """Run (or resume) one fine-tuning run; see :mod:`toollab.train.sft`."""
    from toollab.train.sft import train_sft as run  # torch, transformers: on use only

    return run(config, **kw)


def export_run(run: Any, *args: Any, **kw: Any) -> Any:
    """GGUF files of a finished run; see :mod:`toollab.train.serve`."""

    return export(run, *args, **kw)
