"""A seccomp filter for confined tool calls: the system calls tools never need answer ``EPERM``.

Installed by the confined process (:mod:`toollab.tools._zygote`) on itself before it serves any
call, so every tool call, every module import and every program a tool starts inherits it.  Only
the standard library is used (``ctypes``, ``prctl``): a classic BPF program for x86_64; on other
architectures nothing is installed and :func:`install` says why.

Denied (``EPERM``): :data:`DENIED` — io_uring, the kernel keyring, ``ptrace`` and cross-process
memory access, mounting and namespaces (also ``clone`` with a namespace flag), BPF and perf
events, kernel modules and ``kexec``, ``userfaultfd``, and the system-wide administration calls
(clock, swap, reboot, accounting, quotas, host name).  ``clone3`` answers ``ENOSYS`` (its flags
cannot be inspected; the C library then falls back to ``clone``, which is checked).  System calls
of another ABI (32-bit ``int 0x80``, x32) answer ``EPERM`` too.  Standard library only.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

#: x86_64 numbers of the system calls a confined tool is refused
DENIED: dict[str, int] = {
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "pidfd_getfd": 438,
    "kcmp": 312,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "unshare": 272,
    "setns": 308,
    "bpf": 321,
    "perf_event_open": 298,
    "fanotify_init": 300,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "userfaultfd": 323,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "lookup_dcookie": 212,
    "syslog": 103,
    "acct": 163,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "sethostname": 170,
    "setdomainname": 171,
    "iopl": 172,
    "ioperm": 173,
    "quotactl": 179,
    "settimeofday": 164,
    "clock_settime": 227,
    "adjtimex": 159,
    "clock_adjtime": 305,
    "vhangup": 153,
}
_CLONE = 56
_CLONE3 = 435
#: CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000
_NAMESPACE_FLAGS |= 0x20000000 | 0x40000000 | 0x00000080
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
# classic BPF opcodes
_LD_W_ABS = 0x00 | 0x00 | 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x05 | 0x10 | 0x00  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x05 | 0x30 | 0x00  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x05 | 0x40 | 0x00  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06 | 0x00  # BPF_RET | BPF_K
_NR, _ARCH, _ARG0_LOW = 0, 4, 16  # offsets in struct seccomp_data (little endian)


class _Filter(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program() -> list[bytes]:
    """The BPF instructions (x86_64)."""
    denied = sorted(set(DENIED.values()))
    # layout: arch check, load nr, x32 check, clone3, clone, each denied, allow, deny, enosys,
    # clone's flag check (with its own two exits: jumps go forward only)
    prog = [
        _insn(_LD_W_ABS, 0, 0, _ARCH),
        _insn(_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        _insn(_RET_K, 0, 0, _RET_ERRNO | errno.EPERM),
        _insn(_LD_W_ABS, 0, 0, _NR),
    ]
    n = len(denied)
    # indexes (relative to the instruction after the jump) of the three exits and the clone check
    tail = 3 + n  # x32, clone3, clone, the denied list
    allow = len(prog) + tail
    deny, enosys, clone_check = allow + 1, allow + 2, allow + 3

    def jump_to(target: int) -> int:
        return target - (len(prog) + 1)

    prog.append(_insn(_JGE_K, jump_to(deny), 0, _X32_SYSCALL_BIT))
    prog.append(_insn(_JEQ_K, jump_to(enosys), 0, _CLONE3))
    prog.append(_insn(_JEQ_K, jump_to(clone_check), 0, _CLONE))
    for nr in denied:
        prog.append(_insn(_JEQ_K, jump_to(deny), 0, nr))
    prog.append(_insn(_RET_K, 0, 0, _RET_ALLOW))
    prog.append(_insn(_RET_K, 0, 0, _RET_ERRNO | errno.EPERM))
    prog.append(_insn(_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS))
    # clone: its flags (the first argument) must not ask for a new namespace
    prog.append(_insn(_LD_W_ABS, 0, 0, _ARG0_LOW))
    prog.append(_insn(_JSET_K, 1, 0, _NAMESPACE_FLAGS))
    prog.append(_insn(_RET_K, 0, 0, _RET_ALLOW))
    prog.append(_insn(_RET_K, 0, 0, _RET_ERRNO | errno.EPERM))
    return prog


def unavailable() -> str | None:
    """Why no filter can be installed on this platform (``None``: it can)."""
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64"):
        return f"no seccomp filter for the {machine or 'unknown'} architecture (x86_64 only)"
    return None


def install() -> str:
    """Install the filter on this process (and all it starts): ``"filter"``, or why not."""
    why = unavailable()
    if why is not None:
        return why
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        return f"no seccomp filter: no C library ({exc})"
    code = b"".join(program())
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _Filter(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"no seccomp filter: no_new_privs refused (errno {ctypes.get_errno()})"
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        return f"no seccomp filter: the kernel refused it (errno {ctypes.get_errno()})"
    return "filter"


def refused(name: str) -> bool:
    """Does the system call ``name`` (of :data:`DENIED`) answer ``EPERM`` in this process?"""
    libc = ctypes.CDLL(None, use_errno=True)
    ctypes.set_errno(0)
    rc = libc.syscall(DENIED[name], 0, 0, 0, 0, 0)
    return bool(rc == -1 and ctypes.get_errno() == errno.EPERM)
