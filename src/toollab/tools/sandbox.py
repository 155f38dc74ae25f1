"""A sandbox for tools that touch files or run code.

:class:`Sandbox` runs a Python callable (:meth:`Sandbox.run_callable`) or a command
(:meth:`Sandbox.run_command`) in a child process.  What is enforced:

* **working directory** — the child runs in ``workdir`` (a fresh temporary directory unless
  given).  :meth:`Sandbox.resolve_path` (and :func:`resolve_path` inside a sandboxed callable)
  refuses absolute paths, ``..`` escapes and symlinks that lead outside it.  For callables an audit
  hook (:func:`sys.addaudithook`) also refuses every Python-level write outside ``workdir``:
  opening a file for writing, removing, renaming, ``mkdir``, ``chmod``, ``truncate`` ...
  Reading files elsewhere stays allowed (imports need it).
* **resources** (kernel-enforced with ``setrlimit``) — ``RLIMIT_CPU`` = ``cpu_seconds`` (the
  child is killed with SIGXCPU), ``RLIMIT_AS`` = ``memory_mb`` (for callables: on top of the
  address space the forked child starts with, since it shares the parent's mappings; for commands:
  absolute), ``RLIMIT_FSIZE`` = ``max_file_mb`` and ``RLIMIT_NOFILE`` = ``max_open_files``.
  ``timeout`` is a wall-clock limit; the child is killed with SIGKILL when it runs out.
* **network** (``network=False``, the default) — the child first tries to enter a new, empty
  network namespace (``unshare(CLONE_NEWNET)``, or ``CLONE_NEWUSER | CLONE_NEWNET`` without
  root): then no interface but a down loopback exists, for the tool and anything it starts.  On
  top of that, for callables, the audit hook refuses creating sockets and resolving names with
  :class:`PermissionError`.  Commands run under ``unshare -n`` (or ``unshare -rn``) with proxy
  variables cleared; where namespaces are not available, :meth:`run_command` refuses to run with
  ``network=False`` rather than run unconfined.  :attr:`Sandbox.network_isolation` tells which
  mechanism is in force.
* **processes** — a sandboxed callable may not start programs (``subprocess``, ``os.system``,
  ``os.exec*``, ``os.posix_spawn``) unless ``allow_subprocess=True``: a started program would
  escape the audit hook.  Use :meth:`run_command` to run programs.

The audit hook is a guard against mistakes and ordinary code, not against hostile native code
(``ctypes`` can bypass it); the resource limits and the network namespace are enforced by the
kernel.  Results and exceptions come back from the child as JSON through a pipe, so only plain
data crosses back (see :func:`toollab.tools.jsonable.to_jsonable`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import inspect
import json
import math
import os
import resource
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.errors import ToolExecutionError
from toollab.tools.jsonable import to_jsonable

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_MB = 1024 * 1024

#: the sandbox the current (child) process runs in, if any
_ACTIVE: Sandbox | None = None


class SandboxViolation(PermissionError):
    """A sandboxed tool tried something the sandbox does not allow."""


class SandboxError(ToolExecutionError):
    """A sandboxed run failed.  ``kind`` is one of ``timeout``, ``cpu``, ``memory``,
    ``file_size``, ``crash``, ``exception``, ``refused``; ``exc_type`` names the tool's exception."""

    def __init__(self, message: str, kind: str, exc_type: str | None = None) -> None:
        self.kind = kind
        self.exc_type = exc_type
        super().__init__(message)


