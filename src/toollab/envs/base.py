"""Executable environments: tools, a state, and a success check.

An :class:`Environment` is a small deterministic world.  Its tools are methods decorated with
:func:`~toollab.tools.tool` (the schema comes from the signature and the docstring, as for user
tools); :meth:`Environment.reset` puts it in the initial state for a seed,
:meth:`Environment.execute` runs one :class:`~toollab.schema.ToolCall` (raising :class:`EnvError`
— a :class:`~toollab.errors.ToolExecutionError` — for a bad call), :meth:`Environment.state`
returns the JSON-serialisable outcome, and :meth:`Environment.check` compares an outcome with the
outcomes of the label programs (SambaNova ToolBench's rule: dict-F1 between the predicted and each
label's final state, best label kept, success = F1 == 1).

Calls go through the same lookup, reference resolution and argument validation as user tools
(:func:`toollab.tools.execution.prepare_call` over the environment's
:class:`~toollab.tools.ToolPool`).  :meth:`Environment.run` executes a whole program; an exception
during execution makes it *crashed* (no partial credit), exactly as the upstream evaluators do.

An environment class is the whole extension point: besides its tools, state and success check it
declares its task set (:attr:`Environment.tasks`: the goal templates and split policy of its
generated data) and its decoding budget (:attr:`Environment.max_tokens`).  The protocols at the
end of the section below (:class:`CallExecutor` and the capabilities an executor may add) are
what agents and scorers ask of anything that executes calls; an :class:`Environment` has them all
(:class:`PlanScored` only where it scores plans).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from toollab.errors import ToolExecutionError, did_you_mean, path_component
from toollab.registry import Registry
from toollab.schema import Instance, Tool, ToolCall
from toollab.schema.measures import canonical_json, dict_prf, same_value  # noqa: F401 (re-exported)
from toollab.tools.decorator import ToolFunction
from toollab.tools.execution import CallFailure, CallResult, prepare_call
from toollab.tools.pool import ToolPool

if TYPE_CHECKING:  # the task set module builds on this one
    from toollab.envs.taskset import TaskSet

#: why a program crashed (EnvError.reason)
UNKNOWN_TOOL = "unknown_tool"
BAD_ARGUMENTS = "bad_arguments"
ORDER = "order"
PRECONDITION = "precondition"
NOT_FOUND = "not_found"
BAD_VALUE = "bad_value"
MISSING = "missing_required"

#: the executor's failure kinds (:data:`toollab.tools.execution.ERROR_KINDS`) as crash reasons
_REASON_OF_FAILURE = {
    "unknown_tool": UNKNOWN_TOOL,
    "not_executable": UNKNOWN_TOOL,
    "reference": BAD_ARGUMENTS,
    "dependency": BAD_ARGUMENTS,
    "validation": BAD_ARGUMENTS,
}


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


@runtime_checkable
class CallExecutor(Protocol):
    """Anything that executes tool calls one at a time (an :class:`Environment`, a tool pool with
    implementations, a sandbox): ``execute`` may be a plain or an ``async`` method; it returns the
    observation or raises.  This is what an agent is given to run an instance's calls."""

    def execute(self, call: ToolCall) -> Any: ...


@runtime_checkable
class RunsPrograms(Protocol):
    """An executor that runs a whole program from a seeded start and reports its
    :class:`Execution` (every :class:`Environment`)."""

    def run(self, calls: Sequence[ToolCall], seed: int | None = None) -> Execution: ...


@runtime_checkable
class HasState(Protocol):
    """An executor whose current state can be read (every :class:`Environment`)."""

    def state(self) -> dict[str, object]: ...


@runtime_checkable
class RendersActions(Protocol):
    """An executor with its own text form of a call (household: normalised object names)."""

    def action_text(self, call: ToolCall) -> str: ...


