"""Seal-Tools' pipeline: the checks on real data, a whole run with a scripted teacher whose output
toollab's adapter loads, garbage answers counted by reason, resuming from the cache, bad input."""

from __future__ import annotations

import ast
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from toollab.data import load_dataset
from toollab.errors import InputError
from toollab.models.fake import FakeModel
from toollab.synth import Reject, Teacher, TeacherConfig, seal
from toollab.synth import seal_prompts as P
from toollab.synth import seal_values as V

NAMES = ["getWeather", "bookFlight", "translateText", "computeTax", "findRecipe", "playMusic",
         "trackParcel", "scanInvoice", "rentBicycle"]  # fmt: skip


@pytest.fixture(scope="module")
def seal_dir(shared_data: Path) -> Path:
    return shared_data / "seal-tools"


def released_tools(seal_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (seal_dir / "tool.jsonl").read_text().splitlines()]


# -- the checks, on the released data -----------------------------------------------------------
def test_released_tools_pass_api_check(seal_dir: Path) -> None:
    tools = released_tools(seal_dir)
    problems = Counter(seal.api_problem(t, t["field"]) for t in tools)
    assert problems[None] >= 0.99 * len(tools), problems.most_common(5)
    assert seal.api_problem({**tools[0], "required": ["nope"]}, tools[0]["field"]) == (
        "required parameter not in parameters"
    )
    assert seal.api_problem(tools[0], "Other/Field") == "field is not field/subfield"
    assert seal.api_problem({**tools[0], "responses": {}}, tools[0]["field"]) == "no responses"


def test_released_callings_pass_api_calling_check(seal_dir: Path) -> None:
    tools = {t["api_name"]: t for t in released_tools(seal_dir)}
    dev = [json.loads(line) for line in (seal_dir / "dev.jsonl").read_text().splitlines()]
    results = Counter(seal.calling_problem(c, tools) for inst in dev for c in inst["calling"])
    assert results[None] >= 0.95 * sum(results.values()), results
    nested = sum(seal.is_nested(inst["calling"]) for inst in dev)
    assert nested > 0
    call = dev[0]["calling"][0]
    assert seal.calling_problem({**call, "parameters": {**call["parameters"], "x": 1}}, tools) == (
        "unknown parameter"
    )
    assert seal.calling_problem({**call, "responses": []}, tools) == "wrong number of responses"
    own = {**call, "parameters": {**call["parameters"], "location": call["responses"][0]}}
    assert seal.calling_problem(own, tools) == "parameter refers to its own response"


def test_finetune_prompt_is_upstreams(seal_dir: Path) -> None:
    prompts = json.loads((seal_dir / "dataset_for_finetune" / "dev.json").read_text())
    dev = [json.loads(line) for line in (seal_dir / "dev.jsonl").read_text().splitlines()]
    for rec, inst in list(zip(prompts, dev, strict=True))[:100]:
        human = rec["conversations"][0]["value"]
        api_list = ast.literal_eval(
            re.search(r"api_list = (\[.*\])\ntask_instruction", human, re.S).group(1)
        )  # type: ignore[union-attr]
        assert P.FINETUNE.format(api_list=str(api_list), query=inst["query"]) == human
        assert rec["conversations"][1]["value"] == str(inst["calling"])


def test_dedup_rules_and_values() -> None:
    assert seal.is_duplicate("getWeatherInfo", ["getWeatherInfos"], 0.8)
    assert not seal.is_duplicate("bookFlight", ["getTemperature"], 0.8)
    assert V.example_list("int", "Days (e.g., 1, 2, 3)") == ["1", "2", "3"]
    assert V.example_list("int", "Days (e.g., one, two)") is None
    assert V.example_list("str", "The city") is None
    rng = random.Random(0)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", V.rule_value(rng, "str", "start_date", "when"))
    assert 5 <= int(V.rule_value(rng, "int", "age", "of the patient")) <= 80
    assert V.has_rule("str", "recipient", "who")  # "ip" in "recipient": upstream's crude match
    tool = {"api_name": "t", "parameters": {"code": {"type": "str", "description": "A code"},
            "n": {"type": "int", "description": "count"}}, "required": ["code", "n"],
            "responses": {"r": {"type": "str", "description": "r"}}}  # fmt: skip
    assert V.needs_pool(tool) == {"code": "A code"}
    with pytest.raises(V.NoValue):
        V.calling(rng, tool, {})
    call = V.calling(rng, tool, {"t": {"code": ["X1"]}})
    assert call["parameters"]["code"] == "X1"
    skeleton = V.calling_list(rng, [tool, tool], {"t": {"code": ["X1"]}})
    assert [c["responses"] for c in skeleton] == [["API_call_0"], ["API_call_1"]]


