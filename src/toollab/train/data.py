"""SFT example files in, token ids and loss masks out.

An SFT example file is JSONL, one object per line, with at least ``text`` (the whole rendered
training sequence, special tokens as text) and ``spans`` (``[[start, end], ...]``, character
offsets into ``text`` of every loss target).  An all-shot packed example (several goal → action
pairs in one sequence, SambaNova ToolBench's loss on every action) is one line with several
spans; nothing else is needed here.

``text`` is tokenized as it is (no extra special tokens) with an offset mapping; a token is a
target when it starts inside a span.  Labels are the token ids on targets and -100 elsewhere.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.data.jsonl import iter_jsonl
from toollab.errors import InputError
from toollab.train.config import DataSource

IGNORE_INDEX = -100


@dataclass
class SFTExample:
    """One line of an SFT example file."""

    id: str
    text: str
    spans: list[tuple[int, int]]
    source: str = ""
    where: str = ""  # file:line, for messages
    #: each span tokenized on its own, apart from the text before it (a completion prompt: the
    #: model reads the prompt tokenized alone, then writes the target's tokens)
    spans_apart: bool = False

    @classmethod
    def from_json(cls, obj: Any, path: Path, line: int) -> SFTExample:
        where = f"{path}:{line}"

        def bad(problem: str) -> InputError:
            return InputError(problem, path=path, line=line)

        if not isinstance(obj, dict):
            raise bad("an SFT example is a JSON object")
        text = obj.get("text")
        if not isinstance(text, str) or not text:
            raise bad("`text` (the rendered training sequence) is missing or empty")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise bad(
                f"`text` holds a lone UTF-16 surrogate at character {exc.start} (half a "
                "character: no tokenizer can read it)"
            ) from None
        spans = obj.get("spans")
        if spans is None:
            raise bad("no `spans`: the example has no loss targets (export it with toollab sft)")
        if not isinstance(spans, list) or not spans:
            raise bad("`spans` is empty: the example has no loss targets")
        out: list[tuple[int, int]] = []
        for i, span in enumerate(spans):
            if (
                not isinstance(span, list | tuple)
                or len(span) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in span)
            ):
                shown = repr(span) if len(repr(span)) <= 80 else repr(span)[:77] + "..."
                raise bad(f"spans[{i}] must be [start, end] (two integers), got {shown}")
            start, end = span
            if not 0 <= start < end <= len(text):
                raise bad(
                    f"spans[{i}] = [{start}, {end}] is not inside the text "
                    f"(0 <= start < end <= {len(text)})"
                )
            out.append((start, end))
        out.sort()
        for (_, e1), (s2, _) in itertools.pairwise(out):
            if s2 < e1:
                raise bad("`spans` overlap")
        apart = obj.get("spans_apart", False)
        if not isinstance(apart, bool):
            raise bad(f"`spans_apart` must be true or false, got {apart!r}")
        ident = obj.get("id", f"{path.name}:{line}")
        source = obj.get("source", "")
        return cls(str(ident), text, out, str(source), where, apart)


def read_sft_file(path: str | Path) -> list[SFTExample]:
    """Every example of an SFT example file; the first bad line is an :class:`InputError`."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise InputError("SFT example file not found", path=p)
    # iter_jsonl: UTF-8, a regular file, line length, JSON depth and integer size bounded
    out = [SFTExample.from_json(rec.data, p, rec.line) for rec in iter_jsonl(p)]
    if not out:
        raise InputError("the SFT example file holds no examples", path=p)
    return out


@dataclass
class Mixture:
    """The training and validation examples of a run, with what was done to get them."""

    train: list[SFTExample]
    validation: list[SFTExample]
    counts: dict[str, dict[str, float]] = field(default_factory=dict)


