"""Every write toollab makes to a user's path, through the real CLI: only regular files are
replaced (never a device node, a FIFO, a socket, a folder, or a link out of its folder), a file
toollab did not write beside an output is kept unless ``--force``, a run directory's own files
are never links, temporary files go on every exit, user-sized work is bounded, and a judge string
is checked before any work (docs/integrity.md, docs/input-limits.md).

Device nodes are copies made with ``os.mknod`` in the test's folder when the tests run as root
(a regression would replace the copy, never ``/dev/null`` itself); without root the real nodes
are used (they cannot be replaced then).  A FIFO gets a non-blocking reader first, so a
regression that opened it for writing could not hang the test.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.data.atomic import MARK, atomic_write, clean_stale
from toollab.errors import InputError

runner = CliRunner()
SRC = Path(__file__).resolve().parents[1] / "src"
UNGUARDED = ["--unguarded", "bfcl", "--unguarded", "seal-tools", "--unguarded", "deer"]


def _cli(*args: str) -> tuple[int, str, str]:
    r = runner.invoke(app, list(args))
    return r.exit_code, r.stdout, r.stderr


# -- special files --------------------------------------------------------------------------------
def _device(tmp: Path, name: str) -> Path:
    """A character device like ``/dev/NAME`` (a copy in ``tmp`` when root may make one)."""
    real = Path("/dev") / name
    st = os.stat(real)
    copy = tmp / name
    try:
        os.mknod(copy, stat.S_IFCHR | 0o666, st.st_rdev)
    except (PermissionError, OSError):
        if os.geteuid() == 0:
            pytest.skip("cannot make a device node here")
        return real
    return copy


SPECIALS = ["null-device", "full-device", "fifo", "socket", "directory", "link-out"]


@pytest.fixture
def special(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Path, Callable[[], None]]]:
    """``(path, check)``: a path holding something that is not a regular file, and a check
    that it is still exactly that after the command."""
    kind = request.param
    out = tmp_path / "out"
    out.mkdir()
    closers: list[Callable[[], None]] = []
    if kind in ("null-device", "full-device"):
        path = _device(tmp_path, kind.split("-")[0])
        rdev = os.stat(path).st_rdev

        def check() -> None:
            st = os.lstat(path)
            assert stat.S_ISCHR(st.st_mode) and st.st_rdev == rdev

    elif kind == "fifo":
        path = out / "x.jsonl"
        os.mkfifo(path)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a reader: a write could not block
        closers.append(lambda: os.close(fd))

        def check() -> None:
            assert stat.S_ISFIFO(os.lstat(path).st_mode)
            try:
                got = os.read(fd, 1)  # nothing was written into it
            except BlockingIOError:
                got = b""
            assert got == b""

    elif kind == "socket":
        path = out / "x.jsonl"
        sock = socket.socket(socket.AF_UNIX)
        cwd = os.getcwd()
        os.chdir(out)  # a relative bind: the socket path limit (108 bytes) never bites
        try:
            sock.bind("x.jsonl")
        finally:
            os.chdir(cwd)
        closers.append(sock.close)

        def check() -> None:
            assert stat.S_ISSOCK(os.lstat(path).st_mode)

    elif kind == "directory":
        path = out / "x.jsonl"
        path.mkdir()
        (path / "keep").write_text("kept")

        def check() -> None:
            assert (path / "keep").read_text() == "kept"

    else:  # a symbolic link leading out of the output's folder
        victim = tmp_path / "elsewhere" / "victim.jsonl"
        victim.parent.mkdir()
        victim.write_text("precious\n")
        path = out / "x.jsonl"
        path.symlink_to(victim)

        def check() -> None:
            assert path.is_symlink() and victim.read_text() == "precious\n"

    try:
        yield path, check
    finally:
        for close in closers:
            close()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small finished run (oracle on generated weather data)."""
    root = tmp_path_factory.mktemp("run")
    data = root / "d.jsonl"
    code, _, err = _cli("data", "generate", "--env", "weather", "--n", "3", "--out", str(data))
    assert code == 0, err
    code, _, err = _cli(
        "eval", "-m", "oracle", "-d", str(data), "-f", "toollab", "--out", str(root / "run")
    )
    assert code == 0, err
    return root / "run"


