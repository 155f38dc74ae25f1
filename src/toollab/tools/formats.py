"""The tool record formats (toollab's, OpenAI's, Seal-Tools'), re-exported from
:mod:`toollab.data.tool_formats`, where they are defined so that the dataset adapters can read
them too (``data`` sits below ``tools`` in toollab's layers)."""

from toollab.data.tool_formats import (
    FORMATS,
    JSON_TO_SEAL_TYPE,
    OPENAI_FORMAT,
    PY_TO_JSON_TYPE,
    SEAL_FORMAT,
    TOOL_KEYS,
    TOOLLAB_FORMAT,
    json_type_for,
    normalize_schema,
    record_format,
    seal_field_entry,
    seal_field_schema,
    seal_to_tool,
    tool_from_record,
    tool_to_record,
    tool_to_seal,
)

__all__ = [
    "FORMATS",
    "JSON_TO_SEAL_TYPE",
    "OPENAI_FORMAT",
    "PY_TO_JSON_TYPE",
    "SEAL_FORMAT",
    "TOOLLAB_FORMAT",
    "TOOL_KEYS",
    "json_type_for",
    "normalize_schema",
    "record_format",
    "seal_field_entry",
    "seal_field_schema",
    "seal_to_tool",
    "tool_from_record",
    "tool_to_record",
    "tool_to_seal",
]
