"""The sandbox: resource limits, confined working directory, no network."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from toollab.tools import Sandbox, SandboxError, SandboxViolation, resolve_path


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "work", cpu_seconds=1, memory_mb=128, timeout=15) as sandbox:
        yield sandbox


@pytest.fixture
def listener() -> Iterator[int]:
    """A real TCP server on 127.0.0.1 that the sandbox must not reach."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            conn.sendall(b"hello")
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield srv.getsockname()[1]
    stop.set()
    thread.join(2)
    srv.close()


def _file_work(name: str, text: str) -> dict[str, object]:
    path = resolve_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return {
        "cwd": os.getcwd(),
        "read": path.read_text(),
        "listing": sorted(os.listdir(path.parent)),
    }


def test_normal_file_work_succeeds(box: Sandbox) -> None:
    out = box.run_callable(_file_work, "notes/a.txt", "hello")
    assert out == {"cwd": str(box.workdir), "read": "hello", "listing": ["a.txt"]}
    assert (box.workdir / "notes" / "a.txt").read_text() == "hello"


def test_async_callables_run_too(box: Sandbox) -> None:
    async def compute(n: int) -> list[int]:
        await asyncio.sleep(0.01)
        return list(range(n))

    assert box.run_callable(compute, 3) == [0, 1, 2]


def test_memory_hog_is_stopped(box: Sandbox) -> None:
    def hog() -> int:
        return len(bytearray(1024 * 1024 * 1024))

    with pytest.raises(SandboxError) as info:
        box.run_callable(hog)
    assert info.value.kind == "memory"
    assert "memory limit of 128 MB" in str(info.value)


def test_cpu_loop_is_killed(box: Sandbox) -> None:
    def spin() -> None:
        while True:
            pass

    with pytest.raises(SandboxError) as info:
        box.run_callable(spin)
    assert info.value.kind == "cpu"
    assert "CPU time limit of 1 s" in str(info.value)


def test_wall_clock_timeout_kills(box: Sandbox) -> None:
    import time

    def sleepy() -> None:
        time.sleep(30)

    t0 = time.monotonic()
    with pytest.raises(SandboxError) as info:
        box.run_callable(sleepy, timeout=0.5)
    assert info.value.kind == "timeout"
    assert time.monotonic() - t0 < 5


