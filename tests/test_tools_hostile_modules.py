"""Tool modules that are hostile when imported, and what a confined call can still reach: the
import is bounded by a call's limits, reaches no other call, a module process holds no memory of
other calls, and the seccomp filter refuses what tools never need.  (The sandbox's other hostile
cases are in ``test_tools_hostile.py``, whose ``box`` fixture this module shares.)"""

from __future__ import annotations

import ctypes
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_tools_hostile import FENCE, box

from toollab.tools import Sandbox, SandboxError

__all__ = ["box"]  # the shared fixture, imported for pytest


# -- tool modules that are hostile when imported ----------------------------------------------------------
# each is imported in the sandbox (a tool file, never here); what it does at import must stay within
# a call's limits and must not reach any other call
IMPORT_HOG = "blob = bytearray(2 * 1024**3)\n"
IMPORT_SPIN = "while True:\n    pass\n"
IMPORT_PATCH_LOOP = """
import json, sys
_zygote = sys.modules["__main__"]
FORGED = json.dumps({"ok": True, "value": "forged", "notes": []}).encode()
def _forged(*args, **kwargs):
    return {"status": 0, "data": FORGED}
for name in ("_run_call", "_serve", "_child"):
    setattr(_zygote, name, _forged)
"""
IMPORT_RECORD = """
import pickle, sys, threading
SEEN = []
_loads = pickle.loads
def _recording(data, *args, **kwargs):
    SEEN.append(repr(data))
    return _loads(data, *args, **kwargs)
pickle.loads = _recording
sys.modules["__main__"].pickle = pickle
def _watch():  # a thread that keeps looking through the process's objects for the secret
    import gc, time
    marker = "-".join(("toollab", "other", "tools"))
    while True:
        for o in gc.get_objects():
            items = o.values() if isinstance(o, dict) else o if isinstance(o, (list, tuple)) else ()
            SEEN.extend(v for v in list(items) if type(v) is str and marker in v and v != marker)
        time.sleep(0.1)
threading.Thread(target=_watch, daemon=True).start()
"""
IMPORT_FORGE_FRAMES = """
import json, os, struct
FORGED = json.dumps({"ok": True, "value": "forged", "notes": []}).encode()
META = json.dumps({"status": 0}).encode()
for fd in range(0, 256):
    for frame in (META, FORGED) * 4:
        try:
            os.write(fd, struct.pack("!Q", len(frame)) + frame)
        except OSError:
            pass
"""
HOSTILE_TOOL = '''

def report(secret: str = "") -> dict:
    """What this module has seen of other calls, and whether the secret is anywhere it can read."""
    import os
    seen = [s for s in globals().get("SEEN", []) if "toollab-other-tools" in s]
    others = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            for what in ("mem", "environ"):
                try:
                    with open(f"/proc/{pid}/{what}", "rb") as fh:
                        others.append(f"{pid}/{what}")
                except OSError:
                    pass
    return {"seen": seen, "readable": others}
'''
OTHER_SECRET = "toollab-other-tools-secret-5e2c"


@pytest.fixture
def small_box(tmp_path: Path) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "w", cpu_seconds=1, memory_mb=256, timeout=4) as sandbox:
        sandbox.innocent = _file_tool(tmp_path, "innocent", "", "length")  # type: ignore[attr-defined]
        yield sandbox


def _file_tool(tmp_path: Path, name: str, source: str, fn: str = "report") -> Any:
    from toollab.tools.toolfile import FileTool

    path = tmp_path / f"{name}.py"
    path.write_text(
        source + HOSTILE_TOOL + "\n\ndef length(text: str) -> int:\n    return len(text)\n"
    )
    return FileTool(str(path), fn)


def _isolated(box: Sandbox) -> None:
    """Every other kind of call still gets its own true result."""
    out, _ = box.call(box.innocent, (), {"text": OTHER_SECRET})  # type: ignore[attr-defined]
    assert out == len(OTHER_SECRET)  # another module's
    assert box.run_callable(len, OTHER_SECRET) == len(OTHER_SECRET)  # the pristine process's
    assert box.run_callable(lambda: 6 * 7) == 42  # by value