def test_answer_parsers_reject_by_reason() -> None:
    with pytest.raises(Reject, match=r"no \[\.\.\.\] list"):
        seal.string_list("no list here")
    with pytest.raises(Reject, match="not JSON"):
        seal.string_list("[a, b]")
    assert seal.easy_query('Task description =\n["Book a room."]') == "Book a room."
    with pytest.raises(Reject, match="selected name not in the pool"):
        seal.selected_apis("selected_apis = ['a', 'zzz']", ["a", "b"])
    with pytest.raises(Reject, match="mentions API_call_"):
        seal.fill_in(
            'improved_api_calling = [{"api": 1}]\ntask_description = ["use API_call_0"]', {}
        )


# -- a whole run with a scripted teacher --------------------------------------------------------
class Script:
    """Answers every stage's prompt well, except the first fill-in of each instance (garbage)."""

    def __init__(self) -> None:
        self.fill_seen: Counter[str] = Counter()
        self.index: dict[str, int] = {}

    def __call__(self, messages: list[dict[str, Any]], _tools: Any) -> str:
        prompt = str(messages[-1]["content"])
        if prompt.startswith("Please generate a field list"):
            return 'field_list = ["Weather", "Finance", "Travel"]'
        if prompt.startswith("Please generate a subfield list"):
            return '["Forecast", "Alerts", "Climate"]'
        if prompt.startswith("Please generate some APIs"):
            f, s = re.findall(r'field:"(.*?)"\nsub-field:"(.*?)"', prompt)[-1]
            name = NAMES[self.index.setdefault(f"{f}/{s}", len(self.index)) % len(NAMES)]
            tool = {
                "api_name": name,
                "api_description": f"{name} for {s}",
                "field": f"{f}/{s}",
                "parameters": {
                    "city": {"type": "str", "description": "The city (e.g., Paris, Rome)"},
                    "code": {"type": "str", "description": "A code"},
                    "days": {"type": "int", "description": "How many days"},
                },
                "required": ["city", "code"],
                "responses": {
                    "result": {"type": "str", "description": "the result"},
                    "score": {"type": "float", "description": "a score"},
                },
            }
            bad = {**tool, "api_name": "broken", "required": ["nope"]}
            return json.dumps(tool, indent=1) + "\n\n" + json.dumps(bad) + "\n\nnot json {x"
        if prompt.startswith("Please generate a python list of"):
            return '["A-17", "B-42"]'
        if prompt.startswith("Please generate the task description"):
            return "Task description =\n[Do the thing in Paris for code A-17.]"
        if prompt.startswith("Here is a list of APIs"):
            given = ast.literal_eval(prompt.split("given_apis = ")[-1].split("\noutput:")[0])
            names = [next(iter(d)) for d in given][:2]
            return f"selected_apis = {names}\ntask_description = ['A plan.']"
        if prompt.startswith("Please use APIs in api_list"):
            origin = prompt.split("origin_api_calling = ")[-1].split("\noutput:")[0]
            calls = ast.literal_eval(origin.replace("___", "'Paris'"))
            key = "/".join(c["api"] for c in calls)  # skeletons vary between attempts
            self.fill_seen[key] += 1
            if self.fill_seen[key] == 1:
                return "I am sorry, I cannot help with that."
            if len(calls) > 1:
                first = next(iter(calls[1]["parameters"]))
                calls[1]["parameters"][first] = calls[0]["responses"][0]
            return (
                f"improved_api_calling = {json.dumps(calls)}\n"
                'task_description = ["Plan a trip to Paris and check it."]'
            )
        return "?"


