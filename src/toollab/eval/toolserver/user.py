"""The simulated user who answers ToolEyes' ``ask_to_user``.

ToolEyes lets a model ask the user for guidance (the ``ask_to_user`` tool); upstream a person
types the answer.  Offline, a :class:`SimulatedUser` answers instead, and only so often: after
``max_turns`` replies it answers ``None`` and the agent ends the episode as one that handed
control back to the user.

* :class:`ScriptedUser` (the default): fixed replies that add no information, the first one
  repeating the request (``{query}``) and asking the model to choose reasonable values, the next
  one asking it to finish.
* :class:`ModelUser`: a model plays the person who made the request; its reply is bounded
  (:func:`~toollab.eval.toolserver.bounded.read_user_reply`), and a failed or empty one falls
  back to the scripted reply.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from toollab.eval.toolserver.bounded import read_user_reply
from toollab.models.base import ChatRequest, GenerateOptions
from toollab.models.registry import ModelSource

#: replies the scripted user gives in turn (the last one repeats); ``{query}`` is the request
SCRIPTED_REPLIES = (
    'I have nothing to add to my request: "{query}" Please choose reasonable values yourself '
    "and go on.",
    "Please finish the task with what you have.",
)
#: replies a user gives per episode by default
DEFAULT_USER_TURNS = 2

USER_SYSTEM = (
    "You are a person who asked an assistant for help with this request:\n{query}\n\n"
    "The assistant now asks you a question. Answer it in one or two sentences, as that person "
    "would. If your request does not say, make a reasonable choice. Do not ask questions back."
)


class SimulatedUser(Protocol):
    """Answers the model's question to the user, or ``None`` when it answers no more."""

    async def reply(self, query: str, question: str) -> str | None: ...


class ScriptedUser:
    """Fixed replies, at most ``max_turns`` of them (see the module docs)."""

    def __init__(
        self, replies: Sequence[str] = SCRIPTED_REPLIES, max_turns: int = DEFAULT_USER_TURNS
    ) -> None:
        if not replies:
            raise ValueError("a scripted user needs at least one reply")
        self.replies = list(replies)
        self.max_turns = max_turns
        self.turns = 0

    def scripted(self, query: str) -> str:
        text = self.replies[min(self.turns, len(self.replies) - 1)]
        return text.replace("{query}", query.strip())

    async def reply(self, query: str, question: str) -> str | None:
        if self.turns >= self.max_turns:
            return None
        text = self.scripted(query)
        self.turns += 1
        return text


class ModelUser(ScriptedUser):
    """A model plays the user; bounded in turns, characters and time."""

    def __init__(
        self,
        source: ModelSource,
        *,
        max_turns: int = DEFAULT_USER_TURNS,
        max_tokens: int = 96,
        max_chars: int = 600,
        timeout: float = 120.0,
        notes: Counter[str] | None = None,
    ) -> None:
        super().__init__(max_turns=max_turns)
        self.source = source
        self.max_tokens = max_tokens
        self.max_chars = max_chars
        self.timeout = timeout
        #: how replies were repaired (``looping``, ``truncated``, ``empty``, ``model_error``)
        self.notes: Counter[str] = notes if notes is not None else Counter()

    async def reply(self, query: str, question: str) -> str | None:
        if self.turns >= self.max_turns:
            return None
        fallback = self.scripted(query)
        self.turns += 1
        req = ChatRequest(
            messages=[
                {"role": "system", "content": USER_SYSTEM.replace("{query}", query.strip())},
                {"role": "user", "content": question},
            ],
            options=GenerateOptions(max_tokens=self.max_tokens, temperature=0.0),
            tag="user",
        )
        try:
            out = await asyncio.wait_for(self.source.get().safe_request(req), self.timeout)
        except TimeoutError:
            self.notes["timeout"] += 1
            return fallback
        if out.error:
            self.notes["model_error"] += 1
            return fallback
        text, notes = read_user_reply(out.text, self.max_chars)
        self.notes.update(notes)
        return text or fallback
