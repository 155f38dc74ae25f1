"""Executable environments: tools with JSON schemas, a state, and a success check.

An :class:`Environment` is a small deterministic world.  :meth:`Environment.reset` puts it in the
initial state for a seed, :meth:`Environment.execute` runs one :class:`~toollab.schema.ToolCall`
(raising :class:`EnvError` — a :class:`~toollab.errors.ToolExecutionError` — for a bad call),
:meth:`Environment.state` returns the JSON-serialisable outcome, and :meth:`Environment.check`
compares an outcome with the outcomes of the label programs (SambaNova ToolBench's rule: dict-F1
between the predicted and each label's final state, best label kept, success = F1 == 1).

:meth:`Environment.run` executes a whole program; an exception during execution makes it
*crashed* (no partial credit), exactly as the upstream evaluators do.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from toollab.errors import ToolExecutionError, UsageError, did_you_mean
from toollab.schema import Ref, Tool, ToolCall
from toollab.schema.measures import canonical_json, dict_prf, same_value  # noqa: F401 (re-exported)

#: why a program crashed (EnvError.reason)
UNKNOWN_TOOL = "unknown_tool"
BAD_ARGUMENTS = "bad_arguments"
ORDER = "order"
PRECONDITION = "precondition"
NOT_FOUND = "not_found"
BAD_VALUE = "bad_value"
MISSING = "missing_required"


class EnvError(ToolExecutionError):
    """A call the environment refuses; ``reason`` is one of the module's reason constants."""

    def __init__(self, message: str, reason: str = PRECONDITION, tool: str | None = None) -> None:
        self.reason = reason
        self.tool = tool
        super().__init__(message)


class Execution(BaseModel):
    """The outcome of running one program in an environment."""

    model_config = ConfigDict(extra="forbid")

    state: dict[str, Any] = Field(default_factory=dict)
    observations: list[Any] = Field(default_factory=list)
    crashed: bool = False
    error: str | None = None
    #: EnvError.reason of the crash
    reason: str | None = None
    #: index of the call that crashed
    failed_call: int | None = None
    n_calls: int = 0


class CheckResult(BaseModel):
    """How close a final state is to the best label's."""

    model_config = ConfigDict(extra="forbid")

    success: bool
    precision: float = 0.0
    recall: float = 0.0
    f1: float = 0.0
    #: index of the best label (0 = the gold program, 1.. = alternatives)
    label: int | None = None
    details: dict[str, Any] = Field(default_factory=dict)


_canon = canonical_json


def make_tool(
    name: str,
    description: str,
    properties: dict[str, dict[str, Any]] | None = None,
    required: Iterable[str] = (),
    returns: dict[str, Any] | None = None,
    category: str | None = None,
) -> Tool:
    """A tool with a JSON-schema parameters object (unknown keys are refused at execution)."""
    params: dict[str, Any] = {
        "type": "object",
        "properties": dict(properties or {}),
        "required": list(required),
    }
    return Tool(
        name=name, description=description, parameters=params, returns=returns, category=category
    )


