"""The making-half corpus, part two: the classes ``writes`` (outputs that are devices, FIFOs,
folders, links to the user's files), ``export`` (damaged run folders), ``api`` (the library's
``Task`` / ``evaluate``), ``plugins`` (fake distributions) and ``small``.  Run by
``tests/test_making_hostile.py``."""

from __future__ import annotations

import json
import math
import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from making_cases import REPO, SHARED, UNGUARDED, Case
from test_inputs_hostile import EITHER, ERROR, OK, _write

from toollab.data.samples import sample_path

UNG = [a for u in UNGUARDED for a in ("--unguarded", u)]
SFT_ENV = ["data", "sft", "--env", "weather", "--n", "2", "--no-tokens", *UNG]
DEER_SMALL = ["--limit", "40", "--seen", "30", "--mode", "random", "--nosearch-size", "0"]


def _targets(d: Path, victim: Path) -> Iterator[tuple[str, Path, dict[str, Any]]]:
    """Fresh ``--out`` targets that are no regular file of the run's own, with their checks."""
    d.mkdir(parents=True)
    (d / "a_directory").mkdir()
    yield "directory", d / "a_directory", {}
    for name, minor in (("dev_null", 3), ("dev_full", 7)):
        try:
            os.mknod(d / name, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        except OSError:  # no right to make device nodes here: these cases are left out
            continue
        yield name, d / name, {"devices": [d / name]}
    os.symlink(victim, d / "link_out")
    yield "symlink_to_user_file", d / "link_out", {"unchanged": [victim]}
    os.mkfifo(d / "fifo")
    yield "fifo", d / "fifo", {"fifos": [d / "fifo"]}


def write_cases(root: Path, run_dir: Path) -> Iterator[Case]:
    d = root / "writes"
    d.mkdir()
    user = root / "user"  # the user's own files, which no case may change
    user.mkdir()
    victim = _write(user / "victim.jsonl", b'{"mine": true}\n')
    preds = run_dir / "predictions.jsonl"
    deer_tools = str(SHARED / "deer" / "tool.json")
    verbs: dict[str, Callable[[Path], list[str]]] = {
        "data sft --out": lambda p: [*SFT_ENV, "--out", str(p)],
        "data generate --out": lambda p: [
            "data",
            "generate",
            "-e",
            "weather",
            "-n",
            "2",
            "--out",
            str(p),
        ],
        "score --out": lambda p: ["score", str(preds), "--out", str(p)],
        "data synth deer --out": lambda p: [
            "data",
            "synth",
            "deer",
            "--tools",
            deer_tools,
            *DEER_SMALL,
            "--out",
            str(p),
        ],
        "train sft output_dir": lambda p: [
            "train",
            "sft",
            "--output-dir",
            str(p),
            "--data",
            str(victim),
            "--max-steps",
            "1",
        ],
    }
    folders = ("data synth deer --out", "train sft output_dir")  # an empty folder is theirs
    for i, (verb, args) in enumerate(verbs.items()):
        for name, path, checks in _targets(d / f"t{i}", victim):
            expect = EITHER if name == "directory" and verb in folders else ERROR
            yield Case("writes", f"{verb} {name}", args(path), expect, **checks)
    # the card beside the examples must not replace the user's own README.md
    users_dir = user / "project"
    readme = _write(users_dir / "README.md", b"# my project\n")
    out = users_dir / "train.jsonl"
    yield Case(
        "writes",
        "data sft --out beside the user's README.md",
        [*SFT_ENV, "--out", str(out)],
        EITHER,
        unchanged=[readme],
    )
    # a resumed run whose predictions.jsonl is a link to a file outside the run
    resumed = d / "resumed"
    shutil.copytree(run_dir, resumed)
    (resumed / ".toollab.lock").unlink(missing_ok=True)
    outside = _write(user / "outside.jsonl", (resumed / "predictions.jsonl").read_bytes())
    (resumed / "predictions.jsonl").unlink()
    os.symlink(outside, resumed / "predictions.jsonl")
    bfcl = str(sample_path("bfcl")[0])
    yield Case(
        "writes",
        "eval resume predictions.jsonl links outside",
        ["eval", "-m", "fake:", "-d", bfcl, "-f", "bfcl", "-n", "3", "--out", str(resumed)],
        ERROR,
        unchanged=[outside],
    )
    yield Case(
        "writes",
        "score --out a symlink loop",
        ["score", str(preds), "--out", str(_loop(d / "loop"))],
    )
    big = d / "gen_big.jsonl"
    yield Case(
        "writes",
        "data generate -n 100000000",
        ["data", "generate", "-e", "weather", "-n", "100000000", "--out", str(big)],
        ERROR,
        absent=[big, Path(f"{big}.stats.json")],
        limit=20,
    )
    empty = d / "gen_env_empty.jsonl"
    yield Case(
        "writes",
        "data generate --env ''",
        ["data", "generate", "-e", "", "-n", "1", "--out", str(empty)],
        ERROR,
        absent=[empty],
    )
    judged = d / "judge_nope"
    yield Case(
        "writes",
        "eval --judge nope: (refused before work)",
        [
            "eval",
            "-m",
            "fake:",
            "-d",
            bfcl,
            "-f",
            "bfcl",
            "-n",
            "2",
            "--judge",
            "nope:",
            "--out",
            str(judged),
        ],
        absent=[judged],
    )
    yield Case("writes", "score --judge nope:", ["score", str(preds), "--judge", "nope:"])


def _loop(path: Path) -> Path:
    os.symlink(path, path)
    return path


EXPORT_DAMAGE: dict[str, bytes | None] = {
    "truncated": None,  # the first half of the real file
    "empty": b"",
    "not_json": b"this is not json",
    "not_utf8": b'{"r": "\xff\xfe"}',
    "list": b"[1, 2]",
    "wrong_types": b'{"r": "x", "lora_alpha": [], "target_modules": 5, "base_model_name_or_path": 7}',
    "deep": b"[" * 50_000 + b"]" * 50_000,
    "missing": b"",
}


def export_cases(root: Path, run: Path) -> Iterator[Case]:
    d = root / "export"
    d.mkdir()
    targets = {
        "adapter_config.json": "adapter/adapter_config.json",
        "adapter_model.safetensors": "adapter/adapter_model.safetensors",
        "run.json": "run.json",
        "model/config.json": "model/config.json",
    }
    i = 0
    for label, rel in targets.items():
        for dmg, data in EXPORT_DAMAGE.items():
            if rel.endswith(".safetensors") and dmg in ("list", "wrong_types", "deep"):
                data = b"\x08\x00\x00\x00\x00\x00\x00\x00" + (data or b"")
            i += 1
            copy = d / f"run{i}"
            shutil.copytree(run, copy, ignore=shutil.ignore_patterns("checkpoint-*"))
            what = "adapter"
            if rel.startswith("model/"):
                # a full model run: model/ instead of adapter/
                shutil.rmtree(copy / "adapter")
                (copy / "model").mkdir()
                _write(copy / "model" / "config.json", b"{}")
                what = "f16"
            target = copy / rel
            if dmg == "missing":
                target.unlink()
            elif data is None:
                whole = target.read_bytes()
                target.write_bytes(whole[: len(whole) // 2])
            else:
                target.write_bytes(data)
            out = copy / "gguf"
            yield Case(
                "export",
                f"train export {label} {dmg}",
                ["train", "export", str(copy), "--what", what, "--out", str(out)],
                ERROR,
                absent=[out / "adapter.gguf", out / "model-f16.gguf"],
                limit=30,
            )
    ok = d / "run_ok"
    shutil.copytree(run, ok, ignore=shutil.ignore_patterns("checkpoint-*"))
    yield Case(
        "export", "train export ok", ["train", "export", str(ok), "--what", "adapter"], OK, limit=30
    )
    yield Case("export", "train export run is a file", ["train", "export", str(ok / "run.json")])
    yield Case("export", "train export --what bogus", ["train", "export", str(ok), "--what", "x"])
    yield Case(
        "export",
        "train export --base missing",
        [
            "train",
            "export",
            str(ok),
            "--what",
            "adapter",
            "--base",
            str(d / "missing.gguf"),
            "--out",
            str(d / "o1"),
        ],
        absent=[d / "o1" / "adapter.gguf"],
    )
    yield Case(
        "export",
        "train export --base not a gguf",
        [
            "train",
            "export",
            str(ok),
            "--what",
            "adapter",
            "--base",
            str(ok / "run.json"),
            "--out",
            str(d / "o2"),
        ],
        absent=[d / "o2" / "adapter.gguf"],
    )


def api_cases(root: Path) -> Iterator[Case]:
    from toollab import Task, evaluate

    bfcl, _ = sample_path("bfcl")
    d = root / "api"
    d.mkdir()
    i = 0

    def case(
        name: str,
        names: tuple[str, ...],
        fn: Callable[[Path], object],
        expect: str = ERROR,
        clean: bool = False,
    ) -> Case:
        nonlocal i
        i += 1
        box = d / f"c{i}"
        logs = box / "logs"
        logs.mkdir(parents=True)
        return Case(
            "api",
            name,
            kind="api",
            call=lambda: fn(logs),
            expect=expect,
            names=names,
            sandbox=box,
            clean=[logs] if clean else [],
        )

    def task(**kw: Any) -> Any:
        return Task(**{"dataset": str(bfcl), "format": "bfcl", "limit": 1, **kw})

    def run_task(**kw: Any) -> Callable[[Path], object]:
        return lambda logs: evaluate(task(**kw), "fake:", log_dir=logs)

    for arg, values in {
        "agent": [5, ["single"], "sngle"],
        "limit": ["2", -1, 2.5, True],
        "max_tokens": ["x", -1, 0],
        "max_turns": ["9", -1, 0],
        "scorers": ["bfcl", [5], 5],
        "template": [5, ["json"], "jsn"],
        "name": [5, ["a"]],
        "format": [5, "bfc"],
        "data_options": [[1], "x"],
        "environment": [5, "wether"],
        "run_dir": [5, ["x"]],
        "dataset": [5, [1, 2], {"a": 1}],
    }.items():
        for value in values:
            yield case(f"Task({arg}={value!r})", (arg,), run_task(**{arg: value}))
    # errors that name the value at fault rather than the argument
    yield case("Task(name='')", ("name",), run_task(name=""), EITHER)
    yield case(
        "Task(data_options={'nokey': 1})",
        ("data_options", "nokey"),
        run_task(data_options={"nokey": 1}),
    )
    yield case(
        "Task(dataset=missing path)",
        ("dataset", "missing.json"),
        run_task(dataset=str(d / "missing.json")),
    )
    # a name that climbs out of log_dir creates nothing outside it
    yield case("Task(name='../../x')", ("name",), run_task(name="../../x"), EITHER)
    yield case("Task(name='/abs')", ("name",), run_task(name=str(d / "abs")), EITHER)
    yield case(
        "Task(dataset=[])",
        ("dataset",),
        lambda logs: evaluate(Task(dataset=[]), "fake:", log_dir=logs),
        EITHER,
        clean=True,
    )
    for arg, value in {
        "repeats": [0, -1, "2", 10**30],
        "seed": ["x", 2.5],
        "temperature": [math.nan, "hot", -1],
        "top_p": [2, math.nan],
        "timeout": [-1, math.nan, "x"],
        "concurrency": [0, -1, "4"],
        "judge": [5],
        "judge_cache": [5],
        "log_dir": [5, ["x"]],
        "constrained": ["yes"],
    }.items():
        for v in value:

            def call(logs: Path, arg: str = arg, v: object = v) -> object:
                kw: dict[str, Any] = {"log_dir": logs, arg: v}
                return evaluate(task(), "fake:", **kw)

            yield case(f"evaluate({arg}={v!r})", (arg,), call)
    yield case(
        "evaluate(judge='nope:')",
        ("judge", "nope"),
        lambda logs: evaluate(task(), "fake:", log_dir=logs, judge="nope:"),
    )
    yield case("evaluate(task, 123)", ("model",), lambda logs: evaluate(task(), 123, log_dir=logs))  # type: ignore[arg-type]
    yield case(
        "evaluate(task, 'nope:')", ("nope",), lambda logs: evaluate(task(), "nope:", log_dir=logs)
    )
    yield case("evaluate(5, model)", ("task",), lambda logs: evaluate(5, "fake:", log_dir=logs))  # type: ignore[arg-type]
    yield case(
        "evaluate([5], model)",
        ("task",),
        lambda logs: evaluate([5], "fake:", log_dir=logs),  # type: ignore[list-item]
    )
    yield case(
        "evaluate([], model)",
        ("task",),
        lambda logs: evaluate([], "fake:", log_dir=logs),
        EITHER,
        clean=True,
    )
    yield case("evaluate ok", (), lambda logs: evaluate(task(), "fake:", log_dir=logs), OK)


PLUGINS = {
    "takes_builtin": (
        "from toollab.parsing.base import register_parser\n\n"
        "@register_parser('python')\nclass Mine:\n    name = 'python'\n"
        "    def parse(self, text):\n        raise RuntimeError('the plugin parser ran')\n",
        "parser:mine",
    ),
    "exits_at_import": ("import sys\nsys.exit(0)\n", "parser:exiter"),
    "raises_at_import": ("raise RuntimeError('plugin import failed')\n", "parser:raiser"),
    "keyboard_interrupt": ("raise KeyboardInterrupt\n", "parser:interrupter"),
}


def _fake_dist(root: Path, name: str, code: str, entry: str, eps: str | None = None) -> Path:
    site = root / "plugins" / name
    pkg = f"tl_{name}"
    _write(site / pkg / "__init__.py", code.encode())
    info = site / f"{pkg}-0.1.dist-info"
    _write(info / "METADATA", f"Metadata-Version: 2.1\nName: {pkg}\nVersion: 0.1\n".encode())
    text = eps if eps is not None else f"[toollab.plugins]\n{entry} = {pkg}:Mine\n"
    _write(info / "entry_points.txt", text.encode())
    return site


def plugin_cases(root: Path) -> Iterator[Case]:
    sites = {name: _fake_dist(root, name, code, ep) for name, (code, ep) in PLUGINS.items()}
    sites["malformed_entry_points"] = _fake_dist(
        root, "malformed", "", "", eps="[toollab.plugins\nthis is = = not\n\x00[[\n"
    )
    sites["unknown_kind"] = _fake_dist(
        root, "unknownkind", "class Mine: pass\n", "", eps="[toollab.plugins]\nnokind = x:y\n"
    )
    # the built-in python parser still parses, once every parser plugin is loaded
    check = (
        "from toollab.parsing.base import PARSERS, parse\n"
        "PARSERS.names()\n"  # every plugin of the kind loaded, as `toollab plugins` does
        "r = parse('[f(a=1)]', 'python')\n"
        "builtin = r.ok and PARSERS.origin('python') == 'builtin'\n"
        "print('BUILTIN-OK' if builtin else 'BUILTIN-REPLACED', r.calls)\n"
    )
    for name, site in sites.items():
        env = {"PYTHONPATH": f"{site}{os.pathsep}{REPO / 'src'}"}
        pkg = "tl_" + (
            "malformed" if name.startswith("malformed") else name.replace("_kind", "kind")
        )
        yield Case(
            "plugins",
            f"plugins listing with {name}",
            [sys.executable, "-m", "toollab.cli.main", "plugins"],
            ERROR,
            kind="proc",
            env=env,
            names=(pkg,),
            limit=60,
        )
        yield Case(
            "plugins",
            f"built-in parser with {name}",
            [sys.executable, "-c", check],
            OK,
            kind="proc",
            env=env,
            names=("BUILTIN-OK",),
            limit=60,
        )
        yield Case(
            "plugins",
            f"data inspect starts with {name}",
            [sys.executable, "-m", "toollab.cli.main", "data", "inspect", "--sample", "bfcl"],
            OK,
            kind="proc",
            env=env,
            limit=60,
        )


def small_cases(root: Path) -> Iterator[Case]:
    from toollab.parsing.base import get_parser
    from toollab.parsing.python_calls import bfcl_decode_ast

    d = root / "small"
    d.mkdir()
    for name, schema in {
        "ref_root": {"$ref": "#"},
        "ref_loop": {"$ref": "#/properties/a"},
        "ref_defs_loop": {"$ref": "#/$defs/a"},
    }.items():
        tool = {
            "name": "f",
            "description": "d",
            "parameters": {
                "type": "object",
                "properties": {"a": schema},
                "required": ["a"],
                "$defs": {"a": {"$ref": "#/$defs/a"}},
            },
        }
        path = _write(d / f"{name}.json", json.dumps([tool]).encode())
        yield Case("small", f"tools validate {name}", ["tools", "validate", str(path)], EITHER)
    exprs = [
        "[f(a=1/0)]",
        "[f(a=1//0)]",
        "[f(a=1%0)]",
        "[f(a=9**9**9)]",
        "[f(a=2**100000000)]",
        "[f(a=10**10**10)]",
        "[f(a=-(1))]",
        "[f(a='x'*10**10)]",
        "[f(a=[1]*10**10)]",
        "[f(a=1e308*10)]",
        "[f(a=(1<<100000000))]",
        "[f(a=" + "-" * 100_000 + "1)]",
        "[f(a=" + "(" * 10_000 + "1" + ")" * 10_000 + ")]",
    ]
    for expr in exprs:
        label = expr if len(expr) < 40 else expr[:30] + "..."
        yield Case(
            "small",
            f"python parser {label}",
            kind="api",
            expect=EITHER,
            call=lambda e=expr: get_parser("python").parse(e),
        )
        yield Case(
            "small",
            f"bfcl_decode_ast {label}",
            kind="api",
            expect=EITHER,
            call=lambda e=expr: bfcl_decode_ast(e),
        )
