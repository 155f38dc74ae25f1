"""Token counts with a GGUF model's own tokenizer (the bundled model's by default).

Only the vocabulary is loaded (``vocab_only``): no weights, a fraction of a second.  The text is
tokenized as the trainer does it: special tokens as text are read as special tokens, no BOS
added.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from toollab.errors import BackendError, InputError


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
            from toollab.models.bundled import BUNDLED_NAME, bundled_gguf_path

            path = bundled_gguf_path()
            self.name = f"bundled:{BUNDLED_NAME}"
        else:
            self.name = str(path)
        self._llm = gguf_vocab(Path(path))

    def count(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))
