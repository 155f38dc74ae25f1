"""The numeric options of ``toollab data synth deer|seal``: one definition of each rule.

Each rule is a typed annotation (finite, within its range).  The CLI validates its flags with the
options models (:func:`toollab.data.config_file.typed_options`) before it reads a file or starts
a teacher; the library's configs (:class:`toollab.synth.deer.DeerConfig`,
:class:`toollab.synth.teacher.TeacherConfig`) check their fields with the same rules
(:func:`check_fields`).  Every number is finite (``--temperature nan``, ``timeout_s=inf`` are
refused) and within its range, and the error names the flag or field, what was expected and
what was given.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
)

from toollab.errors import InputError

Seed = Annotated[int, Field(ge=0, le=2**63 - 1)]
Share = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
#: a relative weight (a share once the weights are summed)
Weight = Annotated[float, Field(ge=0.0, le=1e6, allow_inf_nan=False)]

Concurrency = Annotated[int, Field(ge=1, le=4_096)]
Retries = Annotated[int, Field(ge=0, le=100)]
#: seconds one request may take (at most a day)
Timeout = Annotated[float, Field(gt=0.0, le=86_400.0, allow_inf_nan=False)]
#: seconds of the first backoff before a retry (at most an hour)
Backoff = Annotated[float, Field(ge=0.0, le=3_600.0, allow_inf_nan=False)]
Attempts = Annotated[int, Field(ge=1, le=100)]
MaxTokens = Annotated[int, Field(ge=1, le=1_000_000)]
Temperature = Annotated[float, Field(ge=0.0, le=100.0, allow_inf_nan=False)]
FailuresInARow = Annotated[int, Field(ge=1, le=1_000_000)]

Seen = Annotated[int, Field(ge=1, le=10_000_000)]
Candidates = Annotated[int, Field(ge=1, le=10_000)]
Mode = Literal["mix", "random"]
Clusters = Annotated[int, Field(ge=1, le=100_000)]
NoSearchSize = Annotated[int, Field(ge=0, le=100_000_000)]
ValidRatio = Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)]
Limit = Annotated[int, Field(ge=1, le=100_000_000)]


def _some_share(mix: tuple[float, float, float]) -> tuple[float, float, float]:
    if sum(mix) <= 0:
        raise ValueError("the three shares sum to 0; give at least one positive share")
    return mix


#: random, intra-class, inter-class shares (each finite and >= 0, summing to more than 0)
Mix = Annotated[tuple[Weight, Weight, Weight], AfterValidator(_some_share)]


class TeacherOptions(BaseModel):
    """How a pipeline drives its teacher."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)

    concurrency: Concurrency | None = None
    retries: Retries = 3
    timeout: Timeout = 300.0
    attempts: Attempts = 3
    max_tokens: MaxTokens = 1024
    temperature: Temperature = 1.0


class DeerOptions(TeacherOptions):
    """``toollab data synth deer``."""

    seen: Seen = 900
    call_ratio: Share = 0.6
    k: Candidates = 5
    mode: Mode = "mix"
    mix: Mix = (0.4, 0.2, 0.4)
    clusters: Clusters = 30
    nosearch_size: NoSearchSize = 2000
    valid_ratio: ValidRatio = 0.1
    seed: Seed = 42
    limit: Limit | None = None


class SealOptions(TeacherOptions):
    """``toollab data synth seal``."""

    max_tools: Limit | None = None
    split: Annotated[str, Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$", max_length=100)] = "train"
    max_fields: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    max_subfields: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    min_field_count: Annotated[int, Field(ge=1, le=1_000_000)] = 2
    max_rounds: Annotated[int, Field(ge=1, le=1_000_000)] = 20
    difficult: Annotated[int, Field(ge=0, le=100_000_000)] = 1000
    retriever: str = "bm25"
    seed: Seed = 0


@cache
def _adapter(rule: Any) -> TypeAdapter[Any]:
    return TypeAdapter(rule)


def check_fields(owner: str, values: Mapping[str, tuple[Any, object]]) -> None:
    """Check each ``name: (rule, value)`` of a library config against its rule (one of the
    annotations above): an :class:`InputError` naming ``owner.name``, what was expected and what
    was given, for the first value that breaks its rule."""
    for name, (rule, value) in values.items():
        try:
            _adapter(rule).validate_python(value, strict=True)
        except ValidationError as exc:
            err = exc.errors()[0]
            msg = str(err["msg"]).removeprefix("Value error, ")
            msg = msg[:1].lower() + msg[1:]
            raise InputError(f"{msg}, got {value!r}", where=f"{owner}.{name}") from None
