"""The run's model card (:mod:`toollab.train.card`), rendered from a run's figures."""

from __future__ import annotations

from pathlib import Path

from toollab.train.card import render_run_card
from toollab.train.config import DataSource, TrainConfig
from toollab.train.sft import TrainResult


def _result(out: Path, **kw: object) -> TrainResult:
    base: dict[str, object] = {
        "output_dir": out,
        "final": out / "adapter",
        "global_step": 40,
        "resumed_from": None,
        "train_tokens": 326906,
        "tokens_per_s": 130.2,
        "train_runtime_s": 2665.6,
        "first_loss": 0.33,
        "last_loss": 0.0881,
        "best_eval_loss": 0.14747,
        "best_checkpoint": "checkpoint-40",
        "peak_rss_mib": 5535.7,
    }
    return TrainResult(**{**base, **kw})  # type: ignore[arg-type]


COUNTS = {"/d/a.jsonl": {"examples": 1663, "validation": 8, "weight": 3.0, "drawn": 4965}}


def test_a_lora_run_on_the_bundled_base(tmp_path: Path) -> None:
    out = tmp_path / "loop-conv-cont"
    cfg = TrainConfig(
        output_dir=str(out),
        data=[DataSource("/d/a.jsonl", 3.0)],
        init_adapter="bundled:smollm2-135m-tools",
        max_steps=40,
        learning_rate=8e-5,
    )
    card = render_run_card(cfg, _result(out), COUNTS, "/m/base.gguf", ["toollab", "train"])
    assert card.startswith("# loop-conv-cont\n")
    assert "- started from the adapter `bundled:smollm2-135m-tools`" in card
    assert "| `/d/a.jsonl` | 1,663 | 8 | 3 | 4,965 |" in card
    assert "| 40 | 326,906 | 130.2 | 2666 | 0.3300 | 0.0881 | 0.1475 (checkpoint-40) |" in card
    assert "learning rate 8e-05, cosine" in card and "40 steps" in card
    tuned = f"bundled:smollm2-135m+lora={out}/gguf/adapter.gguf"
    assert f'toollab bench -m "bundled:smollm2-135m" -m "{tuned}"' in card


def test_another_gguf_base_a_resumed_run_and_full_fine_tuning(tmp_path: Path) -> None:
    out = tmp_path / "run"
    lora = TrainConfig(output_dir=str(out), data=[DataSource("/d/a.jsonl")], base="/m/b.gguf")
    resumed = _result(out, resumed_from="checkpoint-20", best_eval_loss=None, best_checkpoint=None)
    card = render_run_card(lora, resumed, COUNTS, "/m/b.gguf", ["toollab"])
    assert 'toollab chat -m "llamacpp:/m/b.gguf+lora=' in card
    assert "Resumed from `checkpoint-20`" in card and "| 0.0881 | — |" in card
    full = TrainConfig(output_dir=str(out), data=[DataSource("/d/a.jsonl")], method="full")
    card = render_run_card(full, _result(out, final=out / "model"), COUNTS, "/m/b.gguf", ["t"])
    assert card.startswith("# run\n\nA fully fine-tuned model") and "+lora=" not in card
    assert f"toollab train export {out}" in card
