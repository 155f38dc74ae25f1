"""``toollab data generate`` and ``toollab bench`` on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.envs import env_names
from toollab.envs.bench import call_counts, summarise
from toollab.envs.generate import generate
from toollab.eval.record import Prediction
from toollab.parsing import ParseResult
from toollab.schema import ToolCall

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
    ds = load_dataset(out, "toollab")
    expected = generate("home_search", "test", 10, 4) + generate("weather", "test", 10, 4)
    assert [i.id for i in ds.instances] == [i.id for i in expected]
    assert [i.gold for i in ds.instances] == [i.gold for i in expected]


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
    data = json.loads(r.stdout)
    assert data["model"] == "bundled:smollm2-135m" and data["constrained"] is True
    for name in ("realtime_search", "info_retrieval"):
        row = data["envs"][name]
        assert row["n"] == 1 and row["success"] in (0.0, 1.0)
        preds = (out / "runs" / name / "predictions.jsonl").read_text().splitlines()
        assert len(preds) == 1 and json.loads(preds[0])["usage"]["completion_tokens"] > 0
