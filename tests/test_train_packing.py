"""Training sequences packed ahead of the steps: every example and every one of its spans kept,
attention and loss as on the examples one by one, the cache keyed by data and tokenizer, and
the device's micro-batch plan."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from toollab.errors import InputError
from toollab.train.data import IGNORE_INDEX, encode, read_sft_file

sys.path.insert(0, str(Path(__file__).parent))
import train_data

MAX_LEN = 512


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    pytest.importorskip("trl")
    from transformers import AutoTokenizer

    from toollab.train.base import resolve_base

    tok = AutoTokenizer.from_pretrained(str(resolve_base("bundled").folder))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory, tokenizer: Any) -> list[Any]:
    """Tool-use conversations (two assistant turns each) and an all-shot one (four turns)."""
    p = train_data.write_examples(tmp_path_factory.mktemp("d") / "a.jsonl", tokenizer, n=11)
    with p.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(train_data.all_shot(tokenizer, train_data.GOALS[:4])) + "\n")
    return read_sft_file(p)


def _segments(row: dict[str, Any]) -> list[tuple[list[int], list[int]]]:
    out, at = [], 0
    for n in row["seq_lengths"]:
        out.append((list(row["input_ids"][at : at + n]), list(row["labels"][at : at + n])))
        at += n
    return out


def test_packing_keeps_every_example_and_every_span(
    examples: list[Any], tokenizer: Any, tmp_path: Path
) -> None:
    from toollab.train.packing import PackedCollator, build_sequences

    assert {len(e.spans) for e in examples} == {2, 4}  # several assistant turns per example
    seqs = build_sequences(examples, [], tokenizer, MAX_LEN, "left", True, cache=tmp_path)
    assert seqs.n_train_examples == len(examples) and seqs.validation is None
    assert len(seqs.train) < len(examples)  # several examples share a sequence
    encoded = [encode(e, tokenizer, MAX_LEN, "left") for e in examples]
    rows = [seqs.train[i] for i in range(len(seqs.train))]
    got = sorted(seg for r in rows for seg in _segments(r))
    assert got == sorted((e.input_ids, e.labels) for e in encoded)  # each once, labels intact
    assert all(len(r["input_ids"]) <= MAX_LEN for r in rows)

    batch = PackedCollator(tokenizer.pad_token_id)(rows[:3])
    assert "attention_mask" not in batch  # the packed layout is read from position_ids
    for i, r in enumerate(rows[:3]):
        at = 0
        for ids, labels in _segments(r):
            n = len(ids)
            assert batch["position_ids"][i, at : at + n].tolist() == list(range(n))
            assert batch["input_ids"][i, at : at + n].tolist() == ids
            # an example's first token is never predicted from the example before it
            assert batch["labels"][i, at : at + n].tolist() == [IGNORE_INDEX, *labels[1:]]
            at += n
        assert (batch["labels"][i, at:] == IGNORE_INDEX).all()  # the row's padding


def test_the_loss_of_a_packed_batch_is_the_loss_of_its_examples_one_by_one(
    examples: list[Any], tokenizer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from toollab.train.packing import PackedCollator, build_sequences

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=MAX_LEN,
    )
    model = LlamaForCausalLM(cfg).eval()
    seqs = build_sequences(examples, [], tokenizer, MAX_LEN, "left", True, cache=tmp_path)
    rows = [seqs.train[i] for i in range(len(seqs.train))]
    batch = PackedCollator(tokenizer.pad_token_id)(rows)
    n_packed = int((batch["labels"][:, 1:] != IGNORE_INDEX).sum())
    with torch.no_grad():
        packed = float(model(**batch).loss) * n_packed
        alone = n_alone = 0.0
        for ex in examples:
            e = encode(ex, tokenizer, MAX_LEN, "left")
            labels = torch.tensor([e.labels])
            k = int((labels[:, 1:] != IGNORE_INDEX).sum())
            alone += float(model(input_ids=torch.tensor([e.input_ids]), labels=labels).loss) * k
            n_alone += k
    assert n_packed == n_alone
    assert packed == pytest.approx(alone, rel=1e-4)
    # the trainer's loss, through the output layer on the target positions only, is the same
    from toollab.train.sft import target_loss

    with torch.no_grad():
        lean, _ = target_loss(model, dict(batch), None)
    assert float(lean) * n_packed == pytest.approx(packed, rel=1e-4)
    # and the same through the form a transformers without the boolean mask takes
    from toollab.train import sft

    monkeypatch.setattr(sft, "_keeps_masks", lambda: False)
    with torch.no_grad():
        positions, _ = sft.target_loss(model, dict(batch), None)
    assert float(positions) * n_packed == pytest.approx(packed, rel=1e-4)


def test_sequences_are_cached_by_data_tokenizer_and_settings(
    examples: list[Any], tokenizer: Any, tmp_path: Path
) -> None:
    import dataclasses

    from toollab.train.packing import build_sequences

    first = build_sequences(examples[:6], examples[6:8], tokenizer, MAX_LEN, "left", True, tmp_path)
    again = build_sequences(examples[:6], examples[6:8], tokenizer, MAX_LEN, "left", True, tmp_path)
    assert not first.cached and again.cached and again.key == first.key
    assert again.train["input_ids"] == first.train["input_ids"]
    assert again.validation is not None and len(again.validation) >= 1
    moved = [dataclasses.replace(examples[0], spans=examples[0].spans[:1]), *examples[1:6]]
    for other in (
        build_sequences(moved, examples[6:8], tokenizer, MAX_LEN, "left", True, tmp_path),
        build_sequences(examples[:6], examples[6:8], tokenizer, 256, "left", True, tmp_path),
        build_sequences(examples[:6], examples[6:8], tokenizer, MAX_LEN, "left", False, tmp_path),
    ):
        assert not other.cached and other.key != first.key
    unpacked = build_sequences(examples[:6], [], tokenizer, MAX_LEN, "left", False, tmp_path)
    assert len(unpacked.train) == 6 and "seq_lengths" not in unpacked.train.column_names


def test_the_micro_batch_plan_keeps_the_global_batch() -> None:
    from toollab.train.sft import plan_micro_batch

    assert plan_micro_batch(8, 2048, 1000.0, 8 * 2048 * 1000.0) == 8
    assert plan_micro_batch(8, 2048, 1000.0, 5 * 2048 * 1000.0) == 4  # a divisor of 8
    assert plan_micro_batch(6, 2048, 1000.0, 2.5 * 2048 * 1000.0) == 2
    assert plan_micro_batch(4, 2048, 1000.0, 100.0) is None


def test_liger_kernel_without_the_package_is_a_clear_error(tmp_path: Path) -> None:
    import importlib.util

    from toollab.train.config import TrainConfig
    from toollab.train.sft import _check_liger

    if importlib.util.find_spec("liger_kernel") is not None:
        pytest.skip("liger-kernel is installed")
    cfg = TrainConfig(output_dir=str(tmp_path), liger_kernel=True)
    with pytest.raises(InputError, match="liger-kernel"):
        _check_liger(cfg)


def test_torch_compile_reaches_the_trainer(tmp_path: Path) -> None:
    from toollab.train.config import TrainConfig
    from toollab.train.sft import DeviceBatch, _sft_args

    batch = DeviceBatch(2, 1, False, "test")
    for on in (False, True):
        cfg = TrainConfig(output_dir=str(tmp_path), torch_compile=on)
        assert _sft_args(cfg, False, batch).torch_compile is on
