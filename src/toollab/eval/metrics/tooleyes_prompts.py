"""The ToolEyes judge prompts, byte for byte (``Code/Evaluation/util/process_utils.py``).

Five prompts per trace, each a system + user message pair: thought focus (IU,
``eval_thought_foucus``), validity and quality (BP, ``eval_thought_validity`` /
``eval_thought_quality``), tool-thought match per assistant turn (TS,
``eval_action_thought_matching``) and answer relevance (AO, ``eval_relavance``).  The texts
below are the upstream strings with their whitespace (the match prompt's indented format block
and trailing ``"\\n    "``, the space after "guidelines." in the match and relevance prompts,
the validity prompt ending ``"Assessment:\\n"``, the relevance prompt's ``"\\n    \\n"``).

Upstream cuts the tool document out of the inference system prompt, and each prompt cuts it
differently; with ToolEyes' zero-shot prompt (``Resources/sys_infer.txt``, which ends
``"{Tool Document}\\n\\nLet's Begin!"``) the match prompt's document keeps ``"Let's Begin!"``,
the thought-chain prompts keep ``"Let's"`` and the relevance prompt keeps neither.  With the
five-shot prompt (``sys_infer_five_shot.txt``, upstream ``use_demon``) every prompt gets the
document alone.  :func:`tool_documents` reproduces both.

Thoughts and tools are cut out of a turn with ``process_utils.process_message``; the final
answer is the ``answer`` of the last Action Input, else upstream's ``process_action_pair``
fallback.  Upstream ``eval``s the Action Input; toollab reads it with ``ast.literal_eval``.  A
turn that upstream could not cut (no ``Action:``; upstream stops with an exception) gets the
whole turn as its thought and an empty tool.
"""

from __future__ import annotations

import re
from typing import Any

from toollab.parsing._text import load_literal

Message = dict[str, str]

TOOLS_MARKER = "Specifically, you have access of the following tools:"
EXAMPLES_MARKER = "You should reply in the format of the examples."
ZERO_SHOT_TAIL = "\n\nLet's Begin!"

_EXPERT = (
    "As a professional assessment expert, your task is to objectively evaluate the quality of the "
    "provided data based on the given guidelines."
)
_FORMAT = (
    'Please provide your assessment in the following format:"""\n'
    "Scoring Reason: <Provide a reason for your score, referencing the given criteria>.\n\n"
    "Evaluation Score: <Assign a score between 1 and 10>.\n"
    '"""\n'
)

FOCUS_SYSTEM = (
    _EXPERT
    + "\n\nWhen given a tool document, a user query, and a thought chain that addresses the query, "
    "please rate the quality of the thought chain based on the following criteria:\n\n"
    "1. The extent to which the thought chain consistently focuses on resolving the user query. "
    "The more relevant it is to the user query, the higher the score.\n\n"
    "2. The ability of the thought chain to adapt promptly when the user provides new information "
    "or makes new requests. The higher the alignment with the new information and requests, the "
    "higher the score. If there is no new information or requests, please ignore the criteria.\n\n"
    + _FORMAT
)
VALIDITY_SYSTEM = (
    _EXPERT
    + "\n\nWhen given a tool document, a user query, and a thought chain that addresses the query, "
    "please rate the quality of the thought chain based on the following criteria:\n\n"
    "1. Each step should succinctly summarize relevant information from the previous step; the "
    "more comprehensive the summary, the higher the score.\n\n"
    "2. Each step should timely plan for the next one; the more detailed the next step, the "
    "higher the score.\n\n"
    "3. Each step should be distinct from the previous one and contribute to resolving the user's "
    "query; the less repetition, the higher the score.\n\n" + _FORMAT
)
QUALITY_SYSTEM = (
    _EXPERT
    + "\n\nWhen given a tool document, a user query and a thought chain that addresses the query, "
    "please rate the quality of the thought chain based on the following criteria:\n\n"
    "1. The presence or absence of grammatical errors in the thought chain. The fewer the errors, "
    "the higher the score.\n\n"
    "2. The logical consistency of the thought chain. The fewer logical inconsistencies, the "
    "higher the score.\n\n"
    "3. The timeliness of detection and correction of any logical inconsistencies in the thought "
    "chain. The more timely the correction, the higher the score.\n\n" + _FORMAT
)
MATCH_SYSTEM = (
    _EXPERT
    + " \n\nWhen presented with a tool document, a THOUGHT, and a tool from the tool document, "
    "please ascertain the correlation between the specified tool and the given THOUGHT based on "
    "the guidelines below:\n\n"
    "    1. If the THOUGHT is empty, assign a score of 5 immediately.\n\n"
    "    2. If the THOUGHT is not empty, determine if the chosen tool is more pertinent to the "
    "planning in the THOUGHT compared to other tools in the tool document based on the tool "
    "documentation description. The more relevant the tool, the higher the score.\n\n"
    'Please provide your assessment in the following format:"""\n'
    "    Scoring Reason: <Provide a reason for your score, referencing the given criteria>.\n\n"
    "    Evaluation Score: <Assign a score between 1 and 10>.\n"
    '"""\n'
    "    "
)
RELEVANCE_SYSTEM = (
    _EXPERT
    + " \n\nWhen presented with a tool documentation, a user's initial query and a corresponding "
    "response, please rate the response's effectiveness in meeting the user's needs using the "
    "following criteria:\n\n"
    "1. Assess whether the response directly addresses the user's original question. The more "
    "on-point the response is, the higher it should be scored.\n"
    "2. Determine if the response includes any inaccurate information. Unless you have exact "
    "information, you need to assume that the information in the response is correct. A response "
    "with minimal inaccuracies should receive a higher score.\n"
    "3. Consider if the response offer suggestions that could help resolve the user's query? The "
    "more beneficial the guidance, the higher the score should be. Disregard this criterion if the "
    "user's question has been fully answered by the response.\n\n" + _FORMAT
)