class Environment(ABC):
    """Base of every built-in environment.

    Subclasses set :attr:`name`, build their tools in :meth:`build_tools` and implement one
    handler ``do_<tool name>(**arguments)`` per tool, plus :meth:`reset` and :meth:`state`.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: the ToolEyes scenario the environment covers (TG, DU, RS, AM, PL, IR, FT) when any
    scenario: ClassVar[str | None] = None

    def __init__(self) -> None:
        self._tools = self.build_tools()
        self._by_name = {t.name: t for t in self._tools}
        self._validators = {
            t.name: jsonschema.Draft202012Validator(t.parameters) for t in self._tools
        }
        self.seed = 0
        self.reset(0)

    # -- to implement ------------------------------------------------------------------------
    @abstractmethod
    def build_tools(self) -> list[Tool]:
        """The tools the environment offers (JSON-schema parameters)."""

    @abstractmethod
    def reset(self, seed: int = 0) -> None:
        """Back to the initial state for ``seed``."""

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """The JSON-serialisable outcome compared by :meth:`check`."""

    # -- public API ------------------------------------------------------------------------------
    @property
    def tools(self) -> list[Tool]:
        return list(self._tools)

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self._tools]

    def tool(self, name: str) -> Tool:
        if name not in self._by_name:
            raise EnvError(
                f"{self.name} has no function {name!r}{did_you_mean(name, self.tool_names)}",
                UNKNOWN_TOOL,
                name,
            )
        return self._by_name[name]

    def execute(self, call: ToolCall) -> Any:
        """Run one call and return its observation; :class:`EnvError` for a bad call."""
        tool = self.tool(call.name)
        args = dict(call.arguments)
        if any(isinstance(v, Ref) for v in args.values()):
            raise EnvError(
                f"{call.name}: unresolved reference in arguments", BAD_ARGUMENTS, call.name
            )
        unknown = [k for k in args if k not in tool.properties]
        if unknown:
            raise EnvError(
                f"{call.name}: unknown argument(s) {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(tool.properties) or 'none'}",
                BAD_ARGUMENTS,
                call.name,
            )
        errors = sorted(self._validators[tool.name].iter_errors(args), key=lambda e: list(e.path))
        if errors:
            reasons = "; ".join(_schema_error(e) for e in errors[:3])
            raise EnvError(f"{call.name}: {reasons}", BAD_ARGUMENTS, call.name)
        for key, spec in tool.properties.items():
            if key not in args and isinstance(spec, dict) and "default" in spec:
                args[key] = spec["default"]
        handler: Callable[..., Any] = getattr(self, f"do_{tool.name}")
        try:
            return handler(**args)
        except EnvError as exc:
            if exc.tool is None:
                exc.tool = call.name
            raise

    def run(self, calls: Sequence[ToolCall], seed: int | None = None) -> Execution:
        """Reset (to ``seed``, default the current one), execute ``calls`` in order, report.

        References (``{"$ref": label}``) to an earlier call's output are resolved first.
        """
        self.reset(self.seed if seed is None else seed)
        observations: list[Any] = []
        produced: dict[str, Any] = {}
        for i, call in enumerate(calls):
            try:
                resolved = _resolve(call, produced)
                obs = self.execute(resolved)
            except EnvError as exc:
                return Execution(
                    state={},
                    observations=observations,
                    crashed=True,
                    error=str(exc),
                    reason=exc.reason,
                    failed_call=i,
                    n_calls=len(calls),
                )
            except ToolExecutionError as exc:
                return Execution(
                    crashed=True,
                    error=str(exc),
                    reason=PRECONDITION,
                    failed_call=i,
                    observations=observations,
                    n_calls=len(calls),
                )
            observations.append(obs)
            for j, label in enumerate(call.outputs):
                produced[label] = obs if len(call.outputs) == 1 else _pick(obs, j)
        return Execution(state=self.state(), observations=observations, n_calls=len(calls))

    def check(self, state: dict[str, Any], labels: list[dict[str, Any]]) -> CheckResult:
        """dict-F1 of ``state`` against each label state; the best label is kept."""
        best = CheckResult(success=False)
        for i, label in enumerate(labels):
            p, r, f = dict_prf(state, label)
            if best.label is None or f > best.f1:
                best = CheckResult(success=f >= 1.0 - 1e-12, precision=p, recall=r, f1=f, label=i)
        return best

    def label_states(
        self, programs: Sequence[Sequence[ToolCall]], seed: int
    ) -> list[dict[str, Any]]:
        """Final states of the label programs; a label that crashes is an error in the data."""
        states = []
        for k, prog in enumerate(programs):
            ex = self.run(list(prog), seed)
            if ex.crashed:
                raise ToolExecutionError(
                    f"{self.name}: label program {k} does not execute: {ex.error}"
                )
            states.append(ex.state)
        return states


def _schema_error(err: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in err.path)
    return f"{where}: {err.message}" if where else err.message


def _pick(obs: Any, j: int) -> Any:
    if isinstance(obs, dict):
        vals = list(obs.values())
        return vals[j] if j < len(vals) else None
    return obs


def _resolve_value(value: Any, produced: dict[str, Any]) -> Any:
    if isinstance(value, Ref):
        if value.label not in produced:
            raise EnvError(f"reference {value.label!r} names no earlier output", BAD_ARGUMENTS)
        out = produced[value.label]
        if value.field is not None and isinstance(out, dict):
            return out.get(value.field)
        return out
    if isinstance(value, dict):
        return {k: _resolve_value(v, produced) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_value(v, produced) for v in value]
    return value


def _resolve(call: ToolCall, produced: dict[str, Any]) -> ToolCall:
    if not call.refs:
        return call
    return call.model_copy(update={"arguments": _resolve_value(call.arguments, produced)})


# -- query log: for environments whose calls read rather than change -------------------------------
class QueryLog:
    """Collects the responses of read-only calls; the state is the sorted, flattened responses.

    Like SambaNova's REST tasks (OpenWeather, Cat API) two programs agree when their responses
    agree, whatever the argument spelling that produced them.
    """

    def __init__(self) -> None:
        self.responses: list[dict[str, Any]] = []

    def clear(self) -> None:
        self.responses = []

    def add(self, response: dict[str, Any]) -> dict[str, Any]:
        self.responses.append(response)
        return response

    def flat(self, prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i, resp in enumerate(sorted(self.responses, key=_canon)):
            for k, v in resp.items():
                out[f"{prefix}{i}.{k}"] = v
        return out


# -- registry -----------------------------------------------------------------------------------
_ENVS: dict[str, type[Environment]] = {}


def register_env(name: str) -> Callable[[type[Environment]], type[Environment]]:
    """Class decorator: make an environment available as ``get_env(name)``."""

    def deco(cls: type[Environment]) -> type[Environment]:
        cls.name = name
        _ENVS[name] = cls
        return cls

    return deco


def _load_builtin() -> None:
    import toollab.envs  # noqa: F401  (importing the package registers the built-ins)


#: the built-in environments, in the order they are listed and run
BUILTIN_ORDER = (
    "home_search",
    "trip_booking",
    "weather",
    "favourites",
    "spreadsheet",
    "household",
    "text_generation",
    "data_understanding",
    "realtime_search",
    "workspace",
    "personal_life",
    "info_retrieval",
    "finance",
)


def env_names() -> list[str]:
    """Registered environments: the built-ins in :data:`BUILTIN_ORDER`, then any others."""
    _load_builtin()
    rank = {n: i for i, n in enumerate(BUILTIN_ORDER)}
    return sorted(_ENVS, key=lambda n: (rank.get(n, len(rank)), list(_ENVS).index(n)))


def env_class(name: str) -> type[Environment]:
    _load_builtin()
    if name not in _ENVS:
        raise UsageError(
            f"unknown environment {name!r}{did_you_mean(name, sorted(_ENVS))}; "
            f"known: {', '.join(sorted(_ENVS))}"
        )
    return _ENVS[name]


def get_env(name: str, seed: int = 0) -> Environment:
    """A fresh environment, reset to ``seed``."""
    env = env_class(name)()
    env.reset(seed)
    return env
