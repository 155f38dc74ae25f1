"""ROUGE and BLEU, exact and fast.

The upstream evaluations score text with two packages: ROUGE with ``rouge`` (pip ``rouge`` 1.0.1,
``Rouge().get_scores``; alpha-UMi's Rouge-L, DEER's dialogue check) and BLEU with ``sacrebleu``
(``corpus_bleu``, 13a tokenisation, exponential smoothing).  Both are slow on long texts — the
``rouge`` package fills a dictionary with every cell of the LCS table and rebuilds the LCS
recursively; sacrebleu runs four regular-expression substitutions over every line — so toollab
computes the same numbers another way:

* **ROUGE** (``backend="fast"``): the same tokenisation (split on ``.``, drop empty pieces,
  collapse whitespace, words split on ``" "``), the same *sets* of n-grams (the package's default
  ``exclusive=True``), the same summary-level Rouge-L (distinct words of the union of the LCS
  word sets over every reference × hypothesis sentence pair, over distinct words of each side)
  and the same formulas, ``1e-8`` terms included.  The LCS table is computed bit-parallel
  (one Python integer per row) and the LCS is rebuilt with the package's own tie rule
  (match → diagonal; ``T[i-1][j] > T[i][j-1]`` → up; else left), so the words it collects are
  the ones the package collects.  Where the package raises (a text with no word-bearing
  sentence) this module raises the same ``ValueError``.  The package stops with a
  ``RecursionError`` on sentence pairs longer than Python's recursion limit; this module has no
  such limit, and ``backend="package"`` raises the limit for the call so both agree.
* **BLEU** (``backend="fast"``): sacrebleu's 13a tokeniser applied word by word (its regular
  expressions only look at a character and its neighbour, so each whitespace-separated chunk,
  padded with one space on each side, tokenises as it does inside the line; chunks are cached),
  clipped n-gram counts 1–4 with one reference per hypothesis, and sacrebleu's
  ``compute_bleu`` arithmetic (brevity penalty, ``exp`` smoothing, ``my_log`` floor).

``tests/test_metrics_text_overlap.py`` checks both against the packages on thousands of random
and real texts.  ``backend="package"`` calls the packages themselves.
"""

from __future__ import annotations

import contextlib
import math
import re
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import chain, repeat
from operator import lshift, or_
from typing import Literal

Backend = Literal["fast", "package"]
BACKENDS: tuple[str, ...] = ("fast", "package")

RougeFigures = dict[str, dict[str, float]]


def check_backend(backend: str) -> Backend:
    if backend == "fast":
        return "fast"
    if backend == "package":
        return "package"
    raise ValueError(f"unknown text-metric backend {backend!r}; known: {', '.join(BACKENDS)}")


# -- ROUGE (pip package ``rouge`` 1.0.1) ----------------------------------------------------------


def rouge_sentences(text: str) -> list[list[str]]:
    """The package's tokenisation: sentences split on ``.`` (empty pieces dropped), whitespace
    collapsed, words split on ``" "`` — a whitespace-only piece is one empty word."""
    return [p.split() or [""] for p in text.split(".") if len(p) > 0]


def _prf(overlap: int, hyp_count: int, ref_count: int) -> dict[str, float]:
    """``f_r_p_rouge_n`` of the package, operation for operation."""
    precision = 0.0 if hyp_count == 0 else overlap / hyp_count
    recall = 0.0 if ref_count == 0 else overlap / ref_count
    f1 = 2.0 * ((precision * recall) / (precision + recall + 1e-8))
    return {"f": f1, "p": precision, "r": recall}


def _ngram_set(words: list[str], n: int) -> set[tuple[str, ...]]:
    return set(zip(*(words[i:] for i in range(n)), strict=False))


def rouge_n_figures(hyp: list[list[str]], ref: list[list[str]], n: int) -> dict[str, float]:
    """ROUGE-N on tokenised texts (n-grams run across sentence boundaries, as in the package)."""
    if not hyp:
        raise ValueError("Hypothesis is empty.")
    if not ref:
        raise ValueError("Reference is empty.")
    h = _ngram_set([w for s in hyp for w in s], n)
    r = _ngram_set([w for s in ref for w in s], n)
    return _prf(len(h & r), len(h), len(r))