class TestToolModulesHostileAtImport:
    @pytest.mark.parametrize(
        ("name", "source", "kinds"),
        [
            ("hog", IMPORT_HOG, {"memory", "crash"}),
            ("spin", IMPORT_SPIN, {"cpu", "timeout"}),
        ],
        ids=["allocates-2GB", "spins"],
    )
    def test_import_is_bounded_by_the_call_limits(
        self, small_box: Sandbox, tmp_path: Path, name: str, source: str, kinds: set[str]
    ) -> None:
        tool = _file_tool(tmp_path, name, source)
        t0 = time.monotonic()
        with pytest.raises(SandboxError) as info:
            small_box.call(tool, (), {})
        assert info.value.kind in kinds, str(info.value)
        assert time.monotonic() - t0 < 10
        _isolated(small_box)
        with pytest.raises(SandboxError):  # and so again: nothing of it was kept
            small_box.call(tool, (), {})

    @pytest.mark.parametrize(
        ("name", "source"),
        [("patch", IMPORT_PATCH_LOOP), ("record", IMPORT_RECORD), ("forge", IMPORT_FORGE_FRAMES)],
        ids=["patches-the-call-loop", "records-arguments", "forges-result-frames"],
    )
    @pytest.mark.parametrize("hostile_first", [True, False], ids=["hostile-first", "other-first"])
    def test_import_cannot_reach_other_calls(
        self, small_box: Sandbox, tmp_path: Path, name: str, source: str, hostile_first: bool
    ) -> None:
        tool = _file_tool(tmp_path, name, source)
        if hostile_first:
            _own_result(small_box, tool)
        _isolated(small_box)
        out = _own_result(small_box, tool)
        _isolated(small_box)
        if isinstance(out, dict):  # it may forge or break its own results, never others'
            assert out["seen"] == [] and out["readable"] == [], out
        assert OTHER_SECRET not in json.dumps(out)


RAW_SCAN = """
import ctypes

def scan() -> list:
    needle = b"toollab-other-" + b"tools-secret-"  # made here: only the suffix would be a find
    found = []
    with open("/proc/self/maps") as fh:
        lines = fh.read().splitlines()
    for line in lines:
        parts = line.split()
        if "r" not in parts[1] or (len(parts) > 5 and parts[5].startswith("[v")):
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        data = ctypes.string_at(lo, hi - lo)
        i = data.find(needle)
        while i >= 0:
            found.append(data[i + len(needle) : i + len(needle) + 4].decode("latin-1"))
            i = data.find(needle, i + 1)
    return found


def chain() -> list:
    # this call, its module process, that one's parent and the parent's parent
    import os
    pids = [os.getpid()]
    for _ in range(3):
        with open(f"/proc/{pids[-1]}/stat", "rb") as fh:
            stat = fh.read()
        pids.append(int(stat[stat.rfind(b")") + 2 :].split()[1]))
    return pids
"""


def test_a_module_forked_after_other_calls_finds_none_of_their_arguments(
    small_box: Sandbox, tmp_path: Path
) -> None:
    # requests of another module, small and large, then a module process made after them: it is
    # forked by the template, which the confined process made before its first request
    sizes = (0, 100, 700, 3000, 5000, 20_000, 60_000, 200_000)
    for pad in sizes:
        out, _ = small_box.call(small_box.innocent, (), {"text": OTHER_SECRET + "x" * pad})  # type: ignore[attr-defined]
        assert out == len(OTHER_SECRET) + pad
    confined = small_box.run_callable(os.getppid)  # forked by the confined process itself
    scan = _file_tool(tmp_path, "raw", RAW_SCAN, "scan")
    found, _ = small_box.call(scan, (), {})
    module = small_box.call(_file_tool(tmp_path, "raw", RAW_SCAN, "chain"), (), {})[0]
    assert module[2] != confined and module[3] == confined, (module, confined)
    assert OTHER_SECRET.rsplit("-", 1)[1] not in found, found


def _own_result(box: Sandbox, tool: Any) -> Any:
    try:
        return box.call(tool, (), {"secret": "probe"})[0]
    except SandboxError as exc:
        return str(exc)


def _syscalls() -> dict[str, list[int]]:
    import platform

    lib = ctypes.CDLL(None, use_errno=True)
    numbers = {"io_uring_setup": 425, "keyctl": 250, "unshare": 272, "ptrace": 101}
    if platform.machine() != "x86_64":
        return {}
    out = {}
    for name, nr in numbers.items():
        ctypes.set_errno(0)
        rc = lib.syscall(nr, 0, 0, 0, 0, 0)
        out[name] = [rc, ctypes.get_errno()]
    return out


@pytest.mark.skipif(not FENCE.seccomp, reason=f"no seccomp filter here: {'; '.join(FENCE.notes)}")
def test_seccomp_refuses_what_tools_never_need(box: Sandbox) -> None:
    import errno

    out = box.run_callable(_syscalls)
    assert out == {name: [-1, errno.EPERM] for name in out} and "io_uring_setup" in out
    assert "a seccomp filter" in box.describe()
    assert box.run_callable(_fork_and_thread) == [7, "thread"]  # what tools need still works


def _fork_and_thread() -> list[Any]:
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    _, status = os.waitpid(pid, 0)
    seen: list[Any] = [os.WEXITSTATUS(status)]
    worker = threading.Thread(target=lambda: seen.append("thread"))
    worker.start()
    worker.join()
    return seen
