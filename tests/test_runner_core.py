"""The evaluation runner: run files, seeds, repeats, failures, resuming, constrained decoding."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from toollab.agents.base import AgentOptions, register_agent
from toollab.agents.single import SingleTurnAgent
from toollab.errors import InputError, UsageError
from toollab.eval.record import Prediction
from toollab.eval.runner import EvalConfig, run_eval
from toollab.eval.store import PREDICTIONS, RESULTS, RUN_JSON, read_predictions
from toollab.models.base import ChatRequest, Model, ModelOutput
from toollab.models.fake import FakeModel
from toollab.schema import Instance
from toollab.templates.base import Template

SEAL_IN = {"splits": "test_in_domain"}


def seal_config(shared_data: Path, **kw: Any) -> EvalConfig:
    base: dict[str, Any] = {
        "model": "oracle",
        "data": str(shared_data / "seal-tools"),
        "format": "seal-tools",
        "data_options": SEAL_IN,
        "limit": 12,
    }
    base.update(kw)
    return EvalConfig(**base)


def lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / PREDICTIONS).read_text().splitlines() if x.strip()]


def test_oracle_run_writes_every_file(shared_data: Path, tmp_path: Path) -> None:
    out = run_eval(seal_config(shared_data), tmp_path / "run")
    run = tmp_path / "run"
    config = json.loads((run / RUN_JSON).read_text())
    assert (
        config["model"] == "oracle" and config["template"] == "seal" and config["agent"] == "single"
    )
    assert config["dataset"] == out.results.run.dataset and config["toollab_version"]
    recs = lines(run)
    assert len(recs) == 12 and len({r["id"] for r in recs}) == 12
    for rec in recs:
        assert rec["dataset"] == config["dataset"] and rec["repeat"] == 0
        assert "task_instruction" in rec["prompt"][-1]["content"] and rec["raw"].startswith("[{")
        assert rec["parsed"]["status"] == "calls" and rec["error"] is None
        assert rec["timings"]["total_s"] >= 0 and rec["usage"]["completion_tokens"] > 0
    results = json.loads((run / RESULTS).read_text())
    assert results["metrics"]["seal_tools"]["format_acc"] == 1.0
    assert results["counts"]["predictions"] == 12 and results["counts"]["errors"] == 0
    assert set(results["timing"]) >= {"instance_s_mean", "instance_s_p95", "prompt_tokens"}


def test_seed_reaches_generation_and_repeats_give_ci(shared_data: Path, tmp_path: Path) -> None:
    seen: list[ChatRequest] = []

    class Recording(FakeModel):
        async def request(self, req: ChatRequest) -> ModelOutput:
            seen.append(req)
            # a different answer per repeat so that the figures vary over repeats
            good = req.options.seed % 2 == 1
            return ModelOutput(
                text='[{"api": "x", "parameters": {}, "responses": []}]' if good else "no"
            )

    out = run_eval(
        seal_config(shared_data, limit=10, repeats=3, seed=7, model="recording"),
        tmp_path / "run",
        model=Recording(outputs=[]),
    )
    assert {r.options.seed for r in seen} == {7, 8, 9}
    by_seed: dict[int, set[str | None]] = {}
    for r in seen:
        by_seed.setdefault(r.options.seed, set()).add(r.tag)
    assert all(len(tags) == 10 for tags in by_seed.values())
    res = out.results
    assert res.counts.predictions == 30 and res.counts.repeats == 3
    assert res.repeats is not None and res.ci95 is not None
    fa = res.repeats["seal_tools"]["format_acc"]
    assert fa.n == 3 and len(fa.values) == 3 and fa.ci95 is not None and fa.ci95 > 0
    assert res.ci95["seal_tools"]["format_acc"] == fa.ci95
    recs = lines(tmp_path / "run")
    ids = {p["id"] for p in recs}
    assert len(ids) == 10 and len(recs) == 30
    assert {(p["id"], p["repeat"]) for p in recs} == {(i, r) for i in ids for r in range(3)}


class _Flaky(FakeModel):
    """Fails on one instance, hangs on another, answers the rest."""

    def __init__(self, fail: str, hang: str) -> None:
        super().__init__(outputs=[])
        self.fail, self.hang = fail, hang

    async def request(self, req: ChatRequest) -> ModelOutput:
        self.requests.append(req)
        if req.tag == self.fail:
            raise ConnectionError("backend went away")
        if req.tag == self.hang:
            await asyncio.sleep(30)
        return ModelOutput(text='[{"api": "x", "parameters": {}, "responses": []}]')


@register_agent("test-explode")
class _ExplodingAgent:
    """An agent with a bug on one instance (the runner must survive it)."""

    name = "test-explode"
    stepwise = False
    reads_answer_key: str | None = None

    async def run(
        self, instance: Instance, model: Model, template: Template, options: AgentOptions
    ) -> Prediction:
        if instance.id.endswith("-3"):
            raise KeyError("agent bug")
        return await SingleTurnAgent().run(instance, model, template, options)


def test_failures_and_timeouts_are_recorded_and_scored(shared_data: Path, tmp_path: Path) -> None:
    from toollab.data import load_dataset

    ids = load_dataset(shared_data / "seal-tools", "seal-tools", **SEAL_IN).ids[:8]
    model = _Flaky(fail=ids[1], hang=ids[2])
    out = run_eval(
        seal_config(shared_data, limit=8, timeout=0.5, agent="test-explode"),
        tmp_path / "run",
        model=model,
    )
    recs = {r["id"]: r for r in lines(tmp_path / "run")}
    assert len(recs) == 8  # nothing stopped the run
    assert "backend went away" in recs[ids[1]]["error"]
    assert recs[ids[2]]["metadata"]["failure"] == "timeout" and "timed out" in recs[ids[2]]["error"]
    crashed = [r for r in recs.values() if r["metadata"].get("failure") == "crash"]
    assert [r["id"] for r in crashed] == [i for i in ids if i.endswith("-3")]
    assert "KeyError" in crashed[0]["error"]
    for rec in (recs[ids[1]], recs[ids[2]], crashed[0]):
        assert rec["parsed"]["status"] == "error"  # scored as a failure
    c = out.results.counts
    assert c.errors == 3 and c.timeouts == 1 and c.crashes == 1
    assert out.results.metrics["seal_tools"]["format_acc"] < 1.0


def test_resume_refuses_another_configuration(shared_data: Path, tmp_path: Path) -> None:
    run_eval(seal_config(shared_data, limit=4), tmp_path / "run")
    with pytest.raises(InputError) as err:
        run_eval(seal_config(shared_data, limit=4, seed=3, template="json"), tmp_path / "run")
    msg = str(err.value)
    assert "seed: 0 in run.json, 3 now" in msg and "template: 'seal' in run.json, 'json' now" in msg
    assert "another --out" in msg
    # the metric selection is not part of the run's identity: resuming with it is fine
    again = run_eval(seal_config(shared_data, limit=4, metrics=["seal_tools"]), tmp_path / "run")
    assert again.resumed and again.new == 0 and list(again.results.metrics) == ["seal_tools"]


def test_resume_repairs_a_partial_last_line(shared_data: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    full = run_eval(seal_config(shared_data), run)
    text = (run / PREDICTIONS).read_text().splitlines(keepends=True)
    # as if killed while writing line 10: nine complete lines and half of the tenth
    (run / PREDICTIONS).write_text("".join(text[:9]) + text[9][: len(text[9]) // 2])
    again = run_eval(seal_config(shared_data), run)
    assert (
        again.resumed
        and again.previous == 9
        and again.new == 3
        and again.session.repaired_bytes > 0
    )
    recs = read_predictions(run / PREDICTIONS)  # strict reader: every line complete
    assert sorted(p.id for p in recs) == sorted(p["id"] for p in lines(run))
    assert len(recs) == 12 and len({p.id for p in recs}) == 12
    assert again.results.metrics == full.results.metrics


def test_resume_after_a_complete_run_changes_nothing(shared_data: Path, tmp_path: Path) -> None:
    first = run_eval(seal_config(shared_data, limit=5), tmp_path / "run")
    before = (tmp_path / "run" / PREDICTIONS).read_bytes()
    unused = _Flaky("a", "b")
    unused.name = "oracle"  # same configuration; nothing is left for it to answer
    again = run_eval(seal_config(shared_data, limit=5), tmp_path / "run", model=unused)
    assert (
        again.new == 0
        and unused.calls == 0
        and (tmp_path / "run" / PREDICTIONS).read_bytes() == before
    )
    assert again.results.metrics == first.results.metrics


def test_a_damaged_middle_line_is_an_error_not_repaired(shared_data: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run_eval(seal_config(shared_data, limit=4), run)
    text = (run / PREDICTIONS).read_text().splitlines(keepends=True)
    text[1] = '{"id": "x", "broken": \n'
    (run / PREDICTIONS).write_text("".join(text))
    with pytest.raises(InputError) as err:
        run_eval(seal_config(shared_data, limit=4), run)
    assert f"{run / PREDICTIONS}:2" in str(err.value)


def test_constrained_decoding_renders_calls_in_the_template(
    shared_data: Path, tmp_path: Path
) -> None:
    class Constrained(FakeModel):
        supports_constraints = True

    schemas: list[Any] = []

    def answer(messages: list[dict[str, Any]], tools: list[Any]) -> str:
        return json.dumps({"name": tools[0].name, "arguments": {}})

    model = Constrained(fn=answer)
    orig = model.request

    async def spy(req: ChatRequest) -> ModelOutput:
        schemas.append(req.options.json_schema)
        return await orig(req)

    model.request = spy  # type: ignore[method-assign]
    run_eval(seal_config(shared_data, limit=3, constrained=True), tmp_path / "run", model=model)
    assert schemas and all(isinstance(s, dict) for s in schemas)
    for rec in lines(tmp_path / "run"):
        assert rec["raw"].startswith('[{"api"')  # the seal template's syntax
        assert json.loads(rec["metadata"]["constrained_raw"])["arguments"] == {}
        assert rec["parsed"]["status"] == "calls"


def test_constrained_needs_a_backend_that_can(shared_data: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot constrain"):
        run_eval(seal_config(shared_data, limit=2, constrained=True), tmp_path / "run")


def test_agent_template_mismatch_is_refused_before_running(
    shared_data: Path, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="teacher_forced_prompt"):
        run_eval(seal_config(shared_data, limit=2, agent="deer"), tmp_path / "run")
    assert not (tmp_path / "run" / PREDICTIONS).exists()