def _lcs_words(x: list[str], y: list[str], into: set[str], xs: set[str] | None = None) -> None:
    """Add to ``into`` the words of the LCS of ``x`` (reference) and ``y`` (hypothesis) that the
    package's ``_recon_lcs`` rebuilds (``xs``: ``set(x)``, when the caller has it).

    Columns whose word never occurs in ``x`` are dropped first (such a column copies its left
    neighbour in every row, and the rebuild always steps left through it), and a common suffix is
    taken at once (the rebuild starts at the end and takes a match whenever it sees one).  When
    the LCS is as long as what is left of ``y`` (or of the words of ``x`` that occur in ``y``),
    every one of those positions is in any LCS, so their words are the answer whatever the tie
    rule; only otherwise is the LCS rebuilt step by step.
    """
    if xs is None:
        xs = set(x)
    y = [w for w in y if w in xs]
    n, m = len(x), len(y)
    while n and m and x[n - 1] == y[m - 1]:
        into.add(y[m - 1])
        n -= 1
        m -= 1
    if not n or not m:
        return
    x = x[:n]
    y = y[:m]
    # bit j of a row = 1 when T[i][j + 1] == T[i][j] (no step); T[i][j] = j - popcount(row & low_j)
    match: dict[str, int] = {}
    bit = 1
    for w in y:
        match[w] = match.get(w, 0) | bit
        bit <<= 1
    full = bit - 1
    rows = [full]
    v = full
    get = match.get
    for w in x:
        u = v & get(w, 0)
        if u:
            v = ((v + u) | (v - u)) & full
        rows.append(v)
    length = m - v.bit_count()
    if length == m:
        into.update(y)
        return
    in_y = [w for w in x if w in match]
    if length == len(in_y):
        into.update(in_y)
        return
    i, j = n, m
    while i > 0 and j > 0:
        if x[i - 1] == y[j - 1]:
            into.add(y[j - 1])
            i -= 1
            j -= 1
        else:
            # T[i-1][j] > T[i][j-1]  ⇔  j - pc(rows[i-1] & low_j) > j - 1 - pc(rows[i] & low_{j-1})
            low = (1 << j) - 1
            if (rows[i - 1] & low).bit_count() <= (rows[i] & (low >> 1)).bit_count():
                i -= 1
            else:
                j -= 1


def rouge_l_figures(hyp: list[list[str]], ref: list[list[str]]) -> dict[str, float]:
    """Summary-level ROUGE-L of the package (``rouge_l_summary_level``, ``exclusive=True``)."""
    if not hyp or not ref:
        raise ValueError("Collections must contain at least 1 sentence.")
    ref_words = {w for s in ref for w in s}
    hyp_words = {w for s in hyp for w in s}
    common = ref_words & hyp_words
    union: set[str] = set()
    if common:
        hyp_sets = [set(s) & common for s in hyp]
        for ref_s in ref:
            ref_set = set(ref_s)
            for hyp_s, hyp_set in zip(hyp, hyp_sets, strict=True):
                if (hyp_set & ref_set) <= union:
                    continue  # nothing this pair's LCS could add
                _lcs_words(ref_s, hyp_s, union, ref_set)
            if len(union) == len(common):
                break
    llcs = len(union)
    r_lcs = llcs / len(ref_words)
    p_lcs = llcs / len(hyp_words)
    f_lcs = 2.0 * ((p_lcs * r_lcs) / (p_lcs + r_lcs + 1e-8))
    return {"f": f_lcs, "p": p_lcs, "r": r_lcs}


ROUGE_METRICS = ("rouge-1", "rouge-2", "rouge-l")


def rouge_scores_fast(hyp: str, ref: str, metrics: Sequence[str] = ROUGE_METRICS) -> RougeFigures:
    """``Rouge(metrics).get_scores(hyp, ref)[0]``, computed without the package."""
    h = rouge_sentences(hyp)
    r = rouge_sentences(ref)
    out: RougeFigures = {}
    for name in metrics:
        if name == "rouge-l":
            out[name] = rouge_l_figures(h, r)
        elif name.startswith("rouge-") and name[6:].isdigit() and int(name[6:]) > 0:
            out[name] = rouge_n_figures(h, r, int(name[6:]))
        else:
            raise ValueError(f"Unknown metric '{name}'")
    return out


