"""``toollab train glpft``: α-UMi's two-stage GLPFT on a tiny random Llama (the bundled model's
tokenizer), a few steps per stage — the four role outputs, stage 2 started from stage 1, the run
record, resuming, the role data as upstream renders it, and bad input refused with exit 2."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.data.alpha_umi import EOS, SYSTEM, Trace, Turn, role_samples
from toollab.sft.alpha_umi import env_traces, write_traces
from toollab.train.glpft import STAGES, GlpftConfig, held_out_split, role_data, stage_config

ENV = "weather"


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("traces") / "weather-train.json"
    return write_traces(env_traces(ENV, "train", 4), out)


def _write(path: Path, records: list[Any]) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def _cli(*args: str) -> Any:
    return CliRunner().invoke(app, ["train", "glpft", *args])


# -- the data ------------------------------------------------------------------------------------
def test_role_data_is_upstreams_rendering(traces: Path) -> None:
    data, counts = role_data([str(traces)])
    assert counts == {str(traces): 4}
    trace = Trace.model_validate(json.loads(traces.read_text())[0])
    sample = next(s for s in role_samples(trace) if s.role == "caller")
    ex = next(e for e in data["caller"] if e["id"] == f"{trace.id}@{sample.turn}:caller")
    text = str(ex["text"])
    assert text == SYSTEM + sample.input + sample.target + EOS
    assert text.startswith("system: You have assess to the following apis:")
    ((start, end),) = ex["spans"]  # type: ignore[misc]
    assert text[start:end] == sample.target + "</s>" and text[start:].startswith("Action: ")
    assert ex["spans_apart"] is True
    assert all(data[s] for s in STAGES)


def test_prompt_and_target_are_tokenized_apart() -> None:
    """The cue's trailing space stays a token of the prompt (as the agent's prompt is read) and
    the target's first word carries loss."""
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from toollab.train.base import resolve_base
    from toollab.train.data import IGNORE_INDEX, SFTExample, encode

    tok = AutoTokenizer.from_pretrained(str(resolve_base("bundled").folder))
    prompt, target = "system: history assistant: ", "The user asks</s>"
    text = prompt + target
    apart = SFTExample("a", text, [(len(prompt), len(text))], spans_apart=True)
    e = encode(apart, tok, 512, "left")
    want = tok(prompt, add_special_tokens=False)["input_ids"]
    assert e.input_ids[: len(want)] == want
    assert tok.decode([t for t in e.labels if t != IGNORE_INDEX]) == target
    whole = encode(SFTExample("a", text, [(len(prompt), len(text))]), tok, 512, "left")
    assert tok.decode([t for t in whole.labels if t != IGNORE_INDEX]) != target  # " The" lost


# -- bad input -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["weather-test.json", "envs_validation.json", "x.val.json"])
def test_held_out_files_are_refused(traces: Path, tmp_path: Path, name: str) -> None:
    bad = tmp_path / name
    bad.write_text(traces.read_text(), encoding="utf-8")
    res = _cli("--output-dir", str(tmp_path / "run"), "--traces", str(bad))
    assert res.exit_code == 2, res.output
    assert name in res.output and "not for training" in res.output
    assert not (tmp_path / "run").exists()
    assert held_out_split("latest-traces") is None  # a word, not a substring


def test_a_held_out_trace_in_a_train_file_is_refused(traces: Path, tmp_path: Path) -> None:
    records = json.loads(traces.read_text())
    records[2]["id"] = f"{ENV}/test/7"
    f = _write(tmp_path / "mixed-train.json", records)
    res = _cli("--output-dir", str(tmp_path / "run"), "--traces", str(f))
    assert res.exit_code == 2 and "weather/test/7" in res.output and "'test'" in res.output


def test_a_malformed_trace_names_the_file_record_and_turn(traces: Path, tmp_path: Path) -> None:
    records = json.loads(traces.read_text())
    turns = records[1]["conversations"]
    turns.insert(1, {"from": "caller", "value": "Action: x\nAction Input: {}"})
    f = _write(tmp_path / "bad-train.json", records)
    res = _cli("--output-dir", str(tmp_path / "run"), "--traces", str(f))
    assert res.exit_code == 2, res.output
    assert "bad-train.json" in res.output and "record 1, conversations[1]" in res.output
    assert "Traceback" not in res.output and not (tmp_path / "run").exists()


def test_a_role_without_samples_is_refused(tmp_path: Path) -> None:
    """Traces that never conclude leave the summarizer without data."""
    gave_up = Trace(
        tools=[],
        instruction="Do the impossible.",
        conversations=[
            Turn.of("user", "Do the impossible."),
            Turn.of("assistant", "No tool can do this.\n Next: give up."),
        ],
    )
    f = _write(tmp_path / "gave-up-train.json", [gave_up.to_json()])
    res = _cli("--output-dir", str(tmp_path / "run"), "--traces", str(f))
    assert res.exit_code == 2 and "no caller sample" in res.output, res.output


