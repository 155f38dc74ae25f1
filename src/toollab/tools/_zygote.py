"""The process inside the sandbox's boundary that runs confined tool calls.

Started by :mod:`toollab.tools.confine` as ``python -I _zygote.py`` (inside bubblewrap when it is
available), with a clean environment.  It reads requests from stdin and answers on stdout, one
length-prefixed frame each.  For every call it forks a child, which starts its own session, sets
the resource limits, installs the audit hook (a second line only), runs the tool and writes its
result as JSON to a pipe; the zygote reads at most ``max_result`` bytes of it and afterwards kills
whatever the call left running (every other process of its PID namespace, or, without one, every
orphan reparented to it as a subreaper).

The zygote stays pristine: only the standard library is imported here, never a tool's module.  A
call that needs modules imported goes to a *module process* (:class:`_Module`) for that set of
modules, forked by the *template* (:class:`_Template`): a child the zygote forks before it reads
its first request, which only ever receives what to import and under which limits, so no module
process holds memory that held another call's arguments or result.  The module process sets a
call's limits, the workspace, the environment and the audit hook on itself, imports the modules,
and then forks the calls of those modules the way the zygote does.  It holds only its own two pipes
and the zygote reads only bounded JSON frames from it, so what a module does at import (allocate,
spin, patch the call loop, start threads) is bounded like a call and reaches no call of another
module.  The zygote is not dumpable and installs the seccomp filter (:mod:`toollab.tools._seccomp`)
on itself before the first call; it measures the workspace against its quota
(:mod:`toollab.tools._usage`) while each call runs and after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import importlib
import importlib.util
import inspect
import json
import marshal
import math
import os
import pickle
import resource
import select
import signal
import socket
import struct
import sys
import tempfile
import time
import traceback
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

_HEADER = struct.Struct("!Q")
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_DUMPABLE = 4
_MB = 1024 * 1024


def _sibling(name: str) -> types.ModuleType:
    """A module beside this file: through toollab when imported as part of it, by its file when
    this runs as the sandbox's program (which never imports toollab)."""
    if __name__ != "__main__":
        return importlib.import_module(f"toollab.tools.{name}")
    full = f"_toollab{name}"
    spec = importlib.util.spec_from_file_location(full, Path(__file__).with_name(f"{name}.py"))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from toollab.tools import _audit, _landlock, _leftovers, _plain, _seccomp, _usage
else:
    _audit, _landlock, _leftovers, _plain, _seccomp, _usage = (
        _sibling(n) for n in ("_audit", "_landlock", "_leftovers", "_plain", "_seccomp", "_usage")
    )
SandboxViolation = _audit.SandboxViolation
ResultTooLarge = _plain.ResultTooLarge
plain = _plain.plain
audit_hook = _audit.audit_hook
_kill_leftovers = _leftovers.kill_leftovers


# -- frames ------------------------------------------------------------------------------------------
def _read_exact(fd: int, n: int) -> bytes | None:
    parts: list[bytes] = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_frame(fd: int) -> bytes | None:
    head = _read_exact(fd, _HEADER.size)
    if head is None:
        return None
    return _read_exact(fd, _HEADER.unpack(head)[0])


def write_frame(fd: int, data: bytes) -> None:
    _write_all(fd, _HEADER.pack(len(data)) + data)


# -- functions by value ----------------------------------------------------------------------------
def rebuild_function(
    code: bytes,
    module: str,
    global_values: dict[str, Any] | None,
    name: str,
    defaults: tuple[Any, ...] | None,
    kwdefaults: dict[str, Any] | None,
    cells: tuple[Any, ...] | None,
) -> types.FunctionType:
    """A function sent by value (see :func:`toollab.tools.confine.dumps`): its code, the globals
    of its module (already imported here) or, for ``__main__``, the globals it uses."""
    mod = sys.modules.get(module)
    if global_values is not None or mod is None:
        scope: dict[str, Any] = {"__builtins__": __builtins__, "__name__": module}
        scope.update(global_values or {})
    else:
        scope = vars(mod)
    closure = tuple(types.CellType(v) for v in cells) if cells is not None else None
    fn = types.FunctionType(marshal.loads(code), scope, name, defaults, closure)
    fn.__kwdefaults__ = kwdefaults
    return fn


