"""The simulated tool server ToolEyes runs execute against, its simulated user, and a whole
``toollab eval`` over real ToolEyes queries."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toollab.agents.base import AgentOptions
from toollab.agents.react import ReactAgent
from toollab.cli.main import app
from toollab.data import load_dataset
from toollab.eval.toolserver import (
    ModelBackend,
    ModelUser,
    ResponseCache,
    SchemaBackend,
    ScriptedUser,
    ToolServer,
    ToolServers,
)
from toollab.models.fake import FakeModel
from toollab.models.registry import ModelSource
from toollab.schema import Instance, ToolCall
from toollab.templates import get_template

runner = CliRunner()


@pytest.fixture(scope="module")
def weather(shared_data: Path) -> Instance:
    """RS-46: "what will the weather be like in London for the next week?" over weatherapi
    (``forecast`` requires ``q``, ``days`` and ``aqi``)."""
    ds = load_dataset(shared_data / "tooleyes", "tooleyes", scenarios="RS")
    inst = next(i for i in ds.instances if i.id == "RS-46")
    assert "forecast" in inst.tool_names
    return inst


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def _call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


VALID = [
    _call("current_weather", q="London"),
    _call("forecast", q="London", days="7", aqi="no"),
    _call("history", q="Paris", dt="2024-01-02"),
]


def _answers(server: ToolServer, calls: list[ToolCall]) -> list[Any]:
    return [_run(server.execute(c)) for c in calls]


# -- the schema simulator -----------------------------------------------------------------------
def test_the_simulator_is_deterministic_and_a_rerun_is_answered_from_the_cache(
    weather: Instance, tmp_path: Path
) -> None:
    first = ToolServer(weather, SchemaBackend(), ResponseCache(tmp_path, "sim"))
    answers = _answers(first, VALID)
    assert first.stats.answered == 3 and first.stats.cache_hits == 0
    assert all(a["status"] == "success" and a["results"] for a in answers)
    # the arguments travel into the answer: the model can read what it asked for
    assert answers[0]["results"][0]["q"] == "London"
    # another call, another answer; the same call in memory only, the same answer
    assert answers[0] != answers[2]
    assert _answers(ToolServer(weather, SchemaBackend(), ResponseCache(None, "sim")), VALID) == (
        answers
    )
    # a new run over the same folder: every answer from the file, none made again
    lines = (tmp_path / "sim.jsonl").read_text().splitlines()
    assert len(lines) == 3
    again = ToolServer(weather, SchemaBackend(), ResponseCache(tmp_path, "sim"))
    assert _answers(again, VALID) == answers
    assert again.stats.cache_hits == 3 and again.stats.answered == 0
    assert again.stats.hit_rate == 1.0
    assert len((tmp_path / "sim.jsonl").read_text().splitlines()) == 3


def test_argument_order_does_not_change_the_key_and_a_torn_line_is_skipped(
    weather: Instance, tmp_path: Path
) -> None:
    server = ToolServer(weather, SchemaBackend(), ResponseCache(tmp_path, "sim"))
    a = _run(server.execute(_call("forecast", q="Oslo", days="3", aqi="yes")))
    b = _run(server.execute(_call("forecast", aqi="yes", days="3", q="Oslo")))
    assert a == b and server.stats.cache_hits == 1
    with (tmp_path / "sim.jsonl").open("a") as fh:
        fh.write('{"key": "abc", "observ')  # an interrupted run's last line
    cache = ResponseCache(tmp_path, "sim")
    assert len(cache) == 1 and cache.skipped == 1


def test_a_count_argument_sets_how_many_results(shared_data: Path) -> None:
    ds = load_dataset(shared_data / "tooleyes", "tooleyes", scenarios="TG")
    inst = next(i for i in ds.instances if "get_uuid" in i.tool_names)
    server = ToolServer(inst, SchemaBackend(), ResponseCache(None, "sim"))
    out = _run(server.execute(_call("get_uuid", cnt="6")))
    assert out["count"] == 6 and len(out["results"]) == 6
    assert all(len(u) == 36 and u.count("-") == 4 for u in out["results"])


# -- calls that do not fit the schema -------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "reason"),
    [
        (_call("forecast", q="London", days="7"), "missing required parameter 'aqi'"),
        (_call("current_weather", q="London", city="London"), "unknown parameter 'city'"),
        (_call("current_weather", q=51.5), "parameter 'q': expected string, got number 51.5"),
    ],
)
def test_a_call_that_does_not_fit_the_schema_gets_a_400(
    weather: Instance, tmp_path: Path, call: ToolCall, reason: str
) -> None:
    server = ToolServer(weather, SchemaBackend(), ResponseCache(tmp_path, "sim"))
    out = _run(server.execute(call))
    err = out["error"]
    assert err["code"] == 400 and err["status"] == "Bad Request"
    assert reason in err["details"] and reason in err["message"]
    assert server.stats.rejected == 1 and server.stats.answered == 0
    assert not (tmp_path / "sim.jsonl").exists()  # refusals are not answers: nothing cached


def test_an_unknown_tool_gets_a_404_naming_the_offered_ones(weather: Instance) -> None:
    server = ToolServer(weather, SchemaBackend(), ResponseCache(None, "sim"))
    out = _run(server.execute(_call("forcast", q="London")))
    assert out["error"]["code"] == 404
    assert "did you mean 'forecast'" in out["error"]["message"]
    assert "finish" not in out["error"]["message"]  # control actions are not endpoints
    assert server.stats.unknown_tool == 1


# -- a model plays the API ---------------------------------------------------------------------
def _model_server(instance: Instance, outputs: list[Any], folder: Path | None) -> ToolServer:
    model = FakeModel(outputs=outputs)
    backend = ModelBackend(ModelSource(model), max_chars=500)
    return ToolServer(instance, backend, ResponseCache(folder, backend.cache_name))


def test_a_model_played_api_is_read_and_bounded(weather: Instance, tmp_path: Path) -> None:
    huge = "x" * 1_000_000
    loop = "The weather is sunny. " * 400
    outputs = [
        '```json\n{"location": "London", "temp_c": 11.0}\n```',
        'Sure! Here is the response: {"temp_c": 9} Hope this helps.',
        "It will be sunny in London all week.",
        huge,
        loop,
        json.dumps({"items": list(range(5000))}),
        RuntimeError("server down"),
    ]
    server = _model_server(weather, outputs, tmp_path)
    calls = [_call("current_weather", q=f"city {i}") for i in range(len(outputs))]
    t0 = time.perf_counter()
    answers = _answers(server, calls)
    assert time.perf_counter() - t0 < 10  # a megabyte of text never hangs the server
    assert answers[0] == {"location": "London", "temp_c": 11.0}
    assert answers[1] == {"temp_c": 9}
    assert answers[2] == {"result": "It will be sunny in London all week."}
    for a in answers[3:6]:  # every answer bounded, whatever the model wrote
        assert len(json.dumps(a)) < 700
    assert answers[3]["result"].startswith("x")
    assert answers[4]["result"].count("sunny") == 1
    assert answers[5]["truncated"] is True
    assert answers[6]["error"]["code"] == 503 and "server down" in answers[6]["error"]["message"]
    notes = server.stats.notes
    assert notes["non_json"] == 3 and notes["looping"] >= 1 and notes["truncated"] >= 2
    assert notes["model_error"] == 1 and server.stats.failed == 1
    # what was repaired is recorded with the answer; the failed call is not cached
    recs = [json.loads(line) for line in (tmp_path / f"{server.backend.cache_name}.jsonl").open()]
    assert len(recs) == 6
    assert recs[2]["notes"] == ["non_json"]
    assert "truncated" in recs[3]["notes"]


def test_the_model_sees_the_tool_document_and_the_call(weather: Instance) -> None:
    model = FakeModel(outputs=['{"ok": true}'])
    backend = ModelBackend(ModelSource(model))
    server = ToolServer(weather, backend, ResponseCache(None, backend.cache_name))
    assert _run(server.execute(_call("forecast", q="London", days="7", aqi="no"))) == {"ok": True}
    (req,) = model.requests
    system, user = (m["content"] for m in req.messages)
    assert '"name": "forecast"' in system and "Query parameter based on" in system
    assert "Call: forecast" in user and '"days": "7"' in user
    assert req.options.max_tokens == 256


def test_a_model_server_from_a_model_string_caches_its_answers(
    weather: Instance, tmp_path: Path
) -> None:
    script = tmp_path / "api.json"
    script.write_text(json.dumps(['{"temp_c": 12}', '{"temp_c": 13}']))
    cache = tmp_path / "cache"
    servers = ToolServers(f"fake:{script}", cache_dir=cache)
    answers = _answers(servers(weather), VALID[:2])
    servers.close()
    assert answers == [{"temp_c": 12}, {"temp_c": 13}]
    again = ToolServers(f"fake:{script}", cache_dir=cache)  # the script would restart at 12
    assert _answers(again(weather), VALID[:2]) == answers
    assert again.report()["cache_hits"] == 2
    again.close()


# -- the simulated user ------------------------------------------------------------------------
def test_the_scripted_user_answers_a_bounded_number_of_times() -> None:
    user = ScriptedUser(max_turns=2)
    first = _run(user.reply("weather in London", "Which city?"))
    assert "weather in London" in first
    assert _run(user.reply("weather in London", "Which days?")) is not None
    assert _run(user.reply("weather in London", "Anything else?")) is None


def test_a_model_user_is_bounded_and_falls_back_when_it_fails() -> None:
    model = FakeModel(outputs=["London. " * 5000, "", RuntimeError("down"), "Next week."])
    user = ModelUser(ModelSource(model), max_turns=3, max_chars=100)
    replies = [_run(user.reply("weather in London", "Which city?")) for _ in range(4)]
    assert replies[0] is not None and len(replies[0]) <= 102 and replies[0].count("London") <= 2
    assert replies[1] is not None and replies[1].startswith("Please finish")  # empty: scripted
    assert replies[2] is not None and replies[2].startswith("Please finish")  # error: scripted
    assert replies[3] is None  # three replies, no more
    assert user.notes["looping"] == 1 and user.notes["empty"] == 1
    assert user.notes["model_error"] == 1


ASK = 'Thought: I need more.\nAction: ask_to_user\nAction Input: {"question": "Which city?"}'
FINISH = 'Thought: Done.\nAction: finish\nAction Input: {"answer": "Sunny."}'


def _react(instance: Instance, outputs: list[str], servers: ToolServers, turns: int = 9) -> Any:
    model = FakeModel(outputs=outputs)
    options = AgentOptions(max_turns=turns, environment=servers)
    pred = _run(ReactAgent().run(instance, model, get_template("react-5shot"), options))
    return pred, model


def test_the_react_agent_goes_on_after_the_user_answers(weather: Instance) -> None:
    pred, model = _react(weather, [ASK, FINISH], ToolServers())
    assert [s.role for s in pred.steps] == ["assistant", "user", "assistant"]
    assert pred.execution.ended_by == "finish" and pred.execution.turns == 2
    assert model.requests[1].messages[-1] == {"role": "user", "content": pred.steps[1].text}
    assert pred.raw == f"{ASK}\n\n{FINISH}"  # the model's turns only


def test_a_model_that_keeps_asking_is_stopped_by_the_user_budget(weather: Instance) -> None:
    pred, model = _react(weather, [ASK] * 9, ToolServers(user_turns=2))
    assert [s.role for s in pred.steps].count("user") == 2
    assert pred.execution.ended_by == "ask_to_user" and model.calls == 3
    # without a user, asking ends the episode at once
    pred, model = _react(weather, [ASK] * 9, ToolServers(user="none"))
    assert pred.execution.ended_by == "ask_to_user" and model.calls == 1


# -- the five-shot prompt ------------------------------------------------------------------------
def test_the_five_shot_prompt_is_upstreams(shared_data: Path, weather: Instance) -> None:
    res = shared_data / "tooleyes" / "Resources"
    tpl = get_template("react-5shot")
    system, user = tpl.messages(weather)
    expected = (
        (res / "sys_infer_five_shot.txt")
        .read_text()
        .replace("{Tool Document}", weather.metadata["tool_document"])
        .replace("{examples}", (res / "examples.txt").read_text())
    )
    assert system["content"] == expected
    assert user["content"] == f"{weather.query}\nBegin!"
    assert tpl.parse(FINISH).text == "Sunny."


# -- toollab eval end to end -----------------------------------------------------------------------
def _replay(path: Path) -> Path:
    """Two ToolEyes text-generation queries: a string, then six UUIDs after asking the user and
    one call refused for a wrong type."""
    rows = [
        ("TG-0", 'Action: generate_string\nAction Input: {"len": "8", "cnt": "1"}'),
        ("TG-0", FINISH),
        ("TG-1", ASK),
        ("TG-1", 'Action: get_uuid\nAction Input: {"cnt": 6}'),
        ("TG-1", 'Action: get_uuid\nAction Input: {"cnt": "6"}'),
        ("TG-1", FINISH),
    ]
    path.write_text(
        "".join(
            json.dumps({"id": i, "output": t if t.startswith("Thought") else f"Thought: go.\n{t}"})
            + "\n"
            for i, t in rows
        )
    )
    return path


def test_toollab_eval_executes_tooleyes_calls_against_the_simulator(
    shared_data: Path, tmp_path: Path
) -> None:
    replay = _replay(tmp_path / "outputs.jsonl")
    cache = tmp_path / "cache"
    base = ["eval", "-m", f"replay:{replay}", "-d", str(shared_data / "tooleyes")]
    base += ["-f", "tooleyes", "-n", "2", "--tool-cache", str(cache), "--json"]
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "a")])
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    figs = out["metrics"]["tooleyes"]
    assert figs["turns"] == 3.0  # 2 and 4 model turns
    assert figs["IF"] == 1.0 and figs["tool_reality"] == 1.0
    for judged in ("IU", "BP", "TS", "AO", "overall"):
        assert figs[judged] is None  # not measured without --judge, never 0
    assert any("not measured" in n for n in out["notes"]["tooleyes"])
    assert out["run"]["template"] == "react-5shot" and out["run"]["tool_server"] == "sim"
    assert out["run"]["user"] == "scripted"
    preds = [json.loads(line) for line in (tmp_path / "a" / "predictions.jsonl").open()]
    by_id = {p["id"]: p for p in preds}
    uuids = by_id["TG-1"]["execution"]["observations"]
    assert uuids[0]["error"]["code"] == 400 and len(uuids[1]["results"]) == 6
    assert [s["role"] for s in by_id["TG-1"]["steps"]].count("user") == 1
    report = json.loads((tmp_path / "a" / "tool_server.json").read_text())
    assert report["calls"] == 3 and report["rejected"] == 1 and report["cache_hits"] == 0
    # a rerun elsewhere over the same cache: every valid call from the file, the same answers
    r = runner.invoke(app, [*base, "--out", str(tmp_path / "b")])
    assert r.exit_code == 0, r.stderr
    report = json.loads((tmp_path / "b" / "tool_server.json").read_text())
    assert report["cache_hits"] == 2 and report["hit_rate"] == 1.0
    again = [json.loads(line) for line in (tmp_path / "b" / "predictions.jsonl").open()]
    assert {p["id"]: p["execution"]["observations"] for p in again} == {
        p["id"]: p["execution"]["observations"] for p in preds
    }


def test_no_tool_server_keeps_the_old_answer(shared_data: Path, tmp_path: Path) -> None:
    replay = _replay(tmp_path / "outputs.jsonl")
    args = ["eval", "-m", f"replay:{replay}", "-d", str(shared_data / "tooleyes"), "-f"]
    args += ["tooleyes", "-n", "1", "--tool-server", "none", "--out", str(tmp_path / "r")]
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.stderr
    (pred,) = [json.loads(line) for line in (tmp_path / "r" / "predictions.jsonl").open()]
    assert pred["execution"]["observations"] == [
        {"error": "no environment is available to execute this tool"}
    ]
    assert not (tmp_path / "r" / "tool_server.json").exists()


@pytest.mark.parametrize(
    ("option", "value"), [("--tool-server", "simulator"), ("--user", "nobody")]
)
def test_a_bad_server_or_user_is_refused_before_any_work(
    shared_data: Path, tmp_path: Path, option: str, value: str
) -> None:
    out = tmp_path / "r"
    args = ["eval", "-m", "fake:", "-d", str(shared_data / "tooleyes"), "-f", "tooleyes"]
    r = runner.invoke(app, [*args, "-n", "1", option, value, "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert option in r.stderr and value in r.stderr
    assert not out.exists()
