"""Plugins through entry points, used from the command line.

The plugin package is built from the code blocks of docs/plugins.md (so every example there is
executed), installed with pip into a temporary folder (never into the environment running the
tests) and put on PYTHONPATH of the ``toollab`` processes.  The build needs no network:
``--no-build-isolation`` uses the setuptools of the test environment (the dev extra has it).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toollab.agents.base import AgentOptions, get_agent
from toollab.models import FakeModel
from toollab.schema import Instance, Tool
from toollab.templates import get_template

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "plugins.md"
BLOCK = re.compile(r"^```(\w+)(?: file=(\S+))?\n(.*?)^```", re.M | re.S)
ORIGIN = "toollab-myplugin 0.1.0"

#: a second distribution with what goes wrong: a plugin that does not import, a kind that does
#: not exist, a built-in name taken, and a provider in the older ``toollab.models`` group
OTHER = {
    "pyproject.toml": """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "toollab-otherplugin"
version = "0.2.0"

[project.entry-points."toollab.plugins"]
"agent:broken" = "otherplugin.missing:Agent"
"agnet:typo" = "otherplugin:legacy"
"template:json" = "otherplugin:legacy"

[project.entry-points."toollab.models"]
"legacyecho" = "otherplugin:legacy"

[tool.setuptools]
packages = ["otherplugin"]
""",
    "otherplugin/__init__.py": """\
from toollab.models import FakeModel


def legacy(spec, **options):
    return FakeModel(outputs=[spec.model or "legacy"])
