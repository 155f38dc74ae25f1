"""The built-in agents through the runner: single-turn with execution, ReAct, DEER."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toollab.agents.deer import stop_marker
from toollab.data.base import Dataset
from toollab.envs.base import get_env
from toollab.eval.runner import EvalConfig, run_eval
from toollab.eval.store import PREDICTIONS
from toollab.models.base import ModelOutput
from toollab.models.fake import FakeModel
from toollab.schema import GoldCall, Instance


def _lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / PREDICTIONS).read_text().splitlines()]


@pytest.fixture()
def home_data(tmp_path: Path) -> Path:
    """Two Home Search tasks in toollab's own format, executed in the built-in environment."""
    env = get_env("home_search")
    tasks: list[tuple[str, str, list[tuple[str, dict[str, Any]]]]] = [
        ("home-1", "Find a house to buy in Cape Coral.", [
            ("set_location", {"location": "Cape Coral"}),
            ("set_buy_or_rent", {"buy_or_rent": "buy"}),
            ("select_home_type", {"home_types": ["house"]}),
            ("search", {}),
        ]),
        ("home-2", "Rent something in Austin.", [
            ("set_location", {"location": "Austin"}),
            ("set_buy_or_rent", {"buy_or_rent": "rent"}),
            ("search", {}),
        ]),
    ]  # fmt: skip
    instances = [
        Instance(
            id=tid,
            query=query,
            tools=env.tools,
            gold=[GoldCall(name=n, arguments=a) for n, a in calls],
            source="env:home_search",
        )
        for tid, query, calls in tasks
    ]
    path = tmp_path / "home.jsonl"
    Dataset(name="home", format="toollab", instances=instances).write_jsonl(path)
    return path


def _config(data: Path, **kw: Any) -> EvalConfig:
    return EvalConfig(model="oracle", data=str(data), format="toollab", **kw)


def _judged(run: Path) -> dict[str, dict[str, Any]]:
    """The ``environment`` scorer's row of every sample (the verdict is the scorer's)."""
    rows: dict[str, dict[str, Any]] = json.loads((run / "results.json").read_text())["per_sample"][
        "environment"
    ]
    return rows


def test_single_agent_executes_the_program(home_data: Path, tmp_path: Path) -> None:
    out = run_eval(_config(home_data, template="json"), tmp_path / "run")
    for rec in _lines(tmp_path / "run"):
        ex = rec["execution"]
        assert ex["crashed"] is False and ex["state"]["min_price"] == 0  # defaults filled
        # the agent records what ran; judging it is the scorer's
        assert ex["success"] is None and ex["labels_states"] is None and len(ex["actions"]) >= 3
    rows = _judged(tmp_path / "run")
    assert all(r["success"] == 1.0 and r["dict_f1"] == 1.0 for r in rows.values())
    assert out.results.counts.errors == 0


def test_react_agent_runs_step_by_step_in_the_environment(home_data: Path, tmp_path: Path) -> None:
    run_eval(_config(home_data, template="react", agent="react"), tmp_path / "run")
    recs = {r["id"]: r for r in _lines(tmp_path / "run")}
    one = recs["home-1"]
    assert len(one["steps"]) == 5  # four calls, then finish
    assert [s["parsed"]["calls"][0]["name"] for s in one["steps"][:4]] == [
        "set_location", "set_buy_or_rent", "select_home_type", "search",
    ]  # fmt: skip
    assert one["steps"][4]["parsed"]["details"]["finish"] is True
    assert one["steps"][0]["observation"] == "ok"
    assert "results" in one["steps"][3]["observation"]
    ex = one["execution"]
    assert ex["ended_by"] == "finish" and ex["turns"] == 5 and ex["state"]["location"]
    assert [c["name"] for c in one["parsed"]["calls"]] == [
        "set_location", "set_buy_or_rent", "select_home_type", "search",
    ]  # fmt: skip
    rows = _judged(tmp_path / "run")
    assert rows["home-1"]["success"] == 1.0 and rows["home-2"]["success"] == 1.0