@dataclass
class CommandResult:
    """What a command run in the sandbox did."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    #: why the child was killed (``"cpu"``, ``"timeout"``, a signal name), else ``None``
    killed: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def to_json(self) -> dict[str, Any]:
        return {
            "returncode": self.returncode,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "duration": round(self.duration, 4),
            "timed_out": self.timed_out,
            "killed": self.killed,
        }


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _confine(p: str | os.PathLike[str], root: Path) -> Path:
    raw = os.fspath(p)
    if not isinstance(raw, str) or not raw:
        raise SandboxViolation(f"not a usable path: {raw!r}")
    if os.path.isabs(raw):
        raise SandboxViolation(f"absolute paths are not allowed in the sandbox: {raw!r}")
    resolved = Path(os.path.realpath(root / raw))
    if not _inside(resolved, root):
        raise SandboxViolation(f"path {raw!r} leads outside the sandbox's working directory")
    return resolved


def resolve_path(p: str | os.PathLike[str]) -> Path:
    """A path for a file tool: inside the active sandbox's working directory (outside a sandbox:
    inside the current directory).  Absolute paths and escapes raise :class:`SandboxViolation`."""
    root = _ACTIVE.workdir if _ACTIVE is not None else Path(os.path.realpath(os.getcwd()))
    return _confine(p, root)


def _memory_in_use() -> int:
    """Bytes of address space this process has mapped (0 when /proc is not there)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _write_id_maps() -> None:
    """Map our own uid/gid into a fresh user namespace so that files we create keep our owner."""
    uid, gid = os.getuid(), os.getgid()
    with contextlib.suppress(OSError):
        Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")


