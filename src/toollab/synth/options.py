"""The numeric options of ``toollab data synth deer|seal``, one typed model per pipeline.

The CLI validates its flags with these models (:func:`toollab.data.config_file.typed_options`)
before it reads a file or starts a teacher: every number is finite (``--temperature nan``,
``--timeout inf`` are refused) and within its range, and the error names the flag, what was
expected and what was given.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Seed = Annotated[int, Field(ge=0, le=2**63 - 1)]
Share = Annotated[float, Field(ge=0.0, le=1.0)]
#: a relative weight (a share once the weights are summed)
Weight = Annotated[float, Field(ge=0.0, le=1e6)]


class TeacherOptions(BaseModel):
    """How a pipeline drives its teacher."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)

    concurrency: Annotated[int, Field(ge=1, le=4_096)] | None = None
    retries: Annotated[int, Field(ge=0, le=100)] = 3
    #: seconds one request may take (at most a day)
    timeout: Annotated[float, Field(gt=0.0, le=86_400.0)] = 300.0
    attempts: Annotated[int, Field(ge=1, le=100)] = 3
    max_tokens: Annotated[int, Field(ge=1, le=1_000_000)] = 1024
    temperature: Annotated[float, Field(ge=0.0, le=100.0)] = 1.0


class DeerOptions(TeacherOptions):
    """``toollab data synth deer``."""

    seen: Annotated[int, Field(ge=1, le=10_000_000)] = 900
    call_ratio: Share = 0.6
    k: Annotated[int, Field(ge=1, le=10_000)] = 5
    mode: Literal["mix", "random"] = "mix"
    #: random, intra-class, inter-class shares (each finite and >= 0, summing to more than 0)
    mix: tuple[Weight, Weight, Weight] = (0.4, 0.2, 0.4)
    clusters: Annotated[int, Field(ge=1, le=100_000)] = 30
    nosearch_size: Annotated[int, Field(ge=0, le=100_000_000)] = 2000
    valid_ratio: Annotated[float, Field(ge=0.0, lt=1.0)] = 0.1
    seed: Seed = 42
    limit: Annotated[int, Field(ge=1, le=100_000_000)] | None = None

    @field_validator("mix")
    @classmethod
    def _some_share(cls, mix: tuple[float, float, float]) -> tuple[float, float, float]:
        if sum(mix) <= 0:
            raise ValueError("the three shares sum to 0; give at least one positive share")
        return mix


class SealOptions(TeacherOptions):
    """``toollab data synth seal``."""

    max_tools: Annotated[int, Field(ge=1, le=100_000_000)] | None = None
    split: Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$", max_length=100)] = "train"
    max_fields: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    max_subfields: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    min_field_count: Annotated[int, Field(ge=1, le=1_000_000)] = 2
    max_rounds: Annotated[int, Field(ge=1, le=1_000_000)] = 20
    difficult: Annotated[int, Field(ge=0, le=100_000_000)] = 1000
    retriever: str = "bm25"
    seed: Seed = 0
