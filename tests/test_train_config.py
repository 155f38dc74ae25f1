"""The training config (YAML and flags from one dataclass), the SFT file reader, the label mask
and the mixture: bad input is a clear error before anything is loaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.errors import InputError
from toollab.train.config import DataSource, TrainConfig, flags_help, parse_flags
from toollab.train.data import build_mixture, read_sft_file, target_mask


def _yaml(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "run.yaml"
    p.write_text(text, encoding="utf-8")
    return p


def _sft(tmp_path: Path, rows: list[dict], name: str = "d.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return p


def _row(i: int) -> dict:
    text = f"<|im_start|>user\nq{i}<|im_end|>\n<|im_start|>assistant\na{i}<|im_end|>\n"
    start = text.index("a", text.index("assistant\n") + 10)
    return {"id": f"r{i}", "text": text, "spans": [[start, len(text) - 1]]}


def test_yaml_and_flags_fill_the_same_typed_fields(tmp_path: Path) -> None:
    cfg_file = _yaml(
        tmp_path,
        "output_dir: out\ndata:\n  - {path: a.jsonl, weight: 2}\n  - b.jsonl\n"
        "lora_r: 8\nlearning_rate: 1e-4\nmax_steps: 3\ngradient_checkpointing: false\n",
    )
    cfg = TrainConfig.load(cfg_file, parse_flags(["--max-steps", "7", "--lora-alpha=4"]))
    assert cfg.lora_r == 8 and cfg.max_steps == 7 and cfg.lora_alpha == 4
    assert cfg.learning_rate == 1e-4 and cfg.gradient_checkpointing is False
    # paths in the file are relative to the file's folder
    assert cfg.output_dir == str(tmp_path / "out")
    assert cfg.data == [
        DataSource(str(tmp_path / "a.jsonl"), 2.0),
        DataSource(str(tmp_path / "b.jsonl")),
    ]
    flags = parse_flags(
        [
            "--data",
            "x.jsonl:0.5",
            "--data",
            "y.jsonl",
            "--no-resume",
            "--lora-targets",
            "q_proj,v_proj",
        ]
    )
    assert flags["data"] == [DataSource("x.jsonl", 0.5), DataSource("y.jsonl")]
    assert flags["resume"] is False and flags["lora_targets"] == ["q_proj", "v_proj"]
    # every field is documented as a flag
    assert all(f"--{n.replace('_', '-')} " in flags_help() for n in TrainConfig.fields())


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("output_dir: o\ndata: [a.jsonl]\nlora_rank: 8\n", ["lora_rank", "lora_r"]),
        ("output_dir: o\ndata: [a.jsonl]\nlora_r: eight\n", ["lora_r", "int", "'eight'"]),
        ("output_dir: o\ndata: [a.jsonl]\nmethod: qlora\n", ["method", "'lora'"]),
        ("output_dir: o\ndata: [a.jsonl]\ngradient_checkpointing: 1\n", ["gradient_checkpointing"]),
        ("output_dir: o\ndata: [{path: a.jsonl, weigth: 2}]\n", ["weigth"]),
        ("output_dir: o\ndata: [a.jsonl:-1]\n", ["data weight must be", "(0, 1,000]"]),
        ("data: [a.jsonl]\n", ["output_dir"]),
        ("output_dir: o\ndata: [a.jsonl]\nlora_r: 0\n", ["lora_r"]),
        ("- a\n- b\n", ["mapping"]),
        ("output_dir: o\n  data: [\n", ["YAML"]),
    ],
)
def test_bad_configs_name_the_key_and_the_file(tmp_path: Path, text: str, names: list[str]) -> None:
    f = _yaml(tmp_path, text)
    with pytest.raises(InputError) as err:
        TrainConfig.load(f)
    msg = str(err.value)
    assert str(f) in msg
    for n in names:
        assert n in msg


def test_bad_flags_are_named() -> None:
    with pytest.raises(InputError, match=r"--max-step.*did you mean --max-steps"):
        parse_flags(["--max-step", "3"])
    with pytest.raises(InputError, match=r"--batch-size.*int"):
        parse_flags(["--batch-size", "four"])
    with pytest.raises(InputError, match="needs a value"):
        parse_flags(["--seed"])


def test_cli_refuses_a_bad_config_with_exit_2_before_loading_anything(tmp_path: Path) -> None:
    f = _yaml(tmp_path, f"output_dir: {tmp_path / 'out'}\ndata: [a.jsonl]\nepochz: 3\n")
    res = CliRunner().invoke(app, ["train", "sft", "--config", str(f)])
    assert res.exit_code == 2
    assert "epochz" in res.output and "epochs" in res.output and str(f) in res.output
    res = CliRunner().invoke(
        app,
        [
            "train",
            "sft",
            "--output-dir",
            str(tmp_path / "o"),
            "--data",
            str(tmp_path / "missing.jsonl"),
        ],
    )
    assert res.exit_code == 2 and "missing.jsonl" in res.output
    assert not (tmp_path / "out").exists() and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({"id": "x", "text": "abc"}, "no `spans`"),
        ({"id": "x", "text": "abc", "spans": []}, "`spans` is empty"),
        ({"id": "x", "text": "abc", "spans": [[1, 9]]}, "not inside the text"),
        ({"id": "x", "text": "abc", "spans": [[2, 1]]}, "not inside the text"),
        ({"id": "x", "text": "abc", "spans": [[0, 2], [1, 3]]}, "overlap"),
        ({"id": "x", "text": "abc", "spans": [["0", 2]]}, "two integers"),
        ({"id": "x", "spans": [[0, 1]]}, "`text`"),
    ],
)
def test_a_dataset_without_usable_spans_is_refused_with_file_and_line(
    tmp_path: Path, row: dict, problem: str
) -> None:
    p = _sft(tmp_path, [_row(0), row])
    with pytest.raises(InputError) as err:
        read_sft_file(p)
    assert f"{p}:2" in str(err.value) and problem in str(err.value)


def test_cli_refuses_a_dataset_without_spans(tmp_path: Path) -> None:
    p = _sft(tmp_path, [{"id": "x", "text": "hello"}])
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["train", "sft", "--output-dir", str(out), "--data", str(p)])
    assert res.exit_code == 2 and f"{p}:1" in res.output and "spans" in res.output
    assert not out.exists()


def test_target_mask_marks_tokens_that_start_inside_a_span() -> None:
    offsets = [(0, 3), (3, 5), (5, 5), (5, 9), (9, 12), (12, 14)]
    assert target_mask(offsets, [(3, 9), (12, 14)]) == [False, True, False, True, False, True]
    assert target_mask(offsets, [(4, 6)]) == [False, False, False, True, False, False]


def test_mixture_weights_split_and_seed(tmp_path: Path) -> None:
    a = _sft(tmp_path, [_row(i) for i in range(20)], "a.jsonl")
    b = _sft(tmp_path, [_row(100 + i) for i in range(10)], "b.jsonl")
    srcs = [DataSource(str(a), 2.0), DataSource(str(b), 0.5)]
    m = build_mixture(srcs, [], 0.1, seed=1)
    assert m.counts[str(a)] == {"examples": 20, "validation": 2, "weight": 2.0, "drawn": 36}
    assert m.counts[str(b)] == {"examples": 10, "validation": 1, "weight": 0.5, "drawn": 4}
    assert len(m.train) == 40 and len(m.validation) == 3
    held = {e.id for e in m.validation}
    assert not held & {e.id for e in m.train}  # the validation split is never trained on
    again = build_mixture(srcs, [], 0.1, seed=1)
    assert [e.id for e in again.train] == [e.id for e in m.train]
    assert [e.id for e in build_mixture(srcs, [], 0.1, seed=2).train] != [e.id for e in m.train]
    only = build_mixture([DataSource(str(a))], [str(b)], 0.1, seed=1, max_examples=5)
    assert len(only.train) == 5 and len(only.validation) == 10


def test_the_shipped_recipe_and_configs_are_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    from toollab.train.recipes import recipe_names, recipe_path

    assert "smollm2-135m-tools" in recipe_names()
    monkeypatch.chdir(tmp_path)
    cfg = TrainConfig.load(recipe_path("smollm2-135m-tools"), paths_from=tmp_path)
    assert cfg.base == "bundled" and cfg.method == "lora" and cfg.max_steps > 0
    assert cfg.output_dir == str(tmp_path / "runs" / "smollm2-135m-tools")
    assert all(s.path.startswith(str(tmp_path)) for s in cfg.data)
    # nothing evaluated on is trained on
    assert not any("bfcl" in s.path.lower() or "test" in Path(s.path).name for s in cfg.data)
    repo = Path(__file__).resolve().parents[1]
    TrainConfig.load(repo / "configs" / "sft-lora.yaml")
    for name in ("ddp", "zero2", "zero3", "cpu"):
        acc = yaml.safe_load((repo / "configs" / "accelerate" / f"{name}.yaml").read_text())
        assert acc["distributed_type"] in ("MULTI_GPU", "DEEPSPEED", "NO")
        if acc["distributed_type"] == "DEEPSPEED":
            assert acc["deepspeed_config"]["zero_stage"] == int(name[-1])
            assert acc["mixed_precision"] == "bf16"
    res = CliRunner().invoke(app, ["train", "recipe", "no-such-recipe"])
    assert res.exit_code == 2 and "smollm2-135m-tools" in res.output
    res = CliRunner().invoke(app, ["train", "recipe", "--max-steps", "3"])
    assert (
        res.exit_code == 2 and "sft-data/loop-conversations/examples.jsonl" in res.output
    )  # not made yet


def test_the_recipe_data_script_writes_the_files_the_recipe_reads() -> None:
    """scripts/recipe-data.sh is the recipe's data step: every file the recipe trains on is one
    the script writes, and every export in it is guarded against the evaluation sets."""
    from toollab.train.recipes import recipe_path

    repo = Path(__file__).resolve().parents[1]
    script = (repo / "scripts" / "recipe-data.sh").read_text()
    cfg = TrainConfig.load(recipe_path("smollm2-135m-tools"), paths_from=Path("/r"))
    for source in cfg.data:
        rel = str(Path(source.path).relative_to("/r"))
        assert f'"$OUT/{Path(rel).parent.name}/examples.jsonl"' in script, rel
    exports = script.count("toollab data sft ")
    assert exports >= len(cfg.data) and script.count('--guard-root "$D"') == exports