def build_mixture(
    sources: Sequence[DataSource],
    validation_files: Sequence[str],
    validation_fraction: float,
    seed: int,
    max_examples: int = 0,
) -> Mixture:
    """Read, split and weight the sources (all seeded).

    Without validation files each source gives up ``validation_fraction`` of its examples (at
    least one when it has two or more) before weighting; a weight ``w`` then repeats the rest
    ``floor(w)`` times and adds a random ``w - floor(w)`` share once more."""
    rng = random.Random(seed)
    train: list[SFTExample] = []
    validation: list[SFTExample] = []
    counts: dict[str, dict[str, float]] = {}
    for src in sources:
        examples = read_sft_file(src.path)
        order = list(range(len(examples)))
        rng.shuffle(order)
        held: list[SFTExample] = []
        if not validation_files and validation_fraction > 0 and len(examples) >= 2:
            k = max(1, round(len(examples) * validation_fraction))
            held = [examples[i] for i in order[:k]]
            order = order[k:]
        kept = [examples[i] for i in order]
        whole = math.floor(src.weight)
        drawn = kept * whole
        extra = round(len(kept) * (src.weight - whole))
        drawn += rng.sample(kept, extra) if extra else []
        train += drawn
        validation += held
        counts[src.path] = {
            "examples": len(examples),
            "validation": len(held),
            "weight": src.weight,
            "drawn": len(drawn),
        }
    for path in validation_files:
        validation += read_sft_file(path)
    rng.shuffle(train)
    if max_examples:
        train = train[:max_examples]
    return Mixture(train, validation, counts)


@dataclass
class Encoded:
    input_ids: list[int]
    labels: list[int]

    @property
    def n_targets(self) -> int:
        return sum(1 for t in self.labels if t != IGNORE_INDEX)


def target_mask(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> list[bool]:
    """Per token: does it start inside one of the spans (spans sorted, not overlapping)."""
    out: list[bool] = []
    j = 0
    for start, end in offsets:
        if end <= start:  # a token with no characters of its own: not a target
            out.append(False)
            continue
        while j < len(spans) and spans[j][1] <= start:
            j += 1
        out.append(j < len(spans) and spans[j][0] <= start < spans[j][1])
    return out


def encode(example: SFTExample, tokenizer: Any, max_length: int, truncation: str) -> Encoded:
    """Token ids of ``example.text`` (no added special tokens) and labels on its spans; with
    ``spans_apart`` the text is cut at the span boundaries and each piece tokenized alone."""
    if example.spans_apart:
        ids, mask = _encode_apart(example, tokenizer)
    else:
        enc = tokenizer(
            example.text,
            add_special_tokens=False,
            return_offsets_mapping=True,
            truncation=False,
        )
        ids = list(enc["input_ids"])
        mask = target_mask([tuple(o) for o in enc["offset_mapping"]], example.spans)
    if len(ids) > max_length:
        cut = slice(len(ids) - max_length, None) if truncation == "left" else slice(0, max_length)
        ids, mask = ids[cut], mask[cut]
    labels = [t if m else IGNORE_INDEX for t, m in zip(ids, mask, strict=True)]
    return Encoded(ids, labels)


def _encode_apart(example: SFTExample, tokenizer: Any) -> tuple[list[int], list[bool]]:
    ids: list[int] = []
    mask: list[bool] = []
    at = 0
    pieces: list[tuple[int, int, bool]] = []
    for start, end in example.spans:
        if start > at:
            pieces.append((at, start, False))
        pieces.append((start, end, True))
        at = end
    if at < len(example.text):
        pieces.append((at, len(example.text), False))
    for start, end, target in pieces:
        enc = tokenizer(
            example.text[start:end],
            add_special_tokens=False,
            return_offsets_mapping=True,
            truncation=False,
        )
        ids += enc["input_ids"]
        mask += [target and e > s for s, e in enc["offset_mapping"]]
    return ids, mask


def encode_all(
    examples: Sequence[SFTExample], tokenizer: Any, max_length: int, truncation: str
) -> tuple[list[Encoded], list[str]]:
    """Encoded examples, and the places of those left without a target token by truncation."""
    out: list[Encoded] = []
    dropped: list[str] = []
    for ex in examples:
        e = encode(ex, tokenizer, max_length, truncation)
        if e.n_targets:
            out.append(e)
        else:
            dropped.append(ex.where)
    return out, dropped
