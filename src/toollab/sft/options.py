"""The options of ``toollab data sft``, one typed model for its ``--config`` file and its flags.

:class:`SFTOptions` has one field per flag (the config file's keys are the flags' names with
underscores: ``pack_size``, ``source``, ``format``).  Types are strict (``template: 5`` or
``source: {a: 1}`` is refused, not converted), numbers finite and within their ranges; see
:mod:`toollab.data.config_file` for how a file and the flags are merged and how a problem is
reported.  Nothing is loaded before the options are valid.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from toollab.data.config_file import read_config_mapping, typed_options

#: a share of the examples (an augmentation's rate)
Share = Annotated[float, Field(ge=0.0, le=1.0)]
#: a seed of a random draw
Seed = Annotated[int, Field(ge=0, le=2**63 - 1)]
#: a count of instances (sources, totals)
Count = Annotated[int, Field(ge=1, le=100_000_000)]


class SFTOptions(BaseModel):
    """Every option of ``toollab data sft`` (see ``docs/sft.md``)."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)

    out: str | None = None
    data: list[str] = Field(default_factory=list)
    format: list[str] = Field(default_factory=list)
    option: list[str] = Field(default_factory=list)
    env: list[str] = Field(default_factory=list)
    n: Count | None = None
    env_seed: Seed = 0
    source: list[str] = Field(default_factory=list)
    total: Count | None = None
    template: str = "json"
    target: Literal["constrained", "template"] = "constrained"
    loss: Literal["target", "written"] = "target"
    chat_template: str = "bundled"
    pack: Literal["none", "all-shot"] = "none"
    pack_size: Annotated[int, Field(ge=1, le=10_000)] = 4
    max_tokens: Annotated[int, Field(ge=1, le=10_000_000)] = 2048
    distractors: Annotated[int, Field(ge=0, le=10_000)] = 0
    distractor_mode: Literal["random", "intra", "inter", "mix"] = "random"
    nocall: Share = 0.0
    hard_nocall: Share = 0.0
    reduce: Share = 0.0
    reduce_extra: Annotated[int, Field(ge=0, le=10_000)] = 4
    mask: Share = 0.0
    vary: Share = 0.0
    compose: Share = 0.0
    compose_max: Annotated[int, Field(ge=2, le=1_000)] = 3
    guard: list[str] = Field(default_factory=list)
    guard_root: str | None = None
    unguarded: list[str] = Field(default_factory=list)
    env_test_seed: list[Seed] = Field(default_factory=lambda: [0])
    near: Annotated[float, Field(gt=0.0, le=1.0)] = 0.9
    near_same_tools: Annotated[float, Field(gt=0.0, le=1.0)] = 0.75
    drop_null_args: bool = False
    seed: Seed = 0
    no_tokens: bool = False
    conversations: bool = False
    followups: Annotated[int, Field(ge=0, le=1_000)] = 2
    #: replace a README.md beside ``out`` that toollab did not write
    force: bool = False

    @classmethod
    def load(cls, config: str | Path | None, flags: Mapping[str, object]) -> SFTOptions:
        """The options of a ``--config`` file (``None``: none) overridden by ``flags``."""
        values = read_config_mapping(config) if config is not None else {}
        return typed_options(cls, values, flags, file=config)
