"""A sandbox for tools: an OS-level boundary around each call.

:class:`Sandbox` runs a Python callable (:meth:`Sandbox.run_callable`) or a program
(:meth:`Sandbox.run_command`) confined to a workspace.  The boundary is the operating system's
(see :mod:`toollab.tools.confine`; :attr:`Sandbox.confinement` says what holds on this machine):

* **a separate, fresh process** — callables run in a process started from scratch (never a fork
  of the caller, so no secret the caller holds in memory or in its environment is inherited),
  with a clean environment (``PATH``, ``HOME``/``TMPDIR`` = the workspace, ``LANG``; ``env``
  adds variables explicitly).  Each call runs in a child of its own session; when the call ends,
  however it ends, every process it started is killed (the whole PID namespace under
  bubblewrap).
* **filesystem** — under bubblewrap the tool sees the system's directories read-only, the Python
  installation and ``sys.path`` read-only, an empty ``/tmp`` and the workspace read-write; nothing
  else exists for it.  Without bubblewrap this does not hold (see :mod:`toollab.tools.confine`).
  :meth:`Sandbox.resolve_path` (and :func:`resolve_path` inside a tool) refuses absolute paths,
  ``..`` escapes and symlinks that lead outside the workspace.
* **resources** (``setrlimit``) — ``RLIMIT_CPU`` = ``cpu_seconds``, ``RLIMIT_AS`` =
  ``memory_mb`` (on top of what the process starts with), ``RLIMIT_FSIZE`` = ``max_file_mb``,
  ``RLIMIT_NOFILE`` = ``max_open_files``, ``RLIMIT_NPROC`` = ``max_processes`` more than the
  sandbox user runs already (under root the tool runs as uid 65534, so that this limit binds).
  ``timeout`` is a wall-clock limit; the call and all it started are killed when it runs out.
* **workspace quota** — ``max_workspace_mb`` and ``max_workspace_files`` (every entry), measured
  while a call runs and after it; past either the call fails with kind ``quota`` (see
  docs/security.md).  An existing ``workdir`` is never chowned: where the tools run as another
  user than its owner (toollab as root) they get a fresh subdirectory of it.
* **seccomp** — system calls tools never need (io_uring, keyrings, ``ptrace``, mounts,
  namespaces, BPF, ...) answer ``EPERM`` (x86_64; :mod:`toollab.tools._seccomp`).
* **modules** — a tool's module is imported in a process of its own under a call's limits, never
  in the process that serves every call (see :mod:`toollab.tools._zygote`).
* **network** (``network=False``, the default) — a new, empty network namespace.
* **results** — what comes back is JSON (see :func:`toollab.tools.jsonable.to_jsonable`), at most
  ``max_result_bytes`` of it; a larger result is an error of kind ``result_size``.

An audit hook (:func:`sys.addaudithook`) inside the sandbox refuses Python-level writes outside the
workspace, starting programs (unless ``allow_subprocess``) and sockets with clear messages; it is a
second line for ordinary code, not a boundary.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.errors import ToolExecutionError
from toollab.tools.confine import (
    NOBODY,
    Boundary,
    BoundaryError,
    Zygote,
    boundary,
    bwrap_argv,
    dumps,
    processes_of,
    python_paths,
)

_MB = 1024 * 1024
#: the variable that tells :func:`resolve_path` inside a confined call where its workspace is
ROOT_VARIABLE = "TOOLLAB_SANDBOX_ROOT"
_IDLE_PROCESSES = 4
#: run by a program's launcher inside bubblewrap under root: drop to the sandbox user, enter the
#: workspace, run the program
_BECOME = (
    "import os, sys; u = int(sys.argv[1]); os.setgroups([]); os.setresgid(u, u, u); "
    "os.setresuid(u, u, u); os.chdir(sys.argv[2]); os.execvp(sys.argv[3], sys.argv[3:])"
)


class SandboxViolation(PermissionError):
    """A sandboxed tool tried something the sandbox does not allow."""


class SandboxError(ToolExecutionError):
    """A sandboxed run failed.  ``kind`` is one of ``timeout``, ``cpu``, ``memory``,
    ``file_size``, ``quota`` (the workspace is over its quota), ``result_size``, ``crash``,
    ``exception``, ``refused``; ``exc_type`` names the tool's exception."""

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
    """A path for a file tool: inside the sandbox's workspace when called in a confined tool
    (outside a sandbox: inside the current directory).  Absolute paths and escapes raise
    :class:`SandboxViolation`."""
    root = os.environ.get(ROOT_VARIABLE) or os.getcwd()
    return _confine(p, Path(os.path.realpath(root)))


