"""Templates render the documented prompts and answers exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toollab.errors import InputError, UsageError
from toollab.schema import Decision, GoldCall, Instance, Ref, Tool, ToolCall
from toollab.templates import ChatTemplate, DeerTemplate, get_template, template_names
from toollab.templates.seal_tpl import SealTemplate

BFCL_DOC: dict[str, Any] = {
    "name": "math.factorial",
    "description": "Calculate the factorial of a given number.",
    "parameters": {
        "type": "dict",
        "properties": {"number": {"type": "integer", "description": "The number."}},
        "required": ["number"],
    },
}


def bfcl_tool() -> Tool:
    return Tool(
        name="math.factorial",
        description=BFCL_DOC["description"],
        parameters={
            "type": "object",
            "properties": {"number": {"type": "integer", "description": "The number."}},
            "required": ["number"],
        },
        metadata={"raw": BFCL_DOC},
    )


def test_registry_has_documented_templates() -> None:
    assert {"json", "seal", "python", "react", "hermes", "deer", "chat"} <= set(template_names())
    with pytest.raises(UsageError, match="unknown template"):
        get_template("jsn")


def test_bfcl_system_prompt_is_byte_exact() -> None:
    doc = dict(
        BFCL_DOC,
        description=BFCL_DOC["description"]
        + " Note that the provided function is in Python 3 syntax.",
    )
    expected = (
        "You are an expert in composing functions.You are given a question and a set of possible "
        "functions. Based on the question, you will need to make one or more function/tool calls to "
        "achieve the purpose. If none of the functions can be used, point it out. If the given "
        "question lacks the parameters required by the function, also point it out.\n\n"
        "You should only return the function calls in your response.\n\nIf you decide to invoke any "
        "of the function(s), you MUST put it in the format of [func_name1(params_name1=params_value1, "
        "params_name2=params_value2...), func_name2(params)].  You SHOULD NOT include any other text "
        "in the response.\n\nAt each turn, you should try your best to complete the tasks requested "
        "by the user within the current turn. Continue to output functions to call until you have "
        "fulfilled the user's request to the best of your ability. Once you have no more functions "
        "to call, the system will consider the current turn complete and proceed to the next turn or "
        "task.\n\nHere is a list of functions in json format that you can invoke.\n"
        + json.dumps([doc], indent=4)
        + "\n"
    )
    assert get_template("python").system_prompt([bfcl_tool()]) == expected
    # the raw doc keeps BFCL's own "dict" type; the tool itself is not changed
    assert '"type": "dict"' in expected
    assert "Python 3 syntax" not in bfcl_tool().description


def test_python_template_calls() -> None:
    tpl = get_template("python")
    calls = [
        ToolCall(name="math.factorial", arguments={"number": 5}),
        ToolCall(name="f", arguments={"s": "it's", "x": [1.5, True, None], "d": {"k": "v"}}),
    ]
    assert tpl.render_calls(calls) == (
        "[math.factorial(number=5), f(s=\"it's\", x=[1.5, True, None], d={'k': 'v'})]"
    )
    assert tpl.render_answer(None)  # an explicit no-call is prose


def test_seal_prompt_and_calls() -> None:
    tool = Tool(
        name="getWildlifeSpecies",
        description="Get species",
        parameters={
            "type": "object",
            "properties": {"habitat": {"type": "string", "description": "h"}},
            "required": ["habitat"],
        },
        returns={
            "type": "object",
            "properties": {"species": {"type": "string", "description": "s"}},
        },
    )
    inst = Instance(id="x", query="List species.", tools=[tool])
    (msg,) = SealTemplate().messages(inst)
    assert msg["role"] == "user"
    assert msg["content"].startswith(
        "Please chooose the needed apis and return api_calling list according to the task_instruction.\n"
        'Output format: [{"api": "", "parameters": {"": ""}, "responses": ["API_call_0","API_call_1"]},'
    )
    assert msg["content"].endswith('task_instruction = "List species."\nOutput:\n')
    assert (
        "api_list = [{'api_name': 'getWildlifeSpecies', 'api_description': 'Get species', "
        "'parameters': {'habitat': {'type': 'str', 'description': 'h'}}, 'required': ['habitat'], "
        "'responses': {'species': {'type': 'str', 'description': 's'}}}]\n" in msg["content"]
    )
    calls = [
        ToolCall(name="a", arguments={"q": "Bridget Jones's Diary"}, outputs=["API_call_0"]),
        ToolCall(name="b", arguments={"p": Ref("API_call_0")}, outputs=["API_call_1"]),
    ]
    assert json.loads(SealTemplate().render_calls(calls)) == [
        {"api": "a", "parameters": {"q": "Bridget Jones's Diary"}, "responses": ["API_call_0"]},
        {"api": "b", "parameters": {"p": "API_call_0"}, "responses": ["API_call_1"]},
    ]
    assert SealTemplate(literal="python").render_calls(calls[1:]) == (
        "[{'api': 'b', 'parameters': {'p': 'API_call_0'}, 'responses': ['API_call_1']}]"
    )
    with pytest.raises(UsageError):
        SealTemplate(literal="yaml")  # type: ignore[arg-type]


def test_react_follows_tooleyes_format() -> None:
    tpl = get_template("react")
    prompt = tpl.system_prompt([bfcl_tool()])
    assert prompt.startswith(
        "You are an expert in using tools to handle real-time queries from users."
    )
    assert "Desired format:\nThought: <The thought>\nAction: <The tool you decide to use>" in prompt
    docs = json.loads(prompt.split("following tools:\n", 1)[1].rsplit("\n\nLet's Begin!", 1)[0])
    assert [d["name"] for d in docs] == ["math.factorial", "finish"]
    text = tpl.render_calls([ToolCall(name="math.factorial", arguments={"number": 5})])
    assert text.splitlines()[1:] == ["Action: math.factorial", 'Action Input: {"number": 5}']
    answer = tpl.render_answer("42")
    assert answer.splitlines()[1:] == ["Action: finish", 'Action Input: {"answer": "42"}']
    assert tpl.max_calls == 1


def test_hermes_and_json_shapes() -> None:
    call = ToolCall(name="f", arguments={"a": 1, "r": Ref("API_call_0")})
    hermes = get_template("hermes").render_calls([call, call])
    assert hermes.count("<tool_call>\n") == 2 and hermes.count("\n</tool_call>") == 2
    assert '{"name": "f", "arguments": {"a": 1, "r": {"$ref": "API_call_0"}}}' in hermes
    j = get_template("json")
    assert json.loads(j.render_calls([call])) == {
        "name": "f",
        "arguments": {"a": 1, "r": {"$ref": "API_call_0"}},
    }
    assert isinstance(json.loads(j.render_calls([call, call])), list)
    assert "<tools>" in get_template("hermes").system_prompt([bfcl_tool()])


def test_deer_chains() -> None:
    tool = Tool(
        name="CTCP",
        description="Analyze eligibility criteria",
        metadata={"api_function": "CTCP(nctid: str)"},
        parameters={
            "type": "object",
            "properties": {"nctid": {"type": "string"}},
            "required": ["nctid"],
        },
    )
    other = Tool(
        name="search",
        description="Search",
        metadata={"api_function": "search(query: str, count: int = 5)"},
    )
    tpl = DeerTemplate()
    call = GoldCall(name="CTCP", arguments={"nctid": "NCT03780233"})
    inst = Instance(id="d", query="q?", tools=[other, tool], gold=[call], decision=Decision.CALL)
    assert tpl.render_chain(inst) == (
        "#Begin# Need to look up the API Pool. #SearchAPI# The API Pool including: ['search', 'CTCP'], "
        "and the introduction and usage of each API is as follows: \n"
        "{'api_name': 'search', 'description': 'Search', 'api_function': 'search(query: str, count: int = 5)'}\n"
        "{'api_name': 'CTCP', 'description': 'Analyze eligibility criteria', 'api_function': 'CTCP(nctid: str)'}"
        " #CallAPI# CTCP(nctid='NCT03780233') #APIResponse#  #End#"
    )
    no_call = inst.model_copy(update={"gold": [], "decision": Decision.NO_CALL})
    assert tpl.render_chain(no_call).endswith(
        "#NoCallAPI# There is no proper API and I need to answer this question with my own knowledge. #End#"
    )
    no_search = inst.model_copy(update={"gold": [], "decision": Decision.NO_SEARCH, "tools": []})
    assert tpl.render_chain(no_search) == (
        "#Begin# Don't need to look up the API Pool, I can answer this question with my own knowledge. #End#"
    )
    assert tpl.prompt(inst).endswith(" Human: q? Assistant:")
    forced = tpl.teacher_forced_prompt(inst)
    assert forced.endswith("'api_function': 'CTCP(nctid: str)'} #")
    assert tpl.training_example(inst)["completion"] == tpl.render_chain(inst)
    assert not tpl.can_express([call, call])


def test_training_example_uses_gold_or_answer() -> None:
    inst = Instance(
        id="i",
        query="hi",
        tools=[bfcl_tool()],
        gold=[GoldCall(name="math.factorial", arguments={"number": 3})],
    )
    ex = get_template("json").training_example(inst)
    assert ex["messages"][0]["role"] == "system" and ex["messages"][-1] == {
        "role": "user",
        "content": "hi",
    }
    assert json.loads(ex["completion"]) == {"name": "math.factorial", "arguments": {"number": 3}}
    no = inst.model_copy(update={"gold": [], "answer": "No tool fits."})
    assert get_template("python").training_example(no)["completion"] == "No tool fits."


TOOL_TEMPLATE = """{%- if tools %}<|im_start|>system
Tools:
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}<|im_end|>
{% endif %}{%- for message in messages %}<|im_start|>{{ message.role }}
{% if message.tool_calls %}{% for tc in message.tool_calls %}<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments | tojson }}}
</tool_call>{% endfor %}{% else %}{{ message.content }}{% endif %}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

