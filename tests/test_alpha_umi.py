"""α-UMi: role rendering, the step-level format, the agent (live and static), the exporter."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab.agents.alpha_umi import MAX_STEPS, AlphaUmiAgent, AlphaUmiBackbone
from toollab.agents.base import AgentOptions, get_agent
from toollab.cli.main import app
from toollab.data import load_dataset
from toollab.data.alpha_umi import (
    OBSERVATION_LIMIT,
    Trace,
    Turn,
    cut_plan,
    parse_trace,
    planner_input,
    read_call,
    render_history,
    role_samples,
)
from toollab.envs.base import get_env, instance_seed
from toollab.envs.generate import generate
from toollab.errors import InputError, UsageError
from toollab.models.base import Message, ModelOutput
from toollab.models.fake import FakeModel
from toollab.schema import Instance, Tool
from toollab.sft.alpha_umi import check_split_name, env_traces, write_traces
from toollab.templates.base import get_template

FIXTURE = Path(__file__).parent / "fixtures" / "alpha_umi" / "steps.json"
runner = CliRunner()


def _prompt(messages: list[Message]) -> str:
    return str(messages[0]["content"])


def _run(agent: object, inst: Instance, model: FakeModel, env: bool = True) -> object:
    def environment(i: Instance) -> object:
        return get_env(i.source.removeprefix("env:"), instance_seed(i)) if i.source else None

    options = AgentOptions(environment=environment if env else None)  # type: ignore[arg-type]
    return asyncio.run(agent.run(inst, model, get_template("json"), options))  # type: ignore[attr-defined]


def _weather() -> Instance:
    return next(i for i in generate("weather", "test", 6, 0) if i.gold)


# -- rendering ------------------------------------------------------------------------------------
def test_history_rendering_and_prompt_layout() -> None:
    turns = [
        Turn.of("user", "q"),
        Turn.of("assistant", "t Next: caller."),
        Turn.of("caller", "Action: f\nAction Input: {}"),
        Turn.of("observation", "{}"),
        Turn.of("assistant", "done Next: conclusion."),
    ]
    assert render_history(turns) == (
        "user: q</s>assistant: t Next: caller.</s>caller: Action: f\nAction Input: {}</s>"
        "observation: {}assistant: done Next: conclusion.</s>"
    )
    trace = parse_trace(json.loads(FIXTURE.read_text())[0], "record 0")
    text = planner_input(trace.tools, turns[:1])
    assert text.startswith('You have assess to the following apis:\n{"Name": ')
    assert text.endswith("Next: caller or conclusion or give up. assistant: ")


def test_plan_cut_and_call_reading() -> None:
    assert cut_plan("go Next: conclusion. rambling Next: caller.") == (
        "go Next: conclusion.",
        "conclusion",
    )
    assert cut_plan("no marker here") == ("no marker here", None)
    assert read_call('x Action: a\nAction Input: {}\nAction: b\nAction Input: {"k": 1}') == (
        "b",
        '{"k": 1}',
    )
    assert read_call("Action: only") == ("only", "{}")


def test_role_samples_follow_upstream_rules() -> None:
    traces = [parse_trace(r, f"record {i}") for i, r in enumerate(json.loads(FIXTURE.read_text()))]
    samples = [s for t in traces for s in role_samples(t)]
    by_role: dict[str, int] = {}
    for s in samples:
        by_role[s.role] = by_role.get(s.role, 0) + 1
    # 9 planner steps, one of them before a hallucinated call (skipped)
    assert by_role == {"planner": 8, "backbone": 8, "caller": 5, "summarizer": 2}
    caller = next(s for s in samples if s.role == "caller")
    assert caller.input.endswith(" caller: ") and "The thought of this step is:\n" in caller.input
    assert caller.target.startswith("Action: get_current_weather_for_open_weather\n")
    assert caller.prompt().startswith("system: You have assess")
    give_up = [s for s in samples if s.role == "backbone" and "give up" in s.target]
    assert give_up and give_up[0].target.endswith("\nconclusion: give up.")


# -- the format -------------------------------------------------------------------------------------
def test_loader_one_instance_per_planner_step() -> None:
    ds = load_dataset(FIXTURE, "alpha-umi")
    assert len(ds) == 9
    assert [i.category for i in ds][:3] == ["caller", "caller", "conclusion"]
    first = ds[0]
    assert first.gold[0].arguments == {"q": "Lisbon,PT", "units": "metric"}
    assert first.metadata["reference"].endswith('"units": "metric"}</s>')
    assert first.metadata["alpha_umi"]["history"] == [
        {"from": "user", "value": first.query},
    ]
    give_up = ds.by_id("steps-1-7")
    assert give_up.metadata["reference"].endswith("Next: give up.")
    assert load_dataset(FIXTURE, "toolbench-steps").fingerprint == ds.fingerprint


def _bad(tmp_path: Path, conversations: list[dict[str, str]]) -> Path:
    record = json.loads(FIXTURE.read_text())[1]
    p = tmp_path / "bad.json"
    p.write_text(
        json.dumps([json.loads(FIXTURE.read_text())[0], {**record, "conversations": conversations}])
    )
    return p


@pytest.mark.parametrize(
    ("conversations", "message"),
    [
        (
            [{"from": "user", "value": "q"}, {"from": "caller", "value": "Action: f"}],
            "did not hand over",
        ),
        (
            [{"from": "user", "value": "q"}, {"from": "assistant", "value": "thinking"}],
            "hands over to no role",
        ),
        (
            [
                {"from": "user", "value": "q"},
                {"from": "assistant", "value": "x Next: conclusion."},
                {"from": "caller", "value": "Action: f"},
            ],
            "says 'Next: conclusion.'",
        ),
        ([{"from": "system", "value": "q"}], "conversations.0.from"),
        ([{"from": "assistant", "value": "x Next: give up."}], "start with a user turn"),
    ],
)
def test_malformed_conversations_name_file_and_record(
    tmp_path: Path, conversations: list[dict[str, str]], message: str
) -> None:
    path = _bad(tmp_path, conversations)
    with pytest.raises(InputError) as err:
        load_dataset(path, "alpha-umi")
    text = str(err.value)
    assert message in text and str(path) in text and "record 1" in text
    r = runner.invoke(app, ["data", "inspect", str(path), "--format", "alpha-umi"])
    assert r.exit_code == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_empty_file_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "empty.json"
    p.write_text("[]")
    with pytest.raises(InputError, match="no α-UMi records"):
        load_dataset(p, "alpha-umi")


# -- the static step-level protocol -------------------------------------------------------------------
def _step_model(prompt: str) -> str:
    """A planner that routes as the gold does, a caller that copies the first tool's name."""
    if prompt.endswith(" assistant: "):
        if "conclusion: " not in prompt and "Rate limit" in prompt:
            return "The API is rate limited. Next: give up."
        if prompt.count("observation: ") >= 2 or "beng" in prompt:
            return "I can answer now. Next: conclusion."
        return "I call the first tool. Next: caller.</s>ignored"
    if prompt.endswith(" caller: "):
        return 'Action: get_current_weather_for_open_weather\nAction Input: {"q": "Lisbon,PT"}'
    return "Lisbon is 14.3 °C and cloudy; rain is expected."


