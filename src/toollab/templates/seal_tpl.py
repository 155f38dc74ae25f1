"""``seal``: the Seal-Tools instruction and its ``[{"api", "parameters", "responses"}]`` call list.

The prompt is the human turn of Seal-Tools' released fine-tuning/inference files, with
``api_list`` the Python ``repr`` of the offered tools' Seal-Tools records.  Upstream writes the
answer as a Python literal and reads it back after replacing every ``'`` by ``"``, which breaks
values containing quotes; toollab writes JSON by default (``literal="json"``) and offers the
Python-literal form with ``literal="python"``.  References render as their labels
(``"API_call_N"``), and each call lists its own output labels in ``responses``.
"""

from __future__ import annotations

from typing import Any, Literal

from toollab.errors import UsageError
from toollab.schema import Instance, Tool, ToolCall
from toollab.templates.base import Message, Template, register_template
from toollab.templates.render import dumps, raw_doc, seal_call
from toollab.tools.formats import tool_to_seal

SEAL_INSTRUCTION = (
    "Please chooose the needed apis and return api_calling list according to the task_instruction.\n"
    'Output format: [{{"api": "", "parameters": {{"": ""}}, "responses": ["API_call_0","API_call_1"]}},'
    '{{"api": "", "parameters": {{"": ""}}, "responses": ["API_call_2"]}}]\n'
    "Responses can be used as parameter value. The number of responses depends on information in api_list.\n"
    "\n"
    "Input:\n"
    "api_list = {api_list}\n"
)
SEAL_QUERY = 'task_instruction = "{query}"\nOutput:\n'


def seal_tool_record(tool: Tool) -> dict[str, Any]:
    """The Seal-Tools ``tool.jsonl`` record of a tool (the adapter's original when it kept one)."""
    raw = raw_doc(tool)
    if raw is not None and "api_name" in raw:
        return raw
    return tool_to_seal(tool)


class SealTemplate(Template):
    """Seal-Tools' prompt and call list.  ``literal``: ``"json"`` (default) or ``"python"``."""

    name = "seal"
    parser = "seal"
    carries_outputs = True

    def __init__(self, literal: Literal["json", "python"] = "json") -> None:
        if literal not in ("json", "python"):
            raise UsageError(f"seal template: literal must be 'json' or 'python', not {literal!r}")
        self.literal = literal

    def system_prompt(self, tools: list[Tool]) -> str:
        return SEAL_INSTRUCTION.format(api_list=repr([seal_tool_record(t) for t in tools]))

    def messages(self, instance: Instance, tools: list[Tool] | None = None) -> list[Message]:
        """One user turn, as upstream feeds it: instruction, ``api_list``, task, ``Output:``."""
        text = self.system_prompt(tools if tools is not None else instance.tools)
        return [{"role": "user", "content": text + SEAL_QUERY.format(query=instance.query)}]

    def render_calls(self, calls: list[ToolCall]) -> str:
        items = [seal_call(c) for c in calls]
        return repr(items) if self.literal == "python" else dumps(items)

    def render_answer(self, text: str | None) -> str:
        """Seal-Tools has no no-call form; an empty call list stands for it."""
        return "[]"


register_template("seal")(SealTemplate)
