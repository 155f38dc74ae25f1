"""``deer``: DEER's decision chains (``#Begin#``, ``#SearchAPI#``, ``#CallAPI#``, ``#NoCallAPI#``, ``#End#``).

The three gold chains, verbatim from DEER's sample construction:

* NoSearch: ``#Begin# Don't need to look up the API Pool, I can answer this question with my own
  knowledge. #End#``
* Call: ``#Begin# Need to look up the API Pool. #SearchAPI# The API Pool including: [names], and
  the introduction and usage of each API is as follows: \\n{one dict per tool} #CallAPI# f(a='x')
  #APIResponse#  #End#``
* NoCall: the same API pool, then ``#NoCallAPI# There is no proper API and I need to answer this
  question with my own knowledge. #End#``

The tools are not in the system prompt: the model asks for them with ``#SearchAPI#`` and the
candidate pool follows in its own output (teacher-forced at inference, see
:meth:`DeerTemplate.teacher_forced_prompt`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from toollab.parsing.deer import SEARCH
from toollab.schema import Decision, Instance, Tool, ToolCall
from toollab.schema.wire import json_kind
from toollab.templates.base import Template, register_template
from toollab.templates.render import py_call, python_unexpressible, raw_doc

DEER_SYSTEM_PROMPT = (
    "A chat between a curious user and an artificial intelligence assistant who can use external "
    "tools and APIs to solve the user's question. The assistant gives tools and APIs calling "
    "processes or final answer to the human's question."
)
NO_SEARCH_CHAIN = (
    "#Begin# Don't need to look up the API Pool, I can answer this question with my own "
    "knowledge. #End#"
)
SEARCH_HEAD = "#Begin# Need to look up the API Pool. #SearchAPI# The API Pool including: "
SEARCH_MIDDLE = ", and the introduction and usage of each API is as follows: \n"
NO_CALL_TAIL = (
    " #NoCallAPI# There is no proper API and I need to answer this question with my own "
    "knowledge. #End#"
)
#: DEER stops generation when one of these appears
DEER_STOP = ["#SearchAPI#", "#APIResponse#", "#End#", "#NoCallAPI#"]

_PY_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
}


def api_function(tool: Tool) -> str:
    """DEER's ``api_function`` signature of a tool (the dataset's own when the adapter kept it)."""
    given = tool.metadata.get("api_function")
    if isinstance(given, str) and given:
        return given
    required = set(tool.required)
    parts = []
    for name, spec in tool.properties.items():
        typ = spec.get("type", "str") if isinstance(spec, dict) else "str"
        py = _PY_TYPES.get(typ, str(typ)) if isinstance(typ, str) else "Any"
        parts.append(f"{name}: {py}" if name in required else f"{name}: {py} = None")
    return f"{tool.name}({', '.join(parts)})"


def api_intro(tool: Tool) -> dict[str, Any]:
    """The candidate line's dict: ``api_name``, ``description`` (for humans), ``api_function``."""
    raw = raw_doc(tool)
    if raw is not None and "api_name" in raw and "api_function" in raw:
        return {
            "api_name": raw["api_name"],
            "description": raw.get("description", raw.get("description_for_human", "")),
            "api_function": raw["api_function"],
        }
    desc = tool.metadata.get("description_for_human")
    return {
        "api_name": tool.name,
        "description": desc if isinstance(desc, str) else tool.description,
        "api_function": api_function(tool),
    }


def api_pool(tools: list[Tool]) -> str:
    """``#Begin# ... #SearchAPI# The API Pool including: [...] ... \\n{dict}\\n{dict}``."""
    names = repr([t.name for t in tools])
    lines = "\n".join(str(api_intro(t)) for t in tools)
    return f"{SEARCH_HEAD}{names}{SEARCH_MIDDLE}{lines}"