def tool_documents(document: str, demonstrations: bool = False) -> dict[str, str]:
    """The tool document each prompt kind shows (``match``, ``chain``, ``relevance``), cut the
    upstream way out of the system prompt's tail."""
    if demonstrations:
        tail = f"\n{document}\n\n{EXAMPLES_MARKER}\n\nExamples:\n"
        doc = tail.split(EXAMPLES_MARKER)[0].strip()
        return {"match": doc, "chain": doc, "relevance": doc}
    tail = f"\n{document}{ZERO_SHOT_TAIL}"
    return {
        "match": tail.strip(),
        "chain": tail.replace("Begin!", "").strip(),
        "relevance": tail.replace("Let's Begin!", "").strip(),
    }


def upstream_query(query: str) -> str:
    return query.replace("Begin!", "").strip()


_THOUGHT = re.compile(r".*?Action:", re.DOTALL)
_ACTION = re.compile(r"Action:.*?Input", re.DOTALL)
_ACTION_INPUT = re.compile(r"Action Input:.*", re.DOTALL)


def cut_turn(message: str) -> tuple[str, str, str] | None:
    """``process_utils.process_message``: (thought, tool, action input), ``None`` where one of
    its patterns finds nothing (upstream raises)."""
    t = _THOUGHT.search(message)
    a = _ACTION.search(message)
    ai = _ACTION_INPUT.search(message)
    if t is None or a is None or ai is None:
        return None
    thought = re.sub(r"Thought[\s]*:", "", re.sub(r"Action.:*", "", t.group())).strip().strip("\n")
    action = re.sub(r"Action[\s]*:", "", re.sub(r"Action Input", "", a.group())).strip()
    action_input = re.sub(r"Action Input[\s]*:", "", ai.group()).strip().strip("\n")
    return thought, action, action_input


def turn_thought(message: str) -> str:
    cut = cut_turn(message)
    if cut is not None:
        return cut[0]
    return re.sub(r"Thought[\s]*:", "", message).strip()


def turn_tool(message: str) -> str:
    cut = cut_turn(message)
    return cut[1] if cut is not None else ""


_PAIR_KEY = re.compile(r"['][^,\"]*['][:]", re.DOTALL)
_PAIR_VALUE = re.compile(r":[\s\n]*['\"][^}]*", re.DOTALL)


def process_action_pair(action_input: str) -> dict[str, str]:
    """Upstream ``process_action_pair``: a forgiving read of ``{'k': 'v', ...}``."""
    keys = [k.replace(":", "").strip() for k in _PAIR_KEY.findall(action_input)]
    values = [v.split(":", 1)[1].strip() for v in _PAIR_VALUE.findall(action_input)]
    while len(values) < len(keys):
        values.append("")
    return {k[1:-1]: v[1:-1] for k, v in zip(keys, values, strict=False)}