def _workspace(path: Path, run_as: int | None) -> tuple[Path, bool]:
    """The workspace for ``path`` and whether it was made here.  A directory that exists already
    is used as it is when the tools run as its owner; else (toollab runs as root, the tools as the
    sandbox user) the tools get a fresh subdirectory of it: the directory's owner and mode are
    never changed."""
    if not path.exists():
        path.mkdir(parents=True)
        return Path(os.path.realpath(path)), True
    if not path.is_dir():
        raise ValueError(f"the workspace {path} is not a directory")
    real = Path(os.path.realpath(path))
    if run_as is None or real.stat().st_uid == run_as:
        return real, False
    return Path(tempfile.mkdtemp(prefix="toollab-workspace-", dir=real)), True


def namespaces_available() -> bool:
    """Can confined tools get their own network namespace here?  (Probed once.)"""
    return boundary().network_namespace


_COMMAND_PREFIX: list[str] | None = None


def _command_prefix() -> list[str]:
    """Without bubblewrap: ``["unshare", "-n", "--"]`` (or ``-rn``) when that works, else ``[]``."""
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


class Sandbox:
    """Runs callables and commands behind an OS-level boundary (see the module docs)."""

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
        max_processes: int = 32,
        allow_subprocess: bool = False,
        max_output_bytes: int = 1_000_000,
        max_result_bytes: int = 1_000_000,
        env: Mapping[str, str] | None = None,
        max_workspace_mb: int = 512,
        max_workspace_files: int = 10_000,
    ) -> None:
        for name, value in (("cpu_seconds", cpu_seconds), ("timeout", timeout)):
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        if memory_mb <= 0 or max_file_mb <= 0 or max_open_files <= 3 or max_processes < 1:
            raise ValueError(
                "memory_mb, max_file_mb and max_processes must be positive and "
                "max_open_files above 3"
            )
        if max_result_bytes < 1024:
            raise ValueError("max_result_bytes must be at least 1024")
        if max_workspace_mb <= 0 or max_workspace_files <= 0:
            raise ValueError("max_workspace_mb and max_workspace_files must be positive")
        run_as = self.confinement.run_as
        self._owned = workdir is None
        if workdir is None:
            self.workdir = Path(os.path.realpath(tempfile.mkdtemp(prefix="toollab-sandbox-")))
            made = True
        else:
            self.workdir, made = _workspace(Path(workdir), run_as)
        if made and run_as is not None:
            # the tool runs as the sandbox user: a directory made here (never one that was there
            # before, see _workspace) is handed over
            with contextlib.suppress(OSError):
                os.chown(self.workdir, run_as, run_as)
        self.cpu_seconds = cpu_seconds
        self.memory_mb = memory_mb
        self.timeout = timeout
        self.network = network
        self.max_file_mb = max_file_mb
        self.max_open_files = max_open_files
        self.max_processes = max_processes
        self.allow_subprocess = allow_subprocess
        self.max_output_bytes = max_output_bytes
        self.max_result_bytes = max_result_bytes
        self.max_workspace_mb = max_workspace_mb
        self.max_workspace_files = max_workspace_files
        #: variables the tool gets on top of the clean environment (nothing is inherited)
        self.env = dict(env or {})
        self._idle: list[Zygote] = []
        self._lock = threading.Lock()
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """End the sandbox's processes; remove the working directory if the sandbox created it."""
        with self._lock:
            idle, self._idle = self._idle, []
        for z in idle:
            z.close()
        if self._owned and self.workdir.exists():
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            for z in self._idle:
                z.close()

    def __repr__(self) -> str:
        return (
            f"Sandbox({str(self.workdir)!r}, cpu_seconds={self.cpu_seconds}, memory_mb={self.memory_mb}, "
            f"timeout={self.timeout}, network={self.network})"
        )

    # -- what holds ----------------------------------------------------------------------------
    @property
    def confinement(self) -> Boundary:
        """What the OS enforces around this sandbox's tools on this machine."""
        return boundary()

    def describe(self) -> str:
        """One line: the mechanism and what it does (not) confine."""
        return self.confinement.describe()

    def resolve_path(self, p: str | os.PathLike[str]) -> Path:
        """``p`` inside the working directory; absolute paths and escapes raise
        :class:`SandboxViolation`."""
        return _confine(p, self.workdir)

    @property
    def network_isolation(self) -> str:
        """``"allowed"`` (network=True), ``"namespace"`` (a kernel network namespace plus the
        Python-level block) or ``"python"`` (the audit-hook block only)."""
        if self.network:
            return "allowed"
        return "namespace" if namespaces_available() else "python"

    # -- callables ---------------------------------------------------------------------------------
    def run_callable(
        self, fn: Callable[..., Any], /, *args: Any, timeout: float | None = None, **kwargs: Any
    ) -> Any:
        """Run ``fn(*args, **kwargs)`` (sync or async) confined; return its result as JSON data.
        Raises :class:`SandboxError` on a limit, a refusal or an exception."""
        return self.call(fn, args, kwargs, timeout=timeout)[0]

    def _limits(self) -> dict[str, Any]:
        # one file can never be larger than the whole workspace may be
        file_mb = min(self.max_file_mb, self.max_workspace_mb)
        run_as = self.confinement.run_as
        uid = os.getuid() if run_as is None else run_as
        return {
            "cpu_seconds": self.cpu_seconds,
            "memory_mb": self.memory_mb,
            "max_file_mb": file_mb,
            "max_open_files": self.max_open_files,
            "nproc": processes_of(uid) + self.max_processes,
        }

    def _acquire(self, files: list[str]) -> Zygote:
        fence = self.confinement
        if not fence.safe:
            raise SandboxError(
                "nothing can run confined here: " + "; ".join(fence.notes), "refused"
            )
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox is closed", "refused")
            self._idle = [z for z in self._idle if z.alive and z.proc.poll() is None]
            for i, z in enumerate(self._idle):
                if z.covers(files):
                    return self._idle.pop(i)
        try:
            return Zygote(self.workdir, network=self.network, read_only=[*python_paths(), *files])
        except (BoundaryError, OSError) as exc:
            raise SandboxError(f"cannot start the sandbox: {exc}", "crash") from None

    def _release(self, z: Zygote) -> None:
        if not z.alive:
            return
        with self._lock:
            if len(self._idle) < _IDLE_PROCESSES:
                self._idle.append(z)
                return
        z.close()

    def call(
        self,
        fn: Callable[..., Any],
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        read_only: Sequence[str] = (),
    ) -> tuple[Any, list[str]]:
        """Like :meth:`run_callable`, also returning the notes on converted result values;
        ``read_only`` names files the call needs to see (read-only) beyond its own modules."""
        wall = self.timeout if timeout is None else timeout
        try:
            payload, modules = dumps(fn, tuple(args), dict(kwargs or {}))
        except BoundaryError as exc:
            raise SandboxError(str(exc), "refused") from None
        files = [f for _, f in modules if f] + [str(f) for f in read_only]
        request = {
            "call": payload,
            "preload": modules,
            "root": str(self.workdir),
            "env": self.env,
            "network": self.network,
            "allow_subprocess": self.allow_subprocess,
            "limits": self._limits(),
            "timeout": wall,
            "max_result": self.max_result_bytes,
            "quota": {
                "bytes": self.max_workspace_mb * _MB,
                "entries": self.max_workspace_files,
            },
        }
        z = self._acquire(files)
        # the process times the call itself; this deadline is a backstop (imports, a stuck process)
        deadline = time.monotonic() + wall + 10.0
        try:
            meta, data = z.call(request, deadline, self.max_result_bytes + 65536)
        except TimeoutError:
            raise SandboxError(f"timed out after {wall:g} s", "timeout") from None
        except (BoundaryError, OSError, ValueError) as exc:
            raise SandboxError(f"crashed: {exc}", "crash") from None
        finally:
            self._release(z)
        return self._outcome(meta, data, wall)

    def _outcome(self, meta: dict[str, Any], data: bytes, wall: float) -> tuple[Any, list[str]]:
        killed = meta.get("killed")
        quota = meta.get("quota")
        if isinstance(quota, str):
            raise SandboxError(
                f"the workspace {self.workdir} is over its quota of {self.max_workspace_mb} MB "
                f"and {self.max_workspace_files:,} files and directories ({quota[:300]})"
                + (" (the call was stopped)" if killed == "quota" else " (the result is withheld)")
                + "; remove files from it to go on",
                "quota",
            )
        if killed == "timeout":
            raise SandboxError(f"timed out after {wall:g} s", "timeout")
        if killed == "result_size":
            raise SandboxError(
                f"the result is larger than the limit of {self.max_result_bytes} bytes",
                "result_size",
            )
        status = meta.get("status")
        status = status if isinstance(status, int) else 0
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig in (signal.SIGXCPU, signal.SIGKILL):
                raise SandboxError(
                    f"exceeded its CPU time limit of {max(1, math.ceil(self.cpu_seconds))} s", "cpu"
                )
            name = signal.Signals(sig).name if sig in signal.Signals.__members__.values() else sig
            raise SandboxError(
                f"crashed: killed by {name} (memory limit {self.memory_mb} MB)", "crash"
            )
        try:
            payload = json.loads(data.decode("utf-8", "surrogatepass")) if data else None
        except (UnicodeDecodeError, ValueError, RecursionError):
            payload = None
        if not isinstance(payload, dict):
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
            raise SandboxError(
                f"crashed: the child exited with status {code} and no result", "crash"
            )
        if payload.get("ok") is True:
            notes = payload.get("notes")
            return payload.get("value"), [str(n) for n in notes] if isinstance(notes, list) else []
        etype = str(payload.get("type") or "Exception")[:200]
        message = str(payload.get("message") or "")[:4000]
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
        if etype == "ResultTooLarge":
            raise SandboxError(text, "result_size", etype)
        raise SandboxError(text, "exception", etype)

    # -- commands ------------------------------------------------------------------------------------
    def run_command(
        self,
        argv: Sequence[str] | str,
        *,
        input: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run a program (no shell) in the working directory under the limits, behind the same
        boundary as callables (bubblewrap, else a network namespace via ``unshare``).

        A program that fails or is killed is a :class:`CommandResult`, not an exception; with
        ``network=False`` and no way to cut the network here :class:`SandboxError` is raised (kind
        ``refused``) instead of running unconfined."""
        args = shlex.split(argv) if isinstance(argv, str) else [str(a) for a in argv]
        if not args:
            raise ValueError("no command given")
        fence = self.confinement
        prefix: list[str] = []
        if fence.mechanism == "bubblewrap":
            prefix = [
                *bwrap_argv(
                    self.workdir, python_paths(), network=self.network, die_with_parent=True
                ),
                "--",
            ]
            if fence.run_as is not None:  # become the sandbox user, then enter the workspace
                prefix += [
                    sys.executable,
                    "-I",
                    "-S",
                    "-c",
                    _BECOME,
                    str(fence.run_as),
                    str(self.workdir),
                ]
        elif not self.network:
            prefix = _command_prefix()
            if not prefix:
                raise SandboxError(
                    "cannot block the network for commands here (no network namespaces); "
                    "create the Sandbox with network=True to run it anyway",
                    "refused",
                )
        base = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.workdir),
            "TMPDIR": str(self.workdir),
            "LANG": "C.UTF-8",
        }
        base.update(self.env)
        base.update(env or {})
        wall = self.timeout if timeout is None else timeout
        run_as = fence.run_as
        nproc = processes_of(os.getuid() if run_as is None else run_as) + self.max_processes

        def limits() -> None:  # pragma: no cover - runs in the child before exec
            cpu = max(1, math.ceil(self.cpu_seconds))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            mem = self.memory_mb * _MB
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
            size = self.max_file_mb * _MB
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.max_open_files, self.max_open_files))
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

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
        code = proc.returncode
        if fence.mechanism == "bubblewrap" and code > 128 and not timed_out:
            code = -(code - 128)  # bubblewrap reports a killed program as 128 + signal
        if code < 0 and not timed_out:
            sig = -code
            killed = "cpu" if sig == signal.SIGXCPU else signal.Signals(sig).name
        return CommandResult(
            argv=args,
            returncode=code,
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


__all__ = [
    "NOBODY",
    "CommandResult",
    "Sandbox",
    "SandboxError",
    "SandboxViolation",
    "namespaces_available",
    "resolve_path",
]
