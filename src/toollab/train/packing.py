"""Training sequences made once, ahead of the steps: encoded, packed, cached on disk.

The examples of a run are encoded (:func:`~toollab.train.data.encode`: token ids, labels on every
span — several spans per example, several assistant turns, are one example) and packed with
TRL's best-fit-decreasing packing into sequences of at most ``max_length`` tokens; each packed
sequence keeps the lengths of the examples in it (``seq_lengths``).  The result is written under
``$TOOLLAB_CACHE/sft/<key>/`` (Arrow files, memory-mapped when read), ``key`` being a hash of
every example's text and spans in order, the tokenizer and the settings, so a resumed or repeated
run reads it back instead of tokenising again.

:class:`PackedCollator` makes a batch of packed sequences without flattening them: one row per
packed sequence (padded to the longest row, a few tokens), ``position_ids`` that start at 0 at
every example and no ``attention_mask``, which makes transformers' attention block-diagonal
(an example never sees the one before it), and labels masked at the first token of every example
(it would otherwise be predicted from the end of the previous one).  The loss is the same as on
the examples one by one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toollab.data.atomic import write_dir_atomic
from toollab.errors import BackendError
from toollab.train.base import cache_root
from toollab.train.data import IGNORE_INDEX, Encoded, SFTExample, encode_all

FORMAT = 1  # bump when what is cached changes


@dataclass
class Sequences:
    """The training and validation sequences of a run, and what encoding left out."""

    train: Any  # datasets.Dataset: input_ids, labels[, seq_lengths]
    validation: Any  # datasets.Dataset or None
    n_train_examples: int
    n_validation_examples: int
    dropped: list[str]
    cached: bool  # read back from the cache
    key: str


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """A hash of everything that decides the token ids: the fast tokenizer's whole definition."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    text = backend.to_str() if backend is not None else repr(tokenizer.get_vocab())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sequences_key(
    train: Sequence[SFTExample],
    validation: Sequence[SFTExample],
    tokenizer: Any,
    max_length: int,
    truncation: str,
    packing: bool,
) -> str:
    h = hashlib.sha256()
    h.update(
        json.dumps(
            [FORMAT, tokenizer_fingerprint(tokenizer), max_length, truncation, packing]
        ).encode()
    )
    for part, examples in (("train", train), ("validation", validation)):
        h.update(part.encode())
        for ex in examples:
            h.update(len(ex.text).to_bytes(8, "little"))
            h.update(ex.text.encode("utf-8"))
            h.update(json.dumps(ex.spans).encode())
            if ex.spans_apart:
                h.update(b"spans_apart")
    return h.hexdigest()[:32]


def _dataset(encoded: list[Encoded], max_length: int, packing: bool) -> Any:
    from datasets import Dataset

    ds = Dataset.from_dict(
        {"input_ids": [e.input_ids for e in encoded], "labels": [e.labels for e in encoded]}
    )
    if not packing:
        return ds
    from trl.data_utils import pack_dataset

    # best-fit decreasing; no example is longer than max_length, so none is cut
    return pack_dataset(ds, max_length, strategy="bfd")


def build_sequences(
    train: Sequence[SFTExample],
    validation: Sequence[SFTExample],
    tokenizer: Any,
    max_length: int,
    truncation: str,
    packing: bool,
    cache: Path | None = None,
) -> Sequences:
    """The run's sequences: from the cache when the same examples, tokenizer and settings were
    prepared before, else encoded (and packed) now and cached."""
    from datasets import load_from_disk

    key = sequences_key(train, validation, tokenizer, max_length, truncation, packing)
    folder = (cache or cache_root()) / "sft" / key
    meta_file = folder / "meta.json"
    if meta_file.is_file():
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
            val = load_from_disk(str(folder / "validation")) if meta["validation"] else None
            return Sequences(
                load_from_disk(str(folder / "train")),
                val,
                meta["train"],
                meta["validation"],
                meta["dropped"],
                True,
                key,
            )
        except (OSError, ValueError, KeyError, json.JSONDecodeError):
            shutil.rmtree(folder, ignore_errors=True)  # a damaged entry: make it again
    enc_train, dropped = encode_all(train, tokenizer, max_length, truncation)
    enc_val, _ = encode_all(validation, tokenizer, max_length, truncation)
    seqs = Sequences(
        _dataset(enc_train, max_length, packing) if enc_train else None,
        _dataset(enc_val, max_length, packing) if enc_val else None,
        len(enc_train),
        len(enc_val),
        dropped,
        False,
        key,
    )
    if seqs.train is not None:
        _store(folder, seqs)
    return seqs


def _store(folder: Path, seqs: Sequences) -> None:
    """Write beside the final place, then rename: a killed run leaves no half entry."""

    def write(tmp: Path) -> None:
        seqs.train.save_to_disk(str(tmp / "train"))
        if seqs.validation is not None:
            seqs.validation.save_to_disk(str(tmp / "validation"))
        meta = {
            "train": seqs.n_train_examples,
            "validation": seqs.n_validation_examples,
            "dropped": seqs.dropped,
        }
        (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")

    try:
        write_dir_atomic(folder, write)
    except OSError as exc:
        raise BackendError(f"could not cache the training sequences in {folder}: {exc}") from exc
    # read back memory-mapped, like a cached run, so both runs train on the same files
    from datasets import load_from_disk

    seqs.train = load_from_disk(str(folder / "train"))
    if seqs.validation is not None:
        seqs.validation = load_from_disk(str(folder / "validation"))


@dataclass
class PackedCollator:
    """Rows of packed sequences into a batch: see the module docstring."""

    pad_token_id: int

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        width = max(len(r["input_ids"]) for r in rows)
        n = len(rows)
        input_ids = torch.full((n, width), self.pad_token_id, dtype=torch.long)
        labels = torch.full((n, width), IGNORE_INDEX, dtype=torch.long)
        position_ids = torch.zeros((n, width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids = torch.as_tensor(r["input_ids"], dtype=torch.long)
            k = ids.numel()
            input_ids[i, :k] = ids
            labels[i, :k] = torch.as_tensor(r["labels"], dtype=torch.long)
            lengths = [int(v) for v in r.get("seq_lengths") or [k]]
            if width > k:
                lengths.append(width - k)  # the padding is a sequence of its own, never a target
            starts = torch.tensor([0, *lengths[:-1]]).cumsum(0)
            position_ids[i] = _positions(lengths)
            labels[i, starts] = IGNORE_INDEX
        return {"input_ids": input_ids, "labels": labels, "position_ids": position_ids}


def _positions(lengths: list[int]) -> Any:
    """0, 1, ... restarting at every length: [3, 2] -> [0, 1, 2, 0, 1]."""
    import torch

    total = sum(lengths)
    pos = torch.arange(total)
    starts = torch.tensor([0, *lengths[:-1]]).cumsum(0)
    return pos - torch.repeat_interleave(starts, torch.tensor(lengths))