@contextlib.contextmanager
def _recursion_room(depth: int) -> Iterator[None]:
    """Let the package's recursive LCS rebuild go ``depth`` frames deep."""
    old = sys.getrecursionlimit()
    need = depth + 500
    if need > old:
        sys.setrecursionlimit(need)
    try:
        yield
    finally:
        if need > old:
            sys.setrecursionlimit(old)


def rouge_scores_package(
    hyp: str, ref: str, metrics: Sequence[str] = ROUGE_METRICS
) -> RougeFigures:
    """``Rouge(metrics).get_scores(hyp, ref)[0]`` from the package itself (the reference)."""
    from rouge import Rouge

    depth = max((len(s) for s in rouge_sentences(hyp)), default=0) + max(
        (len(s) for s in rouge_sentences(ref)), default=0
    )
    with _recursion_room(depth):
        scores: RougeFigures = Rouge(metrics=list(metrics)).get_scores(hyp, ref)[0]
    return scores


def rouge_scores(
    hyp: str, ref: str, metrics: Sequence[str] = ROUGE_METRICS, backend: str = "fast"
) -> RougeFigures:
    """The ``rouge`` package's per-pair figures ``{metric: {"f", "p", "r"}}``.  Raises the
    package's ``ValueError`` when a text has no word-bearing sentence."""
    if check_backend(backend) == "package":
        return rouge_scores_package(hyp, ref, metrics)
    return rouge_scores_fast(hyp, ref, metrics)


# -- BLEU (sacrebleu corpus_bleu, tokenize="13a", smooth_method="exp") ----------------------------

# sacrebleu's TokenizerRegexp; the first one replaces single characters, so it is a translation
_RE_SPLIT_CHAR = re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])")
_RE_STEPS = (
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
)
_SPLIT_TABLE = {c: f" {chr(c)} " for c in range(128) if _RE_SPLIT_CHAR.fullmatch(chr(c))}
_NEEDS_STEPS = re.compile(r"[\.,\-]")
MAX_NGRAM_ORDER = 4


class Tokenizer13a:
    """sacrebleu's ``Tokenizer13a`` (with its ``TokenizerRegexp``): the same tokens, computed one
    whitespace-separated chunk at a time and cached by chunk.

    The regular expressions only look at a character and its neighbour, and every chunk is
    bordered by whitespace (a non-digit that is not ``.`` or ``,``), so a chunk padded with one
    space on each side tokenises exactly as it does inside its line.  :meth:`ids` gives the
    tokens as integers (one per distinct token string, shared by every line of this tokenizer).
    """

    def __init__(self) -> None:
        self._chunks: dict[str, list[str]] = {}
        self._chunk_ids: dict[str, list[int]] = {}
        self.vocab: dict[str, int] = {}

    def _chunk(self, chunk: str) -> list[str]:
        text = f" {chunk} ".translate(_SPLIT_TABLE)
        if _NEEDS_STEPS.search(text) is not None:
            for pattern, repl in _RE_STEPS:
                text = pattern.sub(repl, text)
        toks = text.split()
        if len(self._chunks) < 1 << 20:
            self._chunks[chunk] = toks
        return toks

    def _chunk_id(self, chunk: str) -> list[int]:
        vocab = self.vocab
        ids = [
            vocab.setdefault(t, len(vocab)) for t in self._chunks.get(chunk) or self._chunk(chunk)
        ]
        if len(self._chunk_ids) < 1 << 20:
            self._chunk_ids[chunk] = ids
        return ids

    @staticmethod
    def _chunks_of(line: str) -> list[str]:
        line = line.rstrip()
        line = line.replace("<skipped>", "")
        line = line.replace("-\n", "")
        line = line.replace("\n", " ")
        if "&" in line:
            line = line.replace("&quot;", '"')
            line = line.replace("&amp;", "&")
            line = line.replace("&lt;", "<")
            line = line.replace("&gt;", ">")
        return line.split()

    def tokens(self, line: str) -> list[str]:
        """The tokens of one line (sacrebleu: ``_preprocess_segment`` then ``split()``)."""
        chunks = self._chunks_of(line)
        cache = self._chunks
        try:
            return list(chain.from_iterable(map(cache.__getitem__, chunks)))
        except KeyError:
            new = {c: self._chunk(c) for c in set(chunks).difference(cache)}
            return [t for c in chunks for t in (cache.get(c) or new[c])]

    def ids(self, line: str) -> list[int]:
        """:meth:`tokens` as integers (equal tokens, equal integers)."""
        chunks = self._chunks_of(line)
        cache = self._chunk_ids
        try:
            return list(chain.from_iterable(map(cache.__getitem__, chunks)))
        except KeyError:
            new = {c: self._chunk_id(c) for c in set(chunks).difference(cache)}
            return [t for c in chunks for t in (cache.get(c) or new[c])]


