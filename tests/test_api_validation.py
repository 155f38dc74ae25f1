"""The Python API checks its arguments: a wrong type or value is an
:class:`~toollab.errors.ArgumentError` (a ``UsageError``, so the CLI's handling applies, and a
``TypeError`` / ``ValueError``, so ``except TypeError`` keeps working) that names the argument
and what it expects -- never an ``AttributeError`` from deep inside -- and nothing is written
before the arguments are checked.  A task's name becomes its run directory and data file under
``log_dir``: a name that would reach outside it is refused."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from toollab import Param, Task, evaluate, tool
from toollab.agents.base import get_agent, register_agent
from toollab.data import Dataset, load_dataset, load_tools
from toollab.envs.base import register_env
from toollab.envs.generate import generate
from toollab.errors import ArgumentError, InputError, UsageError, path_component
from toollab.eval.metrics.registry import scorer
from toollab.models import FakeModel
from toollab.models.registry import register_provider
from toollab.parsing import get_parser
from toollab.schema import Instance
from toollab.templates.base import get_template


def _instances(n: int = 2) -> list[Instance]:
    return list(generate("weather", "test", n, 0, (1, 0, 0)))


INSTANCES = _instances()


def _task(**kw: Any) -> Task:
    return Task(**{"dataset": INSTANCES, **kw})


# (id, the call, a fragment the message must hold: the argument it names)
TASK_CASES: list[tuple[str, Callable[[], object], str]] = [
    ("agent-int", lambda: _task(agent=5), "Task.agent"),
    ("agent-empty", lambda: _task(agent="  "), "Task.agent"),
    ("agent-object-without-run", lambda: _task(agent=object()), "Task.agent"),
    ("environment-int", lambda: _task(environment=3), "Task.environment"),
    ("scorers-string", lambda: _task(scorers="bfcl"), "Task.scorers"),
    ("scorers-int", lambda: _task(scorers=7), "Task.scorers"),
    ("scorers-item", lambda: _task(scorers=["bfcl", 2]), "Task.scorers[1]"),
    ("template-int", lambda: _task(template=1), "Task.template"),
    ("format-list", lambda: _task(format=["bfcl"]), "Task.format"),
    ("name-parent", lambda: _task(name="../../x"), "Task.name"),
    ("name-dotdot", lambda: _task(name=".."), "Task.name"),
    ("name-dot", lambda: _task(name="."), "Task.name"),
    ("name-absolute", lambda: _task(name="/tmp/x"), "Task.name"),
    ("name-backslash", lambda: _task(name="a\\b"), "Task.name"),
    ("name-nul", lambda: _task(name="a\0b"), "Task.name"),
    ("name-newline", lambda: _task(name="a\nb"), "Task.name"),
    ("name-empty", lambda: _task(name=""), "Task.name"),
    ("name-long", lambda: _task(name="x" * 300), "Task.name"),
    ("name-int", lambda: _task(name=5), "Task.name"),
    ("limit-string", lambda: _task(limit="2"), "Task.limit"),
    ("limit-float", lambda: _task(limit=2.5), "Task.limit"),
    ("limit-bool", lambda: _task(limit=True), "Task.limit"),
    ("limit-negative", lambda: _task(limit=-1), "Task.limit"),
    ("max-tokens-string", lambda: _task(max_tokens="64"), "Task.max_tokens"),
    ("max-tokens-zero", lambda: _task(max_tokens=0), "Task.max_tokens"),
    ("max-turns-none", lambda: _task(max_turns=None), "Task.max_turns"),
    ("max-turns-zero", lambda: _task(max_turns=0), "Task.max_turns"),
    ("data-options-list", lambda: _task(data_options=[1]), "Task.data_options"),
    ("data-options-key", lambda: _task(data_options={1: "a"}), "Task.data_options"),
    ("run-dir-int", lambda: _task(run_dir=5), "Task.run_dir"),
    ("run-dir-empty", lambda: _task(run_dir=""), "Task.run_dir"),
    ("dataset-empty-list", lambda: Task(dataset=[]), "Task.dataset"),
    ("dataset-empty-tuple", lambda: Task(dataset=()), "Task.dataset"),
    ("dataset-int", lambda: Task(dataset=5), "Task.dataset"),
    ("dataset-dict", lambda: Task(dataset={"a": 1}), "Task.dataset"),
    ("dataset-none", lambda: Task(dataset=None), "Task.dataset"),
    ("dataset-empty-path", lambda: Task(dataset="", format="bfcl"), "Task.dataset"),
    ("dataset-not-instances", lambda: Task(dataset=[INSTANCES[0], "x"]), "Task.dataset[1]"),
    (
        "dataset-empty-dataset",
        lambda: Task(dataset=Dataset(name="d", format="toollab", instances=[])),
        "Task.dataset",
    ),
]


@pytest.mark.parametrize(
    "call,argument", [c[1:] for c in TASK_CASES], ids=[c[0] for c in TASK_CASES]
)
def test_a_task_with_a_wrong_field_names_it(call: Callable[[], object], argument: str) -> None:
    with pytest.raises(ArgumentError) as err:
        call()
    assert isinstance(err.value, TypeError) and isinstance(err.value, UsageError)
    assert str(err.value).startswith(argument + ":"), str(err.value)
    assert "expected" in str(err.value)


def _evaluate(folder: Path, /, **kw: Any) -> Any:
    args: dict[str, Any] = {"tasks": _task(), "model": "oracle", "log_dir": folder}
    return evaluate(**{**args, **kw})


EVALUATE_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("model-int", {"model": 123}, "evaluate(model)"),
    ("model-none", {"model": None}, "evaluate(model)"),
    ("model-empty", {"model": " "}, "evaluate(model)"),
    ("tasks-int", {"tasks": 3}, "evaluate(tasks)"),
    ("tasks-string", {"tasks": "bfcl"}, "evaluate(tasks)"),
    ("tasks-empty", {"tasks": []}, "evaluate(tasks)"),
    ("tasks-item", {"tasks": [_task(), "x"]}, "evaluate(tasks[1])"),
    ("log-dir-int", {"log_dir": 5}, "evaluate(log_dir)"),
    ("repeats-zero", {"repeats": 0}, "evaluate(repeats)"),
    ("repeats-string", {"repeats": "2"}, "evaluate(repeats)"),
    ("repeats-huge", {"repeats": 10**9}, "evaluate(repeats)"),
    ("seed-float", {"seed": 1.5}, "evaluate(seed)"),
    ("seed-none", {"seed": None}, "evaluate(seed)"),
    ("constrained-string", {"constrained": "yes"}, "evaluate(constrained)"),
    ("temperature-negative", {"temperature": -1.0}, "evaluate(temperature)"),
    ("temperature-nan", {"temperature": float("nan")}, "evaluate(temperature)"),
    ("temperature-string", {"temperature": "0"}, "evaluate(temperature)"),
    ("top-p-zero", {"top_p": 0}, "evaluate(top_p)"),
    ("top-p-big", {"top_p": 1.5}, "evaluate(top_p)"),
    ("timeout-zero", {"timeout": 0}, "evaluate(timeout)"),
    ("timeout-inf", {"timeout": float("inf")}, "evaluate(timeout)"),
    ("timeout-string", {"timeout": "10"}, "evaluate(timeout)"),
    ("concurrency-zero", {"concurrency": 0}, "evaluate(concurrency)"),
    ("concurrency-float", {"concurrency": 2.0}, "evaluate(concurrency)"),
    ("judge-int", {"judge": 1}, "evaluate(judge)"),
    ("judge-cache-int", {"judge_cache": 1}, "evaluate(judge_cache)"),
    ("progress-object", {"progress": object()}, "evaluate(progress)"),
]


@pytest.mark.parametrize(
    "kw,argument", [c[1:] for c in EVALUATE_CASES], ids=[c[0] for c in EVALUATE_CASES]
)
def test_evaluate_with_a_wrong_argument_names_it_and_writes_nothing(
    kw: dict[str, Any], argument: str, tmp_path: Path
) -> None:
    log_dir = tmp_path / "log"
    with pytest.raises(ArgumentError) as err:
        _evaluate(log_dir, **kw)
    assert isinstance(err.value, TypeError) and isinstance(err.value, ValueError)
    assert str(err.value).startswith(argument + ":"), str(err.value)
    assert not log_dir.exists()


def test_a_task_changed_after_it_was_made_is_checked_again(tmp_path: Path) -> None:
    task = _task()
    task.limit = "1"  # type: ignore[assignment]
    with pytest.raises(ArgumentError, match=r"^tasks\[0\]\.limit"):
        _evaluate(tmp_path / "log", tasks=[task])
    task = _task()
    task.name = "../escape"
    with pytest.raises(ArgumentError, match=r"^tasks\[0\]\.name"):
        _evaluate(tmp_path / "log", tasks=task)
    assert not (tmp_path / "log").exists() and not (tmp_path / "escape").exists()


def test_a_dataset_named_like_a_path_does_not_leave_log_dir(tmp_path: Path) -> None:
    ds = Dataset(name="../../outside", format="toollab", instances=INSTANCES)
    with pytest.raises(ArgumentError, match="the dataset's name"):
        _evaluate(tmp_path / "a" / "log", tasks=Task(dataset=ds))
    assert list(tmp_path.rglob("*")) == []


def test_unknown_agent_or_template_of_a_later_task_fails_before_any_task_runs(
    tmp_path: Path,
) -> None:
    for bad in ({"agent": "nosuchagent"}, {"template": "nosuchtemplate"}):
        with pytest.raises(UsageError, match="unknown"):
            _evaluate(tmp_path / "log", tasks=[_task(name="good"), _task(name="bad", **bad)])
        assert not (tmp_path / "log").exists()


def test_an_empty_selection_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no instances to evaluate \(limit 0\)"):
        _evaluate(tmp_path / "log", tasks=_task(limit=0))
    assert not (tmp_path / "log").exists()


def test_a_limit_past_a_loaded_dataset_with_no_instances_writes_nothing(
    tmp_path: Path,
) -> None:
    # an empty file dataset is only known to be empty once read: still before any write
    data = tmp_path / "empty.jsonl"
    data.write_text("")
    with pytest.raises(InputError):
        _evaluate(tmp_path / "log", tasks=Task(dataset=data, format="toollab"))
    assert not (tmp_path / "log").exists()


def test_good_arguments_still_run(tmp_path: Path) -> None:
    # the checks refuse nothing that is right: one real (oracle) run, names with odd but
    # harmless characters included
    log = _evaluate(tmp_path / "log", tasks=_task(name="weather: v2 (a+b)", limit=1), seed=3)
    run = tmp_path / "log" / "runs" / "weather: v2 (a+b)"
    assert (run / "results.json").is_file()
    assert log.tasks[0].results["environment"]["success"] == 1.0  # type: ignore[attr-defined]


# -- the other public entry points ----------------------------------------------------------------
def _plain(x: int) -> int:
    """Return x.

    Args:
        x: A number.
    """
    return x


OTHER_CASES: list[tuple[str, Callable[[], object], str]] = [
    ("get-agent-int", lambda: get_agent(5), "the agent name"),  # type: ignore[arg-type]
    ("get-agent-none", lambda: get_agent(None), "the agent name"),  # type: ignore[arg-type]
    ("get-parser-list", lambda: get_parser(["python"]), "name"),  # type: ignore[arg-type]
    ("get-template-int", lambda: get_template(3), "name"),  # type: ignore[arg-type]
    ("register-agent-no-name", lambda: register_agent(_plain), "name"),  # type: ignore[arg-type]
    ("register-agent-empty", lambda: register_agent(""), "name"),
    ("register-provider-int", lambda: register_provider(5), "register_provider(name)"),  # type: ignore[arg-type]
    ("register-provider-space", lambda: register_provider("a b"), "register_provider(name)"),
    ("register-env-path", lambda: register_env("../x"), "register_env(name)"),
    ("register-env-int", lambda: register_env(1), "register_env(name)"),  # type: ignore[arg-type]
    ("scorer-int-name", lambda: scorer(1, formats=("*",)), "scorer(name)"),  # type: ignore[arg-type]
    ("scorer-formats-string", lambda: scorer("s", formats="*"), "scorer(formats=...)"),  # type: ignore[arg-type]
    ("scorer-needs-item", lambda: scorer("s", formats=("*",), needs=(1,)), "scorer(needs=...)"),  # type: ignore[arg-type]
    ("scorer-not-a-scorer", lambda: scorer("s_x", formats=("*",))(int), "@scorer('s_x')"),  # type: ignore[arg-type]
    ("load-dataset-int-path", lambda: load_dataset(5, "bfcl"), "load_dataset(path)"),  # type: ignore[arg-type]
    ("load-dataset-empty-path", lambda: load_dataset("", "bfcl"), "load_dataset(path)"),
    ("load-dataset-int-format", lambda: load_dataset(".", 5), "load_dataset(format)"),  # type: ignore[arg-type]
    ("load-tools-none", lambda: load_tools(None, "bfcl"), "load_tools(path)"),  # type: ignore[arg-type]
    ("tool-string", lambda: tool("get_weather"), "tool(fn)"),  # type: ignore[call-overload]
    ("tool-int", lambda: tool(5), "tool(fn)"),  # type: ignore[call-overload]
    ("tool-name-int", lambda: tool(name=5), "tool(name=...)"),  # type: ignore[call-overload]
    ("tool-name-empty", lambda: tool(name=""), "tool(name=...)"),
    ("tool-description-int", lambda: tool(description=1), "tool(description=...)"),  # type: ignore[call-overload]
    ("tool-timeout-negative", lambda: tool(timeout=-1), "tool(timeout=...)"),
    ("tool-timeout-string", lambda: tool(timeout="1"), "tool(timeout=...)"),  # type: ignore[call-overload]
    ("tool-sandboxed-string", lambda: tool(sandboxed="yes"), "tool(sandboxed=...)"),  # type: ignore[call-overload]
    ("tool-decorates-int", lambda: tool(name="x")(3), "@tool(...)"),  # type: ignore[arg-type]
    ("param-description-int", lambda: Param(5), "Param(description)"),  # type: ignore[arg-type]
    ("param-optional-string", lambda: Param(optional="no"), "Param(optional=...)"),  # type: ignore[arg-type]
    ("path-component-none", lambda: path_component(None, "thing"), "thing"),
]


@pytest.mark.parametrize(
    "call,argument", [c[1:] for c in OTHER_CASES], ids=[c[0] for c in OTHER_CASES]
)
def test_other_entry_points_name_the_wrong_argument(
    call: Callable[[], object], argument: str
) -> None:
    with pytest.raises(ArgumentError) as err:
        call()
    assert isinstance(err.value, TypeError)
    assert argument in str(err.value), str(err.value)


@pytest.mark.parametrize(
    "name", ["weather", "bfcl-2", "a b", "x:y", ".hidden", "é", "a.b.c", "x" * 200]
)
def test_path_component_keeps_harmless_names(name: str) -> None:
    assert path_component(name, "name") == name


def test_a_model_object_and_a_dataset_object_are_accepted(tmp_path: Path) -> None:
    ds = Dataset(name="mine", format="toollab", instances=INSTANCES[:1])
    task = Task(dataset=ds, agent="single", scorers=("environment",), max_tokens=16, max_turns=1)
    log = evaluate(task, FakeModel(outputs=["no call"]), log_dir=tmp_path, constrained=False)
    assert log.tasks[0].name == "mine"


# -- model strings: a provider that needs a model part gets one, before any work ----------------
@pytest.mark.parametrize(
    "spec", ["llamacpp:", "llamacpp:  ", "replay:", "llamacpp:?n_ctx=512", "llamacpp:+lora=a.gguf",
             "replay:?max_concurrency=2"],
)  # fmt: skip
def test_an_empty_model_part_is_refused_up_front(spec: str) -> None:
    from toollab.models.registry import ModelSource, check_model_string

    with pytest.raises(UsageError, match="no model part") as err:
        check_model_string(spec)
    assert spec.split(":")[0] in str(err.value)
    with pytest.raises(UsageError, match="no model part"):
        ModelSource(spec)


@pytest.mark.parametrize("spec", ["fake:", "oracle:", "oracle", "bundled:", "hf:", "llamacpp:m.gguf",
                                  "openai:m@http://127.0.0.1:1/v1", "replay:r.jsonl",
                                  # openai: without a name takes the first model the server lists
                                  "openai:", "openai:@http://127.0.0.1:1/v1"])  # fmt: skip
def test_model_strings_that_need_no_model_part_still_pass(spec: str) -> None:
    from toollab.models.registry import check_model_string

    check_model_string(spec)


@pytest.mark.parametrize("flag", ["-m", "--judge"])
@pytest.mark.parametrize("spec", ["llamacpp:", "replay:"])
def test_eval_refuses_an_empty_model_part_before_any_work(
    flag: str, spec: str, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from toollab.cli.main import app

    data = tmp_path / "d.jsonl"
    gen = ["data", "generate", "--env", "weather", "--n", "2", "--out", str(data)]
    assert CliRunner().invoke(app, gen).exit_code == 0
    model = ["-m", spec] if flag == "-m" else ["-m", "oracle", "--judge", spec]
    args = ["eval", *model, "-d", str(data), "-f", "toollab", "--out", str(tmp_path / "r")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2 and "no model part" in res.output, res.output
    assert not (tmp_path / "r").exists()


# -- synthesis configs: the options' rules, at the API level ------------------------------------
NAN, INF = float("nan"), float("inf")
SYNTH_CONFIG_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("deer", {"call_ratio": NAN}, "DeerConfig.call_ratio"),
    ("deer", {"call_ratio": INF}, "DeerConfig.call_ratio"),
    ("deer", {"call_ratio": 1.5}, "DeerConfig.call_ratio"),
    ("deer", {"valid_ratio": NAN}, "DeerConfig.valid_ratio"),
    ("deer", {"valid_ratio": 1.0}, "DeerConfig.valid_ratio"),
    ("deer", {"mix": (NAN, 1.0, 1.0)}, "DeerConfig.mix"),
    ("deer", {"mix": (1.0, INF, 1.0)}, "DeerConfig.mix"),
    ("deer", {"mix": (0.0, 0.0, 0.0)}, "DeerConfig.mix"),
    ("deer", {"mix": (-1.0, 1.0, 1.0)}, "DeerConfig.mix"),
    ("deer", {"seen": 1.5}, "DeerConfig.seen"),
    ("deer", {"k": True}, "DeerConfig.k"),
    ("deer", {"nosearch": -1}, "DeerConfig.nosearch"),
    ("deer", {"seed": -1}, "DeerConfig.seed"),
    ("deer", {"mode": "cluster"}, "DeerConfig.mode"),
    ("deer", {"small_cluster": "crash"}, "DeerConfig.small_cluster"),
    ("teacher", {"timeout_s": NAN}, "TeacherConfig.timeout_s"),
    ("teacher", {"timeout_s": INF}, "TeacherConfig.timeout_s"),
    ("teacher", {"timeout_s": 0.0}, "TeacherConfig.timeout_s"),
    ("teacher", {"temperature": NAN}, "TeacherConfig.temperature"),
    ("teacher", {"temperature": -INF}, "TeacherConfig.temperature"),
    ("teacher", {"top_p": NAN}, "TeacherConfig.top_p"),
    ("teacher", {"backoff_s": INF}, "TeacherConfig.backoff_s"),
    ("teacher", {"backoff_s": -1.0}, "TeacherConfig.backoff_s"),
    ("teacher", {"retries": -1}, "TeacherConfig.retries"),
    ("teacher", {"retries": 2.0}, "TeacherConfig.retries"),
    ("teacher", {"concurrency": 0}, "TeacherConfig.concurrency"),
    ("teacher", {"max_tokens": 0}, "TeacherConfig.max_tokens"),
    ("teacher", {"attempts": 10**9}, "TeacherConfig.attempts"),
    ("teacher", {"max_consecutive_failures": 0}, "TeacherConfig.max_consecutive_failures"),
    ("teacher", {"model": 5}, "TeacherConfig.model"),
]


@pytest.mark.parametrize(
    ("which", "fields", "named"), SYNTH_CONFIG_CASES, ids=[c[2] + "=" + str(c[1]) for c in SYNTH_CONFIG_CASES]
)  # fmt: skip
def test_synth_configs_check_their_numbers(which: str, fields: dict[str, Any], named: str) -> None:
    from toollab.synth.deer import DeerConfig
    from toollab.synth.teacher import Teacher, TeacherConfig

    with pytest.raises(InputError) as err:
        if which == "deer":
            DeerConfig(**fields).check(100)
        else:
            Teacher("fake:", TeacherConfig(**{"model": "fake:", **fields}))
    assert named in str(err.value), err.value


def test_synth_configs_defaults_pass() -> None:
    from toollab.synth.deer import DeerConfig
    from toollab.synth.teacher import TeacherConfig

    DeerConfig().check(1000)
    TeacherConfig().check()
    TeacherConfig(model="fake:", concurrency=4, temperature=0.0, top_p=0.5).check()


@pytest.mark.parametrize("spec", ["llamacpp:", "replay:", "nope:"])
def test_a_teacher_config_checks_its_model_string_before_loading(spec: str) -> None:
    from toollab.synth.teacher import TeacherConfig

    with pytest.raises(UsageError):
        TeacherConfig(model=spec).check()


# -- recipe names are path components ------------------------------------------------------------
@pytest.mark.parametrize("name", ["../../etc/passwd", "..", "a/b", "x\0y", "", "a\\b", "x" * 300])
def test_a_recipe_name_never_leaves_the_recipes_folder(name: str) -> None:
    from toollab.train.recipes import recipe_path

    with pytest.raises(UsageError, match="no training recipe"):
        recipe_path(name)


def test_a_shipped_recipe_and_a_yaml_path_still_resolve(tmp_path: Path) -> None:
    from toollab.train.recipes import DEFAULT_RECIPE, recipe_path

    assert recipe_path(DEFAULT_RECIPE).is_file()
    f = tmp_path / "mine.yaml"
    f.write_text("output_dir: o\n")
    assert recipe_path(str(f)) == f
