"""Evaluation integrity: nothing derived from the answer key reaches the model.

For every adapter × agent × template × decoding mode, each instance's answer key (gold calls,
alternatives, decision label, reference answer, category, metadata: :data:`ANSWER_KEY_FIELDS`) is
replaced by another instance's (a seeded shuffle within the dataset), the requests are built
again, and every request sent to the model — messages, prompt, tools offered, decoding options
with their grammar or JSON Schema — must be byte-identical.  Settings that read the answer key on
purpose are excluded by name (:data:`EXCLUDED_AGENTS`; the oracle model and ``use_gold_count``
are not requests' makers here) and are labelled in ``run.json``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toollab.agents.base import AgentOptions, agent_names, get_agent
from toollab.data import load_dataset
from toollab.envs.generate import generate
from toollab.eval.integrity import integrity_fields
from toollab.eval.runner import environment_of
from toollab.models.base import ChatRequest, GenerateOptions, ModelOutput, run_sync
from toollab.models.fake import FakeModel
from toollab.models.policy import CallPolicy
from toollab.schema import ANSWER_KEY_FIELDS, Decision, Instance, ToolCall
from toollab.templates.base import Template, get_template, template_names

#: agents that read the answer key on purpose, with the reason (labelled in every run of theirs)
EXCLUDED_AGENTS = {"deer": "DEER's faithful teacher-forced second round injects the gold pool"}
PER_DATASET = 8
#: α-UMi step-level data (the gold history is the protocol's input, the reference is not)
ALPHA_UMI = Path(__file__).parent / "fixtures" / "alpha_umi" / "steps.json"


class RecordingModel(FakeModel):
    """Answers every request with a call to the first offered tool in the template's syntax (or
    that call as constrained JSON), so multi-turn agents execute calls and go on; every request
    is recorded.  The answer depends on the request alone."""

    supports_constraints = True

    def __init__(self, template: Template) -> None:
        super().__init__(fn=self._answer)
        self.template = template
        self.constrained_answer = False

    def _answer(self, messages: list[Any], tools: list[Any]) -> str:
        if not tools:
            return "I can answer that myself."
        call = ToolCall(name=tools[0].name, arguments={})
        if self.constrained_answer:
            return json.dumps({"name": call.name, "arguments": {}})
        try:
            return self.template.render_calls([call])
        except Exception:
            return f"{call.name}()"

    async def request(self, req: ChatRequest) -> ModelOutput:
        self.constrained_answer = req.options.json_schema is not None
        return await super().request(req)


def _sample(instances: list[Instance], n: int = PER_DATASET) -> list[Instance]:
    """Up to ``n`` instances spread over the dataset's categories and decision labels, so that
    swapped answer keys differ in call count, decision and category."""
    groups: dict[tuple[str, str], list[Instance]] = {}
    for inst in instances:
        groups.setdefault((str(inst.category), inst.label().value), []).append(inst)
    out: list[Instance] = []
    while len(out) < n and any(groups.values()):
        for key in sorted(groups):
            if groups[key] and len(out) < n:
                out.append(groups[key].pop(0))
    return out


def _datasets(shared: Path) -> dict[str, list[Instance]]:
    sets = {
        "seal-tools": list(load_dataset(shared / "seal-tools", "seal-tools").instances),
        "bfcl": list(load_dataset(shared / "bfcl", "bfcl").instances),
        "deer": list(load_dataset(shared / "deer", "deer").instances),
        "tooleyes": list(load_dataset(shared / "tooleyes", "tooleyes").instances),
        "env": [*generate("home_search", "test", 6, 0), *generate("weather", "test", 6, 0)],
        "alpha-umi": list(load_dataset(ALPHA_UMI, "alpha-umi").instances),
    }
    return {name: _sample(insts) for name, insts in sets.items()}


@pytest.fixture(scope="module")
def datasets(shared_data: Path) -> dict[str, list[Instance]]:
    return _datasets(shared_data)


def swapped(instances: list[Instance], seed: int = 0) -> list[Instance]:
    """Every instance with another instance's answer key (a seeded derangement)."""
    order = list(range(len(instances)))
    random.Random(seed).shuffle(order)
    donor = {order[i]: order[(i + 1) % len(order)] for i in range(len(order))}
    return [inst.with_answer_key_of(instances[donor[i]]) for i, inst in enumerate(instances)]


def _request_text(req: ChatRequest) -> str:
    """What reaches the model: everything but the bookkeeping tag."""
    return json.dumps(req.model_dump(mode="json", exclude={"tag"}), sort_keys=True)


