"""What ``--tool-server``, ``--tool-cache`` and ``--user`` make: one :class:`ToolServers` per run.

* ``tool_server``: ``sim`` (the schema simulator), ``none`` (no executor: every call is answered
  "no environment is available"), or any model string (the model plays the API);
* ``user``: ``scripted`` (fixed replies), ``none`` (``ask_to_user`` ends the episode), or a
  model string (the model plays the user);
* ``tool_cache``: the folder of the answers on disk (one file per server, see :mod:`.cache`).

:class:`ToolServers` is the run's environment factory (instance → :class:`ToolServer`): one
cache, one backend and one :class:`ServerStats` for the whole run, a fresh user (with its own
turn budget) per instance.  Models are loaded on the first call that needs them and closed by
:meth:`ToolServers.close`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from toollab.errors import UsageError
from toollab.eval.toolserver.cache import ResponseCache
from toollab.eval.toolserver.model_backend import ModelBackend
from toollab.eval.toolserver.server import Backend, SchemaBackend, ServerStats, ToolServer
from toollab.eval.toolserver.user import DEFAULT_USER_TURNS, ModelUser, ScriptedUser
from toollab.models import registry as model_registry
from toollab.models.registry import ModelSource
from toollab.schema import Instance

SIM = "sim"
NONE = "none"
SCRIPTED = "scripted"


def check_server_spec(spec: str, option: str = "--tool-server") -> str:
    """``spec`` when it is ``sim``, ``none`` or a model string; a :class:`UsageError` naming
    ``option`` otherwise.  Loads nothing."""
    if spec in (SIM, NONE):
        return spec
    return _model_spec(spec, option, f"{SIM}, {NONE}")


def check_user_spec(spec: str, option: str = "--user") -> str:
    """``spec`` when it is ``scripted``, ``none`` or a model string (see
    :func:`check_server_spec`)."""
    if spec in (SCRIPTED, NONE):
        return spec
    return _model_spec(spec, option, f"{SCRIPTED}, {NONE}")


def _model_spec(spec: str, option: str, words: str) -> str:
    if not isinstance(spec, str) or not spec.strip():
        raise UsageError(f"{option}: give {words} or a model string, not {spec!r}")
    if ":" not in spec:
        raise UsageError(
            f"{option}: {spec!r} is neither {words} nor a model string (provider:model, e.g. "
            "openai:NAME@URL)"
        )
    model_registry.check_model_string(spec)
    return spec


class ToolServers:
    """The environment factory of one run (see the module docs)."""

    def __init__(
        self,
        server: str = SIM,
        *,
        cache_dir: str | Path | None = None,
        user: str = SCRIPTED,
        user_turns: int = DEFAULT_USER_TURNS,
    ) -> None:
        check_server_spec(server)
        check_user_spec(user)
        if server == NONE:
            raise UsageError("--tool-server none executes nothing: make no tool server for it")
        self.server = server
        self.user = user
        self.user_turns = user_turns
        self.stats = ServerStats()
        #: how the model-played user's replies were repaired
        self.user_notes: Counter[str] = Counter()
        self._sources: list[ModelSource] = []
        self.backend: Backend
        if server == SIM:
            self.backend = SchemaBackend()
        else:
            self.backend = ModelBackend(self._source(server))
        self.cache = ResponseCache(cache_dir, self.backend.cache_name)
        self._user_source = self._source(user) if user not in (SCRIPTED, NONE) else None

    def _source(self, spec: str) -> ModelSource:
        source = ModelSource(spec)
        self._sources.append(source)
        return source

    def __call__(self, instance: Instance) -> ToolServer:
        user: ScriptedUser | None = None
        if self._user_source is not None:
            user = ModelUser(self._user_source, max_turns=self.user_turns, notes=self.user_notes)
        elif self.user == SCRIPTED:
            user = ScriptedUser(max_turns=self.user_turns)
        return ToolServer(instance, self.backend, self.cache, stats=self.stats, user=user)

    def report(self) -> dict[str, object]:
        """What the run's servers did, for ``tool_server.json``."""
        return {
            "tool_server": self.server,
            "user": self.user,
            "cache": str(self.cache.path) if self.cache.path is not None else None,
            "cached_answers": len(self.cache),
            **self.stats.to_json(),
            "user_notes": dict(sorted(self.user_notes.items())),
        }

    def close(self) -> None:
        for source in self._sources:
            source.close()
