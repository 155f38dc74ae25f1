"""The tool layer: ``@tool``, tool pools, schema and argument validation, execution, sandbox."""

from toollab.tools.decorator import Param, ToolFunction, parse_docstring, tool, tool_schema
from toollab.tools.execution import CallResult, ExecutionResult, Executor
from toollab.tools.formats import normalize_schema, seal_to_tool, tool_from_record, tool_to_record
from toollab.tools.jsonable import to_jsonable
from toollab.tools.pool import (
    PoolEntry,
    PoolFileError,
    Problem,
    ToolPool,
    read_pool_file,
    validate_file,
)
from toollab.tools.sandbox import (
    CommandResult,
    Sandbox,
    SandboxError,
    SandboxViolation,
    resolve_path,
)
from toollab.tools.validation import (
    check_arguments,
    check_tool_schema,
    schema_problems,
    tool_unknown_types,
    tool_warnings,
    validate_arguments,
    validate_call,
)

__all__ = [
    "CallResult",
    "CommandResult",
    "ExecutionResult",
    "Executor",
    "Param",
    "PoolEntry",
    "PoolFileError",
    "Problem",
    "Sandbox",
    "SandboxError",
    "SandboxViolation",
    "ToolFunction",
    "ToolPool",
    "check_arguments",
    "check_tool_schema",
    "normalize_schema",
    "parse_docstring",
    "read_pool_file",
    "resolve_path",
    "schema_problems",
    "seal_to_tool",
    "to_jsonable",
    "tool",
    "tool_from_record",
    "tool_schema",
    "tool_to_record",
    "tool_unknown_types",
    "tool_warnings",
    "validate_arguments",
    "validate_call",
    "validate_file",
]