def _enter_network_namespace() -> bool:
    """Move this (single-threaded, forked) process into a new, empty network namespace."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    if libc.unshare(_CLONE_NEWNET) == 0:
        return True
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0:
        with contextlib.suppress(OSError):
            _write_id_maps()
        return True
    return False


_NAMESPACE_PROBE: bool | None = None
_COMMAND_PREFIX: list[str] | None = None


def namespaces_available() -> bool:
    """Can a forked child enter a new network namespace here?  (Probed once.)"""
    global _NAMESPACE_PROBE
    if _NAMESPACE_PROBE is None:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the probe child
            os._exit(0 if _enter_network_namespace() else 1)
        _, status = os.waitpid(pid, 0)
        _NAMESPACE_PROBE = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return _NAMESPACE_PROBE


def _command_prefix() -> list[str]:
    """``["unshare", "-n", "--"]`` (or ``-rn``) when that works here, else ``[]``."""
    global _COMMAND_PREFIX
    if _COMMAND_PREFIX is None:
        _COMMAND_PREFIX = []
        exe = shutil.which("unshare")
        if exe:
            for flags in ("-n", "-rn"):
                try:
                    done = subprocess.run(
                        [exe, flags, "--", "true"], capture_output=True, timeout=10, check=False
                    )
                except (OSError, subprocess.TimeoutExpired):
                    continue
                if done.returncode == 0:
                    _COMMAND_PREFIX = [exe, flags, "--"]
                    break
    return list(_COMMAND_PREFIX)


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


def _audit_hook(
    root: Path, network: bool, allow_subprocess: bool
) -> Callable[[str, tuple[Any, ...]], None]:
    import socket

    busy = [False]

    def check(path: Any, what: str) -> None:
        if path is None or isinstance(path, int):
            return
        text = os.fsdecode(os.fspath(path))
        real = os.path.realpath(text)
        if real in _ALLOWED_WRITES or _inside(Path(real), root):
            return
        raise SandboxViolation(f"{what} {text!r} is outside the sandbox's working directory")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if busy[0]:
            return
        busy[0] = True
        try:
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
                event in _NETWORK_EVENTS
                or (event == "socket.__new__" and args[1] != socket.AF_UNIX)
            ):
                raise SandboxViolation("network access is disabled in this sandbox")
        finally:
            busy[0] = False

    return hook


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Sandbox:
    """Runs callables and commands in a confined child process (see the module docs)."""

    def __init__(
        self,
        workdir: str | os.PathLike[str] | None = None,
        *,
        cpu_seconds: float = 10.0,
        memory_mb: int = 512,
        timeout: float = 30.0,
        network: bool = False,
        max_file_mb: int = 64,
        max_open_files: int = 256,
        allow_subprocess: bool = False,
        max_output_bytes: int = 1_000_000,
    ) -> None:
        if workdir is None:
            self.workdir = Path(os.path.realpath(tempfile.mkdtemp(prefix="toollab-sandbox-")))
            self._owned = True
        else:
            path = Path(workdir)
            path.mkdir(parents=True, exist_ok=True)
            self.workdir = Path(os.path.realpath(path))
            self._owned = False
        for name, value in (("cpu_seconds", cpu_seconds), ("timeout", timeout)):
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if memory_mb <= 0 or max_file_mb <= 0 or max_open_files <= 3:
            raise ValueError(
                "memory_mb and max_file_mb must be positive and max_open_files above 3"
            )
        self.cpu_seconds = cpu_seconds
        self.memory_mb = memory_mb
        self.timeout = timeout
        self.network = network
        self.max_file_mb = max_file_mb
        self.max_open_files = max_open_files
        self.allow_subprocess = allow_subprocess
        self.max_output_bytes = max_output_bytes

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Remove the working directory if the sandbox created it."""
        if self._owned and self.workdir.exists():
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"Sandbox({str(self.workdir)!r}, cpu_seconds={self.cpu_seconds}, memory_mb={self.memory_mb}, "
            f"timeout={self.timeout}, network={self.network})"
        )

    # -- paths ---------------------------------------------------------------------------------
    def resolve_path(self, p: str | os.PathLike[str]) -> Path:
        """``p`` inside the working directory; absolute paths and escapes raise
        :class:`SandboxViolation`."""
        return _confine(p, self.workdir)

    @property
    def network_isolation(self) -> str:
        """``"allowed"`` (network=True), ``"namespace"`` (kernel network namespace plus the
        Python-level block) or ``"python"`` (the audit-hook block only; callables only)."""
        if self.network:
            return "allowed"
        return "namespace" if namespaces_available() else "python"

    # -- limits ----------------------------------------------------------------------------------
    def _set_limits(self, memory_base: int) -> None:
        cpu = max(1, math.ceil(self.cpu_seconds))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        mem = memory_base + self.memory_mb * _MB
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        size = self.max_file_mb * _MB
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        files = (
            self.max_open_files
            if hard == resource.RLIM_INFINITY
            else min(self.max_open_files, hard)
        )
        resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    # -- callables ---------------------------------------------------------------------------------
    def run_callable(
        self, fn: Callable[..., Any], /, *args: Any, timeout: float | None = None, **kwargs: Any
    ) -> Any:
        """Run ``fn(*args, **kwargs)`` (sync or async) in a confined child; return its result as
        JSON data.  Raises :class:`SandboxError` on a limit, a refusal or an exception."""
        return self.call(fn, args, kwargs, timeout=timeout)[0]

    def call(
        self,
        fn: Callable[..., Any],
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
    ) -> tuple[Any, list[str]]:
        """Like :meth:`run_callable`, also returning the notes on converted result values."""
        wall = self.timeout if timeout is None else timeout
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child; coverage cannot follow os._exit
            os.close(read_fd)
            self._child(write_fd, fn, tuple(args), dict(kwargs or {}))
        os.close(write_fd)
        chunks: list[bytes] = []
        timed_out = False
        deadline = time.monotonic() + wall
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                ready, _, _ = select.select([read_fd], [], [], remaining)
                if not ready:
                    continue
                chunk = os.read(read_fd, 1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(read_fd)
            if timed_out:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)  # programs the tool left behind
        if timed_out:
            raise SandboxError(f"timed out after {wall:g} s", "timeout")
        return self._outcome(status, b"".join(chunks))

    def _outcome(self, status: int, data: bytes) -> tuple[Any, list[str]]:
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig in (signal.SIGXCPU, signal.SIGKILL):
                raise SandboxError(
                    f"exceeded its CPU time limit of {max(1, math.ceil(self.cpu_seconds))} s", "cpu"
                )
            raise SandboxError(
                f"crashed: killed by {signal.Signals(sig).name} (memory limit {self.memory_mb} MB)",
                "crash",
            )
        try:
            payload = json.loads(data.decode("utf-8")) if data else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            payload = None
        if not isinstance(payload, dict):
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
            raise SandboxError(
                f"crashed: the child exited with status {code} and no result", "crash"
            )
        if payload.get("ok"):
            return payload.get("value"), list(payload.get("notes") or [])
        etype = str(payload.get("type") or "Exception")
        message = str(payload.get("message") or "")
        text = f"{etype}: {message}" if message else etype
        if etype == "MemoryError":
            raise SandboxError(
                f"{text} (exceeded the memory limit of {self.memory_mb} MB)", "memory", etype
            )
        if payload.get("errno") == 27:  # EFBIG
            raise SandboxError(
                f"{text} (file size limit {self.max_file_mb} MB)", "file_size", etype
            )
        if etype == "SandboxViolation":
            raise SandboxError(text, "refused", etype)
        raise SandboxError(text, "exception", etype)

    def _child(
        self, write_fd: int, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> None:  # pragma: no cover
        global _ACTIVE
        code = 0
        try:
            os.setpgid(0, 0)
            os.dup2(2, 1)  # the tool's prints must not reach the parent's stdout (JSON output)
            os.closerange(3, write_fd)
            os.closerange(write_fd + 1, 65536)
            os.chdir(self.workdir)
            sys.dont_write_bytecode = True
            os.environ["TMPDIR"] = str(self.workdir)
            os.environ["HOME"] = str(self.workdir)
            tempfile.tempdir = str(self.workdir)
            if not self.network:
                for var in (
                    "http_proxy",
                    "https_proxy",
                    "HTTP_PROXY",
                    "HTTPS_PROXY",
                    "all_proxy",
                    "ALL_PROXY",
                ):
                    os.environ.pop(var, None)
                _enter_network_namespace()
            self._set_limits(_memory_in_use())
            _ACTIVE = self
            sys.addaudithook(_audit_hook(self.workdir, self.network, self.allow_subprocess))
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = asyncio.run(_await(result))
            notes: list[str] = []
            payload: dict[str, Any] = {
                "ok": True,
                "value": to_jsonable(result, notes),
                "notes": notes,
            }
        except BaseException as exc:
            payload = {
                "ok": False,
                "type": type(exc).__name__,
                "message": str(exc),
                "errno": getattr(exc, "errno", None),
                "traceback": traceback.format_exc(limit=6),
            }
        try:
            _write_all(write_fd, json.dumps(payload).encode("utf-8"))
        except BaseException:
            code = 70
        finally:
            os._exit(code)

    # -- commands ------------------------------------------------------------------------------------
    def run_command(
        self,
        argv: Sequence[str] | str,
        *,
        input: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run a program (no shell) in the working directory under the limits.

        A program that fails or is killed is a :class:`CommandResult`, not an exception; with
        ``network=False`` and no network namespaces on this system :class:`SandboxError` is raised
        (kind ``refused``) instead of running unconfined."""
        args = shlex.split(argv) if isinstance(argv, str) else [str(a) for a in argv]
        if not args:
            raise ValueError("no command given")
        prefix: list[str] = []
        if not self.network:
            prefix = _command_prefix()
            if not prefix:
                raise SandboxError(
                    "cannot block the network for commands here (no network namespaces); "
                    "create the Sandbox with network=True to run it anyway",
                    "refused",
                )
        base = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(self.workdir),
            "TMPDIR": str(self.workdir),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }
        if not self.network:
            base.update({"no_proxy": "*", "NO_PROXY": "*"})
        base.update(env or {})
        wall = self.timeout if timeout is None else timeout

        def limits() -> None:  # pragma: no cover - runs in the child before exec
            self._set_limits(0)

        start = time.perf_counter()
        proc = subprocess.Popen(
            prefix + args,
            cwd=self.workdir,
            env=base,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=limits,
            start_new_session=True,
        )
        timed_out = False
        try:
            out, err = proc.communicate(
                input.encode("utf-8") if input is not None else None, timeout=wall
            )
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        duration = time.perf_counter() - start
        notes: list[str] = []
        killed: str | None = "timeout" if timed_out else None
        if proc.returncode < 0 and not timed_out:
            sig = -proc.returncode
            killed = "cpu" if sig == signal.SIGXCPU else signal.Signals(sig).name
        return CommandResult(
            argv=args,
            returncode=proc.returncode,
            stdout=self._text(out, "stdout", notes),
            stderr=self._text(err, "stderr", notes),
            duration=duration,
            timed_out=timed_out,
            killed=killed,
            notes=notes,
        )

    def _text(self, data: bytes, name: str, notes: list[str]) -> str:
        if len(data) > self.max_output_bytes:
            notes.append(f"{name} truncated to {self.max_output_bytes} bytes (was {len(data)})")
            data = data[: self.max_output_bytes]
        return data.decode("utf-8", errors="replace")


async def _await(awaitable: Any) -> Any:
    return await awaitable
