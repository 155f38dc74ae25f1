"""BFCL's executable multi-turn categories: loading, bad entries, execution on BFCL's backend,
the scorer against BFCL's own checker, and the refusal to export them for training.

The data are the files the installed ``bfcl-eval`` ships (the ``[bfcl]`` extra); the module is
skipped when it is not installed.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

checker = pytest.importorskip("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker")

from toollab.agents.base import AgentOptions, get_agent  # noqa: E402
from toollab.data import load_dataset  # noqa: E402
from toollab.data.bfcl_multi_turn import (  # noqa: E402
    GROUND_TRUTH,
    KEY,
    EpisodeInputs,
    EpisodeLog,
    StepLog,
    TurnLog,
    parse_call,
)
from toollab.envs.bfcl_multi_turn import REFUSED, Episode, guarded, method_names  # noqa: E402
from toollab.errors import InputError, UsageError  # noqa: E402
from toollab.eval.metrics import get_scorer  # noqa: E402
from toollab.eval.runner import EvalConfig, run_eval  # noqa: E402
from toollab.models.base import GenerateOptions, run_sync  # noqa: E402
from toollab.models.fake import FakeModel  # noqa: E402
from toollab.schema import Instance  # noqa: E402
from toollab.schema.record import Prediction  # noqa: E402
from toollab.sft.sources import load_source, parse_source  # noqa: E402
from toollab.templates.base import get_template  # noqa: E402

DATA = Path(checker.__file__).parents[2] / "data"
CATEGORIES = ("base", "miss_func", "miss_param", "long_context")


@pytest.fixture(scope="module")
def dataset() -> list[Instance]:
    return list(load_dataset(DATA, "bfcl-multi-turn").instances)


@pytest.fixture(scope="module")
def sample(dataset: list[Instance]) -> list[Instance]:
    """The first four entries of each category."""
    out: list[Instance] = []
    for c in CATEGORIES:
        out += [i for i in dataset if i.category == f"multi_turn_{c}"][:4]
    return out


# -- loading ---------------------------------------------------------------------------------


def test_loads_the_four_categories(dataset: list[Instance]) -> None:
    assert len(dataset) == 800
    for c in CATEGORIES:
        assert sum(i.category == f"multi_turn_{c}" for i in dataset) == 200
    first = dataset[0]
    inputs = EpisodeInputs.model_validate(first.metadata[KEY])
    assert inputs.involved_classes and len(inputs.turns) == len(first.metadata[GROUND_TRUTH])
    assert first.metadata["gold_turns"] == [len(t) for t in first.metadata[GROUND_TRUTH]]
    assert sum(first.metadata["gold_turns"]) == len(first.gold)
    # the python template appends BFCL's language note: the raw docs are kept without it
    assert not first.tools[0].metadata["raw"]["description"].endswith("Python 3 syntax.")


def test_held_out_functions_are_offered_at_their_turn(dataset: list[Instance]) -> None:
    entry = next(i for i in dataset if i.id == "multi_turn_miss_func_0")
    inputs = EpisodeInputs.model_validate(entry.metadata[KEY])
    ((turn, docs),) = inputs.missed_function.items()
    assert inputs.turns[int(turn)] == []
    assert [d["name"] for d in docs] == ["sort"]
    assert "sort" not in entry.tool_names


def test_positional_ground_truth_is_named_after_the_doc(dataset: list[Instance]) -> None:
    entry = next(i for i in dataset if i.id == "multi_turn_base_0")
    assert "sort('final_report.pdf')" in entry.metadata[GROUND_TRUTH][2]
    sort = next(g for g in entry.gold if g.name == "sort")
    assert sort.arguments == {"file_name": "final_report.pdf"}


def test_categories_option(dataset: list[Instance]) -> None:
    ds = load_dataset(DATA, "bfcl-multi-turn", categories="miss_param")
    assert {i.category for i in ds} == {"multi_turn_miss_param"} and len(ds) == 200
    with pytest.raises(UsageError, match="unknown category"):
        load_dataset(DATA, "bfcl-multi-turn", categories="nope")


# -- bad entries -----------------------------------------------------------------------------


def _write(tmp: Path, entry: dict[str, Any], truth: Any) -> Path:
    (tmp / "possible_answer").mkdir(exist_ok=True)
    name = "BFCL_v4_multi_turn_base.json"
    (tmp / name).write_text(json.dumps(entry) + "\n")
    (tmp / "possible_answer" / name).write_text(
        json.dumps({"id": entry["id"], "ground_truth": truth}) + "\n"
    )
    return tmp / name


def _entry(**change: Any) -> dict[str, Any]:
    base = {
        "id": "multi_turn_base_7",
        "question": [[{"role": "user", "content": "go to document"}]],
        "initial_config": {
            "GorillaFileSystem": {"root": {"alex": {"type": "directory", "contents": {}}}}
        },
        "involved_classes": ["GorillaFileSystem"],
    }
    return {**base, **change}


@pytest.mark.parametrize(
    ("entry", "truth", "message"),
    [
        (_entry(involved_classes=["NoSuchAPI"]), [["ls()"]], "unknown class 'NoSuchAPI'"),
        ({k: v for k, v in _entry().items() if k != "involved_classes"}, [["ls()"]],
         "missing field 'involved_classes'"),
        (_entry(), "ls()", "one list of call strings per turn"),
        (_entry(), [["ls()"], ["pwd()"]], "ground truth has 2 turns"),
        (_entry(), [["ls(a=True"]], "not Python syntax"),
        (_entry(), [["rm_rf(path='/')"]], "'rm_rf' is no function"),
        (_entry(), [["ls(a=open('x'))"]], "not a literal"),
        (_entry(missed_function={"0": ["ls"]}), [["ls()"]], "has no message"),
    ],
)  # fmt: skip
def test_bad_entries_name_file_and_id(
    tmp_path: Path, entry: dict[str, Any], truth: Any, message: str
) -> None:
    path = _write(tmp_path, entry, truth)
    with pytest.raises(InputError, match=message) as err:
        load_dataset(tmp_path, "bfcl-multi-turn")
    text = str(err.value)
    assert path.name in text and "multi_turn_base_7" in text


def test_a_well_formed_small_file_loads(tmp_path: Path) -> None:
    _write(tmp_path, _entry(), [["ls(a=True)"]])
    (inst,) = load_dataset(tmp_path, "bfcl-multi-turn").instances
    assert inst.id == "multi_turn_base_7" and inst.gold[0].arguments == {"a": True}


# -- execution -------------------------------------------------------------------------------


def test_episode_executes_on_bfcls_classes(dataset: list[Instance]) -> None:
    entry = dataset[0]
    inputs = EpisodeInputs.model_validate(entry.metadata[KEY])
    with Episode(inputs, entry.id) as ep:
        (out,) = ep.execute(["cd(folder='document')"])
        assert json.loads(out) == {"current_working_directory": "document"}
        (listing,) = ep.execute(["ls()"])
        assert "final_report.pdf" in listing
        (missing,) = ep.execute(["no_such_function(x=1)"])
        assert missing.startswith("Error during execution: name 'no_such_function'")
    with Episode(inputs, entry.id) as fresh:  # a new episode starts from the initial state
        assert "document" in fresh.execute(["ls()"])[0]


def test_guard_keeps_bfcl_from_evaluating_anything_but_methods(tmp_path: Path) -> None:
    methods = method_names(("GorillaFileSystem",))
    assert guarded("cd(folder='x')", methods) == "cd(folder='x')"
    assert guarded("undefined_name(a=[1, {'k': -2}])", methods).startswith("undefined_name")
    target = tmp_path / "written"
    for call in (
        f"open(file='{target}', mode='w')",
        "__import__(name='os')",
        "cd(folder=open(file='x'))",
        "cd(folder=copy(x=1))",
        "os.system(command='true')",
        "cd(folder=[x for x in (1,)])",
        "cd(**{'folder': 'x'})",
        "cd(folder='a' * 10)",
    ):
        assert guarded(call, methods) == REFUSED, call
    entry_inputs = EpisodeInputs(turns=[[]], involved_classes=["GorillaFileSystem"])
    with Episode(entry_inputs, "guard_test_0") as ep:
        (out,) = ep.execute([f"open(file='{target}', mode='w')"])
    assert "not allowed" in out and not target.exists()


# -- the oracle and the scorer ---------------------------------------------------------------


def test_oracle_scores_one_in_every_category(sample: list[Instance], tmp_path: Path) -> None:
    from toollab.data import Dataset

    ds = Dataset(name="mt", format="bfcl-multi-turn", instances=sample)
    outcome = run_eval(
        EvalConfig(model="oracle", data=str(DATA), format="bfcl-multi-turn"),
        tmp_path / "run",
        dataset=ds,
    )
    metrics = outcome.results.metrics["bfcl_multi_turn"]
    for c in CATEGORIES:
        assert metrics[f"multi_turn_{c}"] == 1.0
    assert metrics["multi_turn_overall"] == 1.0
    preds = {p.id: p for p in outcome.predictions}
    miss = preds["multi_turn_miss_func_0"]
    log = EpisodeLog.model_validate(miss.metadata[KEY])
    # turn 2 asks for a sort before sort is offered: no gold call; turn 3 offers it
    assert len(log.turns) == 5 and log.turns[2].steps[0].executed == []
    assert log.turns[3].steps[0].executed == ["sort(file_name='final_report.pdf')"]


def _keyword_call(text: str) -> str:
    name, args, kwargs = parse_call(text)
    assert not args or name  # positional ground truth is named by the dataset's gold
    return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"


def _gold_turns(inst: Instance) -> list[list[str]]:
    """The gold calls per turn as keyword calls (as a model writes them)."""
    flat = [
        f"{g.name}(" + ", ".join(f"{k}={v!r}" for k, v in g.arguments.items()) + ")"
        for g in inst.gold
    ]
    out, start = [], 0
    for n in inst.metadata["gold_turns"]:
        out.append(flat[start : start + n])
        start += n
    return out


def _prediction(inst: Instance, turns: list[list[str]]) -> Prediction:
    log = EpisodeLog(
        turns=[
            TurnLog(steps=[StepLog(raw="[" + ", ".join(calls) + "]")] if calls else [])
            for calls in turns
        ]
    )
    return Prediction(id=inst.id, raw="", metadata={KEY: log.model_dump(mode="json")})


def _upstream(inst: Instance, turns: list[list[str]]) -> bool:
    """BFCL's own verdict: its force-termination rule, then multi_turn_checker on the calls."""
    truth = inst.metadata[GROUND_TRUTH]
    if len(turns) != len(truth):
        return False
    inputs = EpisodeInputs.model_validate(inst.metadata[KEY])
    entry = {"id": inst.id, "initial_config": inputs.initial_config,
             "involved_classes": inputs.involved_classes}  # fmt: skip
    decoded = [[calls] if calls else [] for calls in turns]
    name = f"upstream_{uuid.uuid4().hex}"
    return bool(checker.multi_turn_checker(decoded, truth, entry, inst.category, name)["valid"])


