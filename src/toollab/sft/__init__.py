"""Supervised fine-tuning data: checked, guarded, optionally augmented and packed exports.

:func:`export_sft` turns anything the dataset adapters load, an environment's train split or
DEER's ``tool.json`` examples into JSONL training examples rendered through the same template
and chat format inference uses (see ``docs/sft.md``).
"""

from toollab.sft.augment import AugmentConfig
from toollab.sft.export import ExportResult, SFTConfig, export_sft
from toollab.sft.guard import EvalSet, LeakageGuard
from toollab.sft.sources import SourceSpec, parse_source

__all__ = [
    "AugmentConfig",
    "EvalSet",
    "ExportResult",
    "LeakageGuard",
    "SFTConfig",
    "SourceSpec",
    "export_sft",
    "parse_source",
]
