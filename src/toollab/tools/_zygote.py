"""The process inside the sandbox's boundary that runs confined tool calls.

Started by :mod:`toollab.tools.confine` as ``python -I _zygote.py`` (inside bubblewrap when it is
available), with a clean environment.  It reads requests from stdin and answers on stdout, one
length-prefixed frame each.  For every call it forks a child, which starts its own session, sets
the resource limits, installs the audit hook (a second line only), runs the tool and writes its
result as JSON to a pipe; the zygote reads at most ``max_result`` bytes of it and afterwards kills
whatever the call left running (every other process of its PID namespace, or, without one, every
orphan reparented to it as a subreaper).

Only the standard library is imported here: the zygote starts in a few tens of milliseconds and the
tool's own modules are imported on first use (and kept for later calls).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import dataclasses
import enum
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
import struct
import sys
import tempfile
import time
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

_HEADER = struct.Struct("!Q")
_PR_SET_CHILD_SUBREAPER = 36
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MB = 1024 * 1024


class SandboxViolation(PermissionError):
    """A confined tool tried something the sandbox does not allow."""


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


# -- results -------------------------------------------------------------------------------------------
def plain(value: Any, notes: list[str], path: str = "output") -> Any:
    """``value`` as JSON data; see :func:`toollab.tools.jsonable.to_jsonable` (same rules; this
    copy runs inside the sandbox without importing toollab)."""
    return _Plain(notes).convert(value, path, 0)


class ResultTooLarge(ValueError):
    """A tool result holds more values than :func:`plain` converts."""


class _Plain:
    MAX_DEPTH = 200
    MAX_NODES = 1_000_000

    def __init__(self, notes: list[str]) -> None:
        self.notes = notes
        self.nodes = 0
        self.active: set[int] = set()

    def text(self, value: Any, path: str) -> str:
        if type(value) is int and value.bit_length() > 13_000:
            self.notes.append(f"{path}: integer of {value.bit_length():,} bits converted to hex")
            return hex(value)
        try:
            return str(value)
        except BaseException as exc:
            self.notes.append(
                f"{path}: str() of {type(value).__name__} raised {type(exc).__name__}"
            )
            return f"<unprintable {type(value).__name__}>"

    @staticmethod
    def sort_key(value: Any) -> str:
        try:
            return repr(value)
        except BaseException:
            return f"<{type(value).__name__}>"

    def convert(self, value: Any, path: str, depth: int) -> Any:
        try:
            return self.node(value, path, depth)
        except ResultTooLarge:
            raise
        except Exception as exc:  # the value's own methods (items(), __class__ ...) raised
            self.notes.append(f"{path}: reading it raised {type(exc).__name__}; left out")
            return f"<unreadable {type(value).__name__}>"

    def node(self, value: Any, path: str, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > self.MAX_NODES:
            raise ResultTooLarge(f"the result holds more than {self.MAX_NODES:,} values")
        kind = type(value)
        if value is None or kind is bool or kind is str:
            return value
        if isinstance(value, enum.Enum):
            return self.convert(value.value, path, depth + 1)
        if isinstance(value, str):  # a subclass: its methods are the tool's code
            return str.__str__(value)
        if isinstance(value, bool):
            return bool(int.__index__(value))
        if isinstance(value, int):
            number = int.__index__(value)
            if number.bit_length() > 13_000:  # ~3,900 digits: str() refuses 4,300 and more
                return self.text(number, path)
            return number
        if isinstance(value, float):
            number_f = float.__float__(value)
            if math.isfinite(number_f):
                return number_f
            self.notes.append(f"{path}: {number_f} is not valid JSON; converted to str")
            return str(number_f)
        if depth >= self.MAX_DEPTH:
            self.notes.append(f"{path}: nested deeper than {self.MAX_DEPTH}; converted to str")
            return f"<{type(value).__name__} nested too deep>"
        if id(value) in self.active:
            self.notes.append(f"{path}: refers to itself; cut")
            return f"<cycle: {type(value).__name__}>"
        self.active.add(id(value))
        try:
            return self.container(value, path, depth)
        finally:
            self.active.discard(id(value))

    def container(self, value: Any, path: str, depth: int) -> Any:
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, v in list(value.items()):
                key = k if isinstance(k, str) else self.text(k, f"{path} key")
                if not isinstance(k, str):
                    self.notes.append(f"{path}: key {self.sort_key(k)} converted to str")
                out[key] = self.convert(v, f"{path}.{key}", depth + 1)
            return out
        if isinstance(value, list | tuple):
            return [self.convert(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
        if isinstance(value, set | frozenset):
            self.notes.append(f"{path}: set converted to a list")
            items = sorted(value, key=self.sort_key)
            return [self.convert(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(items)]
        dump = getattr(type(value), "model_dump", None)
        if callable(dump):  # a pydantic model
            return self.convert(value.model_dump(mode="json"), path, depth + 1)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return self.convert(fields, path, depth + 1)
        self.notes.append(
            f"{path}: {type(value).__name__} is not JSON-serialisable; converted to str"
        )
        return self.text(value, path)


# -- the audit hook (a second line: the boundary is the OS) -----------------------------------------
_PATH_EVENTS = frozenset(
    {
        "os.remove",
        "os.rmdir",
        "os.mkdir",
        "os.chmod",
        "os.chown",
        "os.truncate",
        "os.utime",
        "os.setxattr",
        "os.removexattr",
        "shutil.rmtree",
    }
)
_TWO_PATH_EVENTS = frozenset(
    {"os.rename", "os.link", "os.symlink", "shutil.copyfile", "shutil.copytree"}
)
_PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "pty.spawn"}
)
_NETWORK_EVENTS = frozenset(
    {
        "socket.connect",
        "socket.bind",
        "socket.sendto",
        "socket.sendmsg",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyname_ex",
        "socket.gethostbyaddr",
        "socket.getnameinfo",
    }
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_ALLOWED_WRITES = frozenset({"/dev/null"})


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def audit_hook(
    root: str, network: bool, allow_subprocess: bool
) -> Callable[[str, tuple[Any, ...]], None]:
    """Refuses Python-level writes outside ``root``, starting programs and (without ``network``)
    sockets with :class:`SandboxViolation`: clear messages for ordinary code.  Hostile code can
    get past it (``ctypes``, ``_posixsubprocess``); the OS boundary around it is what holds."""
    import socket

    def check(path: Any, what: str) -> None:
        if path is None or isinstance(path, int):
            return
        text = os.fsdecode(os.fspath(path))
        real = os.path.realpath(text)
        if real in _ALLOWED_WRITES or _inside(real, root):
            return
        raise SandboxViolation(f"{what} {text!r} is outside the sandbox's working directory")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and bool(flags & _WRITE_FLAGS)
            )
            if writing:
                check(path, "writing")
        elif event in _PATH_EVENTS:
            check(args[0], event.split(".")[-1])
        elif event in _TWO_PATH_EVENTS:
            if event != "os.symlink":
                check(args[0], event.split(".")[-1])
            check(args[1], event.split(".")[-1])
        elif event in _PROCESS_EVENTS and not allow_subprocess:
            raise SandboxViolation(
                "starting programs is not allowed in this sandbox (use Sandbox.run_command)"
            )
        elif not network and (
            event in _NETWORK_EVENTS or (event == "socket.__new__" and args[1] != socket.AF_UNIX)
        ):
            raise SandboxViolation("network access is disabled in this sandbox")

    return hook


# -- the call child ---------------------------------------------------------------------------------------
def _memory_in_use() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _set_limits(limits: dict[str, Any]) -> None:
    cpu = max(1, math.ceil(limits["cpu_seconds"]))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    mem = _memory_in_use() + int(limits["memory_mb"]) * _MB
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    size = int(limits["max_file_mb"]) * _MB
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    files = int(limits["max_open_files"])
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY:
        files = min(files, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))
    nproc = limits.get("nproc")
    if nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (int(nproc), int(nproc)))


def _child(request: dict[str, Any], out_fd: int) -> None:  # pragma: no cover - forked child
    code = 0
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(2, 1)  # the tool's prints go where the zygote's stderr goes, not into a frame
        os.closerange(3, out_fd)
        os.closerange(out_fd + 1, 65536)
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


# -- cleaning up after a call --------------------------------------------------------------------------
def _orphans() -> list[int]:
    me = os.getpid()
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(entry))
    return found


def _reap_all() -> None:
    with contextlib.suppress(ChildProcessError):
        while True:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break


def _kill_leftovers(own_pid_namespace: bool) -> None:
    """Kill every process the call left behind."""
    if own_pid_namespace:
        # in our own PID namespace every process but init and us belongs to the call
        for _ in range(50):
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                break
            _reap_all()
        _reap_all()
        return
    for _ in range(200):  # orphans are reparented to us (subreaper): kill until none is left
        pids = _orphans()
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _reap_all()
        time.sleep(0.001)


def _run_call(request: dict[str, Any], own_pid_namespace: bool, stdin_fd: int) -> dict[str, Any]:
    _preload(request.get("preload") or [])
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_fd)
        _child(request, write_fd)
    os.close(write_fd)
    os.set_blocking(read_fd, False)
    cap = int(request["max_result"])
    deadline = time.monotonic() + float(request["timeout"])
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
        _kill_leftovers(own_pid_namespace)
    if why == "parent":
        os._exit(0)
    data = b""
    if expected is not None and len(buf) >= _HEADER.size + expected:
        data = bytes(buf[_HEADER.size : _HEADER.size + expected])
    reply: dict[str, Any] = {"status": status, "data": data}
    if why is not None:
        reply["killed"] = why
        reply["size"] = len(buf)
    return reply


# -- the zygote -----------------------------------------------------------------------------------------
def _enter_network_namespace() -> str:
    """Without bubblewrap: move into a new, empty network namespace if the kernel lets us."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return "none"
    if libc.unshare(_CLONE_NEWNET) == 0:
        return "namespace"
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0:
        with contextlib.suppress(OSError):
            Path("/proc/self/setgroups").write_text("deny")
            Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
            Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        return "namespace"
    return "none"