def clipped_counts(hyp: list[int], ref: list[int], bits: int) -> tuple[list[int], list[int]]:
    """Clipped n-gram matches and hypothesis n-grams, orders 1-4, of token-id sequences.

    An n-gram is one integer, its ids packed ``bits`` bits apart (``bits`` must exceed every
    id's bit length), so counting needs no tuples; the clipped count is
    ``sum(min(c_hyp, c_ref))`` over the n-grams both sides share, or the number of shared
    n-grams when one side has no repeated n-gram.
    """
    correct = [0] * MAX_NGRAM_ORDER
    total = [0] * MAX_NGRAM_ORDER
    kh: list[int] = hyp
    kr: list[int] = ref
    # once one side has no repeated n-gram, its longer n-grams have none either
    h_unique = r_unique = False
    for n in range(MAX_NGRAM_ORDER):
        if n:
            kh = list(map(or_, map(lshift, kh[:-1], repeat(bits)), hyp[n:]))
            kr = list(map(or_, map(lshift, kr[:-1], repeat(bits)), ref[n:]))
        if not kh:
            break
        total[n] = len(kh)
        if not kr:
            continue
        if h_unique:
            correct[n] = len(set(kh).intersection(kr))
        elif r_unique:
            correct[n] = len(set(kr).intersection(kh))
        else:
            ch = Counter(kh)
            cr = Counter(kr)
            common = ch.keys() & cr.keys()
            h_unique = len(ch) == len(kh)
            r_unique = len(cr) == len(kr)
            if h_unique or r_unique:
                correct[n] = len(common)
            else:
                correct[n] = sum(map(min, map(ch.__getitem__, common), map(cr.__getitem__, common)))
    return correct, total


def _my_log(num: float) -> float:
    return -9999999999 if num == 0.0 else math.log(num)


def compute_bleu(correct: list[int], total: list[int], sys_len: int, ref_len: int) -> float:
    """sacrebleu ``BLEU.compute_bleu`` with ``smooth_method="exp"``, no effective order."""
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    precisions = [0.0] * MAX_NGRAM_ORDER
    if not any(correct):
        return 0.0
    smooth_mteval = 1.0
    for n in range(1, MAX_NGRAM_ORDER + 1):
        if total[n - 1] == 0:
            break
        if correct[n - 1] == 0:
            smooth_mteval *= 2
            precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1])
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    return bp * math.exp(sum([_my_log(p) for p in precisions]) / MAX_NGRAM_ORDER)


def corpus_bleu_fast(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """``sacrebleu.corpus_bleu(hyps, [refs]).score`` (0–100) without sacrebleu."""
    if len(hyps) != len(refs):
        raise ValueError("hypotheses and references differ in number")
    tok = Tokenizer13a()
    hyp_ids = [tok.ids(h) for h in hyps]
    ref_ids = [tok.ids(r) for r in refs]
    bits = max(1, len(tok.vocab).bit_length())
    correct = [0] * MAX_NGRAM_ORDER
    total = [0] * MAX_NGRAM_ORDER
    sys_len = ref_len = 0
    for h, r in zip(hyp_ids, ref_ids, strict=True):
        sys_len += len(h)
        ref_len += len(r)
        k, t = clipped_counts(h, r, bits)
        for n in range(MAX_NGRAM_ORDER):
            correct[n] += k[n]
            total[n] += t[n]
    return compute_bleu(correct, total, sys_len, ref_len)


def corpus_bleu_package(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """``sacrebleu.corpus_bleu(hyps, [refs]).score`` from sacrebleu itself (the reference)."""
    import sacrebleu

    score: float = sacrebleu.corpus_bleu(list(hyps), [list(refs)]).score
    return score


def corpus_bleu(hyps: Sequence[str], refs: Sequence[str], backend: str = "fast") -> float:
    """sacrebleu's corpus BLEU (0–100) of ``hyps`` against one reference each."""
    if check_backend(backend) == "package":
        return corpus_bleu_package(hyps, refs)
    return corpus_bleu_fast(hyps, refs)