def _perturbations(turns: list[list[str]]) -> list[list[list[str]]]:
    last = max(i for i, t in enumerate(turns) if t)
    out = [turns]
    out.append([t[:-1] if i == last else t for i, t in enumerate(turns)])  # a call missing
    out.append([[] if i == last else t for i, t in enumerate(turns)])  # a turn left empty
    out.append(turns[:-1])  # force-terminated
    swapped = [list(t) for t in turns]
    swapped[last][-1] = swapped[last][-1].replace("'", "'x_", 1)  # a wrong string value
    out.append(swapped)
    first = next(i for i, t in enumerate(turns) if t)
    out.append([[*t, t[0]] if i == first else t for i, t in enumerate(turns)])  # a call repeated
    return out


def test_scorer_agrees_with_bfcls_checker(sample: list[Instance]) -> None:
    scorer = get_scorer("bfcl_multi_turn")
    agree, verdicts = 0, {True: 0, False: 0}
    for inst in sample:
        for k, turns in enumerate(_perturbations(_gold_turns(inst))):
            pred = _prediction(inst, turns)
            res = scorer.score([pred], {inst.id: inst})
            ours = bool(res.per_instance[inst.id]["valid"])
            theirs = _upstream(inst, turns)
            assert ours == theirs, (inst.id, k, res.per_instance[inst.id])
            if k == 0:
                assert ours, (inst.id, res.per_instance[inst.id])
            agree += 1
            verdicts[ours] += 1
    assert verdicts[True] >= len(sample) and verdicts[False] >= len(sample) * 3


