"""The shipped tool-tuned model ``bundled:smollm2-135m-tools``: its adapter and model card in the
package, what it loads as, and what it writes — through the real llama.cpp backend."""

from __future__ import annotations

import asyncio
import hashlib
import re
from pathlib import Path

import pytest

from toollab.agents.base import read_output
from toollab.errors import UsageError
from toollab.models import ChatRequest, GenerateOptions, ModelOutput, load_model
from toollab.models.bundled import (
    BUNDLED_MODELS,
    TOOLS_NAME,
    bundled_adapter_path,
    bundled_card_path,
)
from toollab.templates import get_template


def test_the_adapter_and_its_card_ship_in_the_package() -> None:
    adapter = bundled_adapter_path(TOOLS_NAME)
    card = bundled_card_path(TOOLS_NAME)
    assert adapter is not None and card is not None and card.is_file()
    text = card.read_text(encoding="utf-8")
    # the card names the file's hash, the command that rebuilds it and held-out figures
    digest = hashlib.sha256(adapter.read_bytes()).hexdigest()
    assert digest in text
    assert "toollab train recipe smollm2-135m-tools" in text
    assert "scripts/recipe-data.sh" in text
    assert re.search(r"BFCL", text) and re.search(r"held-out", text, re.I)
    assert bundled_adapter_path("smollm2-135m") is None
    assert set(BUNDLED_MODELS) == {"smollm2-135m", TOOLS_NAME}


def test_an_unknown_bundled_name_or_a_second_adapter_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="smollm2-135m-tools"):
        load_model("bundled:smollm2-135m-tool")
    with pytest.raises(UsageError, match="already carries its adapter"):
        load_model(f"bundled:{TOOLS_NAME}+lora=/tmp/x.gguf")


def test_a_decision_object_written_without_a_grammar_is_read_as_constrained_decoding() -> None:
    """What a model trained on constrained targets writes even when decoding is free."""
    json_tpl = get_template("json")
    text = '{"decision": "call", "call": {"name": "get_weather", "arguments": {"city": "Oslo"}}}'
    raw, parsed = read_output(ModelOutput(text=text), json_tpl)
    assert raw == text and [c.name for c in parsed.calls] == ["get_weather"]
    assert parsed.details["read_as"] == "constrained"
    _, parsed = read_output(ModelOutput(text='{"decision": "no_call", "answer": "hi"}'), json_tpl)
    assert parsed.text == "hi" and not parsed.calls
    # anything else keeps the template's own reading, its error included
    _, parsed = read_output(ModelOutput(text='{"decision": 3}'), json_tpl)
    assert parsed.is_error and "read_as" not in parsed.details


@pytest.mark.slow
def test_the_tuned_model_calls_the_tool_with_free_decoding(bundled_gguf: Path) -> None:
    """No grammar: on a held-out request of an environment it was trained in (the weather
    environment's validation split), the tuned model still writes a call the agent reads, and
    not what the base model writes. (With tools it has never seen it declines too often:
    MODEL_CARD.md, "Limitations".)"""
    from toollab.envs.generate import generate

    template = get_template("json")
    inst = next(x for x in generate("weather", "validation", 6, seed=0) if x.decision == "Call")
    texts = {}
    for name in ("bundled:smollm2-135m", f"bundled:{TOOLS_NAME}"):
        model = load_model(name)
        try:
            req = ChatRequest(
                messages=template.messages(inst), options=GenerateOptions(max_tokens=64)
            )
            out = asyncio.run(model.request(req))
        finally:
            model.close()
        assert not out.error, out.error
        texts[name] = out
    tuned = texts[f"bundled:{TOOLS_NAME}"]
    _, parsed = read_output(tuned, template)
    offered = {t.name for t in inst.tools}
    assert parsed.calls and all(c.name in offered for c in parsed.calls), tuned.text
    assert texts["bundled:smollm2-135m"].text != tuned.text
