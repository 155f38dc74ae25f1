"""Running a call graph against a :class:`~toollab.tools.pool.ToolPool`.

:class:`Executor` takes a list of :class:`~toollab.schema.ToolCall` (a call graph: a call may use
an earlier call's output through a :class:`~toollab.schema.Ref`, or through a Seal-Tools
``"API_call_N"`` label, which is linked with :func:`toollab.schema.link_calls` and the tools'
``return_fields``) and gives one :class:`CallResult` per call:

* references are resolved to earlier outputs (``Ref.field`` picks a field of an object output;
  a call with a single output label of a tool with a single declared output field refers to that
  field; a tool with a single declared field may also return the bare value);
* arguments are validated before running; invalid arguments, an unknown tool or a tool without an
  implementation become error observations, never exceptions;
* independent calls (one wave of :func:`toollab.schema.levels`) run concurrently, at most
  ``max_workers`` at a time, unless the pool, the executor or the tool says ``parallel=False``;
* a tool's exception becomes the observation ``{"error": "ValueError: ..."}``; a call that runs
  longer than its timeout (default 10 s) gives a timeout observation; a call whose dependency
  failed fails with a reason naming it;
* tools registered with ``sandboxed=True`` — and every tool when the executor is made with
  ``confine=True`` — run behind the OS boundary of a :class:`~toollab.tools.sandbox.Sandbox`;
* outputs are made JSON-serialisable (:func:`~toollab.tools.jsonable.to_jsonable`), each
  conversion noted on the result; an output larger than ``max_result_bytes`` (as JSON) is an
  error of kind ``result``.

Nothing a tool does escapes as an exception: whatever it raises (``KeyboardInterrupt`` and
``SystemExit`` included) and whatever it returns (a list that contains itself, a 5,000-digit
integer, an object whose ``str()`` raises) becomes an observation.  In-process tools, sync and
async alike, run on worker threads (async ones on their own event loop), so a tool stuck in a CPU
loop never blocks the executor's loop and its timeout is reported on time; such a thread cannot be
stopped inside the process, though: it runs on and its result is dropped.  Confined tools are
killed, with everything they started.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from toollab.errors import UnknownToolError
from toollab.schema import Ref, ToolCall, dependencies, levels, link_calls
from toollab.schema.json import JsonObject
from toollab.tools.jsonable import ResultTooLarge, to_jsonable
from toollab.tools.pool import PoolEntry, ToolPool
from toollab.tools.sandbox import Sandbox, SandboxError
from toollab.tools.validation import validate_arguments

#: why a call has no output
ERROR_KINDS = (
    "unknown_tool",  # no such tool in the pool
    "not_executable",  # the tool has a schema but no implementation
    "reference",  # a reference names no earlier output, or a field the output lacks
    "dependency",  # a call this one uses failed
    "validation",  # the (resolved) arguments do not fit the schema
    "exception",  # the tool raised
    "timeout",  # the tool ran longer than its timeout
    "sandbox",  # the sandbox stopped the tool (CPU, memory, refused operation, crash)
    "result",  # the tool's output is too large
)


@dataclass
class CallResult:
    """The outcome of one call."""

    index: int
    call: ToolCall
    #: the arguments the tool received, references resolved (``None`` when resolution failed)
    arguments: dict[str, object] | None = None
    output: Any = None
    error: str | None = None
    #: one of :data:`ERROR_KINDS` when ``error`` is set
    error_kind: str | None = None
    #: every argument problem, when ``error_kind == "validation"``
    reasons: list[str] = field(default_factory=list)
    duration: float = 0.0
    #: seconds from the start of the run to the start of this call
    started: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def observation(self) -> Any:
        """What an agent sees: the output, or ``{"error": "..."}``."""
        return self.output if self.ok else {"error": self.error}

    def to_json(self) -> JsonObject:
        out: dict[str, Any] = {
            "index": self.index,
            "name": self.call.name,
            "call": self.call.model_dump(exclude_defaults=True),
            "arguments": self.arguments,
            "output": self.output,
            "error": self.error,
            "error_kind": self.error_kind,
            "duration": round(self.duration, 6),
        }
        if self.reasons:
            out["reasons"] = self.reasons
        if self.notes:
            out["notes"] = self.notes
        return out


@dataclass
class ExecutionResult:
    """The outcome of a call graph: one :class:`CallResult` per call, in call order."""

    results: list[CallResult]
    duration: float

    def __iter__(self) -> Iterator[CallResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: int) -> CallResult:
        return self.results[i]

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def outputs(self) -> list[Any]:
        return [r.output for r in self.results]

    @property
    def observations(self) -> list[Any]:
        return [r.observation for r in self.results]

    @property
    def failed(self) -> list[CallResult]:
        return [r for r in self.results if not r.ok]

    def to_json(self) -> JsonObject:
        return {
            "ok": self.ok,
            "duration": round(self.duration, 6),
            "results": [r.to_json() for r in self.results],
        }


class CallFailure(Exception):
    """Why a call has no output: ``kind`` is one of :data:`ERROR_KINDS`; ``reasons`` lists every
    argument problem (``kind == "validation"``); ``arguments`` are the resolved arguments when
    resolution got that far."""

    def __init__(
        self,
        kind: str,
        message: str,
        reasons: Sequence[str] = (),
        arguments: dict[str, object] | None = None,
    ) -> None:
        self.kind = kind
        self.reasons = list(reasons)
        self.arguments = arguments
        super().__init__(message)


_Failure = CallFailure


def prepare_call(
    pool: ToolPool,
    calls: Sequence[ToolCall],
    index: int,
    results: Sequence[CallResult | None],
    *,
    validate: bool = True,
) -> tuple[PoolEntry, dict[str, object]]:
    """Everything that happens before call ``index`` of ``calls`` runs: the tool's pool entry,
    its references resolved against the earlier ``results``, its arguments validated, its
    implementation present.  :class:`CallFailure` says why the call cannot run.

    One code path for user tools (:class:`Executor`) and the built-in environments."""
    call = calls[index]
    try:
        entry = pool.entry(call.name)
    except UnknownToolError as exc:
        raise CallFailure("unknown_tool", str(exc)) from None
    args = resolve_references(call.arguments, index, calls, results, pool)
    if validate:
        reasons = validate_arguments(entry.tool, args)
        if reasons:
            raise CallFailure(
                "validation", "invalid arguments: " + "; ".join(reasons), reasons, args
            )
    if entry.fn is None:
        raise CallFailure(
            "not_executable", f"tool {call.name!r} has no implementation in the pool", (), args
        )
    return entry, args


def resolve_references(
    value: Any,
    index: int,
    calls: Sequence[ToolCall],
    results: Sequence[CallResult | None],
    pool: ToolPool,
) -> Any:
    """``value`` (a call's arguments) with every :class:`Ref` replaced by the earlier output it
    names (see the module docs); :class:`CallFailure` (``reference`` or ``dependency``)."""
    if isinstance(value, Ref):
        return _resolve_ref(value, index, calls, results, pool)
    if isinstance(value, dict):
        return {k: resolve_references(v, index, calls, results, pool) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [resolve_references(v, index, calls, results, pool) for v in value]
    return value


def _resolve_ref(
    ref: Ref,
    i: int,
    graph: Sequence[ToolCall],
    results: Sequence[CallResult | None],
    pool: ToolPool,
) -> Any:
    idx = ref.call
    if idx is None:
        idx = next((j for j in range(i) if ref.label in graph[j].outputs), None)
    if idx is None or not 0 <= idx < i:
        raise CallFailure(
            "reference", f"reference {ref.label!r} names no output of an earlier call"
        )
    producer = results[idx] if idx < len(results) else None
    if producer is None or not producer.ok:
        why = producer.error if producer is not None else "it did not run"
        raise CallFailure(
            "dependency", f"depends on call {idx} ({graph[idx].name}), which failed: {why}"
        )
    out = producer.output
    if ref.field is None:
        return out
    if isinstance(out, dict):
        if ref.field in out:
            return out[ref.field]
        raise CallFailure(
            "reference",
            f"reference {ref.label!r}: the output of call {idx} ({graph[idx].name}) has no field "
            f"{ref.field!r} (it has {sorted(out)})",
        )
    if len(pool.return_fields().get(graph[idx].name, [])) == 1:
        return out  # a tool with one declared output field returned the bare value
    raise CallFailure(
        "reference",
        f"reference {ref.label!r} picks field {ref.field!r}, but call {idx} ({graph[idx].name}) "
        f"returned {type(out).__name__}, not an object",
    )


class Executor:
    """Runs call graphs against ``pool`` (see the module docs).

    ``timeout`` is the per-call limit in seconds (``None``: no limit; a tool's own ``timeout``
    wins); ``max_workers`` bounds how many calls run at once; ``parallel`` overrides the pool's
    flag; ``validate=False`` skips argument validation; ``confine=True`` runs *every* tool in the
    sandbox, not only those marked ``sandboxed``; ``sandbox`` is the one used (default: a
    :class:`Sandbox` with a fresh working directory, created when first needed and removed by
    :meth:`close`); ``max_result_bytes`` caps an output's JSON size.
    """

    def __init__(
        self,
        pool: ToolPool,
        *,
        timeout: float | None = 10.0,
        max_workers: int | None = None,
        parallel: bool | None = None,
        validate: bool = True,
        sandbox: Sandbox | None = None,
        confine: bool = False,
        max_result_bytes: int = 1_000_000,
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if max_result_bytes < 1:
            raise ValueError(f"max_result_bytes must be positive, got {max_result_bytes}")
        self.confine = confine
        self.max_result_bytes = max_result_bytes
        self.pool = pool
        self.timeout = timeout
        self.max_workers = max_workers or min(32, (os.cpu_count() or 1) + 4)
        if self.max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.parallel = pool.parallel if parallel is None else parallel
        self.validate = validate
        self._sandbox = sandbox
        self._own_sandbox = False

    # -- lifecycle ----------------------------------------------------------------------------------
    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = Sandbox(
                timeout=self.timeout or 30.0, max_result_bytes=max(1024, self.max_result_bytes)
            )
            self._own_sandbox = True
        return self._sandbox

    def close(self) -> None:
        if self._own_sandbox and self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None
            self._own_sandbox = False

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- linking ------------------------------------------------------------------------------------
    def link(self, calls: Sequence[ToolCall]) -> list[ToolCall]:
        """Seal-Tools labels → linked :class:`Ref` objects (with the single-field rule applied)."""
        fields = self.pool.return_fields()
        linked = link_calls(list(calls), fields)

        def refine(value: Any) -> Any:
            if isinstance(value, Ref):
                if value.field is None and value.call is not None and 0 <= value.call < len(linked):
                    producer = linked[value.call]
                    pf = fields.get(producer.name, [])
                    if len(producer.outputs) == 1 and len(pf) == 1:
                        return Ref(value.label, value.call, pf[0])
                return value
            if isinstance(value, dict):
                return {k: refine(v) for k, v in value.items()}
            if isinstance(value, list):
                return [refine(v) for v in value]
            return value

        return [c.model_copy(update={"arguments": refine(c.arguments)}) for c in linked]

    # -- running ------------------------------------------------------------------------------------
    def execute(self, calls: Sequence[ToolCall], *, link: bool = True) -> ExecutionResult:
        """Run ``calls``; safe to call from inside a running event loop (it then uses a thread)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.aexecute(calls, link=link))
        box: dict[str, Any] = {}

        def runner() -> None:
            try:
                box["result"] = asyncio.run(self.aexecute(calls, link=link))
            except BaseException as exc:
                box["error"] = exc

        thread = threading.Thread(target=runner, name="toollab-executor")
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        result: ExecutionResult = box["result"]
        return result

    def run(self, call: ToolCall) -> CallResult:
        """Run one call (no references)."""
        return self.execute([call], link=False).results[0]

    async def aexecute(self, calls: Sequence[ToolCall], *, link: bool = True) -> ExecutionResult:
        """Run ``calls`` wave by wave; calls of one wave run concurrently where allowed."""
        graph = self.link(calls) if link else list(calls)
        deps = dependencies(graph)
        results: list[CallResult | None] = [None] * len(graph)
        sem = asyncio.Semaphore(self.max_workers)
        t0 = time.perf_counter()
        for wave in levels(graph):
            together = [i for i in wave if self._may_share(graph[i])]
            alone = [i for i in wave if i not in together]
            if together:
                done = await asyncio.gather(
                    *(self._one(i, graph, deps, results, sem, t0) for i in together)
                )
                for r in done:
                    results[r.index] = r
            for i in alone:
                results[i] = await self._one(i, graph, deps, results, sem, t0)
        final = [r for r in results if r is not None]
        return ExecutionResult(results=final, duration=time.perf_counter() - t0)

    def _may_share(self, call: ToolCall) -> bool:
        if not self.parallel:
            return False
        entry = self._entry(call.name)
        return entry is None or entry.parallel

    def _entry(self, name: str) -> PoolEntry | None:
        try:
            return self.pool.entry(name)
        except UnknownToolError:
            return None

    async def _one(
        self,
        i: int,
        graph: list[ToolCall],
        deps: list[set[int]],
        results: list[CallResult | None],
        sem: asyncio.Semaphore,
        t0: float,
    ) -> CallResult:
        call = graph[i]
        res = CallResult(index=i, call=call, started=time.perf_counter() - t0)
        try:
            for d in sorted(deps[i]):
                dep = results[d]
                if dep is None or not dep.ok:
                    why = dep.error if dep is not None else "it did not run"
                    raise _Failure(
                        "dependency", f"depends on call {d} ({graph[d].name}), which failed: {why}"
                    )
            try:
                entry, args = prepare_call(self.pool, graph, i, results, validate=self.validate)
            except CallFailure as exc:
                res.arguments, res.reasons = exc.arguments, exc.reasons
                raise
            res.arguments = args
            timeout = entry.timeout if entry.timeout is not None else self.timeout
            async with sem:
                start = time.perf_counter()
                try:
                    output, notes = await self._invoke(entry, args, timeout)
                finally:
                    res.duration = time.perf_counter() - start
            res.output = self._checked(output, notes)
            res.notes = notes
        except _Failure as exc:
            res.error, res.error_kind = str(exc), exc.kind
        except Exception as exc:  # a last line: the executor promises observations, not raises
            res.error, res.error_kind = _describe(exc), "exception"
        return res

    def _checked(self, output: Any, notes: list[str]) -> Any:
        """The output as JSON data within ``max_result_bytes``, else a ``result`` failure."""
        try:
            value = to_jsonable(output, notes)
            size = len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        except ResultTooLarge as exc:
            raise _Failure("result", f"the output is too large: {exc}") from None
        if size > self.max_result_bytes:
            raise _Failure(
                "result",
                f"the output is too large: {size:,} bytes of JSON (limit {self.max_result_bytes:,})",
            )
        return value

    async def _invoke(
        self, entry: PoolEntry, args: dict[str, Any], timeout: float | None
    ) -> tuple[Any, list[str]]:
        fn = entry.fn
        if fn is None:
            raise _Failure(
                "not_executable", f"tool {entry.tool.name!r} has no implementation in the pool"
            )
        limit = timeout
        try:
            if entry.sandboxed or self.confine:
                sandbox = self.sandbox
                limit = timeout if timeout is not None else sandbox.timeout

                def boxed() -> tuple[Any, list[str]]:
                    return sandbox.call(fn, (), args, timeout=limit)

                value, notes = await self._in_thread(boxed, entry.tool.name)
                return value, list(notes)
            if entry.is_async:
                # its own loop on a worker thread: a CPU-bound coroutine cannot hold ours past
                # its timeout
                def run_async() -> Any:
                    return asyncio.run(_await(fn(**args)))

                return await _bounded(self._in_thread(run_async, entry.tool.name), timeout), []
            return await _bounded(self._in_thread(lambda: fn(**args), entry.tool.name), timeout), []
        except SandboxError as exc:
            if exc.kind == "timeout":
                raise _Failure("timeout", f"timed out after {limit:g} s") from None
            if exc.kind == "exception":
                raise _Failure("exception", str(exc)) from None
            if exc.kind == "result_size":
                raise _Failure("result", f"the output is too large: {exc}") from None
            raise _Failure("sandbox", f"{exc.kind}: {exc}") from None
        except _Failure:
            raise
        except Exception as exc:
            raise _Failure("exception", _describe(exc)) from None

    @staticmethod
    async def _in_thread(fn: Callable[[], Any], name: str) -> Any:
        """Run a blocking function in a daemon thread (a hung tool never blocks exit)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Any] = loop.create_future()

        def deliver(ok: bool, value: Any) -> None:
            if fut.done():
                return
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(value)

        def target() -> None:
            try:
                value = fn()
            except Exception as exc:
                outcome: tuple[bool, Any] = (False, exc)
            except BaseException as exc:  # KeyboardInterrupt, SystemExit: the tool's, not ours
                outcome = (False, _Failure("exception", _describe(exc)))
            else:
                outcome = (True, value)
            # RuntimeError: the run is over (the call timed out and the loop closed)
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(deliver, *outcome)

        threading.Thread(target=target, name=f"toollab-tool-{name}", daemon=True).start()
        return await fut


def _describe(exc: BaseException) -> str:
    """``"Type: message"`` of an exception, even one whose ``str()`` raises."""
    name = type(exc).__name__
    try:
        message = str(exc)
    except Exception:
        message = "<the exception's message could not be read>"
    if len(message) > 2000:
        message = message[:2000] + f"... ({len(message):,} characters)"
    return f"{name}: {message}" if message else name


async def _await(awaitable: Any) -> Any:
    return await awaitable


async def _bounded(awaitable: Awaitable[Any], timeout: float | None) -> Any:
    """Await with a time limit; a tool's own ``TimeoutError`` stays an ordinary exception."""
    cm = asyncio.timeout(timeout)
    try:
        async with cm:
            return await awaitable
    except TimeoutError:
        if cm.expired():
            raise _Failure("timeout", f"timed out after {timeout:g} s") from None
        raise