def requests_of(
    instances: list[Instance], agent_name: str, template_name: str, constrained: bool
) -> list[str]:
    agent = get_agent(agent_name)
    template = get_template(template_name)
    model = RecordingModel(template)
    template = template.with_model(model)
    model.template = template
    options = AgentOptions(
        generate=GenerateOptions(max_tokens=32),
        constrained=constrained,
        max_turns=2,
        environment=environment_of(instances),
    )
    for inst in instances:
        run_sync(agent.run(inst, model, template, options))
    return [_request_text(r) for r in model.requests]


def combos() -> list[tuple[str, str, bool]]:
    out = []
    for agent in agent_names():
        if agent in EXCLUDED_AGENTS:
            continue
        needs = getattr(get_agent(agent), "needs_template_methods", ())
        for tpl in template_names():
            template = get_template(tpl)
            if any(not callable(getattr(template, m, None)) for m in needs):
                continue
            for constrained in (False, True):
                out.append((agent, tpl, constrained))
    return out


def check_no_leak(
    datasets: dict[str, list[Instance]], combo: tuple[str, str, bool]
) -> dict[str, int]:
    """Requests per dataset for ``combo``; fails on the first request the answer key changed."""
    agent, tpl, constrained = combo
    counts: dict[str, int] = {}
    for name, instances in datasets.items():
        before = requests_of(instances, agent, tpl, constrained)
        after = requests_of(swapped(instances), agent, tpl, constrained)
        assert len(before) == len(after), (name, combo, "a different number of requests")
        for i, (a, b) in enumerate(zip(before, after, strict=True)):
            assert a == b, f"{name} {combo}: request {i} depends on the answer key"
        counts[name] = len(before)
    return counts


@pytest.mark.parametrize("combo", combos(), ids=lambda c: f"{c[0]}-{c[1]}-{'c' if c[2] else 'u'}")
def test_no_request_depends_on_the_answer_key(
    datasets: dict[str, list[Instance]], combo: tuple[str, str, bool]
) -> None:
    counts = check_no_leak(datasets, combo)
    assert all(n > 0 for n in counts.values()), counts


def test_the_swap_really_changes_the_answer_key(datasets: dict[str, list[Instance]]) -> None:
    for name, instances in datasets.items():
        assert len(instances) >= 4, name
        other = swapped(instances)
        changed = {
            f
            for a, b in zip(instances, other, strict=True)
            for f in ANSWER_KEY_FIELDS
            if getattr(a, f) != getattr(b, f)
        }
        assert "metadata" in changed and changed & {"gold", "decision", "category"}, name
        if any(i.gold for i in instances):
            assert "gold" in changed, name
        assert all(
            a.query == b.query and a.tools == b.tools for a, b in zip(instances, other, strict=True)
        )
    seal = datasets["seal-tools"]
    assert len({len(i.gold) for i in seal}) > 1  # single- and multi-call instances both present
    labels = {i.label() for i in datasets["env"]}
    assert {Decision.CALL, Decision.NO_CALL, Decision.NO_SEARCH} <= labels


def _old_for_instance(instance: Instance, **_: Any) -> CallPolicy:
    """The policy before the answer key was sealed off: Seal-Tools' gold-derived category
    decided between one call and several."""
    category = (instance.category or "").lower()
    always = instance.source in ("bfcl", "seal-tools") and "relevance" not in category
    if instance.source == "bfcl":
        multi = "parallel" in category
    elif instance.source == "deer":
        multi = False
    else:
        multi = category != "single"
    return CallPolicy(allow_no_call=not always, max_calls=16 if multi else 1)


def test_the_leak_test_fails_on_the_old_seal_tools_policy(
    datasets: dict[str, list[Instance]], monkeypatch: pytest.MonkeyPatch
) -> None:
    seal = {"seal-tools": datasets["seal-tools"]}
    check_no_leak(seal, ("single", "seal", True))  # today: no leak
    old: Callable[..., CallPolicy] = _old_for_instance
    monkeypatch.setattr(CallPolicy, "for_instance", classmethod(lambda cls, i, **k: old(i, **k)))
    with pytest.raises(AssertionError, match="depends on the answer key"):
        check_no_leak(seal, ("single", "seal", True))


def test_a_gold_value_put_into_a_request_is_caught(datasets: dict[str, list[Instance]]) -> None:
    """Any gold-derived value that reaches a request is caught: here the gold call count,
    written into the system prompt by a template."""

    class Leaky(type(get_template("json"))):  # type: ignore[misc]
        def messages(self, instance: Instance, tools: list[Any] | None = None) -> list[Any]:
            msgs = super().messages(instance, tools)
            last = {**msgs[-1], "content": f"{msgs[-1]['content']} ({len(instance.gold)} calls)"}
            return [*msgs[:-1], last]

    agent = get_agent("single")
    insts = datasets["seal-tools"]

    def run(instances: list[Instance]) -> list[str]:
        template = Leaky()
        model = RecordingModel(template)
        options = AgentOptions(generate=GenerateOptions(max_tokens=16))
        for inst in instances:
            run_sync(agent.run(inst, model, template, options))
        return [_request_text(r) for r in model.requests]

    assert run(insts) != run(swapped(insts))