PLAIN_TEMPLATE = """{% for message in messages %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


def test_chat_template_with_tools() -> None:
    tpl = ChatTemplate(chat_template=TOOL_TEMPLATE)
    assert tpl.supports_tools and tpl.parser == "hermes"
    inst = Instance(id="c", query="5!?", tools=[bfcl_tool()])
    assert tpl.messages(inst) == [{"role": "user", "content": "5!?"}]
    prompt = tpl.prompt(inst)
    assert prompt.startswith("<|im_start|>system\nTools:\n{")
    assert '"name": "math.factorial"' in prompt and prompt.endswith("<|im_start|>assistant\n")
    native = tpl.render_calls([ToolCall(name="math.factorial", arguments={"number": 5})])
    assert (
        native
        == '<tool_call>\n{"name": "math.factorial", "arguments": {"number": 5}}\n</tool_call>'
    )


def test_chat_template_without_tools_falls_back() -> None:
    tpl = ChatTemplate(chat_template=PLAIN_TEMPLATE, fallback="python")
    assert not tpl.supports_tools and tpl.parser == "python"
    inst = Instance(id="c", query="5!?", tools=[bfcl_tool()])
    msgs = tpl.messages(inst)
    assert msgs[0]["content"].startswith("You are an expert in composing functions.")
    assert tpl.prompt(inst).startswith("<|im_start|>system\nYou are an expert")
    assert tpl.render_calls([ToolCall(name="g", arguments={})]) == "[g()]"
    with pytest.raises(InputError):
        ChatTemplate().prompt(inst)


def test_chat_template_from_bundled_gguf(bundled_gguf) -> None:  # type: ignore[no-untyped-def]
    tpl = ChatTemplate.from_gguf(bundled_gguf)
    assert tpl.source and "<|im_start|>" in tpl.source
    assert not tpl.supports_tools  # SmolLM2's template does not take tools=
    assert (
        tpl.prompt(Instance(id="b", query="hi", tools=[bfcl_tool()])).rstrip().endswith("assistant")
    )
