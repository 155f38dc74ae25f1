"""Greedy grammar-constrained generation that checks the grammar lazily (llama.cpp backend).

llama-cpp-python's sampler chain runs the grammar over every vocabulary entry at every step.
Like llama.cpp's own server, :func:`greedy_grammar_completion` instead takes the argmax token,
checks that one token against the grammar, and runs the grammar over the full candidate array
only when the grammar rejects it. The chosen token is the same in both cases (the argmax of the
grammar-filtered logits, first index on ties), so the text equals the sampler-chain path's: same
prompt-prefix reuse as ``Llama.generate``, same stop-string, end-of-generation, multi-byte and
``max_tokens`` handling as ``Llama.create_completion``.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from toollab.errors import BackendError


@dataclass(frozen=True)
class GreedyCompletion:
    """The generated text, its token count, why generation ended ("stop" / "length" / "repeat")
    and the stop string it ended at (left out of ``text``)."""

    text: str
    completion_tokens: int
    finish_reason: str
    stop: str | None = None


def _prompt_suffix(llm: Any, tokens: list[int]) -> list[int]:
    """Drop the KV state after the longest reusable prefix; the tokens left to evaluate.

    Mirrors ``Llama.generate`` so ``input_ids``/``n_tokens`` and the KV cache stay consistent.
    """
    if llm.n_tokens > 0:
        live = llm.input_ids[: llm.n_tokens].tolist()
        longest = 0
        for a, b in zip(live, tokens, strict=False):
            if a != b:
                break
            longest += 1
        consumed = longest == len(tokens)
        if consumed and llm.n_tokens == len(tokens) and not llm._requires_eval:
            return []  # the logits of the last decode are those of the prompt's last token
        reuse = longest - 1 if consumed else longest
        if reuse > 0 and llm._ctx.kv_cache_seq_rm(-1, reuse, -1):
            llm.n_tokens = reuse
            llm._requires_eval = True
            return tokens[reuse:]
    llm.reset()
    return tokens


def _max_new_tokens(max_tokens: int | None, n_prompt: int, n_ctx: int) -> int:
    """``create_completion``'s rule: unlimited (≤ 0) or too many → what the context holds."""
    if max_tokens is None or max_tokens <= 0:
        max_tokens = n_ctx - n_prompt
    return max_tokens if max_tokens + n_prompt < n_ctx else n_ctx - n_prompt


class _Detokenizer:
    """Token pieces as bytes, accumulated (``LlamaModel.detokenize`` without special tokens)."""

    def __init__(self, llm: Any) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        self._vocab = llm._model.vocab
        self._bos = llm.token_bos()
        self._buf = (ctypes.c_char * 256)()
        self.data = b""
        self._first = True

    def add(self, token: int) -> bytes:
        n = self._llama_cpp.llama_token_to_piece(self._vocab, token, self._buf, 256, 0, False)
        if n < 0:
            raise BackendError(f"llama.cpp cannot detokenize token {token}")
        piece = self._buf.raw[:n]
        if self._first and token == self._bos and piece[:1] == b" ":
            piece = piece[1:]  # llama-cpp-python drops the space after a leading BOS
        self._first = False
        self.data += piece
        return self.data


def _pending_utf8(text: bytes, pending: int) -> int:
    """``create_completion``'s count of tokens to wait for an incomplete UTF-8 character."""
    for k, char in enumerate(text[-3:]):
        k = 3 - k
        for num, pattern in ((2, 192), (3, 224), (4, 240)):
            if num > k and pattern & char == pattern:
                pending = num - k
    return pending


