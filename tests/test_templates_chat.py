"""``--template chat``: the loaded model's own chat template, tools documented exactly once.

The bundled GGUF is loaded with a tool-aware (Hermes / Qwen 2.5 style) chat template instead of
SmolLM2's own, which does not take ``tools=``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from toollab.eval.runner import EvalConfig, run_eval
from toollab.models import ChatRequest, GenerateOptions, ModelOutput
from toollab.models.llamacpp import LlamaCppModel
from toollab.schema import Instance, Tool
from toollab.templates import ChatTemplate, HermesTemplate, get_template
from toollab.templates.chat_template import HERMES_TOOLS_CHAT_TEMPLATE

pytestmark = pytest.mark.slow

ADD = Tool(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
INST = Instance(id="c1", query="What is 2 + 3?", tools=[ADD])
TOOLS_BLOCK = "<tools>\n{"  # the block that lists the tools


class RecordingLlama(LlamaCppModel):
    """The llama.cpp backend, keeping the text it renders for every request."""

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.rendered: list[str] = []

    async def request(self, req: ChatRequest) -> ModelOutput:
        self.rendered.append(self.render(req))
        return await super().request(req)


@pytest.fixture(scope="module")
def tool_aware(bundled_gguf: Path) -> Iterator[RecordingLlama]:
    model = RecordingLlama(bundled_gguf, n_ctx=2048, chat_template=HERMES_TOOLS_CHAT_TEMPLATE)
    yield model
    model.close()


def test_chat_template_comes_from_the_model(tool_aware: RecordingLlama) -> None:
    unbound = get_template("chat")
    assert isinstance(unbound, ChatTemplate) and not unbound.supports_tools  # no model yet
    tpl = unbound.with_model(tool_aware)
    assert isinstance(tpl, ChatTemplate) and tpl.source == HERMES_TOOLS_CHAT_TEMPLATE
    assert tpl.supports_tools and tpl.tools_in_chat_template
    assert tpl.special_tokens["eos_token"] == "<|im_end|>"
    # the conversation alone: the chat template documents the tools
    assert tpl.messages(INST) == [{"role": "user", "content": "What is 2 + 3?"}]
    opts = GenerateOptions(template_tools=tpl.tools_in_chat_template)
    text = tool_aware.render(ChatRequest(messages=tpl.messages(INST), tools=[ADD], options=opts))
    assert text == tpl.prompt(INST)  # ChatTemplate renders exactly what the backend sends
    assert text.count(TOOLS_BLOCK) == 1 and text.count('"name": "add"') == 1
    # rebinding keeps an explicit template
    assert tpl.with_model(tool_aware) is tpl


def test_own_template_without_tools_falls_back(bundled_gguf: Path) -> None:
    plain = LlamaCppModel(bundled_gguf, n_ctx=512)
    try:
        tpl = get_template("chat").with_model(plain)
        assert isinstance(tpl, ChatTemplate)
        own = plain.own_chat_template()
        assert own is not None and tpl.source == own.source  # SmolLM2's own template ...
        assert not tpl.supports_tools and not tpl.tools_in_chat_template  # ... takes no tools
        assert tpl.parser == "hermes" and isinstance(tpl.fallback, HermesTemplate)
        assert "<tools>" in tpl.messages(INST)[0]["content"]  # documented by the fallback
    finally:
        plain.close()


def test_tools_are_documented_once_on_every_route(tool_aware: RecordingLlama) -> None:
    """toollab's own templates document the tools in the system prompt; the backend must not
    hand them to a tool-aware chat template as well (the default options do not)."""
    json_tpl = get_template("json")
    req = ChatRequest(messages=json_tpl.messages(INST), tools=[ADD], options=GenerateOptions())
    text = tool_aware.render(req)
    assert text.count('"name": "add"') == 1  # the json template's system prompt
    assert TOOLS_BLOCK not in text  # not the chat template's tool block too
    both = req.model_copy(update={"options": GenerateOptions(template_tools=True)})
    assert tool_aware.render(both).count('"name": "add"') == 2  # what the flag alone would do


def test_eval_with_chat_template_uses_the_model_template(
    tool_aware: RecordingLlama, tmp_path: Path
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(INST.model_dump(mode="json")) + "\n")
    config = EvalConfig(
        data=str(data), format="toollab", template="chat", max_tokens=24, constrained=True
    )
    tool_aware.rendered.clear()
    outcome = run_eval(config, tmp_path / "run", model=tool_aware)
    assert outcome.new == 1
    (prompt,) = tool_aware.rendered
    assert prompt.count(TOOLS_BLOCK) == 1 and prompt.count('"name": "add"') == 1
    assert prompt.startswith("<|im_start|>system\n# Tools")
    pred = json.loads((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()[0])
    assert pred["prompt"] == [{"role": "user", "content": "What is 2 + 3?"}]
    # constrained, decision first (a no-call is legal for this instance): a well-formed answer
    raw = pred["metadata"]["constrained_raw"]
    assert re.match(r'\s*\{\s*"decision"\s*:\s*"(call|no_call)"', raw), raw
    assert pred["parsed"]["status"] in ("calls", "no_call")
