"""The transformers backend: the bundled GGUF through ``gguf_file=`` (one tiny generation)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toollab.errors import BackendError
from toollab.models import load_model

pytestmark = pytest.mark.slow


def test_missing_model_folder(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="model folder not found"):
        load_model(f"hf:{tmp_path / 'nope'}")
    with pytest.raises(BackendError, match="GGUF model file not found"):
        load_model(f"hf:{tmp_path}", gguf_file="missing.gguf")


def test_bundled_gguf_through_transformers(bundled_gguf: Path) -> None:
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from toollab.models.hf import HFModel
    from toollab.models.llamacpp import LlamaCppModel

    model = load_model("hf:bundled")
    assert isinstance(model, HFModel) and model.gguf_file == bundled_gguf.name
    msgs = [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Name a fruit."},
    ]
    out = model.generate(msgs, max_tokens=6)
    assert out.text.strip() and 0 < out.usage.completion_tokens <= 6
    assert out.usage.prompt_tokens > 5
    assert out.timings.prompt_s is not None and 0 < out.timings.prompt_s <= out.timings.total_s
    # the same chat template as llama.cpp renders the same prompt
    local = LlamaCppModel(bundled_gguf, n_ctx=512)
    try:
        from toollab.models import ChatRequest

        assert model.render(ChatRequest(messages=msgs)) == local.render(ChatRequest(messages=msgs))
    finally:
        local.close()
    cut = model.generate(msgs, max_tokens=6, stop=[out.text.strip()[:2]])
    assert out.text.strip()[:2] not in cut.text
    with pytest.raises(BackendError, match="unconstrained"):
        model.generate(msgs, max_tokens=2, json_schema={"type": "object"})