def test_step_level_eval_reports_every_metric(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    ds = load_dataset(FIXTURE, "alpha-umi")
    answers = []
    for inst in ds:  # scripted in instance order: one planner output, then its role's
        history = render_history(
            [Turn.model_validate(t) for t in inst.metadata["alpha_umi"]["history"]]
        )
        plan = _step_model(history + " assistant: ")
        answers.append(plan)
        if "Next: caller." in plan:
            answers.append(_step_model(" caller: "))
        elif "Next: conclusion." in plan:
            answers.append(_step_model(" conclusion: "))
    script.write_text(json.dumps(answers))
    out = tmp_path / "run"
    r = runner.invoke(
        app,
        [
            "eval",
            "--model",
            f"fake:{script}",
            "--data",
            str(FIXTURE),
            "--format",
            "alpha-umi",
            "--out",
            str(out),
            "--json",
            "--concurrency",
            "1",
        ],
    )
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)
    metrics = res["metrics"]["alpha_umi"]
    assert set(metrics) == {
        "plan_acc",
        "act_em",
        "hallu_rate",
        "arg_f1",
        "easy_f1",
        "hard_f1",
        "rouge_l",
    }
    assert res["run"]["agent"] == "alpha-umi"
    assert 0.0 < metrics["plan_acc"] <= 1.0
    assert 0.0 < metrics["hallu_rate"] < 1.0  # the weather tool named in the cat traces
    assert metrics["rouge_l"] is not None and metrics["rouge_l"] > 0.0
    counts = res["scorer_counts"]["alpha_umi"]
    assert counts["n"] == 9 and counts["call_steps"] == 6 and counts["conclusion_steps"] == 2


