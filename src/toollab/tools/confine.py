"""The OS boundary around confined tool calls.

:func:`boundary` probes once what this machine can enforce and says so (:class:`Boundary`):

* **bubblewrap** (``bwrap``, Debian package ``bubblewrap``): the tool runs in new PID, network,
  IPC, UTS and mount namespaces, sees a filesystem made of the system's read-only directories
  (``/usr``, the Python installation, the ``sys.path`` entries) plus the workspace (read-write)
  and an empty ``/tmp``, with all capabilities dropped and ``no_new_privs``.  Under root the
  tool runs as uid 65534 (``nobody``), so that ``RLIMIT_NPROC`` binds.
* **process** (no usable bubblewrap): a fresh process with a clean environment, its own session,
  the resource limits, a PID namespace (``unshare --pid``) and a network namespace where the
  kernel allows them, uid 65534 under root when the Python installation is readable by others,
  and **Landlock** where the kernel has it: reading only the system and Python directories and
  the tool's files, writing only the workspace.  Without Landlock the filesystem is *not*
  confined (the audit hook refuses Python-level writes outside the workspace, a second line that
  hostile code gets past).  Where a tool would run as the caller without a PID namespace,
  nothing runs confined (:attr:`Boundary.safe`).

:class:`Zygote` is one confined process (:mod:`toollab.tools._zygote`) that serves calls one at a
time; :func:`dumps` turns a callable and its arguments into the request it runs (module-level
functions by reference, nested functions and lambdas by value).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import json
import os
import pickle
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.tools import _landlock, _seccomp, _zygote
from toollab.tools.toolfile import FileTool, module_name

#: the unprivileged user confined tools run as when toollab runs as root
NOBODY = 65534
_HEADER = struct.Struct("!Q")
_ZYGOTE = Path(_zygote.__file__).resolve()
_SYSTEM_DIRS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime")
_ETC_NETWORK = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
)


class BoundaryError(RuntimeError):
    """The confined process could not be started or broke the protocol."""


@dataclass(frozen=True)
class Boundary:
    """What the OS enforces around confined tools on this machine."""

    #: ``"bubblewrap"`` or ``"process"``
    mechanism: str
    #: is the filesystem view limited to the workspace (plus read-only system directories)?
    filesystem: bool
    #: does the tool get its own PID namespace (every process it starts is killed with it)?
    pid_namespace: bool
    #: can the network be cut by a namespace (else only by the audit hook)?
    network_namespace: bool
    #: the user confined tools run as (``None``: the caller's own)
    run_as: int | None
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: without bubblewrap: the ``unshare`` command line that gives the PID (and network)
    #: namespace, ``-n`` left out (added per sandbox)
    unshare: tuple[str, ...] = ()
    #: without bubblewrap: the kernel's Landlock ABI (0: none), which limits the filesystem
    landlock: int = 0
    #: does a seccomp filter refuse the system calls tools never need (see ``_seccomp``)?
    seccomp: bool = False

    @property
    def complete(self) -> bool:
        return self.filesystem and self.pid_namespace and self.network_namespace

    @property
    def safe(self) -> bool:
        """Can a hostile tool be kept from signalling or tracing the caller's processes?  (Its
        own PID namespace, or another user than the caller.)  Without it nothing runs confined."""
        return self.pid_namespace or self.run_as is not None

    def describe(self) -> str:
        """One line for people: what holds and what does not."""
        if self.mechanism == "bubblewrap":
            text = "bubblewrap (own filesystem view, PID and network namespaces, no capabilities)"
        else:
            parts = ["a separate process with limits and a clean environment"]
            parts.append("a PID namespace" if self.pid_namespace else "NO PID namespace")
            parts.append(
                "a network namespace" if self.network_namespace else "NO network namespace"
            )
            parts.append(
                f"Landlock (ABI {self.landlock}): the workspace, read-only system and Python "
                "directories, nothing else"
                if self.landlock
                else "NO filesystem confinement (audit hook only)"
            )
            text = "; ".join(parts)
        if self.run_as is not None:
            text += f", as uid {self.run_as}"
        text += "; a seccomp filter" if self.seccomp else "; NO seccomp filter"
        return text


def _is_root() -> bool:
    return os.geteuid() == 0


def _system_args() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    return args


def bwrap_argv(
    workdir: Path, read_only: Iterable[str], *, network: bool, die_with_parent: bool = False
) -> list[str]:
    """The ``bwrap`` command line (without the program) for a tool confined to ``workdir``."""
    exe = shutil.which("bwrap")
    if exe is None:
        raise BoundaryError("bubblewrap (bwrap) is not installed")
    argv = [exe, "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup-try"]
    if not network:
        argv.append("--unshare-net")
    if _is_root():
        # no user namespace: keep only what dropping to the sandbox user needs
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv.append("--unshare-user")
    if die_with_parent:
        argv.append("--die-with-parent")
    argv += _system_args()
    for f in _ETC_FILES + (_ETC_NETWORK if network else ()):
        argv += ["--ro-bind-try", f, f]
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]
    made: set[str] = {"/", "/usr", "/tmp", "/proc", "/dev", "/etc"}
    work = str(workdir).rstrip("/") + "/"
    # a read-only directory that holds the workspace would show its neighbours: left out
    binds = [p for p in _minimal(read_only) if not work.startswith(p.rstrip("/") + "/")]
    for p in [*binds, str(workdir)]:
        # the directories on the way are made world-searchable (bubblewrap makes them 0700)
        for parent in reversed(Path(p).parents):
            if str(parent) not in made:
                made.add(str(parent))
                argv += ["--perms", "0755", "--dir", str(parent)]
    for p in binds:
        argv += ["--ro-bind-try", p, p]
    # "/" first: under root the workspace belongs to the sandbox user, whom the process becomes
    # only later (it cannot enter it before, without capabilities)
    argv += ["--bind", str(workdir), str(workdir), "--chdir", "/" if _is_root() else str(workdir)]
    argv += ["--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin"]
    argv += ["--setenv", "HOME", str(workdir), "--setenv", "TMPDIR", str(workdir)]
    argv += ["--setenv", "LANG", "C.UTF-8"]
    return argv


def _minimal(paths: Iterable[str]) -> list[str]:
    """``paths`` without those inside another one or inside ``/usr`` (already bound)."""
    out: list[str] = []
    for p in sorted({os.path.realpath(p) for p in paths if p}):
        if p in ("/", "") or p.startswith("/usr/") or p == "/usr":
            continue
        if any(p == q or p.startswith(q.rstrip("/") + "/") for q in out):
            continue
        out.append(p)
    return out


def python_paths() -> list[str]:
    """What the confined interpreter must see read-only: the Python installation, the virtual
    environment and the ``sys.path`` entries (the current directory excluded)."""
    # never the current directory, a script's directory that is a shared one (/tmp, home) or a
    # root: functions defined there travel by value, and what else is there stays unseen
    skip = {os.path.realpath(p) for p in (os.getcwd(), "/", tempfile.gettempdir(), "/tmp")}
    skip |= {os.path.realpath(p) for p in ("/var/tmp", "/dev/shm", os.path.expanduser("~"))}
    found = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    found.add(os.path.dirname(os.path.realpath(sys.executable)))
    found.add(str(_ZYGOTE.parent))  # the confined program and the modules beside it
    for entry in sys.path:
        if not entry or os.path.realpath(entry) in skip or not os.path.exists(entry):
            continue
        found.add(entry)
    return sorted(found)


@functools.lru_cache(maxsize=1)
def boundary() -> Boundary:
    """Probe (once) what confines tools here: see the module docs.  ``TOOLLAB_NO_BWRAP=1`` in the
    environment makes toollab ignore bubblewrap (to see or test what holds without it)."""
    run_as = NOBODY if _is_root() else None
    notes: list[str] = []
    seccomp = _seccomp_works()
    if not seccomp:
        notes.append(_seccomp.unavailable() or "no seccomp filter: the kernel refused it")
    exe = shutil.which("bwrap")
    if os.environ.get("TOOLLAB_NO_BWRAP"):
        notes.append("bubblewrap switched off (TOOLLAB_NO_BWRAP is set)")
    elif exe is not None:
        try:
            argv = [*bwrap_argv(Path("/tmp"), [], network=False), "--", "/bin/sh", "-c", "exit 0"]
            done = subprocess.run(argv, capture_output=True, timeout=20, check=False)
            if done.returncode == 0:
                return Boundary("bubblewrap", True, True, True, run_as, seccomp=seccomp)
            err = done.stderr.decode("utf-8", "replace").strip().splitlines()
            notes.append(
                "bubblewrap cannot run here: " + (err[-1] if err else f"exit {done.returncode}")
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            notes.append(f"bubblewrap cannot run here: {exc}")
    else:
        notes.append("bubblewrap (bwrap) is not installed")
    if run_as is not None and not all(_others_can_read(p) for p in python_paths()):
        # the Python installation is closed to other users (e.g. under /root): the tools keep
        # the caller's uid, and RLIMIT_NPROC does not bind root
        notes.append("Python is not readable by other users: tools run as root")
        run_as = None
    unshare = _unshare_prefix()
    network = bool(unshare) and _works([*unshare, "-n", "--", "/bin/sh", "-c", "exit 0"])
    network = network or _network_namespace_works()
    if not unshare:
        notes.append("no PID namespace (unshare --pid failed)")
    abi = 0 if os.environ.get("TOOLLAB_NO_LANDLOCK") else _landlock.landlock_abi()
    if not abi:
        notes.append("no Landlock: the filesystem is not confined")
    fence = Boundary(
        "process", bool(abi), bool(unshare), network, run_as, tuple(notes), unshare, abi, seccomp
    )
    if not fence.safe:
        notes.append(
            "tools would run as you without a PID namespace: nothing runs confined here "
            "(install bubblewrap, or trust the tools)"
        )
        fence = Boundary("process", False, False, network, run_as, tuple(notes))
    return fence


#: what a confined process may read without bubblewrap (besides Python and the tool's files)
_LANDLOCK_READ = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/proc", "/dev")
_LANDLOCK_READ_FILES = ("/etc/ld.so.cache", "/etc/localtime")


def _works(argv: list[str]) -> bool:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _unshare_prefix() -> tuple[str, ...]:
    """``unshare`` with a new PID namespace whose init is the program (and a user namespace when
    not root), if that works here."""
    exe = shutil.which("unshare")
    if exe is None:
        return ()
    argv = [exe] + ([] if _is_root() else ["-r"])
    argv += ["--pid", "--fork", "--kill-child", "--mount-proc"]
    return tuple(argv) if _works([*argv, "--", "/bin/sh", "-c", "exit 0"]) else ()


def _others_can_read(path: str) -> bool:
    """Can a user other than the owner reach ``path`` (every directory on the way searchable)?"""
    p = Path(os.path.realpath(path))
    for part in [p, *p.parents]:
        try:
            mode = part.stat().st_mode
        except OSError:
            return False
        if part.is_dir() and not mode & 0o001:
            return False
    return True


def _network_namespace_works() -> bool:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the probe child
        try:
            code = 0 if _landlock.enter_network_namespace() == "namespace" else 1
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _seccomp_works() -> bool:
    """Can this machine install the filter (probed in a child: io_uring_setup must be refused)?"""
    if _seccomp.unavailable() is not None:
        return False
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the probe child
        try:
            ok = _seccomp.install() == "filter" and _seccomp.refused("io_uring_setup")
            code = 0 if ok else 1
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def processes_of(uid: int) -> int:
    """How many processes ``uid`` runs now (what ``RLIMIT_NPROC`` counts)."""
    n = 0
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    if os.stat(f"/proc/{entry}").st_uid == uid:
                        n += 1
    return n


# -- requests ------------------------------------------------------------------------------------------
def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _by_reference(fn: types.FunctionType) -> bool:
    if fn.__module__ in (None, "__main__") or "<" in fn.__qualname__:
        return False
    obj: Any = sys.modules.get(fn.__module__)
    for part in fn.__qualname__.split("."):
        obj = getattr(obj, part, None)
    return obj is fn


class _Pickler(pickle.Pickler):
    """Pickles functions that cannot be found by name (nested functions, lambdas, ``__main__``)
    by value, and notes every module the request needs imported."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.modules: dict[str, str | None] = {}

    def _note(self, name: Any) -> None:
        if isinstance(name, str) and name not in self.modules and name != "__main__":
            mod = sys.modules.get(name)
            self.modules[name] = getattr(mod, "__file__", None) if mod is not None else None

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, FileTool):  # a tool file read in the sandbox: it imports it once
            self.modules.setdefault(module_name(obj.path), obj.path)
            return NotImplemented
        if isinstance(obj, types.ModuleType):
            self._note(obj.__name__)
            return importlib.import_module, (obj.__name__,)
        if isinstance(obj, type | types.FunctionType | types.BuiltinFunctionType):
            self._note(getattr(obj, "__module__", None))
        if isinstance(obj, types.FunctionType) and not _by_reference(obj):
            return self._function(obj)
        return NotImplemented

    @staticmethod
    def _function(fn: types.FunctionType) -> Any:
        values: dict[str, Any] | None = None
        if fn.__module__ == "__main__" or fn.__module__ not in sys.modules:
            g = fn.__globals__
            values = {n: g[n] for n in _global_names(fn.__code__) if n in g}
        cells = None
        if fn.__closure__ is not None:
            cells = tuple(c.cell_contents for c in fn.__closure__)
        import marshal

        return _zygote.rebuild_function, (
            marshal.dumps(fn.__code__),
            fn.__module__,
            values,
            fn.__name__,
            fn.__defaults__,
            fn.__kwdefaults__,
            cells,
        )


