"""A simulated tool server for benchmarks whose tools are real web APIs (ToolEyes).

:class:`ToolServer` answers an instance's calls offline (a :class:`~toollab.envs.base.CallExecutor`
the agents execute through): schema errors as a real API gives them, valid calls from an on-disk
cache or from a backend — the deterministic schema simulator or a model that plays the API — and
``ask_to_user`` through a simulated user.  :class:`ToolServers` builds one per instance for a
run (``toollab eval --tool-server sim|MODEL --tool-cache DIR --user scripted|MODEL``).
"""

from toollab.eval.toolserver.cache import ResponseCache, call_key
from toollab.eval.toolserver.model_backend import ModelBackend
from toollab.eval.toolserver.server import (
    Answer,
    Backend,
    SchemaBackend,
    ServerStats,
    ToolServer,
    api_error,
)
from toollab.eval.toolserver.setup import (
    NONE,
    SCRIPTED,
    SIM,
    ToolServers,
    check_server_spec,
    check_user_spec,
)
from toollab.eval.toolserver.user import ModelUser, ScriptedUser, SimulatedUser

__all__ = [
    "NONE",
    "SCRIPTED",
    "SIM",
    "Answer",
    "Backend",
    "ModelBackend",
    "ModelUser",
    "ResponseCache",
    "SchemaBackend",
    "ScriptedUser",
    "ServerStats",
    "SimulatedUser",
    "ToolServer",
    "ToolServers",
    "api_error",
    "call_key",
    "check_server_spec",
    "check_user_spec",
]
