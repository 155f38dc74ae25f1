"""SFT example files for the training tests, rendered with the bundled model's chat template.

Each example is a tool-use conversation (system prompt with the tool list, user goal, assistant
tool call, tool result, assistant answer) in the shared SFT example format: ``text`` is the
whole rendered sequence and ``spans`` cover every assistant output with its ``<|im_end|>``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

END = "<|im_end|>"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "convert_currency",
            "description": "Convert an amount between currencies.",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "number"},
                    "src": {"type": "string"},
                    "dst": {"type": "string"},
                },
                "required": ["amount", "src", "dst"],
            },
        },
    },
]

GOALS = [
    ("What is the weather in Paris?", "get_weather", {"city": "Paris"}, "18 C, cloudy"),
    ("Weather in Tokyo right now?", "get_weather", {"city": "Tokyo"}, "25 C, sunny"),
    (
        "Convert 100 USD to EUR.",
        "convert_currency",
        {"amount": 100, "src": "USD", "dst": "EUR"},
        "92.1",
    ),
    (
        "How much is 50 GBP in JPY?",
        "convert_currency",
        {"amount": 50, "src": "GBP", "dst": "JPY"},
        "9410",
    ),
    ("Is it raining in Oslo?", "get_weather", {"city": "Oslo"}, "6 C, rain"),
    (
        "Convert 20 EUR to CHF.",
        "convert_currency",
        {"amount": 20, "src": "EUR", "dst": "CHF"},
        "18.9",
    ),
    ("Tell me the weather in Lima.", "get_weather", {"city": "Lima"}, "19 C, fog"),
    (
        "Change 7 CAD into USD.",
        "convert_currency",
        {"amount": 7, "src": "CAD", "dst": "USD"},
        "5.1",
    ),
]


def system_prompt() -> str:
    return (
        "You can call these tools. Answer with <tool_call>{json}</tool_call> to call one.\n"
        + "\n".join(json.dumps(t["function"]) for t in TOOLS)
    )


def call_text(name: str, args: dict[str, Any]) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"


def render(tokenizer: Any, messages: list[dict[str, str]]) -> tuple[str, list[list[int]]]:
    """The chat template's text of ``messages`` and the spans of the assistant turns."""
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    spans = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        head = tokenizer.apply_chat_template(
            messages[:i], tokenize=False, add_generation_prompt=True
        )
        upto = tokenizer.apply_chat_template(messages[: i + 1], tokenize=False)
        assert text.startswith(upto) and upto.startswith(head)
        start = len(head)
        end = upto.rindex(END, start) + len(END)
        assert text[start:end] == m["content"] + END
        spans.append([start, end])
    return text, spans


def example(tokenizer: Any, i: int, goal: tuple[str, str, dict[str, Any], str]) -> dict[str, Any]:
    q, name, args, result = goal
    messages = [
        {"role": "system", "content": system_prompt()},
        {"role": "user", "content": q},
        {"role": "assistant", "content": call_text(name, args)},
        {"role": "tool", "content": result},
        {"role": "assistant", "content": f"The answer is {result}."},
    ]
    text, spans = render(tokenizer, messages)
    return {
        "id": f"ex{i}",
        "source": "test",
        "messages": messages,
        "tools": TOOLS,
        "template": "chatml",
        "text": text,
        "spans": spans,
        "meta": {},
    }


def all_shot(tokenizer: Any, goals: list[tuple[str, str, dict[str, Any], str]]) -> dict[str, Any]:
    """Several goal → action pairs in one sequence, every action a loss target."""
    messages = [{"role": "system", "content": system_prompt()}]
    for q, name, args, _ in goals:
        messages += [
            {"role": "user", "content": q},
            {"role": "assistant", "content": call_text(name, args)},
        ]
    text, spans = render(tokenizer, messages)
    return {
        "id": "allshot",
        "source": "test",
        "messages": messages,
        "tools": TOOLS,
        "template": "chatml",
        "text": text,
        "spans": spans,
        "meta": {"packed": len(goals)},
    }


def write_examples(path: Path, tokenizer: Any, n: int = len(GOALS)) -> Path:
    rows = [example(tokenizer, i, GOALS[i % len(GOALS)]) for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