""",
}


def doc_blocks() -> list[tuple[str, str | None, str]]:
    return [(lang, name or None, body) for lang, name, body in BLOCK.findall(DOC.read_text())]


def install(files: dict[str, str], root: Path) -> Path:
    src, site = root / "src", root / "site"
    for rel, text in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation"]
    cmd += ["--no-index", "--disable-pip-version-check", "-q", "--target", str(site), str(src)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return site


@pytest.fixture(scope="module")
def myplugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = {name: body for _lang, name, body in doc_blocks() if name}
    return install(files, tmp_path_factory.mktemp("myplugin"))


@pytest.fixture(scope="module")
def otherplugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(OTHER, tmp_path_factory.mktemp("otherplugin"))


def toollab(*args: str, sites: tuple[Path, ...]) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([*map(str, sites), str(REPO / "src")])
    return subprocess.run(
        [sys.executable, "-m", "toollab.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": path},
        cwd=REPO,
        # a shell starts background jobs with SIGINT ignored, and a child inherits that: give
        # the command the disposition a terminal gives it, so a SIGINT test means the same
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_the_docs_package_declares_every_kind() -> None:
    blocks = doc_blocks()
    files = {name for _lang, name, _body in blocks if name}
    assert {"pyproject.toml", "myplugin/models.py", "myplugin/agents.py"} <= files
    pyproject = next(body for _lang, name, body in blocks if name == "pyproject.toml")
    kinds = set(re.findall(r'^"(\w+):', pyproject, re.M))
    assert kinds == {"model", "agent", "scorer", "template", "environment", "format"}


def test_inline_examples_run() -> None:
    """Each inline example runs and checks its own result (an ``assert`` in the example); the
    provider the first one registers is then a model like any other."""
    from toollab.models.registry import load_model

    inline = [body for lang, name, body in doc_blocks() if lang == "python" and name is None]
    assert inline, "docs/plugins.md shows no inline example"
    for body in inline:
        assert "assert " in body, f"an inline example checks nothing:\n{body}"
        exec(compile(body, str(DOC), "exec"), {})
    assert load_model("canned:again").generate([{"role": "user", "content": "?"}]).text == "again"


def test_plugins_lists_every_component_with_its_distribution(myplugin: Path) -> None:
    r = toollab("plugins", "--json", sites=(myplugin,))
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["problems"] == []
    found = {
        (kind, row["name"]): row["origin"] for kind, rows in data["kinds"].items() for row in rows
    }
    for key in [
        ("model", "echo"),
        ("agent", "retry"),
        ("scorer", "tool_names"),
        ("template", "terse"),
        ("environment", "counter"),
        ("format", "queries"),
    ]:
        assert found.get(key) == ORIGIN, key
    assert found[("agent", "react")] == "builtin"


def _eval(site: Path, out: Path, model: str, data: Path) -> dict[str, object]:
    r = toollab(
        "eval",
        *("--model", model, "--agent", "retry", "--template", "terse"),
        *("--metrics", "tool_names", "--data", str(data), "--format", "bfcl"),
        *("--limit", "6", "--no-constrained", "--out", str(out)),
        sites=(site,),
    )
    assert r.returncode == 0, r.stderr
    results: dict[str, object] = json.loads((out / "results.json").read_text())
    return results


def test_plugin_agent_scorer_model_and_template_run_in_eval(
    myplugin: Path, shared_data: Path, tmp_path: Path
) -> None:
    gold = _eval(myplugin, tmp_path / "oracle", "oracle", shared_data / "bfcl")
    assert gold["scorers"] == ["tool_names"]
    assert gold["metrics"] == {"tool_names": {"name_match": 1.0}}
    run = json.loads((tmp_path / "oracle" / "run.json").read_text())
    assert (run["agent"], run["template"]) == ("retry", "terse")
    preds = [json.loads(line) for line in (tmp_path / "oracle" / "predictions.jsonl").open()]
    assert len(preds) == 6 and all(p["metadata"]["attempts"] == 1 for p in preds)
    # the plugin model answers with the question: no call, so no tool name matches
    echo = _eval(myplugin, tmp_path / "echo", "echo:", shared_data / "bfcl")
    assert echo["metrics"] == {"tool_names": {"name_match": 0.0}}
    assert json.loads((tmp_path / "echo" / "run.json").read_text())["model"] == "echo:"


def test_plugin_format_reads_a_dataset(myplugin: Path, tmp_path: Path) -> None:
    queries = tmp_path / "queries.txt"
    queries.write_text("What is the weather in Paris?\n\nBook a table for two.\n")
    r = toollab("data", "inspect", str(queries), "--format", "queries", "--json", sites=(myplugin,))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["instances"] == 2
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    r = toollab("data", "inspect", str(empty), "--format", "queries", sites=(myplugin,))
    assert r.returncode == 2 and "no queries" in r.stderr
    # with no --template, a run of the format uses the template its adapter declares
    out = tmp_path / "run"
    r = toollab(
        *("eval", "--model", "echo:", "--data", str(queries), "--format", "queries"),
        *("--metrics", "tool_names", "--no-constrained", "--out", str(out)),
        sites=(myplugin,),
    )
    assert r.returncode == 0, r.stderr
    run = json.loads((out / "run.json").read_text())
    assert (run["template"], run["agent"]) == ("terse", "single")


def test_plugin_environment_runs_calls(myplugin: Path) -> None:
    script = (
        "from toollab.envs.base import env_names, get_env\n"
        "from toollab.schema import ToolCall\n"
        "env = get_env('counter', seed=2)\n"
        "run = env.run([ToolCall(name='add', arguments={'n': 3})] * 2, seed=2)\n"
        "print(env_names()[-1], run.state['total'], run.crashed)\n"
    )
    path = os.pathsep.join([str(myplugin), str(REPO / "src")])
    r = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["counter", "8", "False"]


def test_retry_agent_asks_again_when_the_answer_cannot_be_read(
    myplugin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(myplugin))
    import myplugin.agents
    import myplugin.templates

    inst = Instance(id="a", query="add 1", tools=[Tool(name="add")], source="test")
    model = FakeModel(outputs=['{"name": "add", ', '{"name": "add", "arguments": {"n": 1}}'])
    template = myplugin.templates.TerseTemplate()
    pred = asyncio.run(get_agent("retry").run(inst, model, template, AgentOptions()))
    assert pred.metadata["attempts"] == 2
    assert pred.parsed is not None and [c.name for c in pred.parsed.calls] == ["add"]
    assert "could not read" in str(model.requests[1].messages[-1]["content"])
    assert "- add(): " in template.system_prompt(inst.tools)
    assert get_template("json").name == "json"


def test_broken_plugins_are_reported_and_named_ones_fail(
    myplugin: Path, otherplugin: Path, shared_data: Path, tmp_path: Path
) -> None:
    r = toollab("plugins", "--json", sites=(myplugin, otherplugin))
    assert r.returncode == 2, r.stderr  # problems listed: the status says so
    data = json.loads(r.stdout)
    problems = "\n".join(p["problem"] for p in data["problems"])
    assert "agent 'broken'" in problems and "ModuleNotFoundError" in problems
    assert "toollab-otherplugin 0.2.0" in problems
    assert "unknown kind 'agnet' (did you mean 'agent'?)" in problems
    assert "names the built-in template 'json'; skipped" in problems
    models = {row["name"]: row["origin"] for row in data["kinds"]["model"]}
    assert models["legacyecho"] == "toollab-otherplugin 0.2.0"  # the older group still works
    assert models["echo"] == ORIGIN  # the good plugin is unaffected
    r = toollab(
        "eval",
        *("--model", "oracle", "--agent", "broken", "--data", str(shared_data / "bfcl")),
        *("--format", "bfcl", "--limit", "1", "--out", str(tmp_path / "run")),
        sites=(myplugin, otherplugin),
    )
    assert r.returncode == 2
    assert "'agent:broken'" in r.stderr and "cannot load" in r.stderr


def test_plugin_environment_generates_data_from_the_cli(myplugin: Path, tmp_path: Path) -> None:
    out = tmp_path / "counter.jsonl"
    args = ("--split", "test", "--n", "10", "--out", str(out), "--json")
    r = toollab("data", "generate", "--env", "counter", *args, sites=(myplugin,))
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)["envs"]["counter"]
    assert stats["instances"] == 10 and stats["Call"] == 8
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {row["source"] for row in rows} == {"env:counter"}
    calls = [row for row in rows if row["decision"] == "Call"]
    # the test split holds the joint requests training never sees
    assert calls and all(len(row["gold"]) >= 2 for row in calls)
    # NoCall requests are lent by the built-in environments, offered with the counter's tools
    nocall = [row for row in rows if row["decision"] == "NoCall"]
    assert nocall and {t["name"] for t in nocall[0]["tools"]} == {"add", "subtract", "double"}
    # 'all' takes the plugin along with the built-ins
    r = toollab("data", "generate", "--n", "2", "--out", str(tmp_path / "all.jsonl"), "--json",
                sites=(myplugin,))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert list(json.loads(r.stdout)["envs"])[-1] == "counter"


def test_plugin_environment_is_benched_from_the_cli(myplugin: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    r = toollab(
        *("bench", "--envs", "counter", "--model", "oracle", "--limit", "6"),
        *("--out", str(out), "--json"),
        sites=(myplugin,),
    )
    assert r.returncode == 0, r.stderr
    env = json.loads(r.stdout)["envs"]["counter"]
    assert env["n"] == 6 and env["success"] == 1.0 and env["crash_rate"] == 0.0
    assert env["decision_acc"] == 1.0 and env["api_complexity"] is not None
    run = json.loads((out / "runs" / "counter" / "run.json").read_text())
    assert run["max_tokens"] == 64  # the environment's own decoding budget
    # re-judged from the stored records, with no model: the same figures
    r = toollab("score", str(out / "runs" / "counter"), "--json", sites=(myplugin,))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["metrics"]["environment"]["success"] == 1.0


# -- plugins that misbehave at import, and broken distribution metadata ------------------------
# These distributions are written straight into a folder on PYTHONPATH (a ``*.dist-info`` with
# METADATA and entry_points.txt, beside the plugin's module): what pip installs, minus pip.


def fake_dist(site: Path, name: str, entry_points: str | bytes, modules: dict[str, str]) -> Path:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    data = entry_points.encode() if isinstance(entry_points, str) else entry_points
    (info / "entry_points.txt").write_bytes(data)
    for module, code in modules.items():
        (site / f"{module}.py").write_text(code)
    return info


def _plugin(name: str, code: str) -> tuple[str, dict[str, str]]:
    """An agent plugin whose module runs ``code`` at import."""
    body = f"{code}\n\nclass Agent:\n    pass\n"
    return f"[toollab.plugins]\nagent:{name} = {name}:Agent\n", {name: body}


#: (distribution, the kind and built-in name its import tries to take, the code that does it)
HIJACKS = [
    ("hij_parser", "parser", "python", "from toollab.parsing.base import register_parser\n"
     "@register_parser('python')\nclass P:\n    pass"),
    ("hij_agent", "agent", "react", "from toollab.agents.base import register_agent\n"
     "@register_agent('react')\nclass A:\n    pass"),
    ("hij_agent_case", "agent", "single", "from toollab.agents.base import AGENTS\n"
     "AGENTS.register(' single ', object)"),
    ("hij_template", "template", "json", "from toollab.templates.base import register_template\n"
     "@register_template('json')\nclass T:\n    pass"),
    ("hij_model", "model", "oracle", "from toollab.models.registry import register_provider\n"
     "@register_provider('Oracle')\ndef f(spec, **options):\n    return None"),
    ("hij_scorer", "scorer", "bfcl", "from toollab.eval.metrics.registry import Scorer, scorer\n"
     "@scorer('bfcl', formats=('*',))\nclass S(Scorer):\n    pass"),
    ("hij_env", "environment", "weather", "from toollab.envs.base import Environment, register_env\n"
     "@register_env('weather')\nclass E(Environment):\n    pass"),
    ("hij_retriever", "retriever", "bm25", "from toollab.retrieval.base import register_retriever\n"
     "@register_retriever('bm25')\ndef r(**options):\n    return None"),
    ("hij_alias", "parser", "python", "from toollab.parsing.base import PARSERS\n"
     "PARSERS.register('mine', object, aliases=['python'])"),
    ("hij_format", "format", "bfcl", "from toollab.data.base import ADAPTERS\n"
     "ADAPTERS.register('BFCL', object)"),
]  # fmt: skip

#: (distribution, what its module does at import, what the problem says)
IMPORT_FAILURES = [
    ("exit_zero", "import sys\nsys.exit(0)", "SystemExit(0)"),
    ("exit_three", "import sys\nsys.exit(3)", "SystemExit(3)"),
    ("exit_text", "raise SystemExit('bye')", "SystemExit('bye')"),
    ("raises", "raise RuntimeError('plugin broke')", "RuntimeError: plugin broke"),
    ("zero_div", "x = 1 / 0", "ZeroDivisionError"),
    ("missing_dep", "import toollab_no_such_module", "ModuleNotFoundError"),
    ("syntax", "def f(:\n    pass", "SyntaxError"),
    ("recursion", "def f():\n    return f()\nf()", "RecursionError"),
    ("own_interrupt", "raise KeyboardInterrupt", "KeyboardInterrupt"),
]

#: (distribution, entry_points.txt bytes that importlib.metadata cannot read)
BAD_METADATA = [
    ("meta_no_equals", b"[toollab.plugins]\nagent:x\n"),
    ("meta_not_utf8", b"\xff\xfe[toollab.plugins]\n"),
    ("meta_binary", bytes(range(256))),
    ("meta_pydantic", b"[pydantic]\nbroken\n"),
]

#: (distribution, entry_points.txt whose toollab lines importlib silently ignores, a bad line)
UNREAD_LINES = [
    ("unread_header", b"[toollab.plugins\nagent:h = h:Agent\n", "'[toollab.plugins'"),
    ("unread_outside", b"agent:o = o:Agent\n[toollab.plugins]\n", "'agent:o = o:Agent'"),
    ("unread_many", b"[toollab.plugins\na:b = b:C\nc:d = d:E\ne:f = f:G\n", "(+1 more)"),
]


@pytest.fixture(scope="module")
def misbehaving(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("misbehaving")
    for name, _kind, _builtin, code in HIJACKS:
        fake_dist(site, name, *_plugin(name, code))
    for name, code, _problem in IMPORT_FAILURES:
        fake_dist(site, name, *_plugin(name, code))
    for name, data in BAD_METADATA:
        fake_dist(site, name, data, {})
    for name, data, _line in UNREAD_LINES:
        fake_dist(site, name, data, {})
    return site


@pytest.fixture(scope="module")
def misbehaving_listing(misbehaving: Path) -> dict[str, Any]:
    r = toollab("plugins", "--json", sites=(misbehaving,))
    assert r.returncode == 2, r.stderr  # the listing, and a status that says there are problems
    data: dict[str, Any] = json.loads(r.stdout)
    data["stderr"] = r.stderr
    return data


def _problems(listing: dict[str, Any]) -> str:
    return "\n".join(p["problem"] for p in listing["problems"])


@pytest.mark.parametrize("name,kind,builtin", [h[:3] for h in HIJACKS], ids=[h[0] for h in HIJACKS])
def test_a_plugin_cannot_take_a_built_in_name_at_import(
    misbehaving_listing: dict[str, Any], name: str, kind: str, builtin: str
) -> None:
    origins = {row["name"]: row["origin"] for row in misbehaving_listing["kinds"][kind]}
    assert origins[builtin] == "builtin"
    lines = [p for p in _problems(misbehaving_listing).splitlines() if f"of {name} 1.0" in p]
    assert len(lines) == 1, _problems(misbehaving_listing)
    assert "the name of a built-in" in lines[0] and f"'agent:{name}'" in lines[0]
    assert name not in {row["name"] for row in misbehaving_listing["kinds"]["agent"]}


@pytest.mark.parametrize(
    "name,problem", [f[::2] for f in IMPORT_FAILURES], ids=[f[0] for f in IMPORT_FAILURES]
)
def test_a_plugin_that_fails_or_exits_at_import_is_reported_and_skipped(
    misbehaving_listing: dict[str, Any], name: str, problem: str
) -> None:
    lines = [p for p in _problems(misbehaving_listing).splitlines() if f"of {name} 1.0" in p]
    assert len(lines) == 1 and "cannot load" in lines[0] and problem in lines[0], lines


@pytest.mark.parametrize("name", [b[0] for b in BAD_METADATA])
def test_a_distribution_with_unreadable_metadata_is_skipped_with_a_warning(
    misbehaving_listing: dict[str, Any], name: str
) -> None:
    assert f"{name}-1.0.dist-info has unreadable metadata" in _problems(misbehaving_listing)
    assert f"{name}-1.0.dist-info" in misbehaving_listing["stderr"]  # the warning


@pytest.mark.parametrize(
    "name,line", [u[::2] for u in UNREAD_LINES], ids=[u[0] for u in UNREAD_LINES]
)
def test_entry_point_lines_importlib_ignores_are_reported(
    misbehaving_listing: dict[str, Any], name: str, line: str
) -> None:
    problems = [p for p in _problems(misbehaving_listing).splitlines() if f"{name}-1.0" in p]
    assert len(problems) == 1 and "lines that are not read" in problems[0], problems
    assert line in problems[0]


def test_a_real_ctrl_c_while_a_plugin_loads_still_stops_toollab(tmp_path: Path) -> None:
    """The plugin's own KeyboardInterrupt is a plugin failure; a SIGINT that arrives while it
    is imported is the user's and ends the command (exit 130 by the CLI's handler)."""
    site = tmp_path / "site"
    code = "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(5)"
    fake_dist(site, "sigint_at_import", *_plugin("sigint_at_import", code))
    r = toollab("plugins", sites=(site,))
    assert r.returncode == 130, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr


def test_commands_run_beside_misbehaving_plugins(
    misbehaving: Path, shared_data: Path, tmp_path: Path
) -> None:
    # a command that needs none of them runs, says what it skipped, and exits 0
    out = tmp_path / "run"
    r = toollab(
        *("eval", "--model", "oracle", "--agent", "single", "--data", str(shared_data / "bfcl")),
        *("--format", "bfcl", "--limit", "1", "--out", str(out), "--json"),
        sites=(misbehaving,),
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["metrics"] and (out / "results.json").is_file()
    for name, _code, _problem in IMPORT_FAILURES:
        assert f"'agent:{name}'" in r.stderr, name  # each skipped plugin is named
    # the built-in parser did its work: the oracle's answer was read as a call
    preds = [json.loads(line) for line in (out / "predictions.jsonl").open()]
    assert preds[0]["parsed"]["calls"]
    # a command that names a skipped plugin fails with its reason
    r = toollab(
        *("eval", "--model", "oracle", "--agent", "exit_zero", "--data", str(shared_data / "bfcl")),
        *("--format", "bfcl", "--limit", "1", "--out", str(tmp_path / "named")),
        sites=(misbehaving,),
    )
    assert r.returncode == 2 and "SystemExit(0)" in r.stderr and "Traceback" not in r.stderr
    # `toollab plugins` prints the listing and exits 2 when any plugin cannot be used
    r = toollab("plugins", sites=(misbehaving,))
    assert r.returncode == 2 and "plugin problem" in r.stdout + r.stderr
    r = toollab("plugins", sites=())
    assert r.returncode == 0, r.stdout + r.stderr


def test_import_toollab_survives_unreadable_metadata(misbehaving: Path) -> None:
    path = os.pathsep.join([str(misbehaving), str(REPO / "src")])
    script = "import toollab.schema, toollab.cli.main; print('ok')"
    r = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=300,
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    assert "unreadable metadata" in r.stderr