def _verbs(run: Path) -> dict[str, Callable[[Path], list[str]]]:
    return {
        "generate": lambda p: ["data", "generate", "--env", "weather", "--n", "2", "--out", str(p)],
        "score": lambda p: ["score", str(run), "--out", str(p)],
        "sft": lambda p: ["data", "sft", "--env", "weather", "--n", "2", "--no-tokens", *UNGUARDED, "--out", str(p)],
        "report": lambda p: ["report", str(run), "--out", str(p)],
    }  # fmt: skip


class TestOnlyRegularFilesAreReplaced:
    @pytest.mark.parametrize("special", SPECIALS, indirect=True)
    @pytest.mark.parametrize("verb", ["generate", "score", "sft", "report"])
    def test_refused_and_left_as_it_was(
        self, special: tuple[Path, Callable[[], None]], verb: str, run_dir: Path
    ) -> None:
        path, check = special
        code, _, err = _cli(*_verbs(run_dir)[verb](path))
        assert code == 2, err
        assert str(path) in err and "Traceback" not in err
        assert any(w in err for w in ("regular file", "symbolic link", "folder", "directory")), err
        check()
        leftovers = [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
        assert not leftovers

    def test_a_link_inside_its_folder_is_written_through(self, tmp_path: Path) -> None:
        real = tmp_path / "v2.jsonl"
        real.write_text("old\n")
        link = tmp_path / "train.jsonl"
        link.symlink_to("v2.jsonl")
        code, _, err = _cli("data", "generate", "--env", "weather", "--n", "2", "--out", str(link))
        assert code == 0, err
        assert link.is_symlink() and len(real.read_text().splitlines()) == 2

    def test_the_writer_itself_refuses(self, tmp_path: Path) -> None:
        os.mkfifo(tmp_path / "p")
        with pytest.raises(Exception, match="FIFO"), atomic_write(tmp_path / "p") as fh:
            fh.write("x")
        assert stat.S_ISFIFO(os.lstat(tmp_path / "p").st_mode)


class TestStandardOutput:
    def test_generate_to_stdout(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.chdir(tmp_path)
        code, out, err = _cli("data", "generate", "--env", "weather", "--n", "3", "--out", "-")
        assert code == 0, err
        assert all(json.loads(line)["id"].startswith("weather-") for line in out.splitlines())
        assert len(out.splitlines()) == 3
        assert list(tmp_path.iterdir()) == []  # no file named "-", no figures file

    def test_score_to_stdout(
        self, run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)
        code, out, err = _cli("score", str(run_dir), "--out", "-")
        assert code == 0, err
        assert "metrics" in json.loads(out)
        assert not (tmp_path / "-").exists()

    @pytest.mark.parametrize("verb", [["data", "generate", "--env", "weather"], ["score", "RUN"]])
    def test_stdout_and_json_cannot_share(self, verb: list[str], run_dir: Path) -> None:
        args = [str(run_dir) if a == "RUN" else a for a in verb]
        code, out, err = _cli(*args, "--out", "-", "--json")
        assert code == 2 and "--json" in err and out == ""


# -- files beside an output -----------------------------------------------------------------------
def _beside(run: Path, tmp: Path) -> dict[str, tuple[list[str], Path]]:
    """verb -> (its command line without --force, the file it writes beside its output)."""
    return {
        "sft card": (
            ["data", "sft", "--env", "weather", "--n", "2", "--no-tokens", *UNGUARDED, "--out", str(tmp / "train.jsonl")],
            tmp / "README.md",
        ),
        "generate figures": (
            ["data", "generate", "--env", "weather", "--n", "2", "--out", str(tmp / "g.jsonl")],
            tmp / "g.jsonl.stats.json",
        ),
        "report summary": (["report", str(run), "--out", str(tmp / "r.html")], tmp / "r.md"),
    }  # fmt: skip


class TestForeignFilesBesideAnOutput:
    @pytest.mark.parametrize("which", ["sft card", "generate figures", "report summary"])
    def test_kept_unless_forced(self, which: str, run_dir: Path, tmp_path: Path) -> None:
        args, beside = _beside(run_dir, tmp_path)[which]
        beside.write_text("my own notes\n")
        code, _, err = _cli(*args)
        assert code == 2 and str(beside) in err and "--force" in err, err
        assert beside.read_text() == "my own notes\n"
        assert not [p for p in tmp_path.iterdir() if p.suffix == ".jsonl" or p.suffix == ".html"]
        code, _, err = _cli(*args, "--force")
        assert code == 0, err
        assert MARK in beside.read_text()[:4096]
        code, _, err = _cli(*args)  # toollab's own file: replaced without --force
        assert code == 0, err

    def test_a_foreign_file_beside_is_refused_before_any_work(self, tmp_path: Path) -> None:
        (tmp_path / "README.md").write_text("mine")
        t0 = time.perf_counter()
        code, _, err = _cli(
            "data", "sft", "--env", "weather", "--n", "50000", "--out", str(tmp_path / "t.jsonl")
        )
        assert code == 2 and "README.md" in err
        assert time.perf_counter() - t0 < 5


# -- run directories ------------------------------------------------------------------------------
def _fresh_run(tmp: Path) -> tuple[list[str], Path]:
    data = tmp / "d.jsonl"
    code, _, err = _cli("data", "generate", "--env", "weather", "--n", "2", "--out", str(data))
    assert code == 0, err
    args = ["eval", "-m", "oracle", "-d", str(data), "-f", "toollab", "--out", str(tmp / "run")]
    code, _, err = _cli(*args)
    assert code == 0, err
    return args, tmp / "run"


class TestRunDirectoryFilesAreNeverLinks:
    @pytest.mark.parametrize(
        "name", ["predictions.jsonl", "run.json", "results.json", "judge_cache.jsonl"]
    )
    def test_a_link_out_of_the_run_is_refused_on_resume(self, name: str, tmp_path: Path) -> None:
        args, run = _fresh_run(tmp_path)
        victim = tmp_path / "victim.txt"
        victim.write_text("precious\n")
        entry = run / name
        if entry.exists():
            victim.write_text(entry.read_text())
            entry.unlink()
        before = victim.read_text()
        entry.symlink_to(victim)
        code, _, err = _cli(*args)
        assert code == 2 and str(entry) in err and "symbolic link" in err, err
        assert victim.read_text() == before and entry.is_symlink()

    def test_a_fifo_for_predictions_is_refused(self, tmp_path: Path) -> None:
        args, run = _fresh_run(tmp_path)
        (run / "predictions.jsonl").unlink()
        os.mkfifo(run / "predictions.jsonl")
        fd = os.open(run / "predictions.jsonl", os.O_RDONLY | os.O_NONBLOCK)
        try:
            code, _, err = _cli(*args)
        finally:
            os.close(fd)
        assert code == 2 and "regular file" in err, err


# -- cleanup and bounds ---------------------------------------------------------------------------
def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)  # fmt: skip
    return int(proc.stdout)


class TestCleanup:
    def test_a_killed_writers_temporary_file_goes_at_the_next_write(self, tmp_path: Path) -> None:
        out = tmp_path / "g.jsonl"
        stale = tmp_path / f".g.jsonl.{_dead_pid()}.abc123.tmp"
        stale.write_text("half")
        alive = tmp_path / f".g.jsonl.{os.getppid()}.abc123.tmp"  # a running process's: kept
        alive.write_text("busy")
        code, _, err = _cli("data", "generate", "--env", "weather", "--n", "2", "--out", str(out))
        assert code == 0, err
        assert not stale.exists() and alive.exists()

    def test_clean_stale_leaves_other_files(self, tmp_path: Path) -> None:
        other = tmp_path / ".g.jsonl.notapid.tmp"
        other.write_text("x")
        part = tmp_path / f".model.partial-{_dead_pid()}"
        part.mkdir()
        assert clean_stale(tmp_path, "g.jsonl") == []
        assert clean_stale(tmp_path, "model") == [part] and other.exists()

    def test_an_exception_leaves_no_temporary_file(self, tmp_path: Path) -> None:
        with pytest.raises(KeyboardInterrupt), atomic_write(tmp_path / "a.txt") as fh:
            fh.write("half")
            raise KeyboardInterrupt
        assert list(tmp_path.iterdir()) == []

    def test_sigterm_removes_the_temporary_file(self, tmp_path: Path) -> None:
        out = tmp_path / "big.jsonl"
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        cmd = [sys.executable, "-m", "toollab.cli.main", "data", "generate", "--n", "100000", "--out", str(out)]  # fmt: skip
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 30
            while not any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "no temporary file appeared"
                time.sleep(0.02)
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert code == 128 + signal.SIGTERM
        assert list(tmp_path.iterdir()) == []  # no OUT, no OUT's temporary file


class TestUserSizes:
    def test_n_over_the_bound(self, tmp_path: Path) -> None:
        code, _, err = _cli("data", "generate", "--env", "weather", "--n", "100000000", "--out", str(tmp_path / "x.jsonl"))  # fmt: skip
        assert code == 2 and "100,000" in err and "input-limits" in err
        assert list(tmp_path.iterdir()) == []

    @pytest.mark.parametrize("env", ["", ",", " , "])
    def test_no_environment_named(self, env: str, tmp_path: Path) -> None:
        code, _, err = _cli("data", "generate", "--env", env, "--out", str(tmp_path / "x.jsonl"))
        assert code == 2 and "names no environment" in err
        assert list(tmp_path.iterdir()) == []


# -- judge / model / teacher strings before any work ----------------------------------------------
class TestModelStringsBeforeWork:
    @pytest.mark.parametrize("judge", ["nope:", "nope", "bundeled:x"])
    def test_eval_refuses_a_bad_judge_before_running(self, judge: str, tmp_path: Path) -> None:
        data = tmp_path / "d.jsonl"
        code, _, err = _cli("data", "generate", "--env", "weather", "--n", "2", "--out", str(data))
        assert code == 0, err
        run = tmp_path / "run"
        code, _, err = _cli("eval", "-m", "oracle", "-d", str(data), "-f", "toollab", "--out", str(run), "--judge", judge)  # fmt: skip
        assert code == 2 and "provider" in err, err
        assert not run.exists()

    def test_score_refuses_a_bad_judge(self, run_dir: Path, tmp_path: Path) -> None:
        out = tmp_path / "r.json"
        code, _, err = _cli("score", str(run_dir), "--judge", "nope:", "--out", str(out))
        assert code == 2 and "'nope'" in err
        assert not out.exists() and not (run_dir / "judge_cache.jsonl").exists()

    @pytest.mark.parametrize("pipeline", ["deer", "seal"])
    def test_synth_refuses_a_bad_teacher(
        self, pipeline: str, tmp_path: Path, shared_data: Path
    ) -> None:
        extra = ["--tools", str(shared_data / "deer" / "tool.json")] if pipeline == "deer" else []
        code, _, err = _cli("data", "synth", pipeline, *extra, "--out", str(tmp_path / "o"), "--teacher", "nope:")  # fmt: skip
        assert code == 2 and "'nope'" in err
        assert not (tmp_path / "o").exists()


# -- output folders: synth, bench, training ---------------------------------------------------------
def _deer_tools(tmp: Path) -> Path:
    """A DEER ``tool.json`` of 12 tools with published examples (no teacher needed)."""
    tools = [
        {
            "api_name": f"tool{i}",
            "description_for_human": f"weather {i}",
            "example": [{"query": f"weather {i} in {c}", "call": f"tool{i}(city='{c}')"} for c in ("Paris", "Rome")],
        }
        for i in range(12)
    ]  # fmt: skip
    p = tmp / "tools.json"
    p.write_text(json.dumps(tools))
    return p


def _folder_verbs(tmp: Path) -> dict[str, tuple[list[str], Path]]:
    """verb -> (its command line without --force, a file it writes into its output folder)."""
    out = tmp / "out"
    return {
        "synth deer": (
            ["data", "synth", "deer", "--tools", str(_deer_tools(tmp)), "--out", str(out), "--seen", "8", "--k", "3", "--mode", "random", "--nosearch-size", "0"],
            out / "train.json",
        ),
        "bench": (
            ["bench", "-m", "oracle", "--envs", "weather", "--limit", "1", "--out", str(out)],
            out / "bench.json",
        ),
        "bench summary": (
            ["bench", "-m", "oracle", "--envs", "weather", "--limit", "1", "--out", str(out)],
            out / "report.md",
        ),
    }  # fmt: skip


class TestForeignFilesInOutputFolders:
    @pytest.mark.parametrize("which", ["synth deer", "bench", "bench summary"])
    def test_kept_unless_forced(self, which: str, tmp_path: Path) -> None:
        args, mine = _folder_verbs(tmp_path)[which]
        mine.parent.mkdir(parents=True, exist_ok=True)
        mine.write_text("my own notes\n")
        code, _, err = _cli(*args)
        assert code == 2 and str(mine) in err and "--force" in err, err
        assert mine.read_text() == "my own notes\n"
        assert sorted(p.name for p in mine.parent.iterdir()) == [mine.name]  # nothing written
        code, _, err = _cli(*args, "--force")
        assert code == 0, err
        assert mine.read_text() != "my own notes\n"
        code, _, err = _cli(*args)  # toollab's own outputs: replaced without --force
        assert code == 0, err

    @pytest.mark.parametrize(
        "name", ["report.json", "tool.jsonl", "dataset_for_finetune/train.json"]
    )
    def test_seal_refuses_before_the_teacher_starts(self, name: str, tmp_path: Path) -> None:
        out = tmp_path / "out"
        mine = out / name
        mine.parent.mkdir(parents=True)
        mine.write_text("mine\n")
        code, _, err = _cli("data", "synth", "seal", "--out", str(out), "--teacher", "fake:")
        assert code == 2 and name in err and "--force" in err, err
        assert mine.read_text() == "mine\n" and not (out / "teacher_cache.jsonl").exists()

    def test_a_marked_folder_is_toollabs(self, tmp_path: Path) -> None:
        from toollab.data.atomic import FOLDER_MARK, check_output_folder, mark_folder

        out = tmp_path / "out"
        out.mkdir()
        (out / "train.json").write_text("[]")
        with pytest.raises(InputError, match="--force"):
            check_output_folder(out, ["train.json"])
        (out / FOLDER_MARK).write_text("not the mark")
        with pytest.raises(InputError):
            check_output_folder(out, ["train.json"])
        mark_folder(out)
        check_output_folder(out, ["train.json"])
        check_output_folder(tmp_path / "absent", ["train.json"])
        (tmp_path / "f").write_text("x")
        with pytest.raises(InputError, match="not a folder"):
            check_output_folder(tmp_path / "f", ["train.json"])


# -- training outputs ---------------------------------------------------------------------------
class TestTrainingOutputs:
    @pytest.mark.parametrize(
        ("files", "ok"),
        [
            ({}, True),  # an empty folder
            ({".toollab-generated": MARK}, True),  # marked when a run started
            ({"run.json": json.dumps({"written_by": MARK})}, True),
            ({"run.json": json.dumps({"status": "finished"})}, True),  # an older run
            ({"notes.txt": "mine"}, False),
            ({"run.json": "{}"}, False),
            ({"run.json": "[1, 2]"}, False),
            ({"adapter/weights.bin": "x"}, False),
        ],
    )
    def test_which_run_folders_are_written(
        self, files: dict[str, str], ok: bool, tmp_path: Path
    ) -> None:
        from toollab.train.outputs import check_run_folder

        out = tmp_path / "run"
        out.mkdir()
        for name, text in files.items():
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_text(text)
        if ok:
            assert check_run_folder(out) == out
        else:
            with pytest.raises(InputError, match="force"):
                check_run_folder(out)
        check_run_folder(out, force=True)

    def test_train_sft_refuses_a_foreign_folder_before_the_model_loads(
        self, tmp_path: Path
    ) -> None:
        out = tmp_path / "run"
        out.mkdir()
        (out / "notes.txt").write_text("mine")
        data = tmp_path / "a.jsonl"
        data.write_text(json.dumps({"id": "a", "text": "hello world", "spans": [[6, 11]]}) + "\n")
        t0 = time.perf_counter()
        code, _, err = _cli("train", "sft", "--output-dir", str(out), "--data", str(data))
        assert code == 2 and str(out) in err and "force" in err, err
        assert time.perf_counter() - t0 < 5  # torch is not even imported
        assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]

    @pytest.mark.parametrize("what", ["adapter", "f16"])
    def test_train_export_keeps_a_foreign_gguf(self, what: str, tmp_path: Path) -> None:
        run = tmp_path / "run"
        (run / "adapter").mkdir(parents=True)
        dest = tmp_path / "gguf"
        dest.mkdir()
        mine = dest / ("adapter.gguf" if what == "adapter" else f"model-{what}.gguf")
        mine.write_text("mine")
        args = [
            "train",
            "export",
            str(run),
            "--out",
            str(dest),
            "--what",
            what,
            "--base",
            str(tmp_path / "b.gguf"),
        ]
        code, _, err = _cli(*args)
        assert code == 2 and str(mine) in err and "--force" in err, err
        assert mine.read_text() == "mine"
        code, _, err = _cli(*args, "--force")  # goes on to check the run (which is empty)
        assert code == 2 and str(mine) not in err, err
        assert mine.read_text() == "mine"


