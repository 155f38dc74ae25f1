"""Token counts with a GGUF model's own tokenizer (the bundled model's by default).

Only the vocabulary is loaded (``vocab_only``): no weights, a fraction of a second.  The text is
tokenized as the trainer does it: special tokens as text are read as special tokens, no BOS
added.

llama.cpp first cuts a text at its special tokens and tokenizes each piece on its own, so a
count is the sum of its pieces' counts plus one per special token.  :class:`TokenCounter` keeps
the pieces' counts (the same system prompt with the same tool docs recurs across examples),
which makes counting several times faster on real exports and gives the same numbers.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

from toollab.errors import BackendError, InputError
from toollab.models.bundled import BUNDLED_NAME, bundled_gguf_path


@functools.lru_cache(maxsize=4)
def gguf_vocab(path: Path) -> Any:
    """A vocabulary-only ``llama_cpp.Llama`` of a GGUF file (cached per path)."""
    if not path.is_file():
        raise InputError("GGUF file not found", path=path)
    try:
        from llama_cpp import Llama
    except ImportError as exc:
        raise BackendError(
            "reading a GGUF tokenizer needs llama-cpp-python: pip install 'toollab[llama]'"
        ) from exc
    try:
        return Llama(model_path=str(path), vocab_only=True, verbose=False)
    except (ValueError, RuntimeError, OSError) as exc:
        raise InputError(f"llama.cpp could not read the vocabulary: {exc}", path=path) from exc


class TokenCounter:
    """Counts tokens of training texts with a GGUF tokenizer."""

    def __init__(self, path: Path | None = None) -> None:
        if path is None:
            path = bundled_gguf_path()
            self.name = f"bundled:{BUNDLED_NAME}"
        else:
            self.name = str(path)
        self._llm = gguf_vocab(Path(path))
        specials = sorted(special_tokens(self._llm), key=len, reverse=True)
        self._split = (
            re.compile("(" + "|".join(map(re.escape, specials)) + ")") if specials else None
        )
        self._cache: dict[str, int] = {}

    def tokenize(self, text: str) -> list[int]:
        """The token ids, as llama.cpp reads them (special tokens as text are special)."""
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def count(self, text: str) -> int:
        if self._split is None:
            return len(self.tokenize(text))
        total = 0
        for k, piece in enumerate(self._split.split(text)):
            if k % 2:  # a special token
                total += 1
            elif piece:
                n = self._cache.get(piece)
                if n is None:
                    n = len(self.tokenize(piece))
                    if len(self._cache) >= 50_000:
                        self._cache.clear()
                    self._cache[piece] = n
                total += n
        return total


def special_tokens(llm: Any) -> list[str]:
    """The texts of a vocabulary's control and user-defined tokens (what ``special=True``
    tokenization matches in a text)."""
    import llama_cpp

    get_attr = getattr(llama_cpp, "llama_vocab_get_attr", None)
    if get_attr is None:
        return []
    wanted = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
    model = llm._model
    out = []
    for i in range(llm.n_vocab()):
        if get_attr(model.vocab, i) & wanted:
            text = model.token_get_text(i)
            if text:
                out.append(text)
    return out
