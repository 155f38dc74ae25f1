"""``react-5shot``: ToolEyes' five-shot inference prompt, the one the paper runs open-source models with.

ToolEyes (§3.2, Appendix B.1, Table 8) prompts open-source models with five demonstrations and
every other model zero-shot (``react``).  The system prompt is upstream's
``Resources/sys_infer_five_shot.txt`` byte for byte ("excute" included) with ``{Tool Document}``
replaced by ``json.dumps`` of the offered tools' function dicts and ``{examples}`` by
``Resources/examples.txt`` (five single assistant turns, their unbalanced opening quotes kept).
The user message is the query followed by ``Begin!`` (Table 8), which upstream's judge prompts
cut out of the query again.  Calls, answers and parsing are the ``react`` template's.
"""

from __future__ import annotations

import json

from toollab.schema import Instance, Tool
from toollab.templates.base import Message, register_template
from toollab.templates.react_tpl import ReactTemplate

FIVE_SHOT_SYSTEM_PROMPT = """You are an expert in using tools to handle real-time queries from users.
First I will give you the task description, and your task start.
At each step, your task is to give your thought to analyze the current state, decide the next step, with a function call to actually excute your step.
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

You should reply in the format of the examples.

Examples:
{examples}

Let's Begin!"""

#: ``Resources/examples.txt``: the five demonstrations
FIVE_SHOT_EXAMPLES = """1. Assistant: "Thought: The "predict_gender" function does not have any results for Taylor and Jordan. This could mean that they are of the same gender, or it is not possible to predict their genders based on their names. I will finish the task and provide this information to the user.
Action: finish
Action Input: {"answer": "I'm sorry, but I was unable to predict the genders of Taylor and Jordan. It could mean that they are of the same gender, or it is not possible to predict their genders based on their names."}

2.Assistant: "Thought: First, I will use the predict_age function to estimate the ages of the individual named Sophia in Germany. This function will provide a prediction based on the individual's name.
Action: predict_age
Action Input: {"names": "Sophia"}

3. Assistant: "Thought: The individual named Liam is 36 years old. Now, I will use the finish tool to provide the final answer.
Action: finish
Action Input: {"answer": "The individual named Sophia is 39 years old, and the individual named Liam is 36 years old."}

4.Assistant: "Thought: Now that I have the names of Taylor and Jordan, I can use the "predict_gender" function to get the best guess for their genders. This function requires the names of the people as inputs.
Action: predict_gender
Action Input: {"names": "Talor, Jordan"}

5.Assistant: "Thought: First, I need to call the function to get the exchange rate from EUR to GBP.
Action: get_exchange_rate
Action Input: {"from_currency": "EUR", "to_currency": "GBP"}"""

#: what follows the query in the user message (Table 8)
BEGIN = "Begin!"


class ReactFiveShotTemplate(ReactTemplate):
    """The ``react`` format with ToolEyes' five demonstrations in the system prompt."""

    name = "react-5shot"

    def system_prompt(self, tools: list[Tool]) -> str:
        return FIVE_SHOT_SYSTEM_PROMPT.replace(
            "{Tool Document}", json.dumps(self.tool_document(tools))
        ).replace("{examples}", FIVE_SHOT_EXAMPLES)

    def messages(self, instance: Instance, tools: list[Tool] | None = None) -> list[Message]:
        msgs = super().messages(instance, tools)
        if not instance.messages:  # the query alone: Table 8's "{Query}" then "Begin!"
            msgs[-1] = {"role": "user", "content": f"{instance.query}\n{BEGIN}"}
        return msgs


register_template("react-5shot")(ReactFiveShotTemplate)
