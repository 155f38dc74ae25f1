"""``json``: OpenAI-style JSON calls, ``{"name": ..., "arguments": {...}}`` or a list of them."""

from __future__ import annotations

from toollab.schema import Tool, ToolCall
from toollab.templates.base import Template, register_template
from toollab.templates.render import DEFAULT_NO_CALL_ANSWER, call_to_json, dumps, function_doc

JSON_SYSTEM_PROMPT = """You are a helpful assistant that can use tools.
You can call the following tools, each given as a JSON Schema:
{tools}

To call a tool, reply with only a JSON object: {{"name": <tool name>, "arguments": {{<argument name>: <value>, ...}}}}.
To make several calls, reply with only a JSON list of such objects, in the order they must run.
An argument may use the output of an earlier call: write {{"$ref": "<output label>"}} as its value.
If none of the tools fits the request, answer in plain text without any JSON."""


class JsonTemplate(Template):
    """Calls as JSON: one object for one call, a list for several; a no-call is plain text."""

    name = "json"
    parser = "json"

    def system_prompt(self, tools: list[Tool]) -> str:
        docs = "\n".join(dumps(function_doc(t)) for t in tools)
        return JSON_SYSTEM_PROMPT.format(tools=docs)

    def render_calls(self, calls: list[ToolCall]) -> str:
        if len(calls) == 1:
            return dumps(call_to_json(calls[0]))
        return dumps([call_to_json(c) for c in calls])

    def render_answer(self, text: str | None) -> str:
        return text or DEFAULT_NO_CALL_ANSWER


register_template("json")(JsonTemplate)