def dumps(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[bytes, list[tuple[str, str | None]]]:
    """The pickled call and the ``(module, file)`` pairs the confined process must import."""
    buf = io.BytesIO()
    pickler = _Pickler(buf)
    try:
        pickler.dump((fn, args, kwargs))
    except (pickle.PicklingError, TypeError, AttributeError, ValueError, RecursionError) as exc:
        raise BoundaryError(
            f"the tool or its arguments cannot be sent to the sandbox: {type(exc).__name__}: {exc}"
        ) from None
    return buf.getvalue(), [(n, f) for n, f in pickler.modules.items() if n != "_toollab_zygote"]


# -- the confined process ----------------------------------------------------------------------------
def _write_frame(fd: int, data: bytes) -> None:
    _zygote.write_frame(fd, data)


class Zygote:
    """One confined process that runs calls one at a time (see :mod:`toollab.tools._zygote`)."""

    def __init__(
        self,
        workdir: Path,
        *,
        network: bool,
        read_only: Iterable[str],
        start_timeout: float = 30.0,
    ) -> None:
        self.workdir = workdir
        self.network = network
        self.read_only = frozenset(_minimal(read_only))
        self.boundary = boundary()
        python = [sys.executable, "-I", "-B", str(_ZYGOTE)]
        if not self.boundary.safe:
            raise BoundaryError("; ".join(self.boundary.notes))
        bwrap = self.boundary.mechanism == "bubblewrap"
        unshare = list(self.boundary.unshare)
        if bwrap:
            argv = [*bwrap_argv(workdir, self.read_only, network=network), "--", *python]
        elif unshare:
            net = ["-n"] if not network and self.boundary.network_namespace else []
            argv = [*unshare, *net, "--", *python]
        else:
            argv = python
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(workdir),
            "TMPDIR": str(workdir),
            "LANG": "C.UTF-8",
        }
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None if os.environ.get("TOOLLAB_SANDBOX_DEBUG") else subprocess.DEVNULL,
            cwd="/",
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        fence = None
        if not bwrap and self.boundary.landlock:
            fence = {
                "read": [*_LANDLOCK_READ, *_LANDLOCK_READ_FILES, *sorted(self.read_only)],
                "write": [str(workdir), "/dev/null"],
            }
        setup = {
            "landlock": fence,
            "sys_path": [p for p in sys.path if p and os.path.exists(p)],
            "drop_to": self.boundary.run_as,
            "network": network,
            "network_ready": bwrap or bool(unshare and self.boundary.network_namespace),
            "own_pid_namespace": bwrap or bool(unshare),
        }
        try:
            _write_frame(self._in, pickle.dumps(setup))
            hello = json.loads(self._read(time.monotonic() + start_timeout, 4096))
        except (OSError, ValueError, BoundaryError) as exc:
            self.kill()
            raise BoundaryError(f"the sandbox process did not start: {exc}") from None
        if not isinstance(hello, dict) or not hello.get("ready"):
            self.kill()
            raise BoundaryError("the sandbox process did not start")
        #: ``"namespace"``, ``"allowed"`` or ``"none"`` (no network namespace could be made)
        self.network_isolation = str(hello.get("network"))
        #: ``"filter"`` (the seccomp filter is installed) or why it is not
        self.seccomp = str(hello.get("seccomp"))
        self.alive = True

    def covers(self, files: Iterable[str]) -> bool:
        """Can this process see every one of ``files``?"""
        if not self.boundary.filesystem:
            return True
        for f in files:
            real = os.path.realpath(f)
            if real.startswith("/usr/"):
                continue
            if not any(real == p or real.startswith(p.rstrip("/") + "/") for p in self.read_only):
                return False
        return True

    def _read_exact(self, n: int, deadline: float) -> bytes:
        parts: list[bytes] = []
        while n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self._out], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(self._out, min(n, 1 << 20))
            if not chunk:
                raise BoundaryError("the sandbox process ended")
            parts.append(chunk)
            n -= len(chunk)
        return b"".join(parts)

    def _read(self, deadline: float, limit: int) -> bytes:
        (size,) = _HEADER.unpack(self._read_exact(_HEADER.size, deadline))
        if size > limit:
            raise BoundaryError(f"the sandbox process sent {size} bytes (limit {limit})")
        return self._read_exact(size, deadline)

    def call(
        self, request: dict[str, Any], deadline: float, limit: int
    ) -> tuple[dict[str, Any], bytes]:
        """Send one request; the reply's status and the tool's JSON payload.  Raises
        :class:`TimeoutError` past ``deadline`` (the process is then killed)."""
        try:
            _write_frame(self._in, pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL))
            meta = json.loads(self._read(deadline, 65536))
            data = self._read(deadline, limit)
        except BaseException:
            self.kill()
            raise
        if not isinstance(meta, dict):
            self.kill()
            raise BoundaryError("the sandbox process broke the protocol")
        if meta.get("retire") is True:  # it cannot serve another call (its template is gone)
            self.kill()
        return meta, data

    def kill(self) -> None:
        """Kill the process and everything it started."""
        self.alive = False
        pid = self.proc.pid
        # bubblewrap's first child is init of the tool's PID namespace: killing it kills them all
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as fh:
                    for child in fh.read().split():
                        with contextlib.suppress(OSError):
                            os.kill(int(child), signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)

    def close(self) -> None:
        """End the process (it kills what is left of its calls when its input closes)."""
        if self.alive:
            self.kill()
