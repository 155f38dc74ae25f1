"""toollab: make small open LLMs good tool users, and prove it.

The library API: ``Task(dataset, agent, environment, scorers, ...)`` and
``evaluate(tasks, model) -> EvalLog`` (see :mod:`toollab.eval.task`); the records of a run
(:class:`Prediction`, :class:`ParseResult`, :class:`ExecutionRecord`) and the tool schema.
"""

from typing import TYPE_CHECKING, Any

from toollab.errors import (
    ArgumentValidationError,
    BackendError,
    InputError,
    ModelError,
    ToolExecutionError,
    ToolLabError,
    ToolSchemaError,
)
from toollab.registry import shield_pydantic_plugins

shield_pydantic_plugins()  # before the first pydantic model: a broken package must not stop us

from toollab.schema import Decision, GoldCall, Instance, Ref, Tool, ToolCall  # noqa: E402
from toollab.schema.record import ExecutionRecord, ParseResult, Prediction, Step  # noqa: E402

if TYPE_CHECKING:
    from toollab.eval.task import EvalLog, SampleLog, Task, TaskLog, evaluate
    from toollab.tools import Param, tool

#: the evaluation API, imported on first use (``import toollab`` stays light)
_LAZY = {
    "EvalLog": "toollab.eval.task",
    "SampleLog": "toollab.eval.task",
    "Task": "toollab.eval.task",
    "TaskLog": "toollab.eval.task",
    "evaluate": "toollab.eval.task",
    # tools are written the way smolagents users write them: ``from toollab import tool``
    "Param": "toollab.tools",
    "tool": "toollab.tools",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'toollab' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "ArgumentValidationError",
    "BackendError",
    "Decision",
    "EvalLog",
    "ExecutionRecord",
    "GoldCall",
    "InputError",
    "Instance",
    "ModelError",
    "Param",
    "ParseResult",
    "Prediction",
    "Ref",
    "SampleLog",
    "Step",
    "Task",
    "TaskLog",
    "Tool",
    "ToolCall",
    "ToolExecutionError",
    "ToolLabError",
    "ToolSchemaError",
    "__version__",
    "evaluate",
    "tool",
]
