"""toollab's one tool schema: :class:`Tool`, :class:`ToolCall` (with :class:`Ref`), :class:`Instance`."""

from toollab.schema.call import (
    GoldCall,
    Ref,
    ToolCall,
    dependencies,
    is_nested,
    levels,
    link_calls,
    to_seal_value,
)
from toollab.schema.instance import (
    ANSWER_KEY_FIELDS,
    INPUT_METADATA_KEYS,
    Decision,
    Instance,
    ProtocolFacts,
)
from toollab.schema.tool import Tool, tools_from_openai, tools_to_openai

__all__ = [
    "ANSWER_KEY_FIELDS",
    "INPUT_METADATA_KEYS",
    "Decision",
    "GoldCall",
    "Instance",
    "ProtocolFacts",
    "Ref",
    "Tool",
    "ToolCall",
    "dependencies",
    "is_nested",
    "levels",
    "link_calls",
    "to_seal_value",
    "tools_from_openai",
    "tools_to_openai",
]
