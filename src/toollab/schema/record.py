"""The records of a run: what a parser read, what executing a program did, what an agent
predicted.  One :class:`Prediction` is one line of a run's ``predictions.jsonl``; everything a
scorer needs is in it, so ``toollab score`` can rescore a file with no model.

These live in the schema layer because every layer above reads or writes them: parsers return a
:class:`ParseResult`, environments and agents fill an :class:`ExecutionRecord`, agents return a
:class:`Prediction`, scorers read them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toollab.schema.call import ToolCall
from toollab.schema.instance import Decision


class ParseStatus(StrEnum):
    CALLS = "calls"
    NO_CALL = "no_call"
    ERROR = "error"


class ParseResult(BaseModel):
    """What a parser read from model text: calls, an explicit no-call, or a format error."""

    model_config = ConfigDict(extra="forbid")

    status: ParseStatus
    calls: list[ToolCall] = Field(default_factory=list)
    #: the answer text for a no-call, or text around the calls (a thought)
    text: str | None = None
    thought: str | None = None
    #: why the output could not be read (status == ERROR)
    error: str | None = None
    #: decision read from the output (DEER markers), when the format carries one
    decision: Decision | None = None
    #: format-specific details (e.g. DEER: which markers were seen)
    details: dict[str, object] = Field(default_factory=dict)

    @classmethod
    def ok(cls, calls: list[ToolCall], **kw: Any) -> ParseResult:
        return cls(status=ParseStatus.CALLS, calls=calls, **kw)

    @classmethod
    def no_call(cls, text: str | None = None, **kw: Any) -> ParseResult:
        return cls(status=ParseStatus.NO_CALL, text=text, **kw)

    @classmethod
    def fail(cls, reason: str, **kw: Any) -> ParseResult:
        return cls(status=ParseStatus.ERROR, error=reason, **kw)

    @property
    def is_error(self) -> bool:
        return self.status is ParseStatus.ERROR


class Step(BaseModel):
    """One model turn of a multi-step agent run (plan / call / observation / answer)."""

    role: str
    text: str = ""
    parsed: ParseResult | None = None
    observation: Any = None
    error: str | None = None


class ExecutionRecord(BaseModel):
    """What executing a prediction's program did (``Prediction.execution``).

    Written by the agents that execute calls (in the instance's environment), read by the
    scorers, which judge it: the agent records what running the program did (the run fields; a
    multi-turn loop adds how it ended), and the ``environment`` scorer decides from the final
    state and the instance's labels whether that is right.  The check fields hold a verdict
    made elsewhere: by runs made before the scorers judged (read back where a record cannot be
    re-judged) or by external tools (SambaNova ToolBench records with ``labels_states``).
    """

    model_config = ConfigDict(extra="forbid")

    # -- running the program
    #: the final state the program produced (``None`` when there is none, e.g. a crash)
    state: dict[str, object] | None = None
    observations: list[Any] = Field(default_factory=list)
    crashed: bool = False
    error: str | None = None
    #: why the program crashed (the environment's error reason, or ``format``)
    reason: str | None = None
    #: index of the call that crashed
    failed_call: int | None = None
    n_calls: int = 0
    #: the executed calls as the action strings sequence metrics compare
    actions: list[str] | None = None

    # -- a verdict against the labels, made elsewhere (see the class doc)
    #: the final states of the gold program and its acceptable alternatives
    labels_states: list[dict[str, object]] | None = None
    #: the label programs as action strings
    labels_actions: list[list[str]] | None = None
    #: the final state equals the best label's
    success: bool | None = None
    precision: float | None = None
    recall: float | None = None
    #: dict-F1 of the final state against the best label's
    f1: float | None = None
    #: index of the best label (0 = gold, 1.. = alternatives)
    label: int | None = None
    #: the data's own label did not execute
    label_error: str | None = None
    #: plan similarity (normalised LCS of the predicted plan to the closest label plan), for
    #: environments that define one
    lcs: float | None = None
    details: dict[str, object] = Field(default_factory=dict)

    # -- multi-turn loops
    turns: int | None = None
    #: how the loop ended: ``finish``, ``answer``, ``ask_to_user``, ``max_turns``, ``error``
    ended_by: str | None = None
    finished: bool | None = None
    answer: str | None = None

    @property
    def checked(self) -> bool:
        """Whether the outcome was checked against labels."""
        return self.success is not None


class Prediction(BaseModel):
    """One agent's answer to one instance (one repeat)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    id: str
    #: dataset fingerprint, so a predictions file from another dataset is refused
    dataset: str | None = None
    repeat: int = 0
    prompt: list[dict[str, object]] | str | None = None
    raw: str = ""
    parsed: ParseResult | None = None
    #: multi-turn agents: every step
    steps: list[Step] = Field(default_factory=list)
    #: what executing the program did (instances with an environment)
    execution: ExecutionRecord | None = None
    #: the names of the tools a retriever offered the model (``None``: no retriever; the
    #: instance's own tools were offered)
    offered_tools: list[str] | None = None
    error: str | None = None
    usage: dict[str, int] = Field(default_factory=dict)
    timings: dict[str, float] = Field(default_factory=dict)
    metadata: dict[str, object] = Field(default_factory=dict)

    @property
    def calls(self) -> list[ToolCall]:
        """The parsed calls (none when the output was not parsed)."""
        return list(self.parsed.calls) if self.parsed is not None else []