# -- lone surrogates: every JSON toollab writes is valid UTF-8 ----------------------------------------
LONE = ["\ud800", "a\ud83db", "\udfff", "\ud800" * 3, "x\udc00\x00y"]


def _write_with(how: str, path: Path, value: str) -> Path:
    """``value`` written by one of the product's JSON writers; the file it wrote."""
    from toollab.data import atomic
    from toollab.eval.store import RunStore
    from toollab.schema import Tool
    from toollab.tools import ToolPool

    if how == "json":
        atomic.write_json_atomic(path, {"q": value})
    elif how == "text of json.dumps":  # how bench.json and other reports are written
        atomic.write_text_atomic(path, json.dumps({"q": value}, ensure_ascii=False))
    elif how == "jsonl":
        atomic.write_jsonl_atomic(path, [{"q": value}])
    elif how in ("tool pool .json", "tool pool .jsonl"):
        path = path.with_suffix(how.rsplit(" ", 1)[1])
        ToolPool([Tool.build(name="a", description=value)]).save(path)
    elif how == "run results":
        RunStore(path.parent).write_results({"q": value})
        path = path.parent / "results.json"
    return path


def _strings(obj: object) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in _strings(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in _strings(v)]
    return []


@pytest.mark.parametrize("value", LONE)
@pytest.mark.parametrize(
    "how",
    ["json", "text of json.dumps", "jsonl", "tool pool .json", "tool pool .jsonl", "run results"],
)
def test_a_lone_surrogate_is_written_escaped(how: str, value: str, tmp_path: Path) -> None:
    path = _write_with(how, tmp_path / "out.json", value)
    text = path.read_bytes().decode("utf-8")  # valid UTF-8: never a crash, never a bad file
    values = (
        [json.loads(line) for line in text.splitlines()]
        if how.endswith("l")
        else [json.loads(text)]
    )
    assert value in _strings(values)  # read back as the same string
    assert not list(tmp_path.glob("*.tmp"))
