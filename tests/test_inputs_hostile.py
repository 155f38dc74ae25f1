"""A hostile-input corpus driven through the real CLI (in process, typer's runner).

Every case gives bad (or odd but legitimate) input to one verb: malformed, deep, huge, non-UTF-8
or wrongly typed files, paths that are directories, loops or unwritable, option values out of
range, and run directories tampered with.  Each must end in a clear error (exit 2, one
``error:`` line naming the problem, no Python traceback) or, where the input is legitimate, in
success; none may hang (each case is bounded by an alarm) or leave a half-written file.

``python tests/test_inputs_hostile.py`` prints the counts recorded in ``docs/input-limits.md``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.data.samples import sample_path

#: seconds one case may take before it counts as a hang
CASE_LIMIT_S = 30
ERROR, OK, EITHER = "error", "ok", "either"


@dataclass
class Case:
    name: str
    args: list[str]
    expect: str = ERROR
    #: paths that must not exist afterwards when the case fails (nothing half-written)
    absent: list[Path] = field(default_factory=list)
    input: str | None = None


# -- hostile file contents -----------------------------------------------------------------------

BIG_INT = "9" * 5000
CONTENTS: dict[str, bytes] = {
    "empty": b"",
    "blank": b"  \n\n \t\n",
    "not_json": b"this is not json\n",
    "truncated": b'{"id": "a", "question": [[{"role": "user", "content": "hi',
    "deep_list": b"[" * 100_000 + b"]" * 100_000,
    "deep_object": b'{"a":' * 5000 + b"1" + b"}" * 5000,
    "deep_line": b'{"id": "x", "v": ' + b"[" * 3000 + b"]" * 3000 + b"}\n",
    "big_int": b'{"id": ' + BIG_INT.encode() + b"}\n",
    "big_int_list": b"[" + BIG_INT.encode() + b"]",
    "not_utf8": b"\xff\xfe\xfa not text \x80\x81\n",
    "utf16": '[{"id": "a"}]'.encode("utf-16"),
    "nul_bytes": b'{"id": "a\\u0000b", "x": "\x00"}\n',
    "raw_nul": b"\x00\x00\x00\x00",
    "lone_surrogate": b'{"id": "\\ud83d", "question": "\\ud83d"}\n',
    "numbers": b"[1, 2, 3]",
    "string": b'"just a string"',
    "null": b"null",
    "wrong_types": b'{"id": 5, "question": 7, "function": "no", "name": 3, "parameters": []}\n',
    "one_bad_line": b'{"id": "a"}\n{broken\n{"id": "b"}\n',
    "crlf": b'{"id": "a"}\r\n{"id": "b"}\r\n',
    "bom": b'\xef\xbb\xbf{"id": "a"}\n',
    "nan": b'{"id": NaN, "x": Infinity}\n',
    "dup_keys": b'{"id": "a", "id": "b"}\n',
    "huge_string": b'{"id": "' + b"x" * 2_000_000 + b'"}\n',
    "list_of_lists": b"[[[]], [[]]]",
}

YAML_CONTENTS: dict[str, bytes] = {
    "yaml_bomb": b"""a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
