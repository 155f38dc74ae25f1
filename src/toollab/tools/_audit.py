"""The audit hook of a confined call: a second line for ordinary code (the boundary is the OS).

Run inside the sandbox by :mod:`toollab.tools._zygote`; standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any


class SandboxViolation(PermissionError):
    """A confined tool tried something the sandbox does not allow."""


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