def test_malformed_model_output_scores_as_a_failure(sample: list[Instance]) -> None:
    inst = sample[0]
    n = len(inst.metadata[GROUND_TRUTH])
    garbage = EpisodeLog(turns=[TurnLog(steps=[StepLog(raw="[cd(folder=")]) for _ in range(n)])
    preds = [
        Prediction(id=inst.id, raw="", metadata={KEY: garbage.model_dump(mode="json")}),
        Prediction(id=inst.id, repeat=1, raw="", error="model failed"),
        Prediction(id=inst.id, repeat=2, raw="", metadata={KEY: {"turns": "not a list"}}),
        Prediction(id=inst.id, repeat=3, raw="", metadata={KEY: _bad_structured(n)}),
    ]
    res = get_scorer("bfcl_multi_turn").score(preds, {inst.id: inst})
    assert res.metrics["pooled_accuracy"] == 0.0 and res.counts["n"] == 4
    assert res.per_instance[inst.id]["error_type"] == "multi_turn:empty_turn_model_response"
    assert res.per_instance[f"{inst.id}@1"]["error_type"] == "multi_turn:inference_error"


def _bad_structured(n: int) -> dict[str, Any]:
    step = StepLog(prompting=False, decoded=[{"cd": {"folder": {}}}, {"open": {"file": "x"}}])
    return EpisodeLog(turns=[TurnLog(steps=[step]) for _ in range(n)]).model_dump(mode="json")