# pickles name ``_toollab_zygote.rebuild_function``: a top-level name that resolves both in the parent
# (this module imported as part of toollab) and in the zygote (this file run as ``__main__``)
sys.modules.setdefault("_toollab_zygote", sys.modules[__name__])
rebuild_function.__module__ = "_toollab_zygote"


def _preload(modules: list[tuple[str, str | None]]) -> None:
    """Import each ``(name, file)`` unless it is imported already (by file when the name is not
    importable from ``sys.path``)."""
    for name, file in modules:
        if name in sys.modules or name == "__main__":
            continue
        try:
            importlib.import_module(name)
            continue
        except ImportError:
            if not file:
                raise
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {name!r} from {file!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise


# -- the call child and the module process ------------------------------------------------------------
def _memory_in_use() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _limit(which: int, soft: int, hard: int) -> None:
    """Set a limit, never above the one inherited (a module's process sets them first)."""
    _, inherited = resource.getrlimit(which)
    if inherited != resource.RLIM_INFINITY:
        soft, hard = min(soft, inherited), min(hard, inherited)
    resource.setrlimit(which, (soft, hard))


def _set_limits(limits: dict[str, Any]) -> None:
    cpu = max(1, math.ceil(limits["cpu_seconds"]))
    _limit(resource.RLIMIT_CPU, cpu, cpu + 1)
    mem = _memory_in_use() + int(limits["memory_mb"]) * _MB
    _limit(resource.RLIMIT_AS, mem, mem)
    size = int(limits["max_file_mb"]) * _MB
    _limit(resource.RLIMIT_FSIZE, size, size)
    _limit(resource.RLIMIT_CORE, 0, 0)
    files = int(limits["max_open_files"])
    _limit(resource.RLIMIT_NOFILE, files, files)
    nproc = limits.get("nproc")
    if nproc:
        _limit(resource.RLIMIT_NPROC, int(nproc), int(nproc))


#: CPU seconds a modules' process may spend (importing, then forking calls) when a call's own
#: limit is lower: importing a tool module (numpy, pandas, toollab itself) can take longer than
#: a short call may, and one slow import must not fail every call of its tools
IMPORT_CPU_SECONDS = 10.0


def module_limits(limits: dict[str, Any]) -> dict[str, Any]:
    """The limits of a modules' process: a call's, with at least :data:`IMPORT_CPU_SECONDS` of
    CPU time (each call, forked from it, runs under the call's own limits again)."""
    return {**limits, "cpu_seconds": max(float(limits["cpu_seconds"]), IMPORT_CPU_SECONDS)}


def _enter(request: dict[str, Any]) -> None:
    """What a call (and a module's import) runs under: its own session, the workspace, a clean
    environment, the limits and the audit hook."""
    os.setsid()
    root = request["root"]
    os.chdir(root)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": root,
        "TMPDIR": root,
        "LANG": "C.UTF-8",
        "TOOLLAB_SANDBOX_ROOT": root,
    }
    env.update(request.get("env") or {})
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = root
    _set_limits(request["limits"])
    sys.addaudithook(audit_hook(root, request["network"], request["allow_subprocess"]))


def _child(request: dict[str, Any], out_fd: int, in_module: bool) -> None:  # pragma: no cover
    code = 0
    try:
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(2, 1)  # the tool's prints go where the zygote's stderr goes, not into a frame
        os.closerange(3, out_fd)
        os.closerange(out_fd + 1, 65536)
        if in_module:  # the module's process has entered already: only the session is new
            os.setsid()
            _set_limits(request["limits"])
        else:
            _enter(request)
        fn, args, kwargs = pickle.loads(request["call"])
        result = fn(*args, **kwargs)
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result))
        notes: list[str] = []
        payload: dict[str, Any] = {"ok": True, "value": plain(result, notes), "notes": notes}
    except BaseException as exc:
        payload = _failure(exc)
    try:
        try:
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")
        except BaseException as exc:
            data = json.dumps(_failure(exc)).encode("utf-8")
        _write_all(out_fd, _HEADER.pack(len(data)) + data)
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def _failure(exc: BaseException) -> dict[str, Any]:
    try:
        message = str(exc)
    except BaseException:
        message = "<unprintable exception>"
    try:
        tb = traceback.format_exc(limit=6)
    except BaseException:
        tb = ""
    errno = getattr(exc, "errno", None)
    return {
        "ok": False,
        "type": type(exc).__name__,
        "message": message[:4000],
        "errno": errno if isinstance(errno, int) else None,
        "traceback": tb[-8000:],
    }


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _quota_exceeded(request: dict[str, Any]) -> str | None:
    quota = request.get("quota")
    if not quota:
        return None
    usage = _usage.measure(request["root"], int(quota["bytes"]), int(quota["entries"]))
    return usage.over


