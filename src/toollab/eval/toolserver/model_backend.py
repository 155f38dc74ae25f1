"""A model plays the API: prompted with the tool's document and the call, it writes the response.

Any toollab model string works (``openai:NAME@URL``, ``llamacpp:/m.gguf``, ``fake:/script.json``,
...).  The request is greedy, seeded by the call's key, at most ``max_tokens`` tokens and
``timeout`` seconds; the answer is read by
:func:`~toollab.eval.toolserver.bounded.read_api_answer` (prose kept as ``{"result": ...}``, a
loop cut, a huge answer cut to a preview, each repair noted).  A model error or a timeout gives
a 503 error body and is not cached, so a later run asks again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

from toollab.eval.toolserver.bounded import read_api_answer
from toollab.eval.toolserver.server import Answer, api_error
from toollab.models.base import ChatRequest, GenerateOptions
from toollab.models.registry import ModelSource
from toollab.schema import Tool

#: changes whenever the prompt does, so answers cached under another prompt are not reused
PROMPT_VERSION = 1
SERVER_SYSTEM = (
    "You play a web API. You receive calls of the tool documented below and answer each with "
    "the JSON response the real API would return: one JSON object with realistic, concrete "
    "values consistent with the arguments. Write the JSON only, no explanation.\n\n"
    "Tool document:\n{doc}"
)
SERVER_USER = "Call: {name}\nArguments: {arguments}\nResponse:"


class ModelBackend:
    """Answers calls with a model (see the module docs)."""

    def __init__(
        self,
        source: ModelSource,
        *,
        max_tokens: int = 256,
        max_chars: int = 4000,
        timeout: float = 120.0,
    ) -> None:
        self.source = source
        self.max_tokens = max_tokens
        self.max_chars = max_chars
        self.timeout = timeout
        digest = hashlib.sha256(f"{source.name}\n{PROMPT_VERSION}\n{max_tokens}".encode())
        self.cache_name = f"model-{digest.hexdigest()[:16]}"

    def request(self, tool: Tool, arguments: dict[str, Any], key: str) -> ChatRequest:
        doc = json.dumps(tool.to_openai_function(), ensure_ascii=False)
        args = json.dumps(arguments, ensure_ascii=False, sort_keys=True)
        return ChatRequest(
            messages=[
                {"role": "system", "content": SERVER_SYSTEM.replace("{doc}", doc)},
                {
                    "role": "user",
                    "content": SERVER_USER.replace("{name}", tool.name).replace(
                        "{arguments}", args
                    ),
                },
            ],
            options=GenerateOptions(
                max_tokens=self.max_tokens, temperature=0.0, seed=int(key[:8], 16)
            ),
            tag=f"tool:{tool.name}",
        )

    async def respond(self, tool: Tool, arguments: dict[str, Any], key: str) -> Answer:
        req = self.request(tool, arguments, key)
        try:
            out = await asyncio.wait_for(self.source.get().safe_request(req), self.timeout)
        except TimeoutError:
            return Answer(
                api_error(503, "Service Unavailable", f"no answer in {self.timeout:g} s"),
                ["timeout"],
                cacheable=False,
            )
        if out.error:
            return Answer(
                api_error(503, "Service Unavailable", f"the simulated API failed: {out.error}"),
                ["model_error"],
                cacheable=False,
            )
        observation, notes = read_api_answer(out.text, self.max_chars)
        if out.finish_reason == "length":
            notes.append("max_tokens")
        return Answer(observation, notes)
