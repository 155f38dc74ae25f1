"""toollab: make small open LLMs good tool users, and prove it."""

from toollab.errors import (
    ArgumentValidationError,
    BackendError,
    InputError,
    ModelError,
    ToolExecutionError,
    ToolLabError,
    ToolSchemaError,
)
from toollab.schema import Decision, GoldCall, Instance, Ref, Tool, ToolCall

__version__ = "0.1.0"

__all__ = [
    "ArgumentValidationError",
    "BackendError",
    "Decision",
    "GoldCall",
    "InputError",
    "Instance",
    "ModelError",
    "Ref",
    "Tool",
    "ToolCall",
    "ToolExecutionError",
    "ToolLabError",
    "ToolSchemaError",
    "__version__",
]
