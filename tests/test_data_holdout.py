"""``toollab data holdout``: a dataset split by tools, so that a recipe trained on it can still be
chosen with tools it never saw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.data import load_dataset
from toollab.data.holdout import hold_out_tools
from toollab.errors import UsageError
from toollab.schema import GoldCall, Instance, Tool

runner = CliRunner()


def _inst(i: int, called: list[str], offered: list[str]) -> Instance:
    return Instance(
        id=f"x{i}",
        query=f"query {i}",
        tools=[Tool(name=n, description=n) for n in offered],
        gold=[GoldCall(name=n, arguments={}) for n in called],
    )


def test_the_parts_never_share_a_held_out_tool(shared_data: Path) -> None:
    ds = load_dataset(shared_data / "seal-tools" / "dev.jsonl", "seal-tools")
    split = hold_out_tools(ds.instances, 0.05, seed=0)
    held = set(split.held_out_tools)
    called = {c.name for i in ds.instances for c in i.gold}
    assert len(held) == round(0.05 * len(called))
    assert len(split.train) + len(split.validation) + len(split.left_out) == len(ds)
    assert all(any(c.name in held for c in i.gold) for i in split.validation)
    for inst in split.train:  # never called, never offered
        assert not {c.name for c in inst.gold} & held and not {t.name for t in inst.tools} & held
    for inst in split.left_out:
        assert {t.name for t in inst.tools} & held and not {c.name for c in inst.gold} & held
    # the draw depends on the names and the seed, not on the order of the instances
    again = hold_out_tools(list(reversed(ds.instances)), 0.05, seed=0)
    assert again.held_out_tools == split.held_out_tools
    assert hold_out_tools(ds.instances, 0.05, seed=1).held_out_tools != split.held_out_tools


def test_toollab_files_run_with_the_defaults_of_the_one_source_they_came_from() -> None:
    from toollab.data import get_adapter

    native = get_adapter("toollab")
    seal = [_inst(i, ["a"], ["a"]).model_copy(update={"source": "seal-tools"}) for i in range(2)]
    assert native.defaults_for(seal).default_template == "seal"
    deer = seal[0].model_copy(update={"source": "deer", "id": "d"})
    assert native.defaults_for([*seal, deer]) is native  # mixed sources: toollab's own
    generated = seal[0].model_copy(update={"source": "env:weather"})
    assert native.defaults_for([generated]) is native
    assert get_adapter("seal-tools").defaults_for(seal) is get_adapter("seal-tools")


def test_bad_shares_and_too_few_tools_are_usage_errors() -> None:
    insts = [_inst(0, ["a"], ["a", "b"]), _inst(1, ["b"], ["b"])]
    for share in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(UsageError, match="--share"):
            hold_out_tools(insts, share)
    with pytest.raises(UsageError, match="1 distinct tool"):
        hold_out_tools(insts[1:], 0.5)
    split = hold_out_tools(insts, 0.99)  # one tool is always kept for training
    assert len(split.held_out_tools) == 1


def test_cli_writes_parts_that_read_back_and_score_as_the_source(
    shared_data: Path, tmp_path: Path
) -> None:
    out = tmp_path / "seal-dev"
    dev = shared_data / "seal-tools" / "dev.jsonl"
    r = runner.invoke(
        app,
        [
            "data",
            "holdout",
            str(dev),
            "-f",
            "seal-tools",
            "--share",
            "0.05",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    figures = json.loads(r.stdout)
    tools = (out / "held-out-tools.txt").read_text().split()
    assert figures["held_out_tools"] == len(tools) == len(figures["tools"])
    train = load_dataset(out / "train.jsonl", "toollab")
    validation = load_dataset(out / "validation.jsonl", "toollab")
    assert (len(train), len(validation)) == (figures["train"], figures["validation"])
    assert {i.split for i in train} == {"train"} and {i.split for i in validation} == {"validation"}
    source = {i.id: i for i in load_dataset(dev, "seal-tools")}
    first = validation.instances[0]
    assert first.gold == source[first.id].gold and first.metadata["calling"]
    # read back, the held-out part runs as Seal-Tools does: its template, its scorer
    run = tmp_path / "run"
    r = runner.invoke(
        app,
        ["eval", "--data", str(out / "validation.jsonl"), "-f", "toollab",
         "-m", "oracle", "-n", "4", "--out", str(run), "--json"],
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert json.loads((run / "run.json").read_text())["template"] == "seal"
    assert json.loads((run / "results.json").read_text())["metrics"]["seal_tools"]["tool_f1"] == 1.0
    bad = runner.invoke(
        app, ["data", "holdout", str(dev), "-f", "seal-tools", "--share", "1.5", "--out", str(out)]
    )
    assert bad.exit_code == 2 and "--share" in bad.stderr