def test_static_step_records_hallucination_and_empty_answer() -> None:
    ds = load_dataset(FIXTURE, "alpha-umi")
    agent = get_agent("alpha-umi")
    pred = _run(
        agent,
        ds[0],
        FakeModel(["go Next: caller.", "Action: no_such_api\nAction Input: {}"]),
        env=False,
    )
    assert (
        pred.raw == "assistant: go Next: caller.</s>caller: Action: no_such_api\nAction Input: {}"
    )  # type: ignore[attr-defined]
    assert pred.metadata["hallucinated"] == 1  # type: ignore[attr-defined]
    pred = _run(agent, ds[2], FakeModel(["done Next: conclusion.", " . "]), env=False)
    assert pred.raw.endswith("</s>conclusion: none")  # type: ignore[attr-defined]
    assert pred.metadata["ended_by"] == "no_answer"  # type: ignore[attr-defined]
    assert pred.steps[-1].error == "the summarizer wrote no answer"  # type: ignore[attr-defined]


# -- the live loop ------------------------------------------------------------------------------------
def _live(prompt: str, inst: Instance) -> str:
    call = inst.gold[0]
    if prompt.endswith(" assistant: "):
        if "observation: " in prompt:
            return "I have the weather. Next: conclusion."
        return f"I call {call.name}. Next: caller."
    if prompt.endswith(" caller: "):
        return f"Action: {call.name}\nAction Input: {json.dumps(call.arguments)}"
    return "Here is the weather."


def test_live_episode_executes_and_concludes() -> None:
    inst = _weather()
    model = FakeModel(fn=lambda m, t: _live(_prompt(m), inst))
    pred = _run(get_agent("alpha-umi"), inst, model)
    ex = pred.execution  # type: ignore[attr-defined]
    assert ex.ended_by == "conclusion" and ex.finished and ex.answer == "Here is the weather."
    assert [s.role for s in pred.steps] == ["planner", "caller", "planner", "conclusion"]  # type: ignore[attr-defined]
    assert pred.parsed.calls[0].name == inst.gold[0].name  # type: ignore[attr-defined]
    assert ex.observations and "error" not in json.dumps(ex.observations[0])[:10]
    prompts = [r.prompt or "" for r in model.requests]
    assert all(p.startswith("system: ") for p in prompts)
    summarizer = prompts[-1]
    assert summarizer.startswith("system: Make a conclusion") and summarizer.endswith(
        " conclusion: "
    )
    # the observation turn has no </s>; the next assistant turn follows it directly
    assert "</s>observation: " in summarizer and "assistant: I have the weather." in summarizer
    assert all(r.options.stop[-1] == "</s>" for r in model.requests)


def test_planner_that_never_routes_is_bounded() -> None:
    inst = _weather()
    model = FakeModel(["I wonder.", "Action: nope\nAction Input: {}"], repeat=True)
    pred = _run(AlphaUmiAgent(), inst, model)
    assert pred.execution.ended_by == "max_steps"  # type: ignore[attr-defined]
    assert pred.metadata["unrouted"] == MAX_STEPS and pred.metadata["hallucinated"] == MAX_STEPS  # type: ignore[attr-defined]
    assert model.calls == 2 * MAX_STEPS
    assert pred.execution.actions == []  # type: ignore[attr-defined]  # a hallucinated tool never runs
    assert "invalid_hallucination_function_name" in (model.requests[-1].prompt or "")


def test_long_observation_is_cut(tmp_path: Path) -> None:
    tool = Tool(name="dump", description="d", parameters={"type": "object", "properties": {}})

    class Big:
        def execute(self, call: object) -> str:
            return "x" * 5000

    inst = Instance(id="big", query="q", tools=[tool])
    model = FakeModel(["a Next: caller.", "Action: dump\nAction Input: {}", "b Next: give up."])
    options = AgentOptions(environment=lambda i: Big())  # type: ignore[arg-type,return-value]
    pred = asyncio.run(AlphaUmiAgent().run(inst, model, get_template("json"), options))
    assert pred.execution is not None and pred.execution.ended_by == "give_up"
    last = model.requests[-1].prompt or ""
    assert "observation: " + "x" * OBSERVATION_LIMIT + "..." in last and "x" * 1025 not in last


def test_backend_failure_is_recorded() -> None:
    pred = _run(AlphaUmiAgent(), _weather(), FakeModel([RuntimeError("down")]))
    assert pred.error and pred.execution.ended_by == "error"  # type: ignore[attr-defined]