def test_writing_outside_the_workdir_is_refused(box: Sandbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"

    def escape_open() -> None:
        with open(outside, "w") as fh:
            fh.write("x")

    def escape_relative() -> None:
        Path("../outside2.txt").write_text("x")

    def escape_remove() -> None:
        os.remove(str(tmp_path / "keep.txt"))

    (tmp_path / "keep.txt").write_text("keep")
    for fn in (escape_open, escape_relative, escape_remove):
        with pytest.raises(SandboxError) as info:
            box.run_callable(fn)
        assert info.value.kind == "refused", fn.__name__
        assert "outside the sandbox's working directory" in str(info.value)
    assert not outside.exists() and not (tmp_path / "outside2.txt").exists()
    assert (tmp_path / "keep.txt").read_text() == "keep"


def test_resolve_path_refuses_escapes(box: Sandbox) -> None:
    assert box.resolve_path("a/b.txt") == box.workdir / "a" / "b.txt"
    for bad in ("../x", "/etc/passwd", "a/../../x"):
        with pytest.raises(SandboxViolation):
            box.resolve_path(bad)
    (box.workdir / "link").symlink_to("/etc")
    with pytest.raises(SandboxViolation, match="outside"):
        box.resolve_path("link/passwd")

    def inside_child() -> str:
        return str(resolve_path("/etc/passwd"))

    with pytest.raises(SandboxError, match="absolute paths are not allowed"):
        box.run_callable(inside_child)


def test_network_connect_is_refused(box: Sandbox, listener: int) -> None:
    # the server is reachable from here ...
    with socket.create_connection(("127.0.0.1", listener), timeout=2) as conn:
        assert conn.recv(5) == b"hello"

    def connect() -> bytes:
        with socket.create_connection(("127.0.0.1", listener), timeout=2) as conn:
            return conn.recv(5)

    # ... but not from the sandbox
    with pytest.raises(SandboxError) as info:
        box.run_callable(connect)
    assert info.value.kind == "refused"
    assert "network access is disabled" in str(info.value)
    assert box.network_isolation in ("namespace", "python")


def test_network_allowed_when_asked(tmp_path: Path, listener: int) -> None:
    def connect() -> str:
        with socket.create_connection(("127.0.0.1", listener), timeout=2) as conn:
            return conn.recv(5).decode()

    with Sandbox(tmp_path / "w", network=True, timeout=10) as open_box:
        assert open_box.network_isolation == "allowed"
        assert open_box.run_callable(connect) == "hello"


def test_starting_programs_needs_permission(box: Sandbox) -> None:
    def spawn() -> int:
        import subprocess

        return subprocess.run(["true"], check=False).returncode

    with pytest.raises(SandboxError, match="starting programs is not allowed"):
        box.run_callable(spawn)


def test_tool_exceptions_come_back_with_type(box: Sandbox) -> None:
    def boom() -> None:
        raise KeyError("missing")

    with pytest.raises(SandboxError) as info:
        box.run_callable(boom)
    assert (info.value.kind, info.value.exc_type, str(info.value)) == (
        "exception",
        "KeyError",
        "KeyError: 'missing'",
    )


def test_commands(box: Sandbox, listener: int) -> None:
    from toollab.tools.sandbox import _command_prefix

    if not _command_prefix():
        with pytest.raises(SandboxError, match="cannot block the network"):
            box.run_command([sys.executable, "-c", "print(1)"])
        return
    ok = box.run_command(
        [sys.executable, "-c", "import os; open('out.txt','w').write('hi'); print(os.getcwd())"]
    )
    assert ok.ok and ok.stdout.strip() == str(box.workdir)
    assert (box.workdir / "out.txt").read_text() == "hi"
    net = box.run_command(
        [
            sys.executable,
            "-c",
            f"import socket; socket.create_connection(('127.0.0.1', {listener}), timeout=2)",
        ]
    )
    assert net.returncode != 0 and "Error" in net.stderr
    spin = box.run_command([sys.executable, "-c", "while True: pass"])
    assert spin.killed == "cpu" and not spin.ok
    late = box.run_command(["sleep", "20"], timeout=0.5)
    assert late.timed_out and late.killed == "timeout"
    fed = box.run_command(
        [sys.executable, "-c", "import sys; print(sys.stdin.read().upper())"], input="abc"
    )
    assert fed.stdout.strip() == "ABC"


def _read_env(name: str) -> str | None:
    return os.environ.get(name)


def test_the_environment_is_clean_but_for_what_is_passed(tmp_path: Path) -> None:
    os.environ["TOOLLAB_TEST_PARENT_ONLY"] = "parent"
    try:
        with Sandbox(tmp_path / "w", env={"GREETING": "hello"}, timeout=10) as box:
            assert box.run_callable(_read_env, "GREETING") == "hello"
            assert box.run_callable(_read_env, "TOOLLAB_TEST_PARENT_ONLY") is None
            assert box.run_callable(_read_env, "HOME") == str(box.workdir)
            assert box.describe() == box.confinement.describe()
    finally:
        del os.environ["TOOLLAB_TEST_PARENT_ONLY"]


def test_results_over_the_cap_are_refused(tmp_path: Path) -> None:
    with Sandbox(tmp_path / "w", max_result_bytes=4096, timeout=10) as box:
        assert box.run_callable(_repeat, 1000) == "x" * 1000
        with pytest.raises(SandboxError) as info:
            box.run_callable(_repeat, 10_000)
        assert info.value.kind == "result_size" and "4096 bytes" in str(info.value)


def _repeat(n: int) -> str:
    return "x" * n


def _many(n: int) -> list[int]:
    return list(range(n))


def test_results_with_too_many_values_are_refused(tmp_path: Path) -> None:
    with Sandbox(tmp_path / "w", max_result_bytes=100_000_000, timeout=20) as box:
        with pytest.raises(SandboxError) as info:
            box.run_callable(_many, 1_100_000)
        assert info.value.kind == "result_size" and "1,000,000 values" in str(info.value)


def test_nothing_runs_unconfined_where_no_boundary_is_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toollab.tools import sandbox as sandbox_module
    from toollab.tools.confine import Boundary

    unsafe = Boundary("process", False, False, False, None, ("no PID namespace",))
    assert not unsafe.safe and "NO filesystem confinement" in unsafe.describe()
    monkeypatch.setattr(sandbox_module, "boundary", lambda: unsafe)
    with Sandbox(tmp_path / "w", timeout=10) as box, pytest.raises(SandboxError) as info:
        box.run_callable(_repeat, 3)
    assert info.value.kind == "refused" and "nothing can run confined here" in str(info.value)
    assert not (tmp_path / "w" / "x").exists()


def test_chat_says_when_the_boundary_is_partial(monkeypatch: pytest.MonkeyPatch) -> None:
    from toollab.cli.chat_cmd import tools_mode
    from toollab.tools import Executor, ToolPool
    from toollab.tools import sandbox as sandbox_module
    from toollab.tools.confine import Boundary

    pool = ToolPool()
    pool.add(_repeat)
    partial = Boundary("process", False, True, True, None, ("bubblewrap is not installed",))
    monkeypatch.setattr(sandbox_module, "boundary", lambda: partial)
    with Executor(pool, confine=True) as ex:
        line = tools_mode(ex)
    assert "confinement is partial here (bubblewrap is not installed)" in line
    assert "NO filesystem confinement" in line
    assert "unconfined (--trust-tools)" in tools_mode(Executor(pool))


# -- the workspace quota --------------------------------------------------------------------------------
def _many_files(n: int) -> int:
    for i in range(n):
        Path(f"f{i}.txt").write_text("x")
    return n


def _big_file(mb: int) -> int:
    with open("big.bin", "wb") as fh:
        for _ in range(mb):
            fh.write(b"\0" * 1024 * 1024)
    return mb


def _small_writes(files: int, kb: int) -> int:
    os.makedirs("logs", exist_ok=True)
    for i in range(files):
        with open(f"logs/{i}.log", "ab") as fh:
            for _ in range(kb):
                fh.write(b"y" * 1024)
    return files


def _write_forever() -> None:
    i = 0
    while True:
        Path(f"n{i}").write_text("z" * 4096)
        i += 1


class TestWorkspaceQuota:
    @pytest.mark.parametrize(
        ("fn", "args", "kinds"),
        [
            (_many_files, (200,), {"quota"}),
            (_big_file, (3,), {"file_size"}),  # one file: RLIMIT_FSIZE stops it at the quota
            (_small_writes, (30, 100), {"quota"}),  # 3 MB in files within every other limit
        ],
        ids=["many-files", "big-file", "many-small-writes"],
    )
    def test_a_call_past_the_quota_is_an_error(
        self, tmp_path: Path, fn: object, args: tuple[int, ...], kinds: set[str]
    ) -> None:
        with Sandbox(
            tmp_path / "w", max_workspace_mb=2, max_workspace_files=100, timeout=10
        ) as box:
            with pytest.raises(SandboxError) as info:
                box.run_callable(fn, *args)  # type: ignore[arg-type]
            assert info.value.kind in kinds, str(info.value)
            if info.value.kind == "quota":
                assert "over its quota of 2 MB and 100 files and directories" in str(info.value)
                # every later call says so, until the files are gone (nothing is deleted for you)
                with pytest.raises(SandboxError, match="over its quota"):
                    box.run_callable(_repeat, 1)
            for entry in box.workdir.iterdir():
                if entry.is_dir():
                    for inner in entry.iterdir():
                        inner.unlink()
                    entry.rmdir()
                else:
                    entry.unlink()
            assert box.run_callable(_repeat, 2) == "xx"

    def test_a_writer_that_never_stops_is_stopped_at_the_quota(self, tmp_path: Path) -> None:
        import time

        with Sandbox(tmp_path / "w", max_workspace_files=500, cpu_seconds=20, timeout=20) as box:
            t0 = time.monotonic()
            with pytest.raises(SandboxError) as info:
                box.run_callable(_write_forever)
            assert info.value.kind == "quota" and "the call was stopped" in str(info.value)
            assert time.monotonic() - t0 < 5
            assert sum(1 for _ in box.workdir.iterdir()) < 5000


# -- the workspace directory of a user ----------------------------------------------------------------------
def test_an_existing_workspace_directory_keeps_its_owner_and_mode(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from toollab.cli.main import app

    mine = tmp_path / "mine"
    mine.mkdir(mode=0o750)
    (mine / "keep.txt").write_text("mine")
    before = mine.stat()
    tools = tmp_path / "writer_tools.py"
    tools.write_text(
        "from toollab.tools import tool\n\n\n@tool\ndef note(text: str) -> str:\n"
        '    """Write a note.\n\n    Args:\n        text: what\n    """\n'
        "    open('note.txt', 'w').write(text)\n    return 'ok'\n"
    )
    call = json.dumps({"name": "note", "arguments": {"text": "hello"}})
    script = tmp_path / "script.json"
    script.write_text(json.dumps([call, "done"]))
    args = ["chat", "--model", f"fake:{script}", "--tools", str(tools), "--template", "json"]
    result = CliRunner().invoke(app, [*args, "--workspace", str(mine)], input="go\n/exit\n")
    assert result.exit_code == 0, result.output
    after = mine.stat()
    assert (after.st_uid, after.st_gid, after.st_mode) == (
        before.st_uid,
        before.st_gid,
        before.st_mode,
    )
    assert (mine / "keep.txt").read_text() == "mine"
    notes = list(mine.rglob("note.txt"))
    assert [n.read_text() for n in notes] == ["hello"]  # in it, or in a fresh folder of it
    not_a_dir = tmp_path / "file.txt"
    not_a_dir.write_text("x")
    bad = CliRunner().invoke(app, [*args, "--workspace", str(not_a_dir)], input="/exit\n")
    assert bad.exit_code == 2 and "not a directory" in bad.output
    assert "Traceback" not in bad.output and not_a_dir.read_text() == "x"