def test_react_agent_feeds_errors_back_and_stops_at_max_turns(
    home_data: Path, tmp_path: Path
) -> None:
    model = FakeModel(
        outputs=[
            "I think I should search.",  # no Action: a format error
            'Thought: go\nAction: set_buy_or_rent\nAction Input: {"buy_or_rent": "buy"}',  # order
            "Thought: go\nAction: fly_away\nAction Input: {}",  # not a tool
        ],
        repeat=True,
        max_concurrency=1,
    )
    run_eval(
        _config(home_data, template="react", agent="react", max_turns=3, limit=1),
        tmp_path / "run",
        model=model,
    )
    (rec,) = _lines(tmp_path / "run")
    steps = rec["steps"]
    assert len(steps) == 3 and rec["execution"]["ended_by"] == "max_turns"
    assert steps[0]["error"] and "no action found" in steps[0]["observation"]
    assert "must directly follow" in steps[1]["observation"]["error"]
    assert "fly_away" in steps[2]["observation"]["error"]
    assert _judged(tmp_path / "run")[rec["id"]]["success"] == 0.0
    # the observations went back to the model
    last_prompt = model.requests[-1].messages
    assert sum(1 for m in last_prompt if "Observation:" in str(m.get("content"))) == 2


def test_deer_agent_two_rounds_with_the_oracle(shared_data: Path, tmp_path: Path) -> None:
    out = run_eval(
        EvalConfig(
            model="oracle",
            data=str(shared_data / "deer"),
            format="deer",
            data_options={"splits": "test"},
        ),
        tmp_path / "run",
    )
    assert out.spec.agent == "deer" and out.spec.max_tokens == 128
    recs = _lines(tmp_path / "run")
    for rec in recs:
        assert len(rec["steps"]) == 2 and rec["metadata"]["rounds"] == 2
        first, second = rec["steps"]
        assert first["text"].endswith("#SearchAPI#")
        assert second["observation"].startswith(" The API Pool including:")
        assert rec["raw"] == first["text"] + second["text"]
        assert second["text"].rstrip().endswith(("#APIResponse#", "#NoCallAPI#"))
    assert any("#NoCallAPI#" in r["raw"] for r in recs) and any(
        "#CallAPI#" in r["raw"] for r in recs
    )
    figures = out.results.metrics["deer"]
    assert figures["P_Call"] == 1.0 and figures["P_NoCall"] == 1.0


def test_deer_agent_with_a_model_that_answers_directly(shared_data: Path, tmp_path: Path) -> None:
    model = FakeModel(
        outputs=["#Begin# Don't need to look up the API Pool, I can answer this. #End# Paris."],
        repeat=True,
    )
    run_eval(
        EvalConfig(model="fake", data=str(shared_data / "deer"), format="deer", limit=3),
        tmp_path / "run",
        model=model,
    )
    for rec in _lines(tmp_path / "run"):
        assert len(rec["steps"]) == 1 and rec["raw"].endswith("#End#")
    assert all(r.prompt is not None and r.prompt.endswith("Assistant:") for r in model.requests)


def test_stop_marker_writes_back_only_the_reported_marker() -> None:
    """The marker the backend says it stopped at, and nothing it did not write."""
    stops = ["#SearchAPI#", "#APIResponse#", "#End#", "#NoCallAPI#", "NoCallAPI#"]
    said = ModelOutput(text="#Begin# Need to look up the API Pool. ", stop="#SearchAPI#")
    assert stop_marker(said.model_copy(update={"finish_reason": "stop"}), stops) == "#SearchAPI#"
    assert stop_marker(ModelOutput(text="", finish_reason="stop", stop="NoCallAPI#"), stops) == (
        "NoCallAPI#"
    )
    # end of sequence, the token limit, a backend that does not say: no marker is invented
    assert stop_marker(ModelOutput(text="#Begin# Need to", finish_reason="stop"), stops) == ""
    cut = ModelOutput(text="CallAPI# f(x=", finish_reason="length", stop="#APIResponse#")
    assert stop_marker(cut, stops) == ""
    # a stop string that is not one of the round's markers is not part of the chain
    assert stop_marker(ModelOutput(text="x", stop="</s>"), stops) == ""
