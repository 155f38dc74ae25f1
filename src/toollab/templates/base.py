"""Prompt templates: one definition serves training-data rendering, inference and parsing.

A template knows how to show tools to a model (system prompt), how a correct answer looks
(:meth:`Template.render_calls` / :meth:`Template.render_answer`, used for training data and by the
``oracle`` model) and how to read the model's text back (:meth:`Template.parse`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from toollab.parsing import ParseResult, get_parser, safe_parse
from toollab.registry import Registry
from toollab.schema import Instance, Tool, ToolCall
from toollab.schema.json import JsonObject, JsonValue

Message = dict[str, Any]


class Template(ABC):
    name: str = ""
    #: the parser (``toollab.parsing`` registry name) that reads this template's outputs
    parser: str = ""
    #: how many calls one assistant turn can express (``None``: any number)
    max_calls: int | None = None
    #: whether a call may use another call's output (:class:`toollab.schema.Ref`)
    supports_refs: bool = True
    #: whether the rendering carries a call's output labels (Seal-Tools ``responses``)
    carries_outputs: bool = False
    #: whether the tools reach the model through its own chat template (``tools=``) rather than
    #: this template's system prompt; requests then set ``GenerateOptions.template_tools``
    tools_in_chat_template: bool = False
    #: stop strings the format needs at inference (added to the request's own)
    stop: Sequence[str] = ()

    @abstractmethod
    def system_prompt(self, tools: list[Tool]) -> str:
        """The system text that documents ``tools`` and the output format."""

    @abstractmethod
    def render_calls(self, calls: list[ToolCall]) -> str:
        """The assistant text that makes exactly these calls."""

    def render_answer(self, text: str | None) -> str:
        """The assistant text for an explicit no-call / final answer."""
        return text or ""

    def messages(self, instance: Instance, tools: list[Tool] | None = None) -> list[Message]:
        """Chat messages for an instance: system prompt + the conversation."""
        msgs: list[Message] = [
            {
                "role": "system",
                "content": self.system_prompt(tools if tools is not None else instance.tools),
            }
        ]
        if instance.messages:
            msgs.extend(m for m in instance.messages if m.get("role") != "system")
        else:
            msgs.append({"role": "user", "content": instance.query})
        return msgs

    def with_model(self, model: object) -> Template:
        """This template for a loaded model.  Most templates do not depend on the model; the
        ``chat`` template takes the model's own chat template (see :class:`ChatTemplate`)."""
        return self

    def parse(self, text: str) -> ParseResult:
        return safe_parse(get_parser(self.parser), text)

    # -- one definition for training data, inference and parsing ------------------------------
    def inexpressible(self, calls: Sequence[ToolCall]) -> str | None:
        """Why this format cannot write these calls in any number of turns, or ``None`` when
        :meth:`render_turns` writes them so that :meth:`parse` reads each turn's calls back."""
        if not calls:
            return "no calls to write"
        if not self.supports_refs and any(c.refs for c in calls):
            return "a call uses another call's output, which this format cannot refer to"
        return None

    def can_express(self, calls: Sequence[ToolCall]) -> bool:
        """Whether :meth:`render_calls` can write these calls in **one** assistant turn so that
        :meth:`parse` reads them back."""
        if self.inexpressible(calls) is not None:
            return False
        return self.max_calls is None or len(calls) <= self.max_calls

    def split_turns(self, calls: Sequence[ToolCall]) -> list[list[ToolCall]]:
        """The calls grouped into assistant turns: all in one when the format writes several
        calls at once, else ``max_calls`` per turn in order (ReAct, DEER: one step per turn)."""
        calls = list(calls)
        if self.max_calls is None or len(calls) <= self.max_calls:
            return [calls]
        step = self.max_calls
        return [calls[i : i + step] for i in range(0, len(calls), step)]

    def render_turns(self, calls: Sequence[ToolCall]) -> list[str]:
        """The assistant texts, one per turn, that make these calls (see :meth:`split_turns`)."""
        return [self.render_calls(turn) for turn in self.split_turns(calls)]

    def target(self, instance: Instance) -> str:
        """The gold assistant text for an instance: its calls, or its answer when it has none."""
        if instance.gold:
            return self.render_calls(list(instance.gold))
        return self.render_answer(instance.answer)

    def training_example(self, instance: Instance) -> JsonObject:
        """``{"messages": prompt messages, "completion": gold assistant text}`` for fine-tuning."""
        messages: list[JsonValue] = [dict(m) for m in self.messages(instance)]
        return {"messages": messages, "completion": self.target(instance)}


@runtime_checkable
class RawPrompts(Protocol):
    """A template that writes whole completion prompts, as DEER's inference does (no chat
    template): the first-round prompt and the teacher-forced second-round prompt."""

    def prompt(self, instance: Instance) -> str: ...

    def teacher_forced_prompt(self, instance: Instance, tools: list[Tool] | None = None) -> str: ...

    def training_sequence(
        self, instance: Instance, target: str, eos: str
    ) -> tuple[str, list[tuple[int, int, bool]]]:
        """The training text (the raw prompt, the target, ``eos``) and the pieces of its target,
        ``(start, end, written)``, cut where inference's prompts end so that each piece is
        tokenized as inference sees it; ``written`` is false for text the agent supplies
        itself at inference (DEER's teacher-forced API pool)."""
        ...


@runtime_checkable
class RendersObservations(Protocol):
    """A template with its own form for a tool's observation in a multi-step conversation (a
    message, or a text sent as a user message)."""

    def render_observation(self, observation: Any) -> Message | str: ...


#: template factories (a class or a zero-argument function); plugins: ``template:NAME``
TEMPLATES: Registry[Callable[[], Template]] = Registry("template", builtins=("toollab.templates",))


def register_template(name: str) -> Callable[[Callable[[], Template]], Callable[[], Template]]:
    """Decorator: register a template factory (a class or a zero-argument function)."""
    return TEMPLATES.decorator(name)


def template_names() -> list[str]:
    return TEMPLATES.names()


def get_template(name: str) -> Template:
    return TEMPLATES.get(name)()
