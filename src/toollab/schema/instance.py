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


class Instance(BaseModel):
    """One evaluation or training item, whatever dataset it came from."""

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
    source: str | None = None  # "seal-tools", "bfcl", "deer", "tooleyes", "env:<name>"
    category: str | None = None  # e.g. BFCL category, ToolEyes scenario
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

    def label(self) -> Decision:
        """The decision label, derived from the gold when the dataset gives none."""
        if self.decision is not None:
            return self.decision
        return Decision.CALL if self.gold else Decision.NO_CALL