def test_seal_tools_constraints_admit_one_or_more_calls(
    datasets: dict[str, list[Instance]],
) -> None:
    policies = {CallPolicy.for_instance(i) for i in datasets["seal-tools"]}
    assert policies == {CallPolicy(allow_no_call=False, max_calls=16)}


def test_bfcl_category_is_a_published_fact(datasets: dict[str, list[Instance]]) -> None:
    for inst in datasets["bfcl"]:
        assert inst.protocol.published == {"category": inst.category}
        policy = CallPolicy.for_instance(inst)
        assert policy.max_calls == (16 if "parallel" in str(inst.category) else 1)
        assert policy.allow_no_call == ("relevance" in str(inst.category))


def test_runs_say_what_they_let_the_model_know(datasets: dict[str, list[Instance]]) -> None:
    from toollab.models.oracle import OracleModel

    bfcl = integrity_fields(datasets["bfcl"], constrained=True, agent=get_agent("single"))
    assert bfcl["protocol_facts"].startswith("category = ")
    assert "shapes the constrained call grammar" in bfcl["protocol_facts"]
    assert bfcl["answer_key_read_by"] == "none"
    env = integrity_fields(datasets["env"], constrained=True, agent=get_agent("single"))
    assert env == {"protocol_facts": "none", "answer_key_read_by": "none"}
    oracle = integrity_fields(
        datasets["deer"], constrained=False, model=OracleModel(), agent=get_agent("deer")
    )
    assert "model oracle: answers every request with the gold calls" in oracle["answer_key_read_by"]
    assert "agent deer: teacher-forced second round" in oracle["answer_key_read_by"]
    assert "not used: unconstrained" in oracle["protocol_facts"]


def test_tooleyes_pl_is_personal_life(datasets: dict[str, list[Instance]]) -> None:
    from toollab.data.adapters.tooleyes import SCENARIOS

    assert SCENARIOS["PL"] == "personal life"
    assert set(SCENARIOS.values()) == {
        "text generation",
        "data understanding",
        "real-time search",
        "application manipulation",
        "personal life",
        "information retrieval",
        "financial transactions",
    }


def test_run_json_and_report_label_the_run(shared_data: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from toollab.cli.main import app

    out = tmp_path / "run"
    args = ["eval", "--model", "oracle", "--data", str(shared_data / "bfcl"), "--format", "bfcl"]
    args += ["-o", "categories=parallel", "--limit", "3", "--out", str(out), "--json"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.stderr
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run["answer_key_read_by"] == "model oracle: answers every request with the gold calls"
    assert run["protocol_facts"].startswith("category = parallel")
    r = CliRunner().invoke(app, ["report", str(out), "--out", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "reads the answer key" in html and "answers every request with the gold calls" in html


def test_every_registered_agent_is_checked_the_action_generator_included() -> None:
    checked = {agent for agent, _tpl, _c in combos()}
    assert checked == set(agent_names()) - set(EXCLUDED_AGENTS)
    assert "action" in checked


def test_no_demonstration_is_a_test_instance_or_shares_a_test_goal() -> None:
    """The action generator's demonstrations come from the environment's train split only: none
    is a test-split instance, none has a test goal, and none calls a test API combination; with
    declining demonstrations (``declines``) none is a query reserved for evaluation."""
    from toollab.agents.action import ActionAgent
    from toollab.envs.base import env_names
    from toollab.envs.splits import api_combo, is_eval_query, is_test_combo

    template = get_template("json")
    n_shown = n_declining = 0
    for agent in (get_agent("action"), ActionAgent(declines=0.4)):
        assert isinstance(agent, ActionAgent)
        for env in env_names():
            test = generate(env, "test", 12, 0)
            test_ids = {i.id for i in test}
            test_goals = {i.query.strip() for i in test}
            pool = {i.id: i for i in generate(env, "train", 100, 0, agent.demo_mix)}
            for constrained in (False, True):
                for inst in test:
                    ask = agent.ask(inst, template, AgentOptions(constrained=constrained))
                    shown = ask.metadata["demonstrations"]
                    assert isinstance(shown, list), (env, inst.id)
                    n_shown += len(shown)
                    for demo_id in shown:
                        assert demo_id not in test_ids and str(demo_id) in pool, (env, demo_id)
                        demo = pool[str(demo_id)]
                        assert demo.split == "train" and demo.query.strip() not in test_goals
                        assert not is_test_combo(env, api_combo(demo.gold), 0), demo_id
                        assert not is_eval_query(demo.query), demo_id
                        assert demo.query in str(ask.messages[-1]["content"])
                        n_declining += not demo.gold
    assert n_shown > 0 and n_declining > 0