def test_agent_plays_unreadable_outputs_to_the_end(sample: list[Instance]) -> None:
    inst = next(i for i in sample if i.category == "multi_turn_miss_func")
    model = FakeModel(fn=lambda messages, tools: "I cannot do ((that")
    agent = get_agent("bfcl-multi-turn")
    options = AgentOptions(generate=GenerateOptions(max_tokens=16))
    pred = run_sync(agent.run(inst, model, get_template("python"), options))
    log = EpisodeLog.model_validate(pred.metadata[KEY])
    assert len(log.turns) == len(inst.metadata[GROUND_TRUTH])
    assert all(len(t.steps) == 1 and not t.steps[0].executed for t in log.turns)
    held = next(m for m in model.requests[3].messages if "I have updated" in str(m["content"]))
    assert held["role"] == "user" and "'name': 'sort'" in held["content"]
    assert "sort" in [t.name for t in model.requests[3].tools]
    res = get_scorer("bfcl_multi_turn").score([pred], {inst.id: inst})
    assert res.per_instance[inst.id]["valid"] is False


def test_step_limit_force_terminates(sample: list[Instance]) -> None:
    inst = sample[0]
    model = FakeModel(fn=lambda messages, tools: "[pwd()]")
    pred = run_sync(
        get_agent("bfcl-multi-turn").run(inst, model, get_template("python"), AgentOptions())
    )
    log = EpisodeLog.model_validate(pred.metadata[KEY])
    assert log.force_quit and len(log.turns) == 1 and len(log.turns[0].steps) == 21
    res = get_scorer("bfcl_multi_turn").score([pred], {inst.id: inst})
    assert res.per_instance[inst.id]["error_type"] == "multi_turn:force_terminated"


def test_requests_never_depend_on_the_answer_key(sample: list[Instance]) -> None:
    def requests(instances: list[Instance]) -> list[str]:
        model = FakeModel(
            fn=lambda messages, tools: f"[{tools[0].name}()]" if len(messages) < 4 else "done"
        )
        for inst in instances:
            run_sync(
                get_agent("bfcl-multi-turn").run(
                    inst, model, get_template("python"), AgentOptions()
                )
            )
        return [
            json.dumps(r.model_dump(mode="json", exclude={"tag"}), sort_keys=True)
            for r in model.requests
        ]

    swapped = [
        inst.with_answer_key_of(sample[(i + 1) % len(sample)]) for i, inst in enumerate(sample)
    ]
    assert swapped[0].metadata[GROUND_TRUTH] != sample[0].metadata[GROUND_TRUTH]
    assert requests(sample) == requests(swapped)


# -- evaluation only -------------------------------------------------------------------------


def test_export_for_training_is_refused() -> None:
    with pytest.raises(UsageError, match="evaluation data only"):
        load_source(parse_source(f"bfcl-multi-turn:{DATA}"))
