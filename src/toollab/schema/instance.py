"""A task instance: a query, the tools on offer, the gold calls and the decision label."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toollab.schema.call import GoldCall, ToolCall, is_nested
from toollab.schema.tool import Tool


class Decision(StrEnum):
    """DEER's decision branches."""

    NO_SEARCH = "NoSearch"  # answer from own knowledge, don't look at tools
    NO_CALL = "NoCall"  # looked at the tools, none fits
    CALL = "Call"  # call a tool


class ProtocolFacts(BaseModel):
    """What a benchmark's protocol publishes for an instance before it is answered.

    These facts are the same for every model that takes the benchmark (a BFCL file's category
    fixes the call shape for every model on the leaderboard), so they may shape a request (the
    constrained-decoding grammar).  Nothing derived from the answer key belongs here: not the gold
    call count, not the decision label, not the gold tools.  ``None`` means "not published".
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: the facts as the benchmark states them, e.g. ``{"category": "parallel"}``
    published: dict[str, str] = Field(default_factory=dict)
    #: the answer has at most this many calls
    max_calls: int | None = Field(default=None, ge=1)
    #: whether "no call" is a legal answer
    no_call: bool | None = None

    @property
    def empty(self) -> bool:
        return not self.published and self.max_calls is None and self.no_call is None


#: the fields of an :class:`Instance` that hold its answer key or are derived from it: only
#: scorers read them, never the code that builds a request (``metadata`` included: adapters keep
#: the raw gold and provenance there), see :meth:`Instance.with_answer_key_of`
ANSWER_KEY_FIELDS = (
    "gold",
    "alternatives",
    "decision",
    "answer",
    "reference",
    "category",
    "metadata",
)
#: metadata keys that are inputs after all: an environment instance's initial state, the
#: tool documents and gold history before the step of α-UMi's step-level protocol, and a BFCL
#: multi-turn episode's user turns, initial state and held-out functions
INPUT_METADATA_KEYS = ("seed", "alpha_umi", "bfcl_multi_turn")


class Instance(BaseModel):
    """One evaluation or training item, whatever dataset it came from.

    The model may see ``query``, ``messages``, ``tools`` and ``protocol`` (and an environment's
    initial state, ``metadata["seed"]``, and an α-UMi step's tool documents and gold history,
    ``metadata["alpha_umi"]``); everything in :data:`ANSWER_KEY_FIELDS` is the answer
    key, for scorers only.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    query: str
    #: the full conversation when there is more than one user turn (OpenAI message dicts)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[Tool] = Field(default_factory=list)
    #: the gold call graph (empty for NoCall / NoSearch)
    gold: list[GoldCall] = Field(default_factory=list)
    #: other complete programs that are equally correct (SambaNova: several labels)
    alternatives: list[list[GoldCall]] = Field(default_factory=list)
    decision: Decision | None = None
    #: a reference answer text where the dataset has one (NoSearch chains, summaries)
    answer: str | None = None
    #: whether the dataset gives an answer key at all; ``False`` (ToolEyes' queries): no gold
    #: calls and no decision label, so an empty ``gold`` says nothing about what was due
    reference: bool = True
    source: str | None = None  # "seal-tools", "bfcl", "deer", "tooleyes", "env:<name>"
    #: a reporting label (e.g. BFCL category, ToolEyes scenario); may derive from the answer key
    category: str | None = None
    #: what the benchmark's protocol publishes before answering (may shape decoding)
    protocol: ProtocolFacts = Field(default_factory=ProtocolFacts)
    split: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    @property
    def nested(self) -> bool:
        return is_nested(list(self.gold))

    @property
    def gold_calls(self) -> list[ToolCall]:
        return list(self.gold)

    def tool(self, name: str) -> Tool | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None

    def with_answer_key_of(self, other: Instance) -> Instance:
        """This instance's inputs with ``other``'s answer key (every :data:`ANSWER_KEY_FIELDS`
        field; the input metadata keys stay).  A request built from the result must be
        byte-identical to one built from ``self``: that is what keeps the answer out of reach."""
        update: dict[str, Any] = {f: getattr(other, f) for f in ANSWER_KEY_FIELDS}
        kept = {k: self.metadata[k] for k in INPUT_METADATA_KEYS if k in self.metadata}
        update["metadata"] = {
            **{k: v for k, v in other.metadata.items() if k not in INPUT_METADATA_KEYS},
            **kept,
        }
        return self.model_copy(update=update, deep=True)

    def label(self) -> Decision:
        """The decision label, derived from the gold when the dataset gives none."""
        if self.decision is not None:
            return self.decision
        return Decision.CALL if self.gold else Decision.NO_CALL