class _GrammarPicker:
    """Greedy choice under a grammar sampler: the argmax alone first, the full array if rejected."""

    def __init__(self, llm: Any, gbnf: str, root: str) -> None:
        import llama_cpp
        from llama_cpp._internals import LlamaTokenDataArray

        self._llama_cpp = llama_cpp
        sampler = llama_cpp.llama_sampler_init_grammar(
            llm._model.vocab, gbnf.encode("utf-8"), root.encode("utf-8")
        )
        if not sampler:
            raise BackendError("llama.cpp could not build the grammar sampler")
        self.sampler = sampler
        self.n_vocab = int(llm.n_vocab())
        self._one_data = (llama_cpp.llama_token_data * 1)()
        self._one = llama_cpp.llama_token_data_array(
            data=ctypes.cast(self._one_data, llama_cpp.llama_token_data_p),
            size=1,
            selected=-1,
            sorted=False,
        )
        self._full: Any = None
        self._full_type = LlamaTokenDataArray
        #: steps where the grammar rejected the argmax and all candidates were checked
        self.full_passes = 0

    def pick(self, logits: np.ndarray) -> int:
        llama_cpp = self._llama_cpp
        token = int(np.argmax(logits))
        self._one_data[0] = llama_cpp.llama_token_data(token, float(logits[token]), 0.0)
        self._one.size, self._one.selected, self._one.sorted = 1, -1, False
        llama_cpp.llama_sampler_apply(self.sampler, ctypes.byref(self._one))
        if self._one_data[0].logit != -math.inf:  # the grammar accepts the argmax
            return token
        self.full_passes += 1
        if self._full is None:
            self._full = self._full_type(n_vocab=self.n_vocab)
        full = self._full
        full.copy_logits(logits)
        llama_cpp.llama_sampler_apply(self.sampler, ctypes.byref(full.candidates))
        size = int(full.candidates.size)
        values = full.candidates_data.logit[:size]
        best = int(np.argmax(values))
        if values[best] == -math.inf:
            raise BackendError("the grammar allows no next token (the grammar cannot be completed)")
        return int(full.candidates_data.id[best])

    def accept(self, token: int) -> None:
        self._llama_cpp.llama_sampler_accept(self.sampler, token)

    def free(self) -> None:
        if self.sampler:
            self._llama_cpp.llama_sampler_free(self.sampler)
            self.sampler = None


def greedy_grammar_completion(
    llm: Any,
    prompt_tokens: Sequence[int],
    *,
    gbnf: str,
    root: str,
    max_tokens: int | None,
    stop: Sequence[str],
    stop_when: Callable[[str], bool] | None = None,
) -> GreedyCompletion:
    """Greedy completion of ``prompt_tokens`` under the GBNF grammar ``gbnf`` (rule ``root``).

    ``stop_when(text)`` is asked after every token with the text generated so far (complete
    characters only); when it answers true generation ends there, ``finish_reason`` ``"repeat"``
    (it is the :class:`~toollab.models.constrain.RepeatGuard` hook).
    """
    import llama_cpp

    tokens = [int(t) for t in prompt_tokens]
    n_ctx = int(llm.n_ctx())
    if len(tokens) >= n_ctx:
        raise BackendError(
            f"prompt of {len(tokens)} tokens does not fit the context of {n_ctx} tokens"
        )
    limit = _max_new_tokens(max_tokens, len(tokens), n_ctx)
    stops = [s.encode("utf-8") for s in stop]
    vocab = llm._model.vocab
    ctx = llm._ctx.ctx
    picker = _GrammarPicker(llm, gbnf, root)
    detok = _Detokenizer(llm)
    completion: list[int] = []
    text = b""
    finish = "length"
    hit: bytes | None = None
    pending = 0
    try:
        to_eval = _prompt_suffix(llm, tokens)
        while True:
            llm.eval(to_eval)
            ptr = llama_cpp.llama_get_logits_ith(ctx, -1)
            if not ptr:
                raise BackendError("llama.cpp returned no logits")
            logits = np.ctypeslib.as_array(ptr, shape=(picker.n_vocab,))
            token = picker.pick(logits)
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                text, finish = detok.data, "stop"
                break
            picker.accept(token)
            completion.append(token)
            all_text = detok.add(token)
            pending = _pending_utf8(all_text, pending)
            if pending > 0:
                pending -= 1
            else:
                hits = [s for s in stops if s in all_text]
                if hits:
                    hit = min(hits, key=all_text.index)
                    text, finish = all_text[: all_text.index(hit)], "stop"
                    break
                if stop_when is not None and stop_when(all_text.decode("utf-8", errors="ignore")):
                    text, finish = all_text, "repeat"
                    break
                if len(completion) >= limit:
                    text = all_text
                    break
            if llm.n_tokens + 1 > n_ctx:  # a pending multi-byte character at the context end
                text = all_text
                break
            to_eval = [token]
    finally:
        picker.free()
    return GreedyCompletion(
        text=text.decode("utf-8", errors="ignore"),
        completion_tokens=len(completion),
        finish_reason=finish,
        stop=hit.decode("utf-8") if hit is not None else None,
    )
