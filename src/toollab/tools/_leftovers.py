"""Killing what a confined call left running: every other process of the sandbox's PID namespace,
or, without one, every orphan reparented to the zygote (a subreaper).  Standard library only:
loaded by :mod:`toollab.tools._zygote` beside it, inside the sandbox."""

from __future__ import annotations

import contextlib
import os
import signal
import time


def orphans(keep: frozenset[int] = frozenset()) -> list[int]:
    me = os.getpid()
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in keep:
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


def reap_all() -> None:
    with contextlib.suppress(ChildProcessError):
        while True:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break


def others(keep: frozenset[int]) -> list[int]:
    """Every process of our PID namespace but init, us and ``keep``."""
    skip = keep | {1, os.getpid()}
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and int(e) not in skip]


def kill_leftovers(own_pid_namespace: bool, keep: frozenset[int] = frozenset()) -> None:
    """Kill every process the call left behind (never the modules' processes in ``keep``)."""
    if own_pid_namespace and not keep:
        # in our own PID namespace every process but init and us belongs to the call
        for _ in range(50):
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                break
            reap_all()
        reap_all()
        return
    if own_pid_namespace:
        # stop everything first (no fork races), kill all but the modules' processes, go on
        for _ in range(50):
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGSTOP)
            pids = others(keep)
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            reap_all()
            if not pids:
                break
        for pid in keep:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        return
    for _ in range(200):  # orphans are reparented to us (subreaper): kill until none is left
        pids = orphans(keep)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        reap_all()
        time.sleep(0.001)