def test_three_role_models() -> None:
    inst = _weather()
    planner = FakeModel(["p Next: caller.", "q Next: conclusion."])
    caller = FakeModel([_live(" caller: ", inst)])
    summarizer = FakeModel(["answer"])
    agent = AlphaUmiAgent(planner=planner, caller=caller, summarizer=summarizer)
    run_model = FakeModel([])
    pred = _run(agent, inst, run_model)
    assert pred.execution.answer == "answer"  # type: ignore[attr-defined]
    assert (planner.calls, caller.calls, summarizer.calls, run_model.calls) == (2, 1, 1, 0)
    with pytest.raises(UsageError):
        AlphaUmiAgent(max_steps=0)


def test_backbone_live_and_static() -> None:
    inst = _weather()
    call = inst.gold[0]
    model = FakeModel(
        [
            f"I call it.\nAction: {call.name}\nAction Input: {json.dumps(call.arguments)}",
            "Done.\nconclusion: It is mild.",
        ]
    )
    pred = _run(AlphaUmiBackbone(), inst, model)
    assert pred.execution.answer == "It is mild." and len(pred.execution.actions) == 1  # type: ignore[attr-defined]
    second = model.requests[1].prompt or ""
    assert f"assistant: I call it.\nAction: {call.name}" in second and "observation: " in second
    ds = load_dataset(FIXTURE, "alpha-umi")
    pred = _run(
        AlphaUmiBackbone(), ds[5], FakeModel(["Rate limited.\nconclusion: give up."]), env=False
    )
    assert pred.raw == "assistant: Rate limited. Next: give up."  # type: ignore[attr-defined]
    pred = _run(AlphaUmiBackbone(), ds[0], FakeModel(["no idea"]), env=False)
    assert pred.metadata["ended_by"] == "no_action"  # type: ignore[attr-defined]


# -- the exporter ------------------------------------------------------------------------------------
def test_exported_traces_read_back_with_real_observations(tmp_path: Path) -> None:
    traces = env_traces("weather", "test", 6, 0)
    assert all(t.id and t.id.startswith("weather/test/") for t in traces)
    kinds = {t.conversations[-1].role for t in traces}
    assert "conclusion" in kinds
    with_calls = next(t for t in traces if any(c.role == "caller" for c in t.conversations))
    obs = [c.value for c in with_calls.conversations if c.role == "observation"]
    assert obs and all(len(o) <= OBSERVATION_LIMIT + 3 and "error" not in o[:12] for o in obs)
    out = write_traces(traces, tmp_path / "weather-test.json")
    ds = load_dataset(out, "alpha-umi")
    n_steps = sum(1 for t in traces for c in t.conversations if c.role == "assistant")
    assert len(ds) == n_steps
    assert env_traces("weather", "test", 6, 0) == traces  # deterministic
    assert all(isinstance(t, Trace) for t in traces)


def test_spreadsheet_traces_offer_the_retrieved_tools_and_their_gold() -> None:
    from toollab.envs.base import env_class
    from toollab.envs.generate import generate

    k = env_class("spreadsheet").retrieved_tools
    assert k is not None and len(env_class("spreadsheet").declared_tools()) > k
    insts = generate("spreadsheet", "train", 4, 0)
    for inst, trace in zip(insts, env_traces("spreadsheet", "train", 4, 0), strict=True):
        offered = [t.Name for t in trace.tools]
        gold = {c.name for c in inst.gold}
        assert gold <= set(offered) and k <= len(offered) <= k + len(gold)
        assert offered == [t.name for t in inst.tools if t.name in offered]  # the pool's order


def test_split_discipline(tmp_path: Path) -> None:
    check_split_name(tmp_path / "weather-train.json", "train")
    with pytest.raises(UsageError, match="must name its split"):
        check_split_name(tmp_path / "weather.json", "test")
    with pytest.raises(InputError, match="another split"):
        check_split_name(tmp_path / "train-test.json", "test")


