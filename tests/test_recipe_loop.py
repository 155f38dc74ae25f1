"""The `smollm2-135m-tools-loop` recipe: its data step is scripts/recipe-data.sh, every export
in it is guarded, and its mix card counts the kinds of example the files hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toollab.errors import InputError
from toollab.sft.mix import KINDS, mix_card, record_kind
from toollab.train.config import TrainConfig
from toollab.train.recipes import recipe_names, recipe_path

REPO = Path(__file__).resolve().parents[1]
RECIPE = "smollm2-135m-tools-loop"


def test_the_loop_recipe_is_valid_and_trains_on_nothing_evaluated(tmp_path: Path) -> None:
    assert {RECIPE, "smollm2-135m-tools"} <= set(recipe_names())
    cfg = TrainConfig.load(recipe_path(RECIPE), paths_from=tmp_path)
    assert cfg.base == "bundled" and cfg.method == "lora" and cfg.max_steps > 0
    assert not any("bfcl" in s.path.lower() or "test" in Path(s.path).name for s in cfg.data)
    weights = {Path(s.path).parent.name: s.weight for s in cfg.data}
    assert weights["deer-seen-loop"] < 1.0  # DEER weighted down
    assert "loop-conversations" in weights


def test_the_script_writes_every_file_of_the_loop_recipe_guarded() -> None:
    script = (REPO / "scripts" / "recipe-data.sh").read_text()
    cfg = TrainConfig.load(recipe_path(RECIPE), paths_from=Path("/r"))
    for source in cfg.data:
        assert f'"$OUT/{Path(source.path).parent.name}/examples.jsonl"' in script, source.path
    assert script.count("toollab data sft ") == script.count('--guard-root "$D"')
    assert "--conversations" in script and "--hard-nocall" in script and "calls=2-5" in script
    assert "python -m toollab.sft.mix" in script and "docs/recipe-loop.md" in script
    assert (REPO / "docs" / "recipe-loop.md").is_file()


def test_the_fix_candidate_trains_on_script_files_and_never_on_its_held_out_tools() -> None:
    script = (REPO / "scripts" / "recipe-data.sh").read_text()
    fix = REPO / "benchmarks" / "recipes" / "loop-fix.yaml"
    cfg = TrainConfig.load(fix, paths_from=Path("/r"))
    weights = {Path(s.path).parent.name: s.weight for s in cfg.data}
    for name in weights:
        assert f'"$OUT/{name}/examples.jsonl"' in script, name
    assert weights["deer-seen-loop"] == 1.0 and "fix-seal-dev" in weights
    # the Seal-Tools file is made from the holdout's train part; its validation part only chooses
    assert '--source "toollab:$OUT/seal-dev-holdout/train.jsonl"' in script
    assert "seal-dev-holdout/validation" not in script
    assert script.count("--reduce 0.5") == 2 and str(fix.relative_to(REPO)) in script
    # the control is loop-e1 but for the Seal-Tools file, made from the same train part
    control = TrainConfig.load(fix.with_name("loop-e1-holdout.yaml"), paths_from=Path("/r"))
    shipped = TrainConfig.load(fix.with_name("loop-e1.yaml"), paths_from=Path("/r"))
    renamed = {"loop-seal-dev": "ctl-seal-dev"}
    assert [(Path(s.path).parent.name, s.weight) for s in control.data] == [
        (renamed.get(Path(s.path).parent.name, Path(s.path).parent.name), s.weight)
        for s in shipped.data
    ]
    same = {"data", "output_dir"}
    assert {k: v for k, v in vars(control).items() if k not in same} == {
        k: v for k, v in vars(shipped).items() if k not in same
    }
    assert '--source "toollab:$OUT/seal-dev-holdout/train.jsonl"' in script.split("ctl-seal-dev")[1]


def _rec(decision: str, n_calls: int, augmented: list[str], pack: str = "") -> str:
    meta = {"decision": [decision], "n_calls": [n_calls], "augmented": augmented, "pack": pack}
    return json.dumps({"text": "x", "spans": [[0, 1]], "meta": meta})


def test_the_mix_card_counts_kinds_and_weighted_shares(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "examples.jsonl", tmp_path / "b" / "examples.jsonl"
    a.parent.mkdir()
    b.parent.mkdir()
    a.write_text(
        "\n".join(
            [
                _rec("Call", 1, []),
                _rec("Call", 3, ["mask"]),
                _rec("NoCall", 0, ["hard-nocall", "mask"]),
                _rec("NoCall", 0, ["nocall"]),
                _rec("Call", 2, [], pack="conversation"),
            ]
        )
    )
    b.write_text("\n".join([_rec("NoSearch", 0, []), _rec("Call", 1, ["compose:multiple"])]))
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"data:\n  - {{path: {a}, weight: 1.0}}\n  - {{path: {b}, weight: 0.5}}\n")
    card = mix_card(recipe, "# notes")
    assert card.startswith("# notes")
    assert f"| `{a}` | 5 | 1 | 5 |" in card and f"| `{b}` | 2 | 0.5 | 1 |" in card
    assert "| all | 7 | | 6 |" in card
    assert "| no-call: hard (close tools that cannot serve) | 1 | 16.7% |" in card
    assert "| conversation | 1 | 16.7% |" in card
    assert "| mask | 2 | 33.3% |" in card and "| compose | 0 | 8.3% |" in card
    assert [record_kind(json.loads(_rec("Call", 2, [])))] == ["call: several calls"]
    assert len(KINDS) == 6
    bad = tmp_path / "bad.yaml"
    bad.write_text("output_dir: x\n")
    with pytest.raises(InputError, match="no `data` list"):
        mix_card(bad)
