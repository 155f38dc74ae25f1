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
import subprocess
import sys
from pathlib import Path

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
    )


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
    assert r.returncode == 0, r.stderr
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