@runtime_checkable
class AnswersUser(Protocol):
    """An executor that also plays the user: it answers the model's question to the user
    (ToolEyes' ``ask_to_user``), or ``None`` when the user answers no more (the simulated
    tool server, :mod:`toollab.eval.toolserver`)."""

    async def ask_user(self, question: str) -> str | None: ...


@runtime_checkable
class PlanScored(Protocol):
    """An environment whose plans are also scored by their closeness to the reference plans
    (household: SambaNova's VirtualHome LCS)."""

    def plan_lcs(self, pred: Sequence[ToolCall], refs: Sequence[Sequence[ToolCall]]) -> float: ...


class Environment(ABC):
    """The environment protocol: every built-in environment, and any plugin one, is one of these.

    Subclasses set :attr:`description` (and :attr:`scenario`), declare their tools as methods
    decorated with ``@tool`` and implement :meth:`reset` and :meth:`state`::

        @register_env("counter")
        class CounterEnv(Environment):
            description = "A counter."

            def reset(self, seed: int = 0) -> None:
                self.seed, self.value = seed, 0

            def state(self) -> dict[str, object]:
                return {"value": self.value}

            @tool(returns=False)
            def add(self, amount: Annotated[int, Param(minimum=1)]) -> int:
                \"\"\"Add to the counter.

                Args:
                    amount: How much to add.
                \"\"\"
                self.value += amount
                return self.value

    A tool method raises :class:`EnvError` (with one of the module's reason codes) for a call the
    environment refuses.  The evaluation path uses :attr:`tools`, :meth:`reset`, :meth:`state`,
    :meth:`execute` and :meth:`run` to record what a program does (agents), and
    :meth:`label_states`, :meth:`check` and :meth:`action_text` to judge it (the ``environment``
    scorer).  :attr:`tasks` makes it generate data and run in ``toollab bench``;
    :attr:`max_tokens` is its decoding budget there.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: the ToolEyes scenario the environment covers (TG, DU, RS, AM, PL, IR, FT) when any
    scenario: ClassVar[str | None] = None
    #: the goal templates and split policy of the environment's generated data (``toollab data
    #: generate``, ``toollab bench``); ``None``: it generates no data.  Created in the class body
    #: (``tasks = TaskSet("name", ...)``, the name it is registered under); templates are added
    #: with ``@Cls.tasks.template(...)``
    tasks: ClassVar[TaskSet | None] = None
    #: tokens per model turn in ``toollab bench`` (room for the longest gold programs of the
    #: test split in the json template)
    max_tokens: ClassVar[int] = 96
    #: tools offered per request in ``toollab bench``: the top ``retrieved_tools`` a BM25
    #: retriever finds for the request among the environment's tools (for an environment with
    #: more tool documents than a small model's prompt holds); ``None``: every tool
    retrieved_tools: ClassVar[int | None] = None
    #: the class's tool methods, found once (see :meth:`tool_functions`)
    _tool_functions: ClassVar[tuple[ToolFunction, ...]]
    _class_pool: ClassVar[ToolPool]

    def __init__(self) -> None:
        self.pool = self.class_pool().bound_to(self)
        self._tools = self.pool.tools
        self.seed = 0
        self.reset(0)

    # -- to implement ------------------------------------------------------------------------
    @abstractmethod
    def reset(self, seed: int = 0) -> None:
        """Back to the initial state for ``seed``."""

    @abstractmethod
    def state(self) -> dict[str, object]:
        """The JSON-serialisable outcome compared by :meth:`check`."""

    # -- the declared tools ----------------------------------------------------------------------
    @classmethod
    def tool_functions(cls) -> list[ToolFunction]:
        """The class's ``@tool`` methods (unbound), in the order they are defined; a subclass's
        method replaces the one of the same name."""
        cached = cls.__dict__.get("_tool_functions")
        if cached is not None:
            return list(cached)
        found: dict[str, ToolFunction] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                if isinstance(value, ToolFunction):
                    found[attr] = value
                elif attr in found:
                    del found[attr]  # a plain attribute hides an inherited tool
        functions = list(found.values())
        names = [f.tool.name for f in functions]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise TypeError(f"{cls.__name__}: more than one tool named {', '.join(dupes)}")
        cls._tool_functions = tuple(functions)
        return functions

    @classmethod
    def class_pool(cls) -> ToolPool:
        """The tool methods as a :class:`~toollab.tools.ToolPool` of unbound functions (schemas
        checked once per class); each instance binds a copy (:attr:`pool`)."""
        cached = cls.__dict__.get("_class_pool")
        if cached is None:
            cached = ToolPool(cls.tool_functions())
            cls._class_pool = cached
        return cached

    @classmethod
    def declared_tools(cls) -> list[Tool]:
        """The tool schemas, without building an instance."""
        return [f.tool for f in cls.tool_functions()]

    # -- public API ------------------------------------------------------------------------------
    @property
    def tools(self) -> list[Tool]:
        return list(self._tools)

    @property
    def tool_names(self) -> list[str]:
        return self.pool.names

    def tool(self, name: str) -> Tool:
        if name not in self.pool:
            raise EnvError(
                f"{self.name} has no function {name!r}{did_you_mean(name, self.tool_names)}",
                UNKNOWN_TOOL,
                name,
            )
        return self.pool.tool(name)

    def execute(self, call: ToolCall) -> Any:
        """Run one call and return its observation; :class:`EnvError` for a bad call (a reference
        to an earlier output cannot be resolved here: use :meth:`run`)."""
        return self.call_at([call], 0, [])

    def call_at(self, calls: Sequence[ToolCall], index: int, done: Sequence[CallResult]) -> Any:
        """Call ``index`` of ``calls``, the earlier ones' results ``done``: the executor's lookup,
        reference resolution and validation, then the tool method itself (both :meth:`execute`
        and :meth:`run` come here; an environment with a rule for every call overrides it)."""
        call = calls[index]
        try:
            entry, args = prepare_call(self.pool, calls, index, done)
        except CallFailure as exc:
            reason = _REASON_OF_FAILURE.get(exc.kind, BAD_ARGUMENTS)
            if reason == UNKNOWN_TOOL:
                self.tool(call.name)  # the environment's own message
            detail = "; ".join(exc.reasons) if exc.reasons else str(exc)
            raise EnvError(f"{call.name}: {detail}", reason, call.name) from None
        fn: Callable[..., Any] = entry.fn  # type: ignore[assignment]  # prepare_call checked it
        try:
            return fn(**args)
        except EnvError as exc:
            if exc.tool is None:
                exc.tool = call.name
            raise

    def action_text(self, call: ToolCall) -> str:
        """How an executed call is shown (``Find(object='tv')``); environments may normalise."""
        return call.action_text()

    def run(self, calls: Sequence[ToolCall], seed: int | None = None) -> Execution:
        """Reset (to ``seed``, default the current one), execute ``calls`` in order, report.

        References (``{"$ref": label}``) to an earlier call's output are resolved first (by the
        executor's rules); the first failing call crashes the program.
        """
        self.reset(self.seed if seed is None else seed)
        calls = list(calls)
        observations: list[Any] = []
        done: list[CallResult] = []
        for i, call in enumerate(calls):
            try:
                obs = self.call_at(calls, i, done)
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
            done.append(CallResult(index=i, call=call, output=obs))
        return Execution(state=self.state(), observations=observations, n_calls=len(calls))

    def check(
        self, state: Mapping[str, object], labels: Sequence[Mapping[str, object]]
    ) -> CheckResult:
        """dict-F1 of ``state`` against each label state; the best label is kept."""
        best = CheckResult(success=False)
        for i, label in enumerate(labels):
            p, r, f = dict_prf(state, label)
            if best.label is None or f > best.f1:
                best = CheckResult(success=f >= 1.0 - 1e-12, precision=p, recall=r, f1=f, label=i)
        return best

    def labels_of(self, instance: Instance) -> list[dict[str, object]]:
        """What an outcome of ``instance`` is judged against (:meth:`check`'s ``labels``): the
        final states of its label programs (the gold program and its alternatives) run from the
        instance's seed.  An environment whose instructions many final states meet overrides
        this and :meth:`check` to judge by a predicate on the final state (tabletop)."""
        return self.label_states(label_programs(instance), instance_seed(instance))

    def label_states(
        self, programs: Sequence[Sequence[ToolCall]], seed: int
    ) -> list[dict[str, object]]:
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


# -- the instance's side ------------------------------------------------------------------------------
def instance_seed(instance: Instance) -> int:
    """The environment seed an instance asks for (``metadata["seed"]``, default 0)."""
    seed = instance.metadata.get("seed", 0)
    try:
        return int(seed)
    except (TypeError, ValueError):
        return 0


def label_programs(instance: Instance) -> list[list[ToolCall]]:
    """The gold program and its acceptable alternatives (the empty program for a no-call)."""
    programs: list[list[ToolCall]] = [list(instance.gold)]
    programs.extend(list(alt) for alt in instance.alternatives)
    return programs


#: how an instance names the registered environment it belongs to (``Instance.source``)
ENV_SOURCE_PREFIX = "env:"


def env_name_of(instance: Instance) -> str | None:
    """The registered environment an instance belongs to (its ``env:<name>`` source), else
    ``None``."""
    src = instance.source or ""
    if not src.startswith(ENV_SOURCE_PREFIX):
        return None
    name = src.removeprefix(ENV_SOURCE_PREFIX)
    return name if name in ENVIRONMENTS else None


# -- registry -----------------------------------------------------------------------------------
def _adopt_env(registry: Registry[type[Environment]], name: str, cls: Any) -> None:
    """An entry point's environment class: registered under the entry point's name."""
    if not (isinstance(cls, type) and issubclass(cls, Environment)):
        raise TypeError(f"an environment must be an Environment subclass, got {cls!r}")
    register_env(name)(cls)


#: environment classes, in the order they are listed and run (the built-ins in the order
#: :mod:`toollab.envs` imports them, then plugins); plugins: ``environment:NAME`` entry points
ENVIRONMENTS: Registry[type[Environment]] = Registry(
    "environment", builtins=("toollab.envs",), adopt=_adopt_env
)


def register_env(name: str) -> Callable[[type[Environment]], type[Environment]]:
    """Class decorator: make an environment available as ``get_env(name)``.  A task set the
    class declares must carry the same name."""
    path_component(name, "register_env(name)")  # its runs are kept in a folder of that name

    def deco(cls: type[Environment]) -> type[Environment]:
        tasks = cls.__dict__.get("tasks")
        if tasks is not None and tasks.env != name:
            raise TypeError(
                f"{cls.__name__}: its task set is named {tasks.env!r}, but the environment is "
                f"registered as {name!r} (write tasks = TaskSet({name!r}, ...))"
            )
        cls.name = name
        return ENVIRONMENTS.register(name, cls)

    return deco


def env_names() -> list[str]:
    """Registered environments, in registration order: the built-ins in the order
    :mod:`toollab.envs` imports them, then any others."""
    return ENVIRONMENTS.registered()


def task_env_names() -> list[str]:
    """The registered environments that generate data (their class declares a task set), in
    :func:`env_names` order: what ``toollab bench`` and ``toollab data generate`` run by
    default."""
    return [n for n in env_names() if env_class(n).tasks is not None]


def env_class(name: str) -> type[Environment]:
    return ENVIRONMENTS.get(name)


def get_env(name: str, seed: int = 0) -> Environment:
    """A fresh environment, reset to ``seed``."""
    env = env_class(name)()
    env.reset(seed)
    return env
