"""``chat``: tools rendered through the model's own chat template when it takes ``tools=``.

Many instruction-tuned models ship a Jinja chat template that documents tools itself (Qwen,
Hermes, Llama 3.1, Mistral ...).  :class:`ChatTemplate` wraps such a template — from a
``transformers`` tokenizer (``tokenizer.apply_chat_template(..., tools=[t.to_hf()])``), a GGUF
file's ``tokenizer.chat_template``, a loaded model (:meth:`ChatTemplate.with_model`, which is how
``--template chat`` gets the model's own template) or a template string — and uses it when its
source mentions ``tools``.  Otherwise it falls back to one of toollab's documented templates
(``hermes`` by default), which also reads the model's output unless another ``parser`` is named.

:data:`HERMES_TOOLS_CHAT_TEMPLATE` is a compact ChatML template in the Hermes / Qwen 2.5 style
that takes ``tools=``, for models whose own template does not (the bundled SmolLM2's):
``load_model("bundled:", chat_template=HERMES_TOOLS_CHAT_TEMPLATE)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from toollab.errors import InputError
from toollab.schema import Instance, Tool, ToolCall
from toollab.templates.base import Message, Template, get_template, register_template
from toollab.templates.jinja_render import render_jinja


class OwnTemplate(Protocol):
    """A model's own Jinja chat template and the special tokens it refers to
    (``toollab.models.ChatTemplateSource``)."""

    @property
    def source(self) -> str: ...

    @property
    def special_tokens(self) -> dict[str, str]: ...


@runtime_checkable
class OwnsChatTemplate(Protocol):
    """A loaded model that may render prompts with its own chat template (every
    ``toollab.models.Model``; ``None`` when it has none)."""

    def own_chat_template(self) -> OwnTemplate | None: ...


#: ChatML with Hermes / Qwen 2.5-style tools: a ``# Tools`` system block listing each tool as
#: JSON inside ``<tools>``, calls as ``<tool_call>{"name", "arguments"}</tool_call>``, results as
#: ``<tool_response>`` blocks in a user turn
HERMES_TOOLS_CHAT_TEMPLATE = """\
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] + '\\n\\n' }}{%- endif %}
{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n' }}
{{- 'You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}
{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}
{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and ' }}
{{- 'arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n' }}
{{- '{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}
{%- elif messages[0]['role'] == 'system' %}
{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant' }}
{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}
{%- for call in message.tool_calls or [] %}
{%- if call.function is defined %}{%- set call = call.function %}{%- endif %}
{{- '\\n<tool_call>\\n{"name": "' + call.name + '", "arguments": ' }}
{%- if call.arguments is string %}{{- call.arguments }}{%- else %}{{- call.arguments | tojson }}{%- endif %}
{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}
{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""


def gguf_chat_template(path: str | Path) -> str | None:
    """The ``tokenizer.chat_template`` stored in a GGUF file (``None`` when it has none)."""
    p = Path(path)
    if not p.is_file():
        raise InputError("GGUF file not found", path=p)
    import importlib.util

    if importlib.util.find_spec("llama_cpp") is not None:
        # the metadata only (vocab_only): far faster than gguf's GGUFReader
        from llama_cpp import Llama

        llm = Llama(model_path=str(p), vocab_only=True, verbose=False)
        value = llm.metadata.get("tokenizer.chat_template")
        return value if isinstance(value, str) else None
    try:
        from gguf import GGUFReader
    except ImportError as exc:
        raise InputError(
            "reading a GGUF chat template needs llama-cpp-python or gguf: pip install 'toollab[llama]'"
        ) from exc
    field = GGUFReader(str(p)).fields.get("tokenizer.chat_template")
    if field is None:
        return None
    return bytes(field.parts[field.data[0]]).decode("utf-8")


class ChatTemplate(Template):
    """A model's chat template, used for tools when it supports ``tools=``."""

    name = "chat"

    def __init__(
        self,
        tokenizer: Any = None,
        *,
        chat_template: str | None = None,
        fallback: str | Template = "hermes",
        parser: str | None = None,
        special_tokens: dict[str, str] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self._parser_arg = parser
        source = (
            chat_template
            if chat_template is not None
            else getattr(tokenizer, "chat_template", None)
        )
        self.source: str | None = source if isinstance(source, str) else None
        self.fallback = get_template(fallback) if isinstance(fallback, str) else fallback
        self.parser = parser or self.fallback.parser
        self.max_calls = self.fallback.max_calls
        self.supports_refs = self.fallback.supports_refs
        self.special_tokens = dict(special_tokens or {})
        if tokenizer is not None:
            for key in ("bos_token", "eos_token"):
                tok = getattr(tokenizer, key, None)
                if isinstance(tok, str):
                    self.special_tokens.setdefault(key, tok)

    @classmethod
    def from_gguf(cls, path: str | Path, **kw: Any) -> ChatTemplate:
        return cls(chat_template=gguf_chat_template(path), **kw)

    def with_model(self, model: object) -> ChatTemplate:
        """The chat template of a loaded model (its ``own_chat_template()``: the GGUF's
        ``tokenizer.chat_template``, a ``chat_template=`` override or the HF tokenizer's).

        A template built with an explicit source or tokenizer is kept as it is; a model without
        a chat template (an OpenAI-compatible server renders its own) keeps the fallback.
        """
        if self.source is not None or self.tokenizer is not None:
            return self
        found = model.own_chat_template() if isinstance(model, OwnsChatTemplate) else None
        if found is None:
            return self
        return ChatTemplate(
            chat_template=found.source,
            fallback=self.fallback,
            parser=self._parser_arg,
            special_tokens={**found.special_tokens, **self.special_tokens},
        )

    @property
    def supports_tools(self) -> bool:
        """Whether the wrapped chat template documents tools itself."""
        return self.source is not None and "tools" in self.source

    @property
    def tools_in_chat_template(self) -> bool:  # type: ignore[override]
        """The tools go to the chat template (``tools=``) exactly when it documents them."""
        return self.supports_tools

    # -- prompts ---------------------------------------------------------------------------
    def system_prompt(self, tools: list[Tool]) -> str:
        """The fallback's system prompt (a tool-aware chat template documents tools itself)."""
        return "" if self.supports_tools else self.fallback.system_prompt(tools)

    def messages(self, instance: Instance, tools: list[Tool] | None = None) -> list[Message]:
        """The conversation; the tools travel separately (``tools=``) when the template takes them."""
        if not self.supports_tools:
            return self.fallback.messages(instance, tools)
        if instance.messages:
            return [dict(m) for m in instance.messages]
        return [{"role": "user", "content": instance.query}]

    def render_prompt(
        self,
        messages: list[Message],
        tools: list[Tool] | None = None,
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        """The prompt text the model sees, through the chat template."""
        hf_tools = [t.to_hf() for t in tools] if tools and self.supports_tools else None
        if self.tokenizer is not None and hasattr(self.tokenizer, "apply_chat_template"):
            text = self.tokenizer.apply_chat_template(
                messages,
                tools=hf_tools,
                tokenize=False,
                add_generation_prompt=add_generation_prompt,
            )
            return str(text)
        if self.source is None:
            raise InputError("no chat template: give a tokenizer, a GGUF file or a template string")
        return render_jinja(
            self.source,
            messages=messages,
            tools=hf_tools,
            add_generation_prompt=add_generation_prompt,
            **self.special_tokens,
        )

    def prompt(self, instance: Instance, tools: list[Tool] | None = None) -> str:
        offered = tools if tools is not None else instance.tools
        return self.render_prompt(self.messages(instance, offered), offered)

    # -- targets ---------------------------------------------------------------------------
    def render_calls(self, calls: list[ToolCall]) -> str:
        """The calls as the chat template writes an assistant ``tool_calls`` turn.

        Falls back to the fallback template's rendering when the chat template has no tool
        support or does not render assistant tool calls as a plain continuation.
        """
        if self.supports_tools and self.source is not None:
            native = self._native_calls(calls)
            if native is not None:
                return native
        return self.fallback.render_calls(calls)

    def _native_calls(self, calls: list[ToolCall]) -> str | None:
        user: list[Message] = [{"role": "user", "content": "x"}]
        tool_calls = [
            {
                "type": "function",
                "function": {"name": c.name, "arguments": c.model_dump(mode="json")["arguments"]},
            }
            for c in calls
        ]
        try:
            prefix = self.render_prompt(user, add_generation_prompt=True)
            empty = self.render_prompt(
                [*user, {"role": "assistant", "content": ""}], add_generation_prompt=False
            )
            full = self.render_prompt(
                [*user, {"role": "assistant", "content": "", "tool_calls": tool_calls}],
                add_generation_prompt=False,
            )
        except InputError:
            return None
        if not (empty.startswith(prefix) and full.startswith(prefix)):
            return None
        end_of_turn = empty[len(prefix) :]
        body = full[len(prefix) :]
        if end_of_turn and body.endswith(end_of_turn):
            body = body[: -len(end_of_turn)]
        body = body.strip()
        if not body or calls[0].name not in body:
            return None
        return body

    def render_answer(self, text: str | None) -> str:
        return self.fallback.render_answer(text)

    def target(self, instance: Instance) -> str:
        if not self.supports_tools:
            return self.fallback.target(instance)
        return super().target(instance)


register_template("chat")(ChatTemplate)