class DeerTemplate(Template):
    """DEER chains.  Pass ``tools`` (the candidate pool) to render calls and no-calls faithfully."""

    name = "deer"
    parser = "deer"
    max_calls = 1
    stop = DEER_STOP

    def inexpressible(self, calls: Sequence[ToolCall]) -> str | None:
        """Calls in Python call syntax (names and keyword arguments must be identifiers).
        A reference to another call's output is written as its label, a bare name, which the
        ``deer`` parser reads back as that label (as the ``python`` template does)."""
        return python_unexpressible(calls) or super().inexpressible(calls)

    def render_turns(self, calls: Sequence[ToolCall], tools: list[Tool] | None = None) -> list[str]:
        """One Call chain per call: a chain makes one call (see :meth:`render_calls`)."""
        return [self.render_calls(turn, tools=tools) for turn in self.split_turns(calls)]

    def system_prompt(self, tools: list[Tool]) -> str:
        return DEER_SYSTEM_PROMPT

    def prompt(self, instance: Instance) -> str:
        """The raw completion prompt DEER's inference uses: ``<system> Human: q Assistant:``."""
        return f"{DEER_SYSTEM_PROMPT} Human: {instance.query} Assistant:"

    def teacher_forced_prompt(self, instance: Instance, tools: list[Tool] | None = None) -> str:
        """Round two of DEER's inference: the prompt, the gold API pool and a ``#``."""
        pool = api_pool(tools if tools is not None else instance.tools)
        return f"{self.prompt(instance)} {pool} #"

    def training_sequence(
        self, instance: Instance, target: str, eos: str
    ) -> tuple[str, list[tuple[int, int, bool]]]:
        """DEER's FastChat ``tool_llama`` sequence, ``<system> Human: q Assistant: <chain></s>``,
        with the model's own end-of-sequence token for ``</s>``, and the pieces of the chain.

        The first piece starts at the space after ``Assistant:`` (round one's prompt ends
        there).  A chain that looks up the pool is cut where round one stops (after
        ``#SearchAPI#``) and where round two's teacher-forced prompt ends (after the ``#`` of
        ``#CallAPI#`` / ``#NoCallAPI#``), so that each piece is tokenized as the model reads or
        writes it there; the pool between is what the agent supplies (``written`` false).
        Upstream puts the loss on the whole chain and the end token.
        """
        prompt = self.prompt(instance)
        text = f"{prompt} {target}{eos}"
        start, end = len(prompt), len(text)
        search = target.find(SEARCH) if target.startswith(SEARCH_HEAD) else -1
        decision = -1
        if search >= 0:
            for marker in (" #CallAPI#", " #NoCallAPI#"):
                decision = target.find(marker, search)
                if decision >= 0:
                    break
        if decision < 0:
            return text, [(start, end, True)]
        stop = start + 1 + search + len(SEARCH)  # round one stops here
        cut = start + 1 + decision + 2  # round two's prompt ends after " #"
        return text, [(start, stop, True), (stop, cut, False), (cut, end, True)]

    def render_calls(
        self,
        calls: list[ToolCall],
        tools: list[Tool] | None = None,
        *,
        call_text: str | None = None,
    ) -> str:
        """The Call chain.  Without ``tools`` the pool lists the called tools only;
        ``call_text`` replaces the canonical ``f(a='x')`` rendering of the calls."""
        pool_tools = tools if tools is not None else _tools_of(calls)
        text = call_text if call_text is not None else " ".join(py_call(c) for c in calls)
        return f"{api_pool(pool_tools)} #CallAPI# {text} #APIResponse#  #End#"

    def render_answer(self, text: str | None, tools: list[Tool] | None = None) -> str:
        """The NoCall chain when ``tools`` are given, else the NoSearch chain.

        DEER's chains carry no answer text (the answer comes from the model's own knowledge
        after ``#End#``), so ``text`` is not part of the rendering.
        """
        if tools:
            return api_pool(tools) + NO_CALL_TAIL
        return NO_SEARCH_CHAIN

    def render_chain(self, instance: Instance, *, verbatim: bool = True) -> str:
        """The full gold chain of an instance, by its decision label.

        With ``verbatim`` (default) the call keeps the dataset's own spelling when the adapter
        kept the gold chain (``metadata["gold_chain"]``): DEER's call texts are not all in
        canonical form (bare names, tuples, escaped quotes, missing spaces).
        """
        label = instance.label()
        if label is Decision.CALL and instance.gold:
            text = gold_call_text(instance) if verbatim else None
            return self.render_calls(list(instance.gold), tools=instance.tools, call_text=text)
        if label is Decision.NO_SEARCH:
            return NO_SEARCH_CHAIN
        # a NoCall chain looked up the pool, even one that came back empty (a retriever that
        # found nothing)
        return api_pool(list(instance.tools)) + NO_CALL_TAIL

    def target(self, instance: Instance) -> str:
        return self.render_chain(instance)


def gold_call_text(instance: Instance) -> str | None:
    """The call text of the dataset's gold chain (between ``#CallAPI#`` and ``#APIResponse#``)."""
    chain = instance.metadata.get("gold_chain")
    if not isinstance(chain, str) or "#CallAPI# " not in chain:
        return None
    return chain.split("#CallAPI# ", 1)[1].split(" #APIResponse#", 1)[0]


def _tools_of(calls: list[ToolCall]) -> list[Tool]:
    seen: dict[str, Tool] = {}
    for call in calls:
        if call.name not in seen:
            props = {k: {"type": _json_type(v)} for k, v in call.arguments.items()}
            seen[call.name] = Tool(
                name=call.name,
                parameters={"type": "object", "properties": props, "required": list(props)},
            )
    return list(seen.values())


def _json_type(value: Any) -> str:
    kind = json_kind(value)
    return kind if kind in ("boolean", "integer", "number", "array", "object", "null") else "string"


register_template("deer")(DeerTemplate)
