"""The training sequence: the conversation rendered through the model's chat template, with the
character spans of every assistant output (its end-of-turn marker included).

The prompt part is exactly what inference renders (the llama.cpp backend renders the GGUF's own
``tokenizer.chat_template`` with its BOS / EOS tokens; the ``transformers`` backend the
tokenizer's template), so a model trained on ``text`` sees at training time what it sees when
asked.  A span starts where the prompt with the generation prompt ends and covers the target
plus the end-of-turn marker the template writes after an assistant message (``<|im_end|>`` for
ChatML), never the newline after it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.errors import InputError, UsageError
from toollab.models.bundled import BUNDLED_NAME, bundled_gguf_path
from toollab.sft.tokens import gguf_vocab
from toollab.templates.chat_template import render_jinja

Message = dict[str, Any]

#: plain ChatML, for a model whose chat template is not at hand (``--chat-template chatml``)
CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


@dataclass
class ChatFormat:
    """A Jinja chat template and the special tokens it refers to."""

    name: str
    source: str
    special_tokens: dict[str, str] = field(default_factory=dict)

    def render(
        self,
        messages: list[Message],
        *,
        add_generation_prompt: bool,
        tools: list[dict[str, Any]] | None = None,
    ) -> str:
        return render_jinja(
            self.source,
            messages=messages,
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            **self.special_tokens,
        )

    @functools.cached_property
    def end_of_turn(self) -> str:
        """The marker the template writes after an assistant message's content (stripped)."""
        user: list[Message] = [{"role": "user", "content": "x"}]
        prefix = self.render(user, add_generation_prompt=True)
        probe = "\x00"
        full = self.render(
            [*user, {"role": "assistant", "content": probe}], add_generation_prompt=False
        )
        at = full.find(probe, len(prefix) - 1 if prefix else 0)
        marker = full[at + 1 :].strip() if at >= 0 else ""
        return marker or self.special_tokens.get("eos_token", "")

    def sequence(
        self, messages: list[Message], tools: list[dict[str, Any]] | None = None
    ) -> tuple[str, list[list[int]]]:
        """(text, spans): the whole conversation and the span of every assistant message.

        Each assistant turn must continue the prompt before it exactly (a template that rewrites
        earlier turns, e.g. drops past reasoning, cannot be trained this way: an
        :class:`InputError` says so)."""
        full = self.render(messages, add_generation_prompt=False, tools=tools)
        spans: list[list[int]] = []
        marker = self.end_of_turn
        for i, msg in enumerate(messages):
            if msg.get("role") != "assistant":
                continue
            prefix = self.render(messages[:i], add_generation_prompt=True, tools=tools)
            content = str(msg.get("content") or "")
            if not full.startswith(prefix + content):
                raise InputError(
                    f"chat template {self.name!r}: assistant turn {i} is not a continuation of "
                    "the prompt before it; the loss span cannot be placed"
                )
            start = len(prefix)
            end = start + len(content)
            rest = full[end:]
            lead = len(rest) - len(rest.lstrip())
            if marker and rest[lead:].startswith(marker):
                end += lead + len(marker)
            spans.append([start, end])
        return full, spans


def _gguf_format(path: Path, name: str) -> ChatFormat:

    llm = gguf_vocab(path)
    source = llm.metadata.get("tokenizer.chat_template")
    if not isinstance(source, str) or not source:
        raise InputError("the GGUF file has no tokenizer.chat_template", path=path)
    model = llm._model
    eos_id, bos_id = llm.token_eos(), llm.token_bos()
    special = {
        "eos_token": model.token_get_text(eos_id) if eos_id != -1 else "",
        "bos_token": model.token_get_text(bos_id) if bos_id != -1 else "",
    }
    return ChatFormat(name, source, special)


def load_chat_format(spec: str) -> ChatFormat:
    """``bundled`` (the bundled GGUF's own template, the default), ``chatml``, a ``.gguf`` file
    (its ``tokenizer.chat_template``) or a ``.jinja`` / text file holding a template."""
    if spec == "bundled":
        return _gguf_format(bundled_gguf_path(), f"bundled:{BUNDLED_NAME}")
    if spec == "chatml":
        return ChatFormat("chatml", CHATML_TEMPLATE, {"eos_token": "<|im_end|>"})
    path = Path(spec)
    if not path.is_file():
        raise UsageError(
            f"--chat-template {spec!r}: not 'bundled', 'chatml' or an existing .gguf / .jinja file"
        )
    if path.suffix.lower() == ".gguf":
        return _gguf_format(path, str(path))
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the chat template: {exc}", path=path) from exc
    return ChatFormat(str(path), source, {})
