"""``toollab data generate`` and ``toollab bench`` on the command line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.envs import env_names
from toollab.envs.generate import generate
from toollab.eval.bench import BenchResult, EnvSummary, call_counts, summarise
from toollab.eval.record import Prediction
from toollab.parsing import ParseResult
from toollab.schema import GoldCall, Instance, ToolCall

runner = CliRunner()


def test_data_generate_writes_loadable_jsonl(tmp_path: Path) -> None:
    from toollab.data import load_dataset

    out = tmp_path / "gen.jsonl"
    r = runner.invoke(
        app,
        [
            "data",
            "generate",
            "--env",
            "home_search,weather",
            "--split",
            "test",
            "--n",
            "10",
            "--seed",
            "4",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["instances"] == 20 and set(summary["envs"]) == {"home_search", "weather"}
    assert summary["envs"]["home_search"]["api_complexity"] > 0
    # the figures are also written next to the data
    stats = json.loads((tmp_path / "gen.jsonl.stats.json").read_text())
    assert stats["envs"] == summary["envs"] and stats["split"] == "test"
    assert "training split" in stats["api_complexity_definition"]
    ds = load_dataset(out, "toollab")
    expected = generate("home_search", "test", 10, 4) + generate("weather", "test", 10, 4)
    assert [i.id for i in ds.instances] == [i.id for i in expected]
    assert [i.gold for i in ds.instances] == [i.gold for i in expected]


def test_data_generate_train_complexity_leaves_each_case_out(tmp_path: Path) -> None:
    from toollab.envs.generate import loo_complexity, split_complexity

    out = tmp_path / "train.jsonl"
    args = ["data", "generate", "--env", "finance", "--n", "40", "--out", str(out), "--json"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.stderr
    row = json.loads(r.stdout)["envs"]["finance"]
    insts = generate("finance", "train", 40, 0)
    assert row["api_complexity"] == loo_complexity("finance", insts)
    # not the score of the split against itself, where every case is its own demonstration
    assert row["api_complexity"] > split_complexity("finance", insts, insts)
    assert json.loads((tmp_path / "train.jsonl.stats.json").read_text())[
        "api_complexity_definition"
    ].startswith("leave-one-out")


def test_data_generate_bad_input(tmp_path: Path) -> None:
    r = runner.invoke(
        app, ["data", "generate", "--env", "wether", "--out", str(tmp_path / "x.jsonl")]
    )
    assert r.exit_code == 2 and "did you mean 'weather'" in r.stderr
    r = runner.invoke(
        app,
        [
            "data",
            "generate",
            "--env",
            "weather",
            "--split",
            "dev",
            "--out",
            str(tmp_path / "x.jsonl"),
        ],
    )
    assert r.exit_code == 2 and "unknown split" in r.stderr
    assert not (tmp_path / "x.jsonl").exists()  # nothing written, not even an empty file
    r = runner.invoke(
        app,
        [
            "data",
            "generate",
            "--env",
            "weather",
            "--mix",
            "1,2",
            "--out",
            str(tmp_path / "x.jsonl"),
        ],
    )
    assert r.exit_code == 2 and "--mix" in r.stderr


def _generate(*args: str) -> object:
    return runner.invoke(app, ["data", "generate", "--env", "weather", "--n", "3", *args])


@pytest.mark.parametrize("mix", ["nan,1,1", "inf,1,1", "1,-inf,1", "0,0,0", "1,-1,1"])
def test_data_generate_refuses_shares_that_are_not_finite(tmp_path: Path, mix: str) -> None:
    r = _generate("--mix", mix, "--out", str(tmp_path / "x.jsonl"))
    assert r.exit_code == 2, r.stdout  # type: ignore[attr-defined]
    assert "--mix takes three finite, non-negative shares" in r.stderr  # type: ignore[attr-defined]
    assert r.exception is None or isinstance(r.exception, SystemExit)  # type: ignore[attr-defined]
    assert not (tmp_path / "x.jsonl").exists()


def test_data_generate_output_that_cannot_be_written_is_a_clear_error(tmp_path: Path) -> None:
    r = _generate("--out", str(tmp_path))  # a directory
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit)  # type: ignore[attr-defined]
    assert f"{tmp_path}: --out is a directory" in r.stderr  # type: ignore[attr-defined]
    (tmp_path / "file").write_text("x")
    r = _generate("--out", str(tmp_path / "file" / "x.jsonl"))  # a file where a folder goes
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit)  # type: ignore[attr-defined]
    assert "a file is where a folder should be" in r.stderr  # type: ignore[attr-defined]


def test_data_generate_sidecar_is_named_after_the_full_file_name(tmp_path: Path) -> None:
    """``a.jsonl`` and ``a.json`` once both wrote ``a.stats.json``."""
    for name, split in (("a.jsonl", "train"), ("a.json", "test")):
        r = _generate("--split", split, "--out", str(tmp_path / name), "--json")
        assert r.exit_code == 0, r.stderr  # type: ignore[attr-defined]
        assert json.loads(r.stdout)["stats"] == str(tmp_path / f"{name}.stats.json")  # type: ignore[attr-defined]
    figures = {p.name: json.loads(p.read_text())["split"] for p in tmp_path.glob("*.stats.json")}
    assert figures == {"a.jsonl.stats.json": "train", "a.json.stats.json": "test"}
    # the sidecar never overwrites the data, whatever the file is called
    r = _generate("--out", str(tmp_path / "b.stats.json"), "--json")
    assert r.exit_code == 0 and (tmp_path / "b.stats.json.stats.json").exists()  # type: ignore[attr-defined]
    assert len((tmp_path / "b.stats.json").read_text().splitlines()) == 3


def test_bench_oracle_succeeds_everywhere(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    r = runner.invoke(
        app, ["bench", "--model", "oracle", "--limit", "2", "--out", str(out), "--json"]
    )
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    assert set(data["envs"]) == set(env_names())
    for name, row in data["envs"].items():
        assert row["success"] == 1.0 and row["crash_rate"] == 0.0, name
        assert row["tool_f1"] == 1.0 and row["param_f1"] == 1.0 and row["decision_acc"] == 1.0, name
    assert (out / "report.html").is_file() and (out / "bench.json").is_file()
    assert (out / "runs" / "weather" / "predictions.jsonl").is_file()


def test_bench_unknown_env_is_bad_input(tmp_path: Path) -> None:
    r = runner.invoke(
        app, ["bench", "--model", "oracle", "--envs", "home_serch", "--out", str(tmp_path)]
    )
    assert r.exit_code == 2 and "did you mean 'home_search'" in r.stderr
    known = r.stderr.split("known:", 1)[1].replace("\n", " ").split(",")
    names = [k.strip() for k in known]
    assert names == sorted(names) and set(names) >= set(env_names())


def test_bench_bad_model_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    r = runner.invoke(app, ["bench", "--model", "nosuch:x", "--out", str(out)])
    assert r.exit_code == 2 and "unknown model provider 'nosuch'" in r.stderr
    assert not out.exists()


def test_bench_table_is_readable_at_80_columns() -> None:
    from rich.console import Console

    from toollab.cli.bench_cmd import columns, print_table

    res = BenchResult(model="bundled:smollm2-135m", agent=None, constrained=True, limit=6, seed=0)
    res.wall_s = 433.0
    for name in env_names():
        res.envs.append(
            EnvSummary(
                env=name,
                n=120,
                n_call=96,
                success=1.0,
                crash_rate=0.125,
                dict_f1=0.333,
                tool_f1=1.0,
                param_f1=0.5,
                decision_acc=1.0,
                lcs=0.75 if name == "household" else None,
                seconds=1234.0,
                api_complexity=12.345,
            )
        )
    con = Console(width=80, record=True, color_system=None)
    print_table(res, con)
    text = con.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    header = next(line for line in text.splitlines() if line.startswith("env "))
    assert header.split() == [h for h, _ in columns()]
    assert "data_understanding  120    100.0   12.5    33.3   100.0   50.0  100.0  12.3" in text
    assert "dec: (%) every instance: call vs. no call" in text
    assert "household: LCS 75.0 %" in text


def test_summary_counts_crashes_wrong_calls_and_decisions() -> None:
    insts = generate("home_search", "test", 10, seed=1)
    preds = []
    for inst in insts:
        if inst.gold:  # a program missing its first call: crashes on the ordering rule
            calls = [ToolCall(name=c.name, arguments=c.arguments) for c in inst.gold[1:]]
            preds.append(
                Prediction(
                    id=inst.id,
                    parsed=ParseResult.ok(calls),
                    execution={"crashed": True, "success": False, "f1": 0.0},
                )
            )
        else:  # a call where no call is right
            preds.append(
                Prediction(
                    id=inst.id,
                    parsed=ParseResult.ok([ToolCall(name="search")]),
                    execution={"crashed": False, "success": False},
                )
            )
    s = summarise("home_search", insts, preds)
    assert s.success == 0.0 and s.crash_rate == 1.0 and s.dict_f1 == 0.0
    assert s.decision_acc == pytest.approx(8 / 10)
    assert s.tool_f1 is not None and 0 < s.tool_f1 < 1


def test_tool_and_param_f1_take_the_best_acceptable_program() -> None:
    """A prediction equal to an alternative program scores 1.0, as success does."""
    gold = [
        GoldCall(name="Walk", arguments={"object": "kitchen"}),
        GoldCall(name="Find", arguments={"object": "apple"}),
    ]
    alt = [GoldCall(name="Find", arguments={"object": "apple"})]
    inst = Instance(id="h1", query="q", gold=gold, alternatives=[alt], source="env:household")
    pred = Prediction(
        id="h1",
        parsed=ParseResult.ok([ToolCall(name="Find", arguments={"object": "apple"})]),
        execution={"crashed": False, "success": True, "f1": 1.0},
    )
    s = summarise("household", [inst], [pred])
    assert s.tool_f1 == 1.0 and s.param_f1 == 1.0
    # against the gold program alone the same prediction would miss a call
    ct, pt, gt, *_ = call_counts(pred.parsed.calls, gold)  # type: ignore[union-attr]
    assert (ct, pt, gt) == (1, 1, 2)
    # a worse alternative never lowers the score of a prediction that matches the gold
    exact = Prediction(
        id="h1", parsed=ParseResult.ok([ToolCall(name=c.name, arguments=c.arguments) for c in gold])
    )
    assert summarise("household", [inst], [exact]).tool_f1 == 1.0


def test_acceptable_values_count_as_correct_arguments() -> None:
    g = [GoldCall(name="f", arguments={"unit": "celsius"}, acceptable={"unit": ["celsius", "C"]})]
    assert call_counts([ToolCall(name="f", arguments={"unit": "C"})], g) == (1, 1, 1, 1, 1, 1)
    assert call_counts([ToolCall(name="f", arguments={"unit": "K"})], g) == (1, 1, 1, 0, 1, 1)


def test_call_counts_match_one_to_one() -> None:
    g = [ToolCall(name="a", arguments={"x": 1}), ToolCall(name="a", arguments={"x": 2})]
    p = [
        ToolCall(name="a", arguments={"x": 2}),
        ToolCall(name="a", arguments={"x": 2}),
        ToolCall(name="b"),
    ]
    assert call_counts(p, g) == (2, 3, 2, 1, 2, 2)


@pytest.mark.slow
def test_bench_bundled_model_small_run(tmp_path: Path, bundled_gguf: Path) -> None:
    out = tmp_path / "real"
    r = runner.invoke(
        app,
        [
            "bench",
            "--envs",
            "realtime_search,info_retrieval",
            "--limit",
            "1",
            "--max-tokens",
            "16",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    # the default: the bundled model and its tool-tuned version, side by side
    combined = json.loads(r.stdout)
    assert [m["model"] for m in combined["models"]] == [
        "bundled:smollm2-135m",
        "bundled:smollm2-135m-tools",
    ]
    assert Path(combined["report"]).is_file()
    assert json.loads((out / "bench.json").read_text()) == combined
    for data in combined["models"]:
        assert data["constrained"] is True
        sub = Path(data["out"])
        assert sub.parent == out
        for name in ("realtime_search", "info_retrieval"):
            row = data["envs"][name]
            assert row["n"] == 1 and row["success"] in (0.0, 1.0)
            preds = (sub / "runs" / name / "predictions.jsonl").read_text().splitlines()
            assert len(preds) == 1 and json.loads(preds[0])["usage"]["completion_tokens"] > 0
            # one definition of each figure: --json, results.json and `toollab score` agree
            results = json.loads((sub / "runs" / name / "results.json").read_text())
            figures = results["metrics"]["environment"]
            assert {k: row[k] for k in figures} == figures
            s = runner.invoke(app, ["score", str(sub / "runs" / name), "--json"])
            assert s.exit_code == 0, s.stderr
            assert json.loads(s.stdout)["metrics"]["environment"] == figures


def test_bench_two_models_side_by_side(tmp_path: Path) -> None:
    out = tmp_path / "two"
    r = runner.invoke(
        app,
        ["bench", "-m", "oracle,fake:", "--envs", "weather", "-n", "2", "--out", str(out)],
    )
    assert r.exit_code == 0, r.stderr
    data = json.loads((out / "bench.json").read_text())
    assert [m["model"] for m in data["models"]] == ["oracle", "fake:"]
    assert data["models"][0]["overall"]["success"] == 1.0
    assert data["models"][1]["overall"]["success"] == 0.0
    assert (out / "oracle" / "report.html").is_file() and (out / "report.html").is_file()
    # the terminal view: one column per model, each figure's mean and each environment's success
    from rich.console import Console

    from toollab.cli.bench_cmd import print_comparison
    from toollab.eval.bench import BenchResult, EnvSummary

    results = []
    for m in data["models"]:
        res = BenchResult(
            model=m["model"], agent=None, constrained=True, limit=2, seed=0, wall_s=m["wall_s"]
        )
        for env, row in m["envs"].items():
            res.envs.append(
                EnvSummary(**{"env": env, **{k: v for k, v in row.items() if k != "env"}})
            )
        results.append(res)
    buf = io.StringIO()
    print_comparison(results, Console(file=buf, width=80))
    lines = buf.getvalue().splitlines()
    assert any(line.split()[:3] == ["success", "100.0", "0.0"] for line in lines), lines
    assert any(line.split() == ["weather", "success", "100.0", "0.0"] for line in lines), lines


def test_bench_second_bad_model_runs_nothing(tmp_path: Path) -> None:
    out = tmp_path / "bad"
    r = runner.invoke(app, ["bench", "-m", "oracle", "-m", "nosuch:x", "--out", str(out)])
    assert r.exit_code == 2 and "nosuch" in r.stderr
    assert not out.exists()


def _env_instance(env: str, tool: str, want: object) -> Instance:
    """The first generated Call instance of ``env`` whose gold program calls ``tool`` and
    satisfies ``want(call)``."""
    for inst in generate(env, "train", 200, 0, (1, 0, 0)):
        if any(c.name == tool and want(c) for c in inst.gold):  # type: ignore[operator]
            return inst
    raise AssertionError(f"no {env} instance calls {tool}")


def _summary_of(env: str, inst: Instance, calls: list[ToolCall]) -> EnvSummary:
    pred = Prediction(
        id=inst.id,
        parsed=ParseResult.ok(calls),
        execution={"crashed": False, "success": True, "f1": 1.0},
    )
    return summarise(env, [inst], [pred])


def test_param_f1_compares_numbers_by_value() -> None:
    """Finance gold amounts are floats (285.0); a prediction saying 285 is right."""
    inst = _env_instance(
        "finance",
        "pay_bill",
        lambda c: isinstance(c.arguments["amount"], float) and c.arguments["amount"].is_integer(),
    )
    calls = [
        ToolCall(
            name=c.name,
            arguments={
                k: int(v) if isinstance(v, float) and v.is_integer() else v
                for k, v in c.arguments.items()
            },
        )
        for c in inst.gold
    ]
    assert any(type(c.arguments["amount"]) is int for c in calls if c.name == "pay_bill")
    assert _summary_of("finance", inst, calls).param_f1 == 1.0
    # nested numbers too; a boolean is not a number
    g = [GoldCall(name="f", arguments={"xs": [1.0, 2.5], "flag": True})]
    assert call_counts([ToolCall(name="f", arguments={"xs": [1, 2.5], "flag": True})], g)[3] == 2
    assert call_counts([ToolCall(name="f", arguments={"xs": [1, 2.5], "flag": 1})], g)[3] == 1


def test_param_f1_counts_a_stated_default_like_an_omitted_one() -> None:
    """Gold leaves out ``k`` (default 3); a prediction saying ``k=3`` is right, and defaults
    neither side states are not counted."""
    inst = _env_instance("data_understanding", "top_rows", lambda c: "k" not in c.arguments)
    tool = next(t for t in inst.tools if t.name == "top_rows")
    k_default = tool.properties["k"]["default"]
    calls = [
        ToolCall(
            name=c.name,
            arguments={**c.arguments, "k": k_default} if c.name == "top_rows" else c.arguments,
        )
        for c in inst.gold
    ]
    s = _summary_of("data_understanding", inst, calls)
    assert s.param_f1 == 1.0 and s.tool_f1 == 1.0
    top = next(c for c in inst.gold if c.name == "top_rows")
    tools = {t.name: t for t in inst.tools}
    stated = ToolCall(name="top_rows", arguments={**top.arguments, "k": k_default})
    n = len(top.arguments) + 1
    assert call_counts([stated], [top], tools) == (1, 1, 1, n, n, n)
    # a different k is wrong on both sides; the untouched default `ascending` is not counted
    other = ToolCall(name="top_rows", arguments={**top.arguments, "k": k_default + 2})
    assert call_counts([other], [top], tools) == (1, 1, 1, n - 1, n, n)
    assert "ascending" not in top.arguments