tools: [*h]
""",
    "yaml_many_aliases": b"x: &x {name: f}\ntools: [" + b", ".join([b"*x"] * 500) + b"]\n",
    "yaml_recursive": b"tools: &t [*t]\n",
    "yaml_deep": b"tools:\n- " + b"[" * 500 + b"]" * 500 + b"\n",
    "yaml_big_int": b"- name: f\n  description: " + BIG_INT.encode() + b"\n",
    "yaml_tabs": b"tools:\n\t- name: f\n",
    "yaml_python_tag": b"- !!python/object/apply:os.system ['echo hi']\n",
    "yaml_long_line": b"- name: f\n  description: '" + b"x" * 1_100_000 + b"'\n",
    "yaml_scalar": b"just text\n",
}


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# -- the corpus ----------------------------------------------------------------------------------


def _special_paths(root: Path) -> dict[str, Path]:
    """Paths that are not the regular file a verb expects."""
    d = root / "special"
    d.mkdir()
    (d / "a_directory").mkdir()
    loop = d / "loop"
    os.symlink(loop, loop)
    os.symlink(d / "nowhere", d / "dangling")
    fifo = d / "fifo"
    os.mkfifo(fifo)
    (d / "a_file").write_text("x")
    return {
        "missing": d / "missing.json",
        "directory": d / "a_directory",
        "symlink_loop": loop,
        "dangling_symlink": d / "dangling",
        "fifo": fifo,
        "under_a_file": d / "a_file" / "inside.json",
    }


def _out_paths(root: Path) -> dict[str, Path]:
    """``--out`` values that cannot be written."""
    d = root / "outs"
    d.mkdir()
    (d / "file").write_text("x")
    loop = d / "loop"
    os.symlink(loop, loop)
    return {
        "under_a_file": d / "file" / "run",
        "symlink_loop": loop / "run",
        "proc": Path("/proc/toollab-cannot-write/run"),
        "sys": Path("/sys/toollab-cannot-write/run"),  # PermissionError, even for root
        "sys_file": Path("/sys/kernel/notes"),  # a file no one may write
    }


def _run_dir(root: Path, bfcl: Path) -> Path:
    """A real run of the echo model on the bundled BFCL sample (two instances)."""
    out = root / "base_run"
    r = CliRunner().invoke(
        app,
        ["eval", "-m", "fake:", "-d", str(bfcl), "-f", "bfcl", "-n", "2", "--out", str(out)],
    )
    assert r.exit_code == 0, r.output
    return out


def _tamperings(base: Path, root: Path) -> Iterator[tuple[str, Path, str]]:
    """``(name, run directory, expectation)``: copies of ``base`` damaged one way each."""
    lines = (base / "predictions.jsonl").read_text().splitlines()
    first = json.loads(lines[0])

    def copy(name: str) -> Path:
        d = root / "tampered" / name
        shutil.copytree(base, d)
        (d / ".toollab.lock").unlink(missing_ok=True)
        return d

    def with_lines(name: str, new: list[str], expect: str = ERROR) -> tuple[str, Path, str]:
        d = copy(name)
        (d / "predictions.jsonl").write_text("".join(x + "\n" for x in new))
        return name, d, expect

    def record(**kw: Any) -> str:
        return json.dumps({**first, **kw})

    yield with_lines("duplicate_line", [*lines, lines[0]])
    yield with_lines("foreign_id", [*lines, record(id="not-an-instance")])
    yield with_lines("foreign_fingerprint", [*lines[1:], record(dataset="0123456789abcdef")])
    yield with_lines("repeat_1e30", [*lines[1:], record(repeat=10**30)])
    yield with_lines("repeat_negative", [*lines[1:], record(repeat=-1)])
    yield with_lines("repeat_beyond_run", [*lines, record(repeat=5)])
    yield with_lines("repeat_string", [*lines[1:], record(repeat="zero")])
    yield with_lines("middle_line_corrupt", [lines[0][:20], *lines[1:]])
    yield with_lines("deep_line", [*lines, '{"id": ' + "[" * 5000 + "]" * 5000 + "}"])
    yield with_lines("big_int_line", [*lines, '{"id": "x", "repeat": ' + BIG_INT + "}"])
    yield with_lines("not_an_object", [*lines, "[1, 2]"])
    yield with_lines("unknown_field", [*lines, record(surprise=1)])
    yield with_lines("surrogate_and_nul", [*lines[1:], record(raw="\ud83d\x00")], EITHER)
    yield with_lines("empty_predictions", [], EITHER)
    d = copy("partial_last_line")
    with (d / "predictions.jsonl").open("a") as fh:
        fh.write(lines[0][:30])
    yield "partial_last_line", d, EITHER
    d = copy("not_utf8_line")
    with (d / "predictions.jsonl").open("ab") as fh:
        fh.write(b"\xff\xfe\n")
    yield "not_utf8_line", d, ERROR
    d = copy("predictions_is_directory")
    (d / "predictions.jsonl").unlink()
    (d / "predictions.jsonl").mkdir()
    yield "predictions_is_directory", d, ERROR
    d = copy("predictions_symlink_loop")
    (d / "predictions.jsonl").unlink()
    os.symlink(d / "predictions.jsonl", d / "predictions.jsonl")
    yield "predictions_symlink_loop", d, ERROR
    d = copy("predictions_fifo")
    (d / "predictions.jsonl").unlink()
    os.mkfifo(d / "predictions.jsonl")
    yield "predictions_fifo", d, ERROR
    d = copy("run_json_missing")
    (d / "run.json").unlink()
    yield "run_json_missing", d, ERROR
    for name, data in (
        ("run_json_malformed", b"{not json"),
        ("run_json_list", b"[1, 2]"),
        ("run_json_deep", b"[" * 50_000 + b"]" * 50_000),
        ("run_json_big_int", b'{"limit": ' + BIG_INT.encode() + b"}"),
        ("run_json_not_utf8", b'{"model": "\xff"}'),
    ):
        d = copy(name)
        (d / "run.json").write_bytes(data)
        yield name, d, ERROR
    d = copy("run_json_directory")
    (d / "run.json").unlink()
    (d / "run.json").mkdir()
    yield "run_json_directory", d, ERROR
    d = copy("run_json_other_config")
    cfg = json.loads((d / "run.json").read_text())
    (d / "run.json").write_text(json.dumps({**cfg, "limit": 1}))
    yield "run_json_other_config", d, ERROR
    for name, data in (
        ("results_malformed", b"{not json"),
        ("results_metrics_wrong_types", b'{"metrics": [1, 2], "breakdown": "x", "counts": 5}'),
        ("results_deep", b'{"metrics": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"),
        ("results_list", b"[]"),
    ):
        d = copy(name)
        (d / "results.json").write_bytes(data)
        yield name, d, ERROR
    # figures that are not numbers are shown as they are; a "run" that is no object is ignored
    d = copy("results_metrics_strings")
    (d / "results.json").write_bytes(b'{"metrics": {"bfcl": {"simple": "high"}}, "run": 3}')
    yield "results_metrics_strings", d, EITHER
    d = copy("results_run_not_object")
    (d / "run.json").unlink()
    (d / "results.json").write_bytes(b'{"metrics": {"bfcl": {"simple": 0.5}}, "run": 3}')
    yield "results_run_not_object", d, EITHER
    d = copy("results_directory")
    (d / "results.json").unlink()
    (d / "results.json").mkdir()
    yield "results_directory", d, ERROR
    d = copy("lock_is_directory")
    (d / ".toollab.lock").mkdir()
    yield "lock_is_directory", d, ERROR


def build_corpus(root: Path) -> list[Case]:
    bfcl, _ = sample_path("bfcl")
    seal, _ = sample_path("seal-tools")
    cases: list[Case] = []
    add = cases.append
    files = {name: _write(root / "files" / f"{name}.json", data) for name, data in CONTENTS.items()}
    jsonl = {name: _write(root / "files" / f"{name}.jsonl", d) for name, d in CONTENTS.items()}
    yamls = {
        name: _write(root / "files" / f"{name}.yaml", data)
        for name, data in {**YAML_CONTENTS}.items()
    }
    special = _special_paths(root)
    outs = _out_paths(root)

    # data inspect: every hostile file in three formats, every odd path
    for name, path in files.items():
        for fmt in ("toollab", "bfcl", "deer"):
            # a file with no record at all is an empty dataset, which some formats accept
            expect = EITHER if name in ("empty", "blank") else ERROR
            add(
                Case(
                    f"data inspect {fmt} {name}", ["data", "inspect", str(path), "-f", fmt], expect
                )
            )
    for name, path in special.items():
        add(Case(f"data inspect path {name}", ["data", "inspect", str(path), "-f", "bfcl"]))
    for name in ("not_json", "deep_line", "big_int", "not_utf8", "wrong_types", "one_bad_line"):
        d = root / "seal" / name
        shutil.copytree(seal, d)
        shutil.copy(jsonl[name], d / "tool.jsonl")
        add(
            Case(
                f"data inspect seal-tools tool.jsonl {name}",
                ["data", "inspect", str(d), "-f", "seal-tools"],
            )
        )
    add(Case("data inspect unknown format", ["data", "inspect", str(bfcl), "-f", "bfc"]))
    add(Case("data inspect bad option", ["data", "inspect", str(bfcl), "-f", "bfcl", "-o", "x"]))
    add(
        Case(
            "data inspect unknown option",
            ["data", "inspect", str(bfcl), "-f", "bfcl", "-o", "zz=1"],
        )
    )
    add(Case("data inspect sample ok", ["data", "inspect", "--sample", "bfcl"], OK))

    # tools validate: JSON, JSON lines and YAML pool files
    for name, path in {**files, **yamls}.items():
        add(Case(f"tools validate {name}", ["tools", "validate", str(path)], EITHER))
    for name, path in jsonl.items():
        if name in ("deep_line", "big_int", "not_utf8", "nul_bytes", "huge_string", "one_bad_line"):
            add(Case(f"tools validate jsonl {name}", ["tools", "validate", str(path)], EITHER))
    for name, path in special.items():
        add(Case(f"tools validate path {name}", ["tools", "validate", str(path)]))
    add(
        Case(
            "tools validate bad format",
            ["tools", "validate", str(seal / "tool.jsonl"), "--format", "x"],
        )
    )

    # retrieve: pools and limits
    for name in ("yaml_bomb", "yaml_deep", "yaml_recursive", "yaml_many_aliases"):
        add(
            Case(
                f"retrieve eval --pool {name}",
                [
                    "retrieve",
                    "eval",
                    "--data",
                    str(bfcl),
                    "--format",
                    "bfcl",
                    "--pool",
                    str(yamls[name]),
                ],
            )
        )
        add(
            Case(
                f"retrieve query --pool {name}",
                ["retrieve", "query", "weather", "--pool", str(yamls[name])],
            )
        )
    for name in ("deep_list", "big_int_list", "not_utf8", "empty"):
        add(
            Case(
                f"retrieve query --pool {name}",
                ["retrieve", "query", "x", "--pool", str(files[name])],
            )
        )
    for name, path in special.items():
        add(
            Case(
                f"retrieve query --pool path {name}",
                ["retrieve", "query", "x", "--pool", str(path)],
            )
        )
    add(
        Case(
            "retrieve eval --limit -1",
            ["retrieve", "eval", "--data", str(bfcl), "--format", "bfcl", "--limit", "-1"],
        )
    )
    add(
        Case(
            "retrieve eval --k -3",
            ["retrieve", "eval", "--data", str(bfcl), "--format", "bfcl", "--k", "-3"],
            EITHER,
        )
    )
    add(
        Case(
            "retrieve eval unknown retriever",
            ["retrieve", "eval", "--data", str(bfcl), "--format", "bfcl", "--retriever", "bm26"],
        )
    )
    add(
        Case(
            "retrieve eval --limit 0",
            ["retrieve", "eval", "--data", str(bfcl), "--format", "bfcl", "--limit", "0"],
            EITHER,
        )
    )

    # eval --conversations: held-out episodes only, bounded, never beside --data
    conv = root / "conv"
    conv_base = ["eval", "--conversations", "-m", "fake:", "-e", "finance"]
    for name, extra in {
        "split train": ["--split", "train"],
        "split ../x": ["--split", "../x"],
        "episodes 0": ["--episodes", "0"],
        "episodes huge": ["--episodes", "100000000"],
        "followups -1": ["--followups", "-1"],
        "followups huge": ["--followups", "1000"],
        "env ../x": ["-e", "../x"],
        "with --data": ["--data", str(bfcl)],
        "agent single": ["--agent", "single"],
    }.items():
        out = conv / name.replace(" ", "_").replace("/", "_")
        add(Case(f"eval --conversations {name}", [*conv_base, *extra, "--out", str(out)],
                 absent=[out]))  # fmt: skip
    add(Case("eval without --data or --conversations", ["eval", "-m", "fake:", "--out",
             str(conv / "none")], absent=[conv / "none"]))  # fmt: skip

    # data generate: options and outputs
    gen = root / "gen"
    gen.mkdir()
    for split in ("tset", "", "TEST", "../../etc"):
        out = gen / f"split_{len(cases)}.jsonl"
        add(
            Case(
                f"data generate --split {split!r}",
                [
                    "data",
                    "generate",
                    "-e",
                    "weather",
                    "-n",
                    "2",
                    "--split",
                    split,
                    "--out",
                    str(out),
                ],
                absent=[out, Path(str(out) + ".stats.json")],
            )
        )
    for mix in ("a,b,c", "1,2", "-1,1,1", "0,0,0", "nan,1,1", "inf,1,1"):
        out = gen / f"mix_{len(cases)}.jsonl"
        add(
            Case(
                f"data generate --mix {mix}",
                ["data", "generate", "-e", "weather", "-n", "2", "--mix", mix, "--out", str(out)],
                absent=[out],
            )
        )
    for env in ("wether", "", ",,,"):
        out = gen / f"env_{len(cases)}.jsonl"
        add(
            Case(
                f"data generate --env {env!r}",
                ["data", "generate", "-e", env, "-n", "2", "--out", str(out)],
                EITHER,
                absent=[],
            )
        )
    add(
        Case(
            "data generate -n -1",
            ["data", "generate", "-e", "weather", "-n", "-1", "--out", str(gen / "neg.jsonl")],
            absent=[gen / "neg.jsonl"],
        )
    )
    for name, path in {**outs, "directory": special["directory"]}.items():
        add(
            Case(
                f"data generate --out {name}",
                ["data", "generate", "-e", "weather", "-n", "2", "--out", str(path)],
            )
        )

    # eval: scripted model files, options, outputs
    base_args = ["-d", str(bfcl), "-f", "bfcl", "-n", "2"]
    for name, path in files.items():
        out = root / "eval_script" / name
        expect = EITHER  # some contents are legitimate scripts (a list of strings, ...)
        add(
            Case(
                f"eval fake script {name}",
                ["eval", "-m", f"fake:{path}", *base_args, "--out", str(out)],
                expect,
            )
        )
    for name, path in special.items():
        out = root / "eval_script_path" / name
        add(
            Case(
                f"eval fake script path {name}",
                ["eval", "-m", f"fake:{path}", *base_args, "--out", str(out)],
                absent=[out],
            )
        )
    for name, path in {**outs, "directory_is_file": special["directory"].parent / "a_file"}.items():
        add(Case(f"eval --out {name}", ["eval", "-m", "fake:", *base_args, "--out", str(path)]))
    for name, path in special.items():
        if name in ("symlink_loop", "fifo", "dangling_symlink"):
            add(Case(f"eval --out {name}", ["eval", "-m", "fake:", *base_args, "--out", str(path)]))
    opts = {
        "repeats 1e30": ["--repeats", str(10**30)],
        "repeats 0": ["--repeats", "0"],
        "repeats 20000": ["--repeats", "20000"],
        "limit -1": ["-n", "-1"],
        "limit huge": ["-n", str(10**30)],
        "temperature nan": ["--temperature", "nan"],
        "temperature -1": ["--temperature", "-1"],
        "top-p 2": ["--top-p", "2"],
        "timeout 0": ["--timeout", "0"],
        "timeout inf": ["--timeout", "inf"],
        "max-tokens 0": ["--max-tokens", "0"],
        "max-tokens huge": ["--max-tokens", str(10**30)],
        "seed huge": ["--seed", str(10**30)],
        "concurrency 0": ["--concurrency", "0"],
        "unknown agent": ["--agent", "sngle"],
        "unknown template": ["--template", "jsn"],
        "unknown metric": ["--metrics", "nope"],
        "bad option": ["-o", "nokey"],
        "unknown provider": ["-m", "nosuch:model"],
        "unknown format": ["-f", "bfc"],
        "missing data": ["-d", str(special["missing"])],
        "data is a loop": ["-d", str(special["symlink_loop"])],
        "data is a fifo": ["-d", str(special["fifo"])],
        "judge unknown": ["--judge", "nosuch:judge"],
        "judge cache dir": ["--judge", "fake:", "--judge-cache", str(special["directory"])],
    }
    for name, extra in opts.items():
        out = root / "eval_opts" / name.replace(" ", "_")
        args = ["eval", "-m", "fake:", *base_args, "--out", str(out), *extra]
        legit = name in ("timeout inf", "seed huge", "limit huge", "max-tokens huge")
        # a judge that cannot be loaded fails after the predictions are made: they are kept
        keeps = legit or name == "judge unknown"
        add(Case(f"eval {name}", args, EITHER if legit else ERROR, absent=[] if keeps else [out]))

    # run-directory tampering: resume (eval), score and report each meet every damaged copy
    base = _run_dir(root, bfcl)
    for name, d, expect in _tamperings(base, root):
        results_only = name.startswith("results_") and name != "results_run_not_object"
        # score reads neither results.json nor the lock: those tamperings are no matter to it
        score_expect = OK if results_only or name == "lock_is_directory" else expect
        add(Case(f"score tampered {name}", ["score", str(d / "predictions.jsonl")], score_expect))
        if not results_only:
            resume = ["eval", "-m", "fake:", *base_args, "--out", str(d)]
            add(Case(f"eval resume tampered {name}", resume, expect))
        # report reads results.json (and run.json): other damage is no matter to it
        report_expect = expect if name.startswith("results_") else EITHER
        report = ["report", str(d), "--out", str(root / "reports" / f"{name}.html")]
        add(Case(f"report tampered {name}", report, report_expect))
    for name, path in files.items():
        add(
            Case(
                f"score predictions {name}",
                ["score", str(path), "--data", str(bfcl), "--format", "bfcl"],
            )
        )
    for name, path in special.items():
        add(
            Case(
                f"score path {name}", ["score", str(path), "--data", str(bfcl), "--format", "bfcl"]
            )
        )
        add(
            Case(
                f"report path {name}",
                ["report", str(path), "--out", str(root / "reports" / f"p_{name}.html")],
            )
        )
    for name, path in outs.items():
        add(
            Case(
                f"score --out {name}",
                ["score", str(base / "predictions.jsonl"), "--out", str(path)],
            )
        )
        add(Case(f"report --out {name}", ["report", str(base), "--out", str(path)]))
    add(
        Case(
            "score --out directory",
            ["score", str(base / "predictions.jsonl"), "--out", str(special["directory"])],
        )
    )
    add(Case("report ok", ["report", str(base), "--out", str(root / "reports" / "ok.html")], OK))
    add(Case("score ok", ["score", str(base / "predictions.jsonl")], OK))

    # chat: scripted model files and tool files
    for name in (
        "not_json",
        "deep_list",
        "big_int_list",
        "not_utf8",
        "lone_surrogate",
        "nul_bytes",
    ):
        add(
            Case(
                f"chat fake script {name}",
                ["chat", "-m", f"fake:{files[name]}"],
                EITHER,
                input="hi\n",
            )
        )
    for name in ("yaml_bomb", "yaml_deep", "yaml_big_int"):
        add(
            Case(
                f"chat --tools {name}",
                ["chat", "-m", "fake:", "--tools", str(yamls[name])],
                input="hi\n",
            )
        )
    for name, path in special.items():
        add(
            Case(
                f"chat --tools path {name}",
                ["chat", "-m", "fake:", "--tools", str(path)],
                input="hi\n",
            )
        )

    # bench: outputs and options
    for name, path in outs.items():
        add(
            Case(
                f"bench --out {name}",
                ["bench", "-m", "fake:", "-e", "weather", "-n", "1", "--out", str(path)],
            )
        )
    add(
        Case(
            "bench unknown env",
            ["bench", "-m", "fake:", "-e", "wether", "-n", "1", "--out", str(root / "bench_env")],
            absent=[root / "bench_env"],
        )
    )
    add(
        Case(
            "bench -n 0",
            ["bench", "-m", "fake:", "-e", "weather", "-n", "0", "--out", str(root / "bench_n0")],
        )
    )
    return cases


# -- running ---------------------------------------------------------------------------------------


@dataclass
class Outcome:
    case: Case
    code: int | None
    output: str
    exception: BaseException | None
    seconds: float

    def problems(self) -> list[str]:
        out: list[str] = []
        exc = self.exception
        if exc is not None and not isinstance(exc, SystemExit):
            out.append(f"uncaught {type(exc).__name__}: {str(exc)[:200]}")
        if "Traceback (most recent call last)" in self.output:
            out.append("a traceback was printed")
        expect = self.case.expect
        if expect == ERROR and self.code != 2:
            out.append(f"exit {self.code}, expected 2")
        if expect == OK and self.code != 0:
            out.append(f"exit {self.code}, expected 0")
        if expect == EITHER and self.code not in (0, 2):
            out.append(f"exit {self.code}, expected 0 or 2")
        if self.code == 2 and not (
            "error" in self.output.lower() or "invalid" in self.output.lower()
        ):
            out.append("exit 2 without an error message")
        if self.code != 0:
            out.extend(f"{p} was left behind" for p in self.case.absent if p.exists())
        return out


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Hang(f"no answer within {CASE_LIMIT_S} s")


def run_case(case: Case) -> Outcome:
    runner = CliRunner()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_LIMIT_S)
    t0 = time.perf_counter()
    try:
        r = runner.invoke(app, case.args, input=case.input)
    except _Hang as exc:
        return Outcome(case, None, "", exc, time.perf_counter() - t0)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return Outcome(case, r.exit_code, r.output, r.exception, time.perf_counter() - t0)


def run_corpus(root: Path, progress: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    outcomes = []
    for case in build_corpus(root):
        outcome = run_case(case)
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome)
    leftovers = [p for p in root.rglob("*.tmp")]
    if leftovers:
        outcomes.append(
            Outcome(Case("temporary files left", []), 1, f"error: {leftovers}", None, 0.0)
        )
    return outcomes


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    verbs = Counter(
        " ".join(o.case.args[:2])
        if o.case.args[:1] in (["data"], ["tools"], ["retrieve"])
        else (o.case.args[:1] or ["-"])[0]
        for o in outcomes
    )
    return {
        "cases": len(outcomes),
        "clear_errors": sum(1 for o in outcomes if o.code == 2 and not o.problems()),
        "successes": sum(1 for o in outcomes if o.code == 0 and not o.problems()),
        "tracebacks": sum(
            1 for o in outcomes if any("uncaught" in p or "traceback" in p for p in o.problems())
        ),
        "hangs": sum(1 for o in outcomes if isinstance(o.exception, _Hang)),
        "half_written": sum(1 for o in outcomes if any("left behind" in p for p in o.problems())),
        "failing": sum(1 for o in outcomes if o.problems()),
        "by_verb": dict(sorted(verbs.items())),
        "slowest_s": round(max((o.seconds for o in outcomes), default=0.0), 2),
        "total_s": round(sum(o.seconds for o in outcomes), 1),
    }


@pytest.mark.timeout(600, method="thread")
def test_hostile_input_corpus(tmp_path: Path) -> None:
    outcomes = run_corpus(tmp_path)
    assert len(outcomes) >= 200
    bad = [
        f"{o.case.name}: {'; '.join(o.problems())}\n    {o.output.strip()[-300:]}"
        for o in outcomes
        if o.problems()
    ]
    assert not bad, f"{len(bad)} of {len(outcomes)} cases failed:\n" + "\n".join(bad)


if __name__ == "__main__":  # the figures for docs/input-limits.md
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:

        def show(o: Outcome) -> None:
            if o.problems():
                print(
                    f"FAIL {o.case.name}: {'; '.join(o.problems())} :: {o.output.strip()[-400:]}",
                    flush=True,
                )

        results = run_corpus(Path(tmp), show)
        print(json.dumps(summary(results), indent=2))
        sys.exit(1 if any(o.problems() for o in results) else 0)