def _run_call(request: dict[str, Any], stdin_fd: int, in_module: bool) -> dict[str, Any]:
    """Fork the call's child and wait for its result (the caller kills what it leaves)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_fd)
        _child(request, write_fd, in_module)
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    cap = int(request["max_result"])
    deadline = time.monotonic() + float(request["timeout"])
    watch = _Watch(request)
    buf = bytearray()
    expected: int | None = None
    status: int | None = None
    why: str | None = None
    try:
        # the result is one frame; processes the tool started may hold the pipe open, so the end
        # is the complete frame or the child's exit, never the pipe's end of file
        while True:
            if status is None:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = st
            try:
                chunk: bytes | None = os.read(read_fd, 1 << 16)
            except BlockingIOError:
                chunk = None
            if chunk:
                buf += chunk
                if expected is None and len(buf) >= _HEADER.size:
                    expected = _HEADER.unpack(bytes(buf[: _HEADER.size]))[0]
                if len(buf) > cap + _HEADER.size or (expected is not None and expected > cap):
                    why = "result_size"
                    break
                if expected is not None and len(buf) >= _HEADER.size + expected:
                    break
                continue
            if chunk == b"" or status is not None:
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                why = "timeout"
                break
            if watch.over():
                why = "quota"
                break
            ready, _, _ = select.select([read_fd, stdin_fd], [], [], min(remaining, 0.02))
            if stdin_fd in ready and not os.read(stdin_fd, 1 << 16):
                why = "parent"  # the parent is gone
                break
    finally:
        os.close(read_fd)
        complete = why is None and expected is not None and len(buf) >= _HEADER.size + expected
        if status is None:
            # killed also after a complete result: the child's work is done (it may be a tool
            # that wrote a result itself and carries on)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            if complete:
                status = 0
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    if why == "parent":
        os._exit(0)
    data = b""
    if expected is not None and len(buf) >= _HEADER.size + expected:
        data = bytes(buf[_HEADER.size : _HEADER.size + expected])
    reply: dict[str, Any] = {"status": status, "data": data}
    if why is not None:
        reply["killed"] = why
        reply["size"] = len(buf)
        if why == "quota":
            reply["quota"] = watch.reason
    return reply


class _Watch:
    """Measures the workspace against its quota while a call runs: first after 0.1 s, then
    at intervals of at least five times what the last walk took."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.request = request
        self.next = time.monotonic() + 0.1
        self.reason: str | None = None

    def over(self) -> bool:
        now = time.monotonic()
        if now < self.next or not self.request.get("quota"):
            return False
        self.reason = _quota_exceeded(self.request)
        self.next = time.monotonic() + max(0.1, 5 * (time.monotonic() - now))
        return self.reason is not None


# -- the template ---------------------------------------------------------------------------------
_SPAWN_REPLY = struct.Struct("!qq")
#: what of a request a module's process needs to start (never the call, its arguments or result)
_SPAWN_KEYS = ("root", "env", "network", "allow_subprocess", "limits", "preload")


