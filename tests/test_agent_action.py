"""The ``action`` agent: SambaNova's action generator (prompt skeleton, retrieval, stops,
train-split demonstrations, constrained and free decoding, execution through the bench)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab import Task, evaluate
from toollab.agents import AgentOptions, agent_names, get_agent
from toollab.agents.action import (
    API_HEADER,
    EXAMPLES_HEADER,
    RULE,
    STOPS,
    ActionAgent,
    action_prompt,
    api_doc,
)
from toollab.cli.main import app
from toollab.envs.base import env_names
from toollab.envs.generate import generate
from toollab.errors import UsageError
from toollab.models.base import GenerateOptions, run_sync
from toollab.models.fake import FakeModel
from toollab.models.policy import CallPolicy, parse_constrained
from toollab.schema import Instance, Tool, ToolCall
from toollab.templates.base import get_template

JSON = get_template("json")


def _user(agent: ActionAgent, inst: Instance, constrained: bool = False) -> str:
    ask = agent.ask(inst, JSON, AgentOptions(constrained=constrained))
    return str(ask.messages[-1]["content"])


def test_registered_and_the_skeleton_is_upstreams() -> None:
    assert "action" in agent_names() and isinstance(get_agent("action"), ActionAgent)
    prompt = action_prompt(["doc A\n", "doc B\n"], ["Task: g\nAction:\nc\n"], "find it")
    assert prompt == (
        "I have the following set of API:\n\ndoc A\n\ndoc B\n\n-------------\n"
        "I have the following set of examples:\n\nTask: g\nAction:\nc\n\n-------------\n"
        "Task: find it\nAction:\n"
    )
    assert RULE == "-" * 13 and STOPS == ("------", "Task:")
    # nothing retrieved: the sections are empty, the skeleton stays
    assert action_prompt([], [], "q") == "\n\nTask: q\nAction:\n"


def test_api_doc_names_description_and_parameters() -> None:
    tool = Tool(
        name="get_weather",
        description="Weather in a city.",
        parameters={
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name."},
                "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
            },
            "required": ["city"],
        },
    )
    assert api_doc(tool) == (
        "# Weather in a city.\nget_weather\n\nParameters:\n"
        "city: (required, string) City name.\n"
        'unit: (optional, string, one of "c", "f", default "c")\n'
    )


def test_env_request_has_top_k_apis_three_train_demos_stops_and_greedy() -> None:
    agent = ActionAgent(k_api=5)
    inst = next(i for i in generate("home_search", "test", 6, 0) if i.gold)
    options = AgentOptions(generate=GenerateOptions(temperature=0.7, stop=["END"]))
    ask = agent.ask(inst, JSON, options)
    user = str(ask.messages[1]["content"])
    assert ask.messages[0]["role"] == "system" and "calls only" in str(ask.messages[0]["content"])
    assert user.startswith(API_HEADER) and EXAMPLES_HEADER in user
    assert user.endswith(f"\nTask: {inst.query}\nAction:\n")
    assert len(ask.tools) == 5 and user.count("\nParameters:\n") == 5
    assert user.count("\nTask: ") == 4  # three demonstrations and the task
    assert ask.options.temperature == 0.0
    assert ask.options.stop == ["END", *STOPS]
    assert ask.metadata["retrieved_apis"] == [t.name for t in ask.tools]
    demos = ask.metadata["demonstrations"]
    assert isinstance(demos, list) and len(demos) == 3
    assert all(str(d).startswith("home_search-train-s0-") for d in demos)
    # the goal's words choose the APIs, shown in the pool's order
    balcony = inst.model_copy(update={"query": "balconies and garages"})
    picked = ActionAgent(k_api=2).ask(balcony, JSON, options).tools
    assert [t.name for t in picked] == ["set_num_garages", "set_num_balconies"]
    pool_order = [t.name for t in inst.tools]
    assert [t.name for t in ask.tools] == [
        n for n in pool_order if n in ask.metadata["retrieved_apis"]
    ]


def test_fewer_tools_than_k_offers_them_all_and_k_is_checked() -> None:
    inst = generate("realtime_search", "test", 2, 0)[0]
    ask = ActionAgent(k_api=50).ask(inst, JSON, AgentOptions())
    assert sorted(t.name for t in ask.tools) == sorted(t.name for t in inst.tools)
    for bad in ({"k_api": 0}, {"k_demos": -1}, {"demo_pool": 0}, {"k_api": True}):
        with pytest.raises(UsageError):
            ActionAgent(**bad)  # type: ignore[arg-type]


def test_dataset_without_environment_gets_api_docs_only(shared_data: Path) -> None:
    from toollab.data import load_dataset

    inst = load_dataset(shared_data / "bfcl", "bfcl").instances[0]
    user = _user(ActionAgent(), inst)
    assert user.startswith(API_HEADER) and EXAMPLES_HEADER not in user
    assert user.endswith(f"-------------\n\nTask: {inst.query}\nAction:\n")


def test_constrained_demos_show_the_constrained_form() -> None:
    inst = next(i for i in generate("weather", "test", 6, 0) if i.gold)
    agent = ActionAgent()
    ask = agent.ask(inst, JSON, AgentOptions(constrained=True))
    user = str(ask.messages[1]["content"])
    demos = user.split(EXAMPLES_HEADER, 1)[1].split(RULE, 1)[0].split("Task: ")[1:]
    assert len(demos) == 3
    pool = {i.id: i for i in generate("weather", "train", 100, 0, (1.0, 0.0, 0.0))}
    for text, demo_id in zip(demos, ask.metadata["demonstrations"], strict=True):  # type: ignore[call-overload]
        answer = text.split("\nAction:\n", 1)[1].strip()
        assert json.loads(answer)["decision"] == "call"
        parsed = parse_constrained(answer, CallPolicy.for_instance(inst))
        gold = pool[demo_id].gold

        def view(calls: list[ToolCall]) -> list[object]:
            return [(c.name, c.model_dump(mode="json")["arguments"]) for c in calls]

        assert view(list(parsed.calls)) == view(list(gold))
    assert '"decision": "call"' in str(ask.messages[0]["content"])
    free = _user(agent, inst)
    assert '"decision"' not in free and '{"name": ' in free


def test_declining_demonstrations_show_the_no_call_answer() -> None:
    """``declines``: part of the pool comes from the train split's NoCall / NoSearch branches,
    shown as the no-call answer of the form (constrained object, or the plain-text answer)."""
    agent = ActionAgent(declines=0.4)
    assert agent.demo_mix == pytest.approx((0.6, 0.2, 0.2))
    assert ActionAgent().demo_mix == (1.0, 0.0, 0.0)  # upstream: calls only
    pool = {i.id: i for i in generate("weather", "train", 100, 0, agent.demo_mix)}
    declining = [i for i in pool.values() if not i.gold]
    assert declining and all(i.split == "train" for i in declining)
    # a test goal whose words are a declining demonstration's: that demonstration is retrieved
    inst = next(i for i in generate("weather", "test", 6, 0) if i.gold)
    probe = inst.model_copy(update={"query": declining[0].query + " please"})
    for constrained in (True, False):
        ask = agent.ask(probe, JSON, AgentOptions(constrained=constrained))
        assert declining[0].id in ask.metadata["demonstrations"]  # type: ignore[operator]
        user = str(ask.messages[1]["content"])
        shown = user.split(f"Task: {declining[0].query}\nAction:\n", 1)[1].split("\n")[0]
        if constrained:
            value = json.loads(shown)
            assert value["decision"] == "no_call"
            assert value.get("answer", declining[0].answer) == declining[0].answer
        else:
            assert shown == str(declining[0].answer).split("\n")[0]
    for bad in (-0.1, 1.0, True, "0.2"):
        with pytest.raises(UsageError):
            ActionAgent(declines=bad)  # type: ignore[arg-type]


def test_fake_model_free_and_constrained_runs_execute_in_the_environment() -> None:
    insts = generate("weather", "test", 3, 0)

    def first_call(messages: list[dict[str, object]], tools: list[Tool]) -> str:
        return json.dumps({"name": tools[0].name, "arguments": {}}) + "\n------ trailing"

    model = FakeModel(fn=first_call)
    from toollab.eval.runner import environment_of

    options = AgentOptions(environment=environment_of(insts))
    pred = run_sync(get_agent("action").run(insts[0], model, JSON, options))
    assert pred.execution is not None and pred.parsed is not None
    # the stop string cut the trailing text: the call is read
    assert not pred.parsed.is_error and pred.parsed.calls[0].name == req_tool(model)
    assert pred.metadata["demonstrations"] and pred.metadata["retrieved_apis"]
    req = model.requests[-1]
    assert "------" in req.options.stop and "Task:" in req.options.stop
    assert [t.name for t in req.tools] == pred.metadata["retrieved_apis"]


def req_tool(model: FakeModel) -> str:
    return model.requests[-1].tools[0].name


def test_bench_with_the_oracle_succeeds_everywhere(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    args = ["bench", "-m", "oracle", "--agent", "action", "--limit", "2", "--out", str(out)]
    r = CliRunner().invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["agent"] == "action" and set(data["envs"]) == set(env_names())
    for name, row in data["envs"].items():
        assert row["success"] == 1.0 and row["crash_rate"] == 0.0, name


@pytest.mark.parametrize("constrained", [True, False])
def test_bundled_model_through_evaluate(
    tmp_path: Path, bundled_gguf: Path, constrained: bool
) -> None:
    insts = generate("weather", "test", 2, 0)
    log = evaluate(
        Task(dataset=insts, agent="action", environment="weather", name="w", max_tokens=48),
        "bundled:smollm2-135m",
        log_dir=tmp_path,
        constrained=constrained,
    )
    (task,) = log.tasks
    assert task.spec.agent == "action" and bool(task.spec.constrained) is constrained
    for sample in task.samples:
        pred = sample.prediction
        assert pred.error is None and pred.usage["prompt_tokens"] > 300
        assert pred.execution is not None  # executed (or recorded as unparsable) in the env
        prompt = pred.prompt[-1]["content"]
        assert prompt.startswith(API_HEADER) and prompt.endswith("\nAction:\n")
        if constrained:
            assert "constrained_raw" in pred.metadata
    assert "success" in task.scores.metrics["environment"]
