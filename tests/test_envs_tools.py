"""The environments' tools are ``@tool`` methods whose schemas equal the recorded ones.

``tests/fixtures/env_tools.json`` holds every built-in environment's tools as they were declared
by hand (JSON-schema dicts) before the environments declared them with ``@tool``; the schemas
built from the signatures and docstrings must be the same, key order included (prompts show them
as JSON text).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toollab.envs import env_class, env_names

FIXTURE = Path(__file__).parent / "fixtures" / "env_tools.json"
RECORDED: dict[str, list[dict]] = json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_every_environment_is_recorded() -> None:
    assert list(RECORDED) == env_names()
    assert sum(len(v) for v in RECORDED.values()) == 215


@pytest.mark.parametrize("name", list(RECORDED))
def test_tool_schemas_unchanged(name: str) -> None:
    tools = [t.model_dump(mode="json", exclude_none=True) for t in env_class(name).declared_tools()]
    recorded = RECORDED[name]
    assert [t["name"] for t in tools] == [t["name"] for t in recorded]
    for got, want in zip(tools, recorded, strict=True):
        assert got == want, got["name"]
        # the same JSON text: key order included
        assert json.dumps(got) == json.dumps(want), got["name"]


def _doc_example() -> str:
    """Every code block of the section, in order (the environment, then its task set)."""
    text = (Path(__file__).parents[1] / "docs" / "environments.md").read_text(encoding="utf-8")
    section = text.split("## Write your own environment", 1)[1].split("\n## ", 1)[0]
    blocks = [part.split("```", 1)[0] for part in section.split("```python\n")[1:]]
    assert len(blocks) == 2
    return "\n".join(blocks)


def test_write_your_own_environment_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """The docs' example runs as written and prints what its comments say."""
    from toollab.envs import base

    code = _doc_example()
    before = set(base.ENVIRONMENTS.registered())
    try:
        exec(compile(code, "docs/environments.md", "exec"), {"__name__": "doc_example"})
    finally:
        for name in set(base.ENVIRONMENTS.registered()) - before:
            base.ENVIRONMENTS.remove(name)
    printed = capsys.readouterr().out.splitlines()
    expected = [
        line.split("# ", 1)[1].strip()
        for line in code.splitlines()
        if line.startswith("# ") or (line.startswith("print(") and "# " in line)
    ]
    assert printed == expected
    assert "thermostat" not in env_names() and "warmth" not in env_names()


def test_environment_tools_are_a_pool_the_executor_runs() -> None:
    """An environment's pool is an ordinary ToolPool: the Executor runs its bound methods."""
    from toollab.envs import get_env
    from toollab.schema import ToolCall
    from toollab.tools import Executor

    env = get_env("home_search")
    calls = [
        ToolCall(name="set_location", arguments={"location": "Austin"}),
        ToolCall(name="set_buy_or_rent", arguments={"buy_or_rent": "rent"}),
        ToolCall(name="set_num_beds", arguments={"num_beds": -1}),
        ToolCall(name="set_num_baths", arguments={"num_baths": 1.5}),
    ]
    with Executor(env.pool, parallel=False) as ex:
        res = ex.execute(calls)
    assert [r.error_kind for r in res] == [None, None, "validation", None]
    assert env.state() == {"location": "Austin", "buy_or_rent": "rent", "num_baths": 1.5}
    crashed = env.run(calls)
    assert crashed.crashed and crashed.reason == "bad_arguments" and crashed.failed_call == 2
    assert "num_beds" in (crashed.error or "")


def test_references_resolve_through_the_shared_path() -> None:
    from toollab.envs import get_env
    from toollab.schema import Ref, ToolCall

    env = get_env("text_generation")
    ok = env.run(
        [
            ToolCall(name="make_slug", arguments={"text": "Hello World"}, outputs=["s"]),
            ToolCall(name="count_words", arguments={"text": Ref("s", field="slug")}),
        ]
    )
    assert not ok.crashed, ok.error
    missing = env.run([ToolCall(name="count_words", arguments={"text": Ref("nowhere")})])
    assert missing.crashed and missing.reason == "bad_arguments"
    assert "nowhere" in (missing.error or "")


def test_one_environment_protocol() -> None:
    """Capabilities are types: every environment executes calls; household alone scores plans."""
    from toollab.envs import CallExecutor, Environment, PlanScored, get_env
    from toollab.tools import ToolPool

    for name in env_names():
        cls = env_class(name)
        assert issubclass(cls, Environment)
        assert [t.name for t in cls.declared_tools()] == [t["name"] for t in RECORDED[name]]
    env = get_env("household")
    assert isinstance(env, CallExecutor) and isinstance(env, PlanScored)
    assert not isinstance(get_env("weather"), PlanScored)
    assert isinstance(env.pool, ToolPool) and env.pool.names == env.tool_names
    assert env.action_text(env.normalize(env_call("Find", object="Remote Control"))) == (
        "Find(object='remote_control')"
    )


def env_call(name: str, **arguments: object):  # type: ignore[no-untyped-def]
    from toollab.schema import ToolCall

    return ToolCall(name=name, arguments=arguments)