def _template_main(sock_fd: int) -> None:  # pragma: no cover - the template's process
    """Fork module processes on request.  This process was forked before the zygote read its
    first request and receives only JSON: what to import and the limits to import it under (to
    spawn), or a pid (to reap); so no module process inherits memory that held a call's
    arguments or result."""
    code = 0
    try:
        sock = socket.socket(fileno=sock_fd)
        while True:
            frame = read_frame(sock_fd)
            if frame is None:
                break
            order = json.loads(frame)
            if "reap" in order:
                status = -1
                with contextlib.suppress(ChildProcessError):
                    _, status = os.waitpid(int(order["reap"]), 0)
                _write_all(sock_fd, _SPAWN_REPLY.pack(status, 0))
                continue
            to_r, to_w = os.pipe()
            from_r, from_w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the module's process
                try:
                    high_in = fcntl.fcntl(to_r, fcntl.F_DUPFD, 64)
                    high_out = fcntl.fcntl(from_w, fcntl.F_DUPFD, 64)
                    os.dup2(high_in, 0)  # the template's socket is closed here
                    os.dup2(high_out, 3)
                    os.closerange(4, 65536)
                except BaseException:
                    os._exit(71)
                _module_main(order)
            os.close(to_r)
            os.close(from_w)
            socket.send_fds(sock, [_SPAWN_REPLY.pack(pid, 0)], [to_w, from_r])
            os.close(to_w)
            os.close(from_r)
    except BaseException:
        code = 70
    finally:
        os._exit(code)  # its module processes end when the zygote closes their pipes


class _TemplateGone(Exception):
    """The template did not answer: the zygote cannot start module processes any more."""


class _Template:
    """The pristine process that forks the module processes (see :func:`_template_main`),
    forked by the zygote before its first request."""

    def __init__(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the template's process
            try:
                fd = fcntl.fcntl(child.fileno(), fcntl.F_DUPFD, 64)
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)  # the zygote's input and output are closed here
                os.dup2(2, 1)
                os.dup2(fd, 3)
                os.closerange(4, 65536)
            except BaseException:
                os._exit(71)
            _template_main(3)
        child.close()
        self.sock = parent
        self.pid = pid

    def spawn(self, request: dict[str, Any], deadline: float) -> _Module:
        """A new module process for ``request``'s modules."""
        order = {k: request.get(k) for k in _SPAWN_KEYS}
        try:
            write_frame(self.sock.fileno(), json.dumps(order).encode("utf-8"))
            data, fds = self._reply(deadline, 2)
        except OSError as exc:
            raise _TemplateGone(str(exc)) from None
        pid, _ = _SPAWN_REPLY.unpack(data)
        return _Module(self, pid, fds[0], fds[1])

    def reap(self, pid: int) -> int | None:
        """Wait for a module process the caller has killed: its status."""
        try:
            write_frame(self.sock.fileno(), json.dumps({"reap": pid}).encode("utf-8"))
            data, _ = self._reply(time.monotonic() + 10.0, 0)
        except (OSError, _TemplateGone):
            return None
        status, _ = _SPAWN_REPLY.unpack(data)
        return status if status >= 0 else None

    def _reply(self, deadline: float, nfds: int) -> tuple[bytes, list[int]]:
        data = b""
        fds: list[int] = []
        while len(data) < _SPAWN_REPLY.size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self.sock], [], [], remaining)[0]:
                raise _TemplateGone("the template did not answer")
            chunk, got, _, _ = socket.recv_fds(self.sock, _SPAWN_REPLY.size - len(data), 2)
            if not chunk:
                raise _TemplateGone("the template ended")
            data += chunk
            fds += got
        if len(fds) != nfds:
            for fd in fds:
                os.close(fd)
            raise _TemplateGone("the template sent no pipes")
        return data, fds

    def alive(self) -> bool:
        """Whether it still runs (a call may have killed it: the zygote then retires)."""
        try:
            return os.waitpid(self.pid, os.WNOHANG)[0] == 0
        except ChildProcessError:  # reaped with a call's leftovers
            return False

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


# -- module processes -------------------------------------------------------------------------------
def _modules_key(request: dict[str, Any]) -> tuple[Any, ...]:
    """What a call needs imported beyond this pristine process has (empty: nothing)."""
    needed = tuple(
        (str(n), f)
        for n, f in request.get("preload") or []
        if n not in sys.modules and n != "__main__"
    )
    if not needed:
        return ()
    limits = request["limits"]
    return (needed, limits["cpu_seconds"], limits["memory_mb"], request["root"])


