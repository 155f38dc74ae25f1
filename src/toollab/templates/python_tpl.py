"""``python``: BFCL's default prompting format, ``[func(a=1, b="x"), other(c=[1, 2])]``.

The system prompt is BFCL's default (``ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&
prompt_fmt=plaintext&style=classic``), with the function docs as ``json.dumps(functions,
indent=4)``.  Like BFCL, each description gets a language note appended (Python by default).
When the dataset adapter kept the raw BFCL function doc (``tool.metadata["raw"]``) that doc is
shown unchanged apart from the note, so the prompt matches BFCL's byte for byte.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from toollab.errors import UsageError
from toollab.schema import Tool, ToolCall
from toollab.templates.base import Template, register_template
from toollab.templates.render import (
    DEFAULT_NO_CALL_ANSWER,
    function_doc,
    py_call,
    python_unexpressible,
    raw_doc,
)

BFCL_PERSONA = "You are an expert in composing functions."
BFCL_TASK = (
    "You are given a question and a set of possible functions. Based on the question, you will "
    "need to make one or more function/tool calls to achieve the purpose. If none of the functions "
    "can be used, point it out. If the given question lacks the parameters required by the "
    "function, also point it out."
)
BFCL_OUTPUT_FORMAT = (
    "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]"
)
# ``{param_types}`` is empty for the Python return format, hence the two spaces before "You"
BFCL_TOOL_CALL_FORMAT = (
    "You should only return the function calls in your response.\n\nIf you decide to invoke any "
    f"of the function(s), you MUST put it in the format of {BFCL_OUTPUT_FORMAT}.  You SHOULD NOT "
    "include any other text in the response."
)
BFCL_MULTITURN = (
    "At each turn, you should try your best to complete the tasks requested by the user within "
    "the current turn. Continue to output functions to call until you have fulfilled the user's "
    "request to the best of your ability. Once you have no more functions to call, the system "
    "will consider the current turn complete and proceed to the next turn or task."
)
BFCL_AVAILABLE_TOOLS = (
    "Here is a list of functions in json format that you can invoke.\n{functions}\n"
)

#: BFCL's ``_func_doc_language_specific_pre_processing`` notes, per language
LANGUAGE_NOTES = {
    "python": " Note that the provided function is in Python 3 syntax.",
    "java": " Note that the provided function is in Java 8 SDK syntax.",
    "javascript": " Note that the provided function is in JavaScript syntax.",
    "none": "",
}


def bfcl_system_prompt(functions: list[dict[str, Any]]) -> str:
    """BFCL's default system prompt around already prepared function docs."""
    available = BFCL_AVAILABLE_TOOLS.format(functions=json.dumps(functions, indent=4))
    return (
        f"{BFCL_PERSONA}{BFCL_TASK}\n\n{BFCL_TOOL_CALL_FORMAT}\n\n{BFCL_MULTITURN}\n\n{available}"
    )


class PythonTemplate(Template):
    """BFCL Python call lists.  ``language`` picks the description note (``"none"``: no note)."""

    name = "python"
    parser = "python"

    def __init__(self, language: str = "python") -> None:
        if language not in LANGUAGE_NOTES:
            raise UsageError(
                f"python template: language must be one of {', '.join(LANGUAGE_NOTES)}, "
                f"not {language!r}"
            )
        self.language = language

    def function_docs(self, tools: list[Tool]) -> list[dict[str, Any]]:
        docs = []
        for tool in tools:
            doc = copy.deepcopy(raw_doc(tool) or function_doc(tool))
            doc["description"] = str(doc.get("description", "")) + LANGUAGE_NOTES[self.language]
            docs.append(doc)
        return docs

    def system_prompt(self, tools: list[Tool]) -> str:
        return bfcl_system_prompt(self.function_docs(tools))

    def inexpressible(self, calls: Sequence[ToolCall]) -> str | None:
        """Python call syntax needs dotted identifiers as names and identifiers as keywords."""
        return python_unexpressible(calls) or super().inexpressible(calls)

    def render_calls(self, calls: list[ToolCall]) -> str:
        return "[" + ", ".join(py_call(c) for c in calls) + "]"

    def render_answer(self, text: str | None) -> str:
        return text or DEFAULT_NO_CALL_ANSWER


register_template("python")(PythonTemplate)