def run_seal(out: Path, cache: Path, model: FakeModel, **config: Any) -> dict[str, Any]:
    teacher = Teacher(model, TeacherConfig(model="fake:"), cache=cache)
    cfg = seal.SealConfig(split="dev", max_fields=2, max_subfields=2, difficult=3, **config)
    return seal.run(out, teacher, cfg)


def test_whole_run_loads_through_the_adapter(tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = run_seal(out, tmp_path / "cache.jsonl", FakeModel(fn=Script()))
    counts = report["counts"]
    assert counts["fields"] == 2 and counts["subfields"] == 4
    assert counts["tools"] == 4 and counts["value_pools"] == 4
    assert counts["easy"] == 4 and counts["difficult"] == 3 and counts["nested"] == 3
    checks = report["teacher_stats"]["checks"]
    assert checks["seal.tools"]["rejected"] == {
        "required parameter not in parameters": 4 * 3,  # one per answer, three rounds each
        "duplicate name (quick_ratio >= 0.8)": 4 * 2,  # rounds 2 and 3 repeat round 1's tool
    }
    assert checks["seal.tools"]["accepted"] == 4
    assert checks["seal.difficult"]["rejected"] == {"no improved_api_calling list": 3}
    assert checks["seal.difficult"]["accepted"] == 3
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert names == [
        ".toollab-generated",
        "dataset_for_finetune/dev.json",
        "dev.jsonl",
        "field.jsonl",
        "report.json",
        "tool.jsonl",
    ]  # fmt: skip  (.toollab-generated: the folder's mark, so the next run replaces the files)
    data = load_dataset(out, "seal-tools")
    assert len(data.instances) == 7
    assert {i.id for i in data.instances} == {f"dev-easy-{i}" for i in range(4)} | {
        f"dev-difficult-{i}" for i in range(4, 7)
    }
    for inst in data.instances:
        assert inst.metadata["api_list_available"] and not inst.metadata["gold_not_offered"]
        assert len(inst.tools) == 4  # top-5 of a 4-tool pool
    nested = [i for i in data.instances if i.id.startswith("dev-difficult")]
    assert all(len(i.gold) == 2 for i in nested)
    prompts = json.loads((out / "dataset_for_finetune" / "dev.json").read_text())
    assert prompts[0]["conversations"][0]["value"].startswith("Please chooose the needed apis")


def test_resumed_run_asks_nothing_again(tmp_path: Path) -> None:
    cache = tmp_path / "cache.jsonl"
    first = run_seal(tmp_path / "a", cache, FakeModel(fn=Script()))
    again = FakeModel(fn=Script())
    second = run_seal(tmp_path / "b", cache, again)
    assert again.calls == 0
    assert second["teacher_stats"]["cache_hit_rate"] == 1.0
    assert second["counts"] == first["counts"]
    assert (tmp_path / "a" / "dev.jsonl").read_text() == (tmp_path / "b" / "dev.jsonl").read_text()


def test_teacher_that_stops_mid_run_writes_no_data(tmp_path: Path) -> None:
    from toollab.errors import BackendError
    from toollab.synth import TeacherDown

    script = Script()
    calls = Counter[str]()

    def dying(messages: list[dict[str, Any]], tools: Any) -> str:
        calls["n"] += 1
        if calls["n"] > 30:
            raise BackendError("connection refused")
        return script(messages, tools)

    teacher = Teacher(
        FakeModel(fn=dying),
        TeacherConfig(model="fake:", retries=0, max_consecutive_failures=3),
        cache=tmp_path / "cache.jsonl",
    )
    with pytest.raises(TeacherDown, match="run the same command again"):
        seal.run(tmp_path / "out", teacher, seal.SealConfig(max_fields=2, max_subfields=2))
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["complete"] is False
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        ".toollab-generated",  # the folder's mark
        "report.json",
    ]
    # resumed with a live teacher: the answers given before the failure come from the cache
    model = FakeModel(fn=Script())
    report = run_seal(tmp_path / "out", tmp_path / "cache.jsonl", model)
    assert report["complete"] and report["teacher_stats"]["cache_hits"] == 30