def _module_main(request: dict[str, Any]) -> None:  # pragma: no cover - the module's process
    """The process of one set of tool modules: imported here under a call's limits, in a
    process of its own that only ever sees the calls of these modules."""
    code = 0
    try:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        _enter({**request, "limits": module_limits(request["limits"])})
        try:
            _preload(request["preload"])
            hello: dict[str, Any] = {"ok": True}
        except BaseException as exc:
            hello = _failure(exc)
        write_frame(3, json.dumps(hello).encode("utf-8"))
        if not hello["ok"]:
            return
        while True:
            frame = read_frame(0)
            if frame is None:
                break
            reply = _run_call(pickle.loads(frame), 0, True)
            _kill_leftovers(False)
            data = reply.pop("data")
            write_frame(3, json.dumps(reply).encode("utf-8"))
            write_frame(3, data)
    except BaseException:
        code = 70
    finally:
        os._exit(code)


class _Module:
    """A module's process as the pristine zygote sees it: a pipe each way, never unpickled.  It is
    a child of the template (:class:`_Template`), which made the pipes and handed the zygote its
    ends."""

    def __init__(self, template: _Template, pid: int, to_w: int, from_r: int) -> None:
        self.template = template
        self.pid = pid
        self.to_w = to_w
        self.from_r = from_r
        self.status: int | None = None
        #: the CPU seconds its imports took
        self.imported = 0.0

    def cpu_seconds(self) -> float:
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            return 0.0
        fields = stat[stat.rfind(b")") + 2 :].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def read(self, deadline: float, limit: int, stdin_fd: int) -> bytes:
        """One frame of at most ``limit`` bytes, before ``deadline``."""
        head = self._exact(_HEADER.size, deadline, stdin_fd)
        (size,) = _HEADER.unpack(head)
        if size > limit:
            raise _ModuleFailed("result_size")
        return self._exact(size, deadline, stdin_fd)

    def _exact(self, n: int, deadline: float, stdin_fd: int) -> bytes:
        parts: list[bytes] = []
        while n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _ModuleFailed("timeout")
            ready, _, _ = select.select([self.from_r, stdin_fd], [], [], min(remaining, 0.1))
            if stdin_fd in ready and not os.read(stdin_fd, 1 << 16):
                self.close()
                os._exit(0)  # the parent is gone
            if self.from_r not in ready:
                continue
            chunk = os.read(self.from_r, min(n, 1 << 20))
            if not chunk:
                raise _ModuleFailed("ended")
            parts.append(chunk)
            n -= len(chunk)
        return b"".join(parts)

    def close(self) -> None:
        for sig_target in (
            lambda: os.killpg(self.pid, signal.SIGKILL),
            lambda: os.kill(self.pid, signal.SIGKILL),
        ):
            with contextlib.suppress(OSError):
                sig_target()
        for fd in (self.to_w, self.from_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.status = self.template.reap(self.pid)


class _ModuleFailed(Exception):
    """A module's process did not answer as it must (``str``: why, as a reply's ``killed``)."""


class _Modules:
    """The modules' processes of this zygote, by what they import (at most :attr:`MAX`)."""

    MAX = 8

    def __init__(self, template: _Template) -> None:
        self.template = template
        self.live: dict[tuple[Any, ...], _Module] = {}

    def pids(self) -> frozenset[int]:
        """The template and the modules' processes (kept when a call's leftovers are killed)."""
        return frozenset(m.pid for m in self.live.values()) | {self.template.pid}

    def call(self, key: tuple[Any, ...], request: dict[str, Any], stdin_fd: int) -> dict[str, Any]:
        wall = float(request["timeout"])
        deadline = time.monotonic() + wall + 5.0  # the module's process times the call itself
        module = self.live.pop(key, None)
        # a process that spent half of what its import left of its CPU limit (on forks) is
        # replaced before the limit ends it
        limit = max(1, math.ceil(module_limits(request["limits"])["cpu_seconds"]))
        if module is not None and module.cpu_seconds() > (module.imported + limit) / 2:
            module.close()
            module = None
        try:
            if module is None:
                try:
                    module = self.template.spawn(request, time.monotonic() + wall)
                except _TemplateGone:
                    os._exit(70)  # no module process can be made pristine: the sandbox restarts
                hello = module.read(time.monotonic() + wall, 65536, stdin_fd)
                if not json.loads(hello).get("ok"):
                    module.close()
                    return {"status": 0, "data": hello}
                module.imported = module.cpu_seconds()
            write_frame(module.to_w, pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
            meta = json.loads(module.read(deadline, 65536, stdin_fd))
            data = module.read(deadline, int(request["max_result"]) + 65536, stdin_fd)
            if not isinstance(meta, dict):
                raise _ModuleFailed("protocol")
        except (_ModuleFailed, OSError, ValueError) as exc:
            if module is not None:
                module.close()
            why = str(exc) if isinstance(exc, _ModuleFailed) else "protocol"
            status = module.status if module is not None else None
            if why in ("timeout", "result_size"):
                return {"status": status, "data": b"", "killed": why, "size": 0}
            return {"status": status if status is not None else 0, "data": b""}
        self.live[key] = module
        while len(self.live) > self.MAX:
            self.live.pop(next(iter(self.live))).close()
        return {**meta, "data": data}

    def close(self) -> None:
        for module in self.live.values():
            module.close()
        self.live.clear()
        self.template.close()


# -- the zygote ---------------------------------------------------------------------------------------
def _serve(
    request: dict[str, Any], own_pid_namespace: bool, stdin_fd: int, modules: _Modules
) -> dict[str, Any]:
    key = _modules_key(request)
    reply = modules.call(key, request, stdin_fd) if key else _run_call(request, stdin_fd, False)
    _kill_leftovers(own_pid_namespace, modules.pids())
    if "quota" not in reply:
        over = _quota_exceeded(request)
        if over is not None:
            reply["quota"] = over
    return reply


def main() -> None:  # pragma: no cover - runs in its own process
    stdin_fd, stdout_fd = 0, os.dup(1)
    os.dup2(2, 1)  # stray prints must not corrupt the frames
    hello = read_frame(stdin_fd)
    if hello is None:
        return
    setup = pickle.loads(hello)
    for entry in reversed(setup.get("sys_path") or []):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    network = "allowed"
    if not setup.get("network"):
        network = "namespace" if setup.get("network_ready") else _landlock.enter_network_namespace()
    drop = setup.get("drop_to")
    if drop is not None:  # root inside the boundary: become the unprivileged sandbox user
        os.setgroups([])
        os.setresgid(drop, drop, drop)
        os.setresuid(drop, drop, drop)
    fence = setup.get("landlock")
    landlocked = _landlock.landlock(fence["read"], fence["write"]) if fence else 0
    own_pid_namespace = bool(setup.get("own_pid_namespace")) and os.getpid() < 10
    libc = ctypes.CDLL(None, use_errno=True)
    if not own_pid_namespace:
        with contextlib.suppress(OSError, AttributeError):
            libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # no other process of the sandbox user may read this one's memory (/proc/PID/mem) ...
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    if os.getuid() == 0:  # ... nor, staying root (no other user here), with a capability
        _landlock.drop_capabilities()
    seccomp = _seccomp.install()
    # before the first request: the module processes are forked from this pristine copy
    template = _Template()
    write_frame(
        stdout_fd,
        json.dumps(
            {
                "ready": True,
                "pid": os.getpid(),
                "uid": os.getuid(),
                "network": network,
                "own_pid_namespace": own_pid_namespace,
                "landlock": landlocked,
                "seccomp": seccomp,
            }
        ).encode(),
    )
    modules = _Modules(template)
    while True:
        frame = read_frame(stdin_fd)
        if frame is None:
            break
        try:
            request = pickle.loads(frame)
            reply = _serve(request, own_pid_namespace, stdin_fd, modules)
        except BaseException as exc:
            reply = {"status": 0, "data": json.dumps(_failure(exc)).encode("utf-8")}
        data = reply.pop("data")
        retire = not template.alive()
        if retire:  # no module process can be made pristine any more: the parent starts anew
            reply["retire"] = True
        # plain JSON and bytes towards the parent: it never unpickles what comes from in here
        write_frame(stdout_fd, json.dumps(reply).encode("utf-8"))
        write_frame(stdout_fd, data)
        if retire:
            break
    modules.close()
    _kill_leftovers(own_pid_namespace)


if __name__ == "__main__":
    main()