# -- Landlock (without bubblewrap) -------------------------------------------------------------------
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_PR_SET_NO_NEW_PRIVS = 38
_LANDLOCK_RULE_PATH_BENEATH = 1
_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
_FS_REFER = 1 << 13
_FS_TRUNCATE = 1 << 14
_FILE_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE


def landlock_abi() -> int:
    """The kernel's Landlock ABI version (0: not available)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = int(libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), 1))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock(read: list[str], write: list[str]) -> int:
    """Restrict this process and its children to reading (and executing) ``read`` and to full
    access to ``write``; every other path is closed.  Returns the ABI used (0: not applied)."""
    abi = landlock_abi()
    if abi < 1:
        return 0
    handled = (1 << 13) - 1
    if abi >= 2:
        handled |= _FS_REFER
    if abi >= 3:
        handled |= _FS_TRUNCATE
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.c_uint64(handled)
    ruleset = int(
        libc.syscall(
            _SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0)
        )
    )
    if ruleset < 0:
        return 0
    reading = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
    try:
        for paths, rights in ((read, reading), (write, handled)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    allowed = rights if os.path.isdir(path) else rights & _FILE_RIGHTS
                    rule = _PathBeneath(allowed & handled, fd)
                    libc.syscall(
                        _SYS_LANDLOCK_ADD_RULE,
                        ctypes.c_int(ruleset),
                        ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                        ctypes.byref(rule),
                        ctypes.c_uint32(0),
                    )
                finally:
                    os.close(fd)
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)):
            return 0
    finally:
        os.close(ruleset)
    return abi


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
        network = "namespace" if setup.get("network_ready") else _enter_network_namespace()
    drop = setup.get("drop_to")
    if drop is not None:  # root inside the boundary: become the unprivileged sandbox user
        os.setgroups([])
        os.setresgid(drop, drop, drop)
        os.setresuid(drop, drop, drop)
    fence = setup.get("landlock")
    landlocked = landlock(fence["read"], fence["write"]) if fence else 0
    own_pid_namespace = bool(setup.get("own_pid_namespace")) and os.getpid() < 10
    if not own_pid_namespace:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
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
            }
        ).encode(),
    )
    while True:
        frame = read_frame(stdin_fd)
        if frame is None:
            break
        try:
            request = pickle.loads(frame)
            reply = _run_call(request, own_pid_namespace, stdin_fd)
        except BaseException as exc:
            reply = {"status": 0, "data": json.dumps(_failure(exc)).encode("utf-8")}
        data = reply.pop("data")
        # plain JSON and bytes towards the parent: it never unpickles what comes from in here
        write_frame(stdout_fd, json.dumps(reply).encode("utf-8"))
        write_frame(stdout_fd, data)
    _kill_leftovers(own_pid_namespace)


if __name__ == "__main__":
    main()
