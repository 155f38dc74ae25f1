"""Without bubblewrap: the kernel's own fences for the confined process, Landlock (the filesystem)
and a new network namespace.  Run inside the sandbox by :mod:`toollab.tools._zygote`; standard
library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from pathlib import Path

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000


def enter_network_namespace() -> str:
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


_PR_CAPBSET_DROP = 24
_CAP_LAST = 63


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> bool:
    """Drop every capability (and from the bounding set, so that no program regains them): a
    process that stays uid 0 can then no longer read other processes' memory, override file
    permissions or trace.  True when the capabilities are gone."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    for cap in range(_CAP_LAST + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    return bool(libc.capset(ctypes.byref(header), ctypes.byref(data)) == 0)
