"""The prediction record: one line of a run's ``predictions.jsonl``.

Everything a scorer needs is here, so ``toollab score`` can rescore a file with no model.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toollab.parsing import ParseResult


class Step(BaseModel):
    """One model turn of a multi-step agent run (plan / call / observation / answer)."""

    role: str
    text: str = ""
    parsed: ParseResult | None = None
    observation: Any = None
    error: str | None = None


class Prediction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    #: dataset fingerprint, so a predictions file from another dataset is refused
    dataset: str | None = None
    repeat: int = 0
    prompt: list[dict[str, Any]] | str | None = None
    raw: str = ""
    parsed: ParseResult | None = None
    #: multi-turn agents: every step
    steps: list[Step] = Field(default_factory=list)
    #: execution results (environment suites): final state, observations, success flags
    execution: dict[str, Any] | None = None
    error: str | None = None
    usage: dict[str, int] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