def test_a_folder_or_an_sft_run_is_refused(traces: Path, tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    res = _cli("--output-dir", str(tmp_path / "run"), "--traces", str(folder))
    assert res.exit_code == 2 and "is not a file" in res.output
    sft_run = tmp_path / "sft"
    sft_run.mkdir()
    (sft_run / "run.json").write_text(json.dumps({"status": "finished", "config": {}}))
    res = _cli("--output-dir", str(sft_run), "--traces", str(traces))
    assert res.exit_code == 2 and "not a GLPFT run" in res.output


def test_config_names_the_stage_option(tmp_path: Path) -> None:
    res = _cli("--output-dir", str(tmp_path), "--traces", "t.json", "--planner-learning-rate", "2")
    assert res.exit_code == 2 and "planner_learning_rate" in res.output
    f = tmp_path / "g.yaml"
    f.write_text("output_dir: r\ntraces: [t-train.json]\nbackbone_epoch: 2\n")
    res = _cli("--config", str(f))
    assert res.exit_code == 2 and "backbone_epochs" in res.output  # did you mean
    ok = tmp_path / "ok.yaml"
    ok.write_text("output_dir: r\ntraces: [t-train.json]\n")
    cfg = GlpftConfig.load(ok)
    assert cfg.traces == [str(tmp_path / "t-train.json")]
    planner = stage_config(cfg, "planner", Path(cfg.output_dir))
    assert (planner.learning_rate, planner.epochs, planner.warmup_ratio) == (4e-5, 1.0, 0.2)
    assert planner.init_adapter == str(tmp_path / "r" / "backbone" / "adapter")
    backbone = stage_config(cfg, "backbone", Path(cfg.output_dir))
    assert (backbone.learning_rate, backbone.epochs, backbone.warmup_ratio) == (2e-4, 2.0, 0.4)
    assert backbone.init_adapter == "" and backbone.truncation == "left"
    shipped = GlpftConfig.load(Path(__file__).resolve().parents[1] / "configs" / "glpft-lora.yaml")
    assert dataclasses.asdict(shipped) | {"output_dir": "", "traces": []} == dataclasses.asdict(
        GlpftConfig()
    )  # the shipped config spells out the defaults


# -- a real run ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random two-layer Llama with the bundled model's tokenizer, as a transformers folder."""
    pytest.importorskip("trl")
    pytest.importorskip("peft")
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from toollab.train.base import resolve_base

    tok = AutoTokenizer.from_pretrained(str(resolve_base("bundled").folder))
    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=512,
            tie_word_embeddings=True,
        )
    )
    folder = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(str(folder))
    tok.save_pretrained(str(folder))
    return folder


def _adapter(folder: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return dict(load_file(str(folder / "adapter" / "adapter_model.safetensors")))


def test_glpft_trains_four_roles_and_resumes(tiny_base: Path, traces: Path, tmp_path: Path) -> None:
    import torch

    out = tmp_path / "run"
    cfg = tmp_path / "glpft.yaml"
    cfg.write_text(
        f"output_dir: {out}\ntraces: [{traces}]\nbase: {tiny_base}\nlora_r: 4\nlora_alpha: 8\n"
        "max_length: 256\nmax_steps: 2\nsave_steps: 1\neval_steps: 1\nlogging_steps: 1\n"
        "threads: 2\nbackbone_learning_rate: 0.01\nplanner_learning_rate: 0.000000001\n"
        "caller_learning_rate: 0.01\nsummarizer_learning_rate: 0.01\n",
        encoding="utf-8",
    )
    res = _cli("--config", str(cfg), "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "finished" and record["kind"] == "glpft"
    assert summary["outputs"] == record["outputs"]
    for stage in STAGES:
        assert record["outputs"][stage] == str(out / stage / "adapter")
        assert (out / stage / "adapter" / "adapter_model.safetensors").is_file()
        assert record["stages"][stage]["global_step"] == 2
        assert record["data"][stage]["samples"] > 0
    # stage 2 goes on from stage 1's adapter: the planner, trained at a learning rate of 1e-9,
    # still holds stage 1's weights (a fresh adapter's B matrices would be zero); the caller and
    # the summarizer moved away from them
    backbone = _adapter(out / "backbone")
    assert any(k.endswith("lora_B.weight") and v.abs().max() > 1e-4 for k, v in backbone.items())
    for role in ("planner", "caller", "summarizer"):
        run = json.loads((out / role / "run.json").read_text())
        assert run["config"]["init_adapter"] == str(out / "backbone" / "adapter")
        assert run["base"]["folder"] == str(tiny_base)  # one base, an adapter per role
        weights = _adapter(out / role)
        assert weights.keys() == backbone.keys()
        same = all(torch.allclose(weights[k], backbone[k], atol=1e-6) for k in weights)
        assert same == (role == "planner"), role
    bench = [c for c in record["commands"] if c.startswith("toollab bench --agent alpha-umi ")]
    assert bench and f"--role planner=+lora={out / 'planner' / 'gguf' / 'adapter.gguf'}" in bench[0]

    # a finished run is not started again
    again = _cli("--config", str(cfg))
    assert again.exit_code == 2 and "finished GLPFT run" in again.output

    # killed in the summarizer stage after its first checkpoint: the rerun keeps the three
    # finished stages and resumes the summarizer from checkpoint-1
    summ = out / "summarizer"
    for gone in ("adapter", "checkpoint-2"):
        shutil.rmtree(summ / gone)
    for run_json in (summ / "run.json", out / "run.json"):
        info = json.loads(run_json.read_text())
        info["status"] = "running"
        run_json.write_text(json.dumps(info))
    res = _cli("--config", str(cfg), "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert [summary["stages"][s]["kept"] for s in STAGES] == [True, True, True, False]
    assert summary["stages"]["summarizer"]["resumed_from"] == "checkpoint-1"
    assert (summ / "adapter" / "adapter_model.safetensors").is_file()
    assert json.loads((out / "run.json").read_text())["status"] == "finished"

    # other traces than the run started with: refused, nothing retrained
    info = json.loads((out / "run.json").read_text())
    info["status"] = "running"
    (out / "run.json").write_text(json.dumps(info))
    other = write_traces(env_traces(ENV, "train", 3, seed=1), tmp_path / "other-train.json")
    res = _cli("--config", str(cfg), "--traces", str(other))
    assert res.exit_code == 2 and "other role data" in res.output, res.output