def final_answer(last_message: str) -> str:
    """The response ``eval_relavance`` shows the judge: ``answer`` of the last Action Input,
    else ``str(process_action_pair(...))``."""
    cleaned = last_message.replace("\\\\", "\\").replace("{\n", "{").replace("\n}", "}")
    cut = cut_turn(cleaned)
    if cut is None:
        return ""
    action_input = cut[2]
    ok, value, _ = load_literal(action_input.replace("\\n\\", "\\"))
    if ok and isinstance(value, dict) and "answer" in value:
        return str(value["answer"])
    return str(process_action_pair(action_input.replace("\\\\", "\\")))


def thought_chain(turns: list[str], users: list[tuple[int, str]] | None = None) -> str:
    """``Turn n:\\n<thought>`` blocks; with ``users`` (position among assistant turns, text),
    the later user turns as ``User request:\\n<text>`` blocks in conversation order (focus)."""
    at: dict[int, list[str]] = {}
    for pos, text in users or []:
        at.setdefault(pos, []).append(text)
    chain = ""
    for i, turn in enumerate(turns):
        for text in at.get(i, []):
            chain += "User request:" + "\n" + text.strip() + "\n\n"
        chain += f"Turn {i + 1}:\n" + turn_thought(turn) + "\n\n"
    for pos in sorted(p for p in at if p >= len(turns)):
        for text in at[pos]:
            chain += "User request:" + "\n" + text.strip() + "\n\n"
    return chain.strip()


def _chain_user(document: str, query: str, chain: str, end: str = "") -> str:
    return (
        f'\nTool Document:\n{document}\n\nUser Query:"""\n{query}\n"""\n\n'
        f'Thought Chain:"""\n{chain}\n"""\n\nAssessment:{end}'
    )


def _pair(system: str, user: str) -> list[Message]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def focus_prompt(document: str, query: str, chain: str) -> list[Message]:
    """Intent comprehension (IU, ``eval_thought_foucus``)."""
    return _pair(FOCUS_SYSTEM, _chain_user(document, query, chain))


def validity_prompt(document: str, query: str, chain: str) -> list[Message]:
    """Behaviour planning, validity (``eval_thought_validity``; its user text ends in a newline)."""
    return _pair(VALIDITY_SYSTEM, _chain_user(document, query, chain, "\n"))


def quality_prompt(document: str, query: str, chain: str) -> list[Message]:
    """Behaviour planning, quality (``eval_thought_quality``)."""
    return _pair(QUALITY_SYSTEM, _chain_user(document, query, chain))


def match_prompt(document: str, thought: str, tool: str) -> list[Message]:
    """Tool-thought match of one turn (``eval_action_thought_matching``)."""
    user = (
        f'\nTool Document:\n{document}\n\nTHOUGHT:"""\n{thought}\n"""\n\n'
        f'Tool:"""\n{tool}\n"""\n\nAssessment:'
    )
    return _pair(MATCH_SYSTEM, user)


def relevance_prompt(document: str, query: str, response: str) -> list[Message]:
    """Answer quality (AO, ``eval_relavance``)."""
    user = (
        f'\nTool Document:\n{document}\n    \nUser Query:"""\n{query}\n"""\n\n'
        f'Corresponding Response:"""\n{response}\n"""\n\nAssessment:'
    )
    return _pair(RELEVANCE_SYSTEM, user)


def judge_prompts(
    document: str,
    query: str,
    turns: list[str],
    users: list[tuple[int, str]],
    last_message: str,
    *,
    demonstrations: bool = False,
) -> dict[str, Any]:
    """The prompts of one trace: ``focus``, ``validity``, ``quality``, ``relevance`` and
    ``match`` (one per assistant turn)."""
    docs = tool_documents(document, demonstrations)
    q = upstream_query(query)
    plain = thought_chain(turns)
    return {
        "focus": focus_prompt(docs["chain"], q, thought_chain(turns, users)),
        "validity": validity_prompt(docs["chain"], q, plain),
        "quality": quality_prompt(docs["chain"], q, plain),
        "relevance": relevance_prompt(docs["relevance"], q, final_answer(last_message)),
        "match": [match_prompt(docs["match"], turn_thought(t), turn_tool(t)) for t in turns],
    }
