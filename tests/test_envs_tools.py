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
    assert sum(len(v) for v in RECORDED.values()) == 155


@pytest.mark.parametrize("name", list(RECORDED))
def test_tool_schemas_unchanged(name: str) -> None:
    tools = [t.model_dump(mode="json", exclude_none=True) for t in env_class(name).declared_tools()]
    recorded = RECORDED[name]
    assert [t["name"] for t in tools] == [t["name"] for t in recorded]
    for got, want in zip(tools, recorded, strict=True):
        assert got == want, got["name"]
        # the same JSON text: key order included
        assert json.dumps(got) == json.dumps(want), got["name"]