def test_malformed_fields_file(tmp_path: Path) -> None:
    bad = tmp_path / "field.jsonl"
    bad.write_text('{"Sports": ["Golf"]}\n{"Food": "Pasta"}\n')
    with pytest.raises(InputError) as err:
        seal.read_fields(bad)
    assert err.value.line == 2 and "'Food'" in err.value.problem
    bad.write_text('{"Sports": ["Golf"]}\n{"Food": [\n')
    with pytest.raises(InputError) as err:
        seal.read_fields(bad)
    assert err.value.line == 2


def test_starts_from_a_fields_file(tmp_path: Path, seal_dir: Path) -> None:
    teacher = Teacher(FakeModel(fn=Script()), TeacherConfig(model="fake:"), cache=None)
    report = seal.run(
        tmp_path / "out",
        teacher,
        seal.SealConfig(max_fields=1, max_subfields=3, difficult=1),
        fields_path=seal_dir / "field.jsonl",
    )
    assert report["counts"]["fields"] == 1 and report["counts"]["tools"] == 3
    assert "seal.fields" not in report["teacher_stats"]["checks"]


def test_cli_runs_and_reports_rejections(tmp_path: Path, seal_dir: Path) -> None:
    from typer.testing import CliRunner

    from toollab.cli.main import app

    out = tmp_path / "out"
    args = ["data", "synth", "seal", "--teacher", "fake:", "--fields", str(seal_dir / "field.jsonl"),
            "--max-fields", "1", "--max-subfields", "2", "--difficult", "2", "--out", str(out)]  # fmt: skip
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    # the echo teacher repeats the prompt: its example tool has the wrong field and the empty
    # "{ }" at its end no keys, in each of two rounds of two subfields
    assert report["teacher_stats"]["checks"]["seal.tools"]["rejected"] == {
        "field is not field/subfield": 4,
        "missing api_name": 4,
    }
    assert report["counts"]["instances"] == 0 and (out / "train.jsonl").read_text() == ""
    assert (out / "teacher_cache.jsonl").is_file()
    again = CliRunner().invoke(app, [*args, "--json"])
    assert json.loads(again.stdout)["teacher_stats"]["cache_hit_rate"] == 1.0

    bad = tmp_path / "field.jsonl"
    bad.write_text('{"Sports": ["Golf"]}\n[1, 2]\n')
    res = CliRunner().invoke(app, ["data", "synth", "seal", "--teacher", "fake:", "--fields",
                                   str(bad), "--out", str(tmp_path / "o2")])  # fmt: skip
    assert res.exit_code == 2 and f"{bad}:2" in res.output
    assert not (tmp_path / "o2").exists()


def test_starts_from_a_tools_file(tmp_path: Path, seal_dir: Path) -> None:
    teacher = Teacher(FakeModel(fn=Script()), TeacherConfig(model="fake:"), cache=None)
    report = seal.run(
        tmp_path / "out",
        teacher,
        seal.SealConfig(split="dev", difficult=2),
        tools_path=seal_dir / "tool.jsonl",
        max_tools=6,
    )
    counts = report["counts"]
    assert counts["tools"] == 6 and counts["easy"] == 6 and counts["difficult"] == 2
    assert "seal.tools" not in report["teacher_stats"]["checks"]
    data = load_dataset(tmp_path / "out", "seal-tools")
    assert len(data.instances) == 8
    # five offered tools each, gold included, whatever BM25 finds for the query
    assert all(len(i.tools) == 5 and not i.metadata["gold_not_offered"] for i in data.instances)
    bad = tmp_path / "tool.jsonl"
    bad.write_text(json.dumps({**released_tools(seal_dir)[0], "responses": {}}) + "\n")
    with pytest.raises(InputError, match="no responses") as err:
        seal.read_tools(bad)
    assert err.value.line == 1
