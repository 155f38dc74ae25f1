"""``react``: ToolEyes' ReAct format, ``Thought: / Action: / Action Input:``.

The system prompt is ToolEyes' ``sys_infer`` prompt with ``{Tool Document}`` replaced by
``json.dumps`` of the offered tools' function dicts, as ToolEyes builds it.  A ``finish`` tool is
added when the offered tools lack one: the final answer is ``Action: finish`` with
``Action Input: {"answer": ...}``.  One assistant turn makes one call.
"""

from __future__ import annotations

import json
from typing import Any

from toollab.schema import Tool, ToolCall
from toollab.templates.base import Template, register_template
from toollab.templates.render import (
    DEFAULT_NO_CALL_ANSWER,
    dumps,
    function_doc,
    json_arguments,
    raw_doc,
)

TOOLEYES_SYSTEM_PROMPT = """You are an expert in using tools to handle real-time queries from users.
First I will give you the task description, and your task start.
At each step, your task is to give your thought to analyze the current state, decide the next step, with a function call to actually execute your step.
After the call, you will get the call result, and you are now in a new state.
Then you will analyze your status now, then decide what to do next...
After many (Thought-call) pairs, you finally perform the task, then you can give your final answer.

Desired format:
Thought: <The thought>
Action: <The tool you decide to use>
Action Input: <The parameters for the tool>

Remember:
1. You should ALWAYS think about what to do, but all the thought is short, at most in 3 sentences.
2. The action to take should be one of the given tools below.
3. The "Action Input" needs to provide a dict similar to {parameter_1: value_1, parameter_2: value_2} to call action.
4. Always use the "finish" tool upon task completion. The final answer should be comprehensive enough for the user. If the task is unmanageable, use the "finish" tool and respond with "I cannot handle the task".

Task description: You should use tools to help handle the real time user queries. Specifically, you have access of the following tools:
{Tool Document}

Let's Begin!"""

FINISH_TOOL: dict[str, Any] = {
    "name": "finish",
    "description": "Finish the task and give your answer.",
    "parameters": {
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "Your answer for the task."}},
        "required": ["answer"],
    },
}


class ReactTemplate(Template):
    """One ``Thought / Action / Action Input`` step per turn; ``finish`` carries the answer."""

    name = "react"
    parser = "react"
    max_calls = 1

    def __init__(
        self, thought: str = "I need to use the {name} tool to handle this query."
    ) -> None:
        #: the thought written before a gold call in training data (``{name}`` = the tool)
        self.thought = thought

    def tool_document(self, tools: list[Tool]) -> list[dict[str, Any]]:
        docs = [raw_doc(t) or function_doc(t) for t in tools]
        if not any(d.get("name") == "finish" for d in docs):
            docs.append(FINISH_TOOL)
        return docs

    def system_prompt(self, tools: list[Tool]) -> str:
        return TOOLEYES_SYSTEM_PROMPT.replace(
            "{Tool Document}", json.dumps(self.tool_document(tools))
        )

    def render_calls(self, calls: list[ToolCall]) -> str:
        steps = []
        for call in calls:
            steps.append(
                f"Thought: {self.thought.format(name=call.name)}\n"
                f"Action: {call.name}\n"
                f"Action Input: {dumps(json_arguments(call.arguments))}"
            )
        return "\n\n".join(steps)

    def render_answer(self, text: str | None) -> str:
        answer = text or DEFAULT_NO_CALL_ANSWER
        return (
            "Thought: I can give the final answer now.\n"
            "Action: finish\n"
            f"Action Input: {dumps({'answer': answer})}"
        )


register_template("react")(ReactTemplate)