def test_data_alpha_umi_cli(tmp_path: Path) -> None:
    out = tmp_path / "envs-train.json"
    r = runner.invoke(
        app,
        [
            "data",
            "alpha-umi",
            "--env",
            "weather",
            "--split",
            "train",
            "--n",
            "3",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["traces"] == 3
    assert len(json.loads(out.read_text())) == 3
    bad = runner.invoke(
        app, ["data", "alpha-umi", "--env", "weather", "--split", "test", "--out", str(out)]
    )
    assert bad.exit_code == 2 and "must name its split" in bad.stderr


def test_model_output_with_native_calls_is_read_as_text() -> None:
    inst = _weather()
    model = FakeModel([ModelOutput(text="x Next: give up.")])
    pred = _run(AlphaUmiAgent(), inst, model)
    assert pred.execution.ended_by == "give_up" and pred.parsed.status == "no_call"  # type: ignore[attr-defined]


# -- the CLI: role models, bench, names ---------------------------------------------------------------
def test_eval_with_a_model_per_role(tmp_path: Path) -> None:
    planner = tmp_path / "planner.json"
    planner.write_text(json.dumps(["go Next: caller."]))
    caller = tmp_path / "caller.json"
    caller.write_text(
        json.dumps(
            ['Action: get_current_weather_for_open_weather\nAction Input: {"q": "Lisbon,PT"}']
        )
    )
    unused = tmp_path / "unused.json"
    unused.write_text("[]")  # the run's model has no output to give: no role may use it
    out = tmp_path / "run"
    r = runner.invoke(
        app,
        [
            "eval",
            "--model",
            f"fake:{unused}",
            "--data",
            str(FIXTURE),
            "--format",
            "alpha-umi",
            "--limit",
            "1",
            "--role",
            f"planner=fake:{planner}",
            "--role",
            f"caller=fake:{caller}",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["metrics"]["alpha_umi"]["act_em"] == 1.0
    pred = json.loads((out / "predictions.jsonl").read_text().splitlines()[0])
    assert pred["metadata"]["roles"] == {"planner": f"fake:{planner}", "caller": f"fake:{caller}"}
    # the roles this step did not reach are not listed; the run's model was never asked


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--role", "critic=fake:"], "unknown role 'critic'"),
        (["--role", "planner"], "ROLE=MODEL"),
        (["--role", "planner=fake:", "--agent", "single"], "--role is for the alpha-umi agent"),
        (["--role", "planner=nope:x"], "nope"),
    ],
)
def test_bad_roles_are_refused(tmp_path: Path, extra: list[str], message: str) -> None:
    r = runner.invoke(
        app,
        [
            "eval",
            "--model",
            "fake:",
            "--data",
            str(FIXTURE),
            "--format",
            "alpha-umi",
            "--out",
            str(tmp_path / "run"),
            *extra,
        ],
    )
    assert r.exit_code == 2 and message in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "run").exists()


def test_bench_runs_the_agent_on_an_environment(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["nothing to do here. Next: give up."]))
    r = runner.invoke(
        app,
        [
            "bench",
            "--model",
            f"fake:{script}",
            "--agent",
            "alpha-umi",
            "--envs",
            "weather",
            "--limit",
            "1",
            "--out",
            str(tmp_path / "bench"),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["agent"] == "alpha-umi" and res["envs"]["weather"]["n"] == 1
    pred = json.loads((tmp_path / "bench" / "runs" / "weather" / "predictions.jsonl").read_text())
    assert pred["execution"]["ended_by"] == "give_up"


def test_scorer_reads_the_source_the_format_writes() -> None:
    from toollab.eval.metrics.registry import scorer_class

    ds = load_dataset(FIXTURE, "toolbench-steps")
    assert {i.source for i in ds} == set(scorer_class("alpha_umi").formats) == {"alpha-umi"}


@pytest.mark.parametrize(
    "payload",
    [
        b"this is not json\n",
        b"[" * 100_000 + b"]" * 100_000,
        b"\xff\xfe not text\n",
        b'[{"tools": 5, "instruction": "x", "conversations": []}]',
        b'[{"tools": [], "instruction": "x", "conversations": [{"from": "user"}]}]',
        b'[{"tools": [{"Name": ""}], "conversations": [{"from": "user", "value": "q"}]}]',
        b'[{"tools": [], "conversations": "user: hi"}]',
        b"[1, 2]",
        b"{}",
    ],
)
def test_hostile_files_are_clear_errors(tmp_path: Path, payload: bytes) -> None:
    path = tmp_path / "hostile.json"
    path.write_bytes(payload)
    r = runner.invoke(app, ["data", "inspect", str(path), "--format", "alpha-umi"])
    assert r.exit_code == 2, r.stdout
    assert str(path) in r.stderr and "Traceback" not in r.stderr


def test_prediction_records_the_first_prompt() -> None:
    ds = load_dataset(FIXTURE, "alpha-umi")
    pred = _run(AlphaUmiAgent(), ds[1], FakeModel(["x Next: give up."]), env=False)
    prompt = pred.prompt  # type: ignore[attr-defined]
    assert isinstance(prompt, str) and prompt.startswith("system: You have assess")
    # the gold history of the second step: the first step's plan, call and observation
    assert "caller: Action: get_current_weather_for_open_weather" in prompt
    assert prompt.endswith("give up. assistant: ")
