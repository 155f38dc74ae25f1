"""``hermes``: calls inside ``<tool_call>`` tags, tools inside ``<tools>`` (Hermes / Qwen style)."""

from __future__ import annotations

from toollab.schema import Tool, ToolCall
from toollab.templates.base import Template, register_template
from toollab.templates.render import DEFAULT_NO_CALL_ANSWER, call_to_json, dumps

HERMES_SYSTEM_PROMPT = """# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{tools}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{{"name": <function-name>, "arguments": <args-json-object>}}
</tool_call>"""


class HermesTemplate(Template):
    """One ``<tool_call>{"name", "arguments"}</tool_call>`` block per call; a no-call is plain text."""

    name = "hermes"
    parser = "hermes"

    def system_prompt(self, tools: list[Tool]) -> str:
        docs = "\n".join(dumps(t.to_openai()) for t in tools)
        return HERMES_SYSTEM_PROMPT.format(tools=docs)

    def render_calls(self, calls: list[ToolCall]) -> str:
        return "\n".join(f"<tool_call>\n{dumps(call_to_json(c))}\n</tool_call>" for c in calls)

    def render_answer(self, text: str | None) -> str:
        return text or DEFAULT_NO_CALL_ANSWER


register_template("hermes")(HermesTemplate)
