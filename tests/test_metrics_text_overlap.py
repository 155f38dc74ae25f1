"""The fast ROUGE and BLEU give the packages' numbers exactly (``rouge`` 1.0.1, sacrebleu).

The packages are the reference: every comparison below is ``==`` on floats, over thousands of
random texts (punctuation, digits, entities, odd whitespace, tiny vocabularies that make the LCS
rebuild choose between ties) and real texts from the benchmark data with perturbed copies.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import sacrebleu
from rouge import Rouge
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a as SacreTokenizer13a

from toollab.eval.metrics.alpha_umi import rouge_l
from toollab.eval.metrics.dialogue import dialogue_scores
from toollab.eval.metrics.text_overlap import (
    Tokenizer13a,
    corpus_bleu,
    corpus_bleu_fast,
    rouge_scores,
    rouge_scores_fast,
)

WORDS = ["a", "b", "c", "the", "of", "x", "y", "Z", "w", "q"]
PIECES = [
    ".", ",", "-", " ", "  ", "\t", "\n", "\r\n", "5", "3.5", "1,000", "(", ")", "&amp;", "&quot;",
    "'", '"', "e.g.", "U.S.", "-3", "a-b", ".5", "\xa0", "\u3000", "<skipped>", "é", "100%", "!?",
    "...", "x.", ",y", "4-", "-\n",
]  # fmt: skip
SEPARATORS = [" ", " ", " ", "", ". ", ".", "\n"]


def random_text(rng: random.Random, max_parts: int = 40) -> str:
    parts = []
    for _ in range(rng.randint(0, max_parts)):
        parts.append(rng.choice(WORDS) if rng.random() < 0.7 else rng.choice(PIECES))
        parts.append(rng.choice(SEPARATORS))
    return "".join(parts)


def perturb(text: str, rng: random.Random) -> str:
    """A related text: words dropped, duplicated, swapped, a sentence break moved."""
    words = text.split(" ")
    out: list[str] = []
    for w in words:
        r = rng.random()
        if r < 0.15:
            continue
        out.append(w)
        if r > 0.92:
            out.append(w)
    if len(out) > 3 and rng.random() < 0.5:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    if out and rng.random() < 0.3:
        out[rng.randrange(len(out))] += "."
    return " ".join(out)


@pytest.fixture(scope="module")
def real_texts(shared_data: Path) -> list[str]:
    """Real prose: DEER plugin descriptions (long, multi-sentence), Seal-Tools queries and tool
    descriptions, ToolEyes queries."""
    texts: list[str] = []
    for tool in json.loads((shared_data / "deer" / "tool.json").read_text(encoding="utf-8")):
        for key in ("description_for_model", "description_for_human"):
            if isinstance(tool.get(key), str):
                texts.append(tool[key])
    with (shared_data / "seal-tools" / "test_in_domain.jsonl").open(encoding="utf-8") as fh:
        texts.extend(json.loads(line)["query"] for line in fh if line.strip())
    with (shared_data / "seal-tools" / "tool.jsonl").open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i % 8 == 0 and line.strip():
                texts.append(json.loads(line)["api_description"])
    raw = shared_data / "tooleyes" / "Test_Data" / "scenario_data_raw.json"
    texts.extend(r["query"] for r in json.loads(raw.read_text(encoding="utf-8")))
    return texts


def _both_rouge(hyp: str, ref: str) -> tuple[object, object]:
    try:
        expected: object = Rouge().get_scores(hyp, ref)[0]
    except ValueError as exc:
        expected = ("ValueError", str(exc))
    try:
        got: object = rouge_scores_fast(hyp, ref)
    except ValueError as exc:
        got = ("ValueError", str(exc))
    return expected, got


def test_rouge_equals_the_package_on_random_texts() -> None:
    rng = random.Random(7)
    compared = refused = 0
    for _ in range(4000):
        hyp, ref = random_text(rng), random_text(rng)
        if rng.random() < 0.4:
            ref = perturb(hyp, rng)
        expected, got = _both_rouge(hyp, ref)
        assert got == expected, (hyp, ref)
        if isinstance(expected, tuple):
            refused += 1
        else:
            compared += 1
    assert compared > 3500 and refused > 20  # both paths were exercised


def test_rouge_equals_the_package_on_long_sentences_with_ties() -> None:
    """Long single sentences over 3-50 words: the LCS rebuild picks between many equal paths."""
    rng = random.Random(11)
    for _ in range(150):
        vocab = rng.choice([3, 6, 20, 50])
        hyp = [f"w{rng.randrange(vocab)}" for _ in range(rng.randint(1, 160))]
        ref = [f"w{rng.randrange(vocab)}" for _ in range(rng.randint(1, 160))]
        if rng.random() < 0.5:
            ref = perturb(" ".join(hyp), rng).split(" ")
        h, r = " ".join(hyp), " ".join(ref)
        assert rouge_scores_fast(h, r) == Rouge().get_scores(h, r)[0], (h, r)


def test_rouge_equals_the_package_on_real_texts(real_texts: list[str]) -> None:
    rng = random.Random(3)
    pairs = []
    for _ in range(2000):
        a = " ".join(rng.choice(real_texts).split(" ")[:120])  # the package is slow on long texts
        r = rng.random()
        if r < 0.5:
            pairs.append((perturb(a, rng), a))
        elif r < 0.8:
            pairs.append((a, rng.choice(real_texts)))
        else:
            pairs.append((a, perturb(perturb(a, rng), rng)))
    for hyp, ref in pairs:
        expected, got = _both_rouge(hyp, ref)
        assert got == expected, (hyp, ref)


def test_rouge_beyond_the_recursion_limit() -> None:
    """The package needs a deeper recursion than Python allows for a 1,300-word pair; the
    ``package`` backend makes room, and the fast path agrees with it."""
    rng = random.Random(5)
    hyp = " ".join(f"w{rng.randrange(30)}" for _ in range(700))
    ref = " ".join(f"w{rng.randrange(30)}" for _ in range(650))
    with pytest.raises(RecursionError):
        Rouge(metrics=["rouge-l"]).get_scores(hyp, ref)
    assert rouge_scores(hyp, ref, backend="package") == rouge_scores(hyp, ref)


def test_rouge_metric_names() -> None:
    got = rouge_scores_fast("a b c d. e", "a c d e f", ["rouge-3", "rouge-l"])
    assert got == Rouge(metrics=["rouge-3", "rouge-l"]).get_scores("a b c d. e", "a c d e f")[0]
    with pytest.raises(ValueError, match="Unknown metric"):
        rouge_scores_fast("a", "a", ["rouge-x"])
    with pytest.raises(ValueError, match="backend"):
        rouge_scores("a", "a", backend="rust")


def test_13a_tokens_equal_sacrebleu(real_texts: list[str]) -> None:
    rng = random.Random(13)
    ours = Tokenizer13a()
    theirs = SacreTokenizer13a()
    texts = [random_text(rng, 60) for _ in range(4000)] + real_texts
    for text in texts:
        assert ours.tokens(text) == theirs(text.rstrip()).split(), text


def test_corpus_bleu_equals_sacrebleu_on_random_corpora() -> None:
    rng = random.Random(17)
    for _ in range(300):
        hyps = [random_text(rng) for _ in range(rng.randint(1, 25))]
        refs = [perturb(h, rng) if rng.random() < 0.6 else random_text(rng) for h in hyps]
        expected = sacrebleu.corpus_bleu(hyps, [refs]).score
        assert corpus_bleu_fast(hyps, refs) == expected, (hyps, refs)


def test_corpus_bleu_equals_sacrebleu_on_real_corpora(real_texts: list[str]) -> None:
    rng = random.Random(19)
    hyps = [rng.choice(real_texts) for _ in range(2000)]
    refs = [perturb(h, rng) if rng.random() < 0.7 else rng.choice(real_texts) for h in hyps]
    for lo, hi in ((0, 2000), (0, 1), (5, 40), (100, 400), (1500, 1512)):
        expected = sacrebleu.corpus_bleu(hyps[lo:hi], [refs[lo:hi]]).score
        assert corpus_bleu(hyps[lo:hi], refs[lo:hi]) == expected
    # no match at all, and a hypothesis shorter than every n-gram order
    assert (
        corpus_bleu_fast(["zzz"], ["a b c d e"])
        == sacrebleu.corpus_bleu(["zzz"], [["a b c"]]).score
    )
    one = sacrebleu.corpus_bleu(["a b c x"], [["a b c d e"]]).score  # 4-grams: exp smoothing
    assert corpus_bleu_fast(["a b c x"], ["a b c d e"]) == one > 0


def test_scorer_figures_equal_with_either_backend(real_texts: list[str]) -> None:
    rng = random.Random(23)
    hyps = [perturb(rng.choice(real_texts), rng) for _ in range(300)] + ["", "   ", "...", "none"]
    refs = [rng.choice(real_texts) for _ in range(300)] + ["a b", "x", "y. z", ""]
    assert dialogue_scores(hyps, refs) == dialogue_scores(hyps, refs, backend="package")
    assert rouge_l(hyps, refs) == rouge_l(hyps, refs, backend="package")
    fast = rouge_l(hyps, refs)
    assert fast is not None and 0 < fast < 1
    # upstream alpha-UMi: get_scores(avg=True)['rouge-l']['f'] when every pair can be scored
    ok = [(h, r) for h, r in zip(hyps, refs, strict=True) if h.strip(".").strip() and r.strip()]
    upstream = Rouge().get_scores([h for h, _ in ok], [r for _, r in ok], avg=True)["rouge-l"]["f"]
    assert rouge_l([h for h, _ in ok], [r for _, r in ok]) == upstream
