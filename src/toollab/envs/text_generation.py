"""ToolEyes scenario *text generation* (TG): deterministic text tools.

UUIDs, passwords, slugs, case changes, word counts, acronyms, filler text and greeting cards.
Random outputs (UUIDs, passwords) are seeded by the environment seed and the arguments, so the
same request always yields the same text.  The state is the sorted list of responses.
"""

from __future__ import annotations

import random
import re
import uuid
from typing import Annotated, Any, ClassVar, Literal

from toollab.envs.base import BAD_VALUE, EnvError, Environment, QueryLog, register_env
from toollab.envs.taskset import TaskSet
from toollab.tools.decorator import Param, tool

CASES = ("upper", "lower", "title", "snake", "camel")
OCCASIONS = ("birthday", "wedding", "graduation", "new year", "thanks", "retirement")
TONES = ("casual", "formal")
_LOREM = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
    "Sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.",
    "Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris.",
    "Duis aute irure dolor in reprehenderit in voluptate velit esse.",
    "Excepteur sint occaecat cupidatat non proident, sunt in culpa.",
)
_GREETINGS = {
    ("birthday", "casual"): "Happy birthday, {name}! Have a fantastic day.",
    ("birthday", "formal"): "Dear {name}, warmest wishes on your birthday.",
    ("wedding", "casual"): "Congrats on the wedding, {name}! Enjoy every moment.",
    ("wedding", "formal"): "Dear {name}, heartfelt congratulations on your marriage.",
    ("graduation", "casual"): "You did it, {name}! Congrats on graduating.",
    ("graduation", "formal"): "Dear {name}, congratulations on your graduation.",
    ("new year", "casual"): "Happy new year, {name}! Here's to a great one.",
    ("new year", "formal"): "Dear {name}, best wishes for the new year.",
    ("thanks", "casual"): "Thanks a lot, {name}! You're the best.",
    ("thanks", "formal"): "Dear {name}, thank you sincerely for your help.",
    ("retirement", "casual"): "Enjoy your retirement, {name}! You earned it.",
    ("retirement", "formal"): "Dear {name}, best wishes on your well-earned retirement.",
}


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9']+", text)


@register_env("text_generation")
class TextGenerationEnv(Environment):
    description = "Generate and transform text: ids, passwords, slugs, cases, counts, greetings."
    scenario = "TG"
    #: the split policy of its generated data (the goal templates are in
    #: :mod:`toollab.envs.tasks.text_generation`)
    tasks: ClassVar[TaskSet] = TaskSet("text_generation", lends_goals=True)

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.log = QueryLog()

    def state(self) -> dict[str, Any]:
        return self.log.flat()

    def _rng(self, *key: Any) -> random.Random:
        return random.Random("|".join(map(str, (self.seed, *key))))

    @tool(returns=False)
    def generate_uuids(
        self, count: Annotated[int, Param(minimum=1, maximum=20)] = 1
    ) -> dict[str, Any]:
        """Random UUID4 strings."""
        rng = self._rng("uuid", count)
        ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(count)]
        return self.log.add({"kind": "uuids", "uuids": ids})

    @tool(returns=False)
    def generate_password(
        self,
        length: Annotated[int, Param(minimum=6, maximum=64)] = 12,
        symbols: bool = True,
        digits: bool = True,
    ) -> dict[str, Any]:
        """A random password."""
        alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ"
        if digits:
            alphabet += "23456789"
        if symbols:
            alphabet += "!@#$%&*?"
        rng = self._rng("pw", length, symbols, digits)
        pw = "".join(rng.choice(alphabet) for _ in range(length))
        return self.log.add({"kind": "password", "password": pw})

    @tool(returns=False)
    def make_slug(self, text: str) -> dict[str, Any]:
        """A URL slug of a title."""
        slug = "-".join(w.lower() for w in _words(text))
        if not slug:
            raise EnvError("nothing to make a slug of", BAD_VALUE)
        return self.log.add({"kind": "slug", "slug": slug})

    @tool(returns=False)
    def change_case(
        self, text: str, case: Literal["upper", "lower", "title", "snake", "camel"]
    ) -> dict[str, Any]:
        """Convert text to another case."""
        words = _words(text)
        if case == "upper":
            out = text.upper()
        elif case == "lower":
            out = text.lower()
        elif case == "title":
            out = " ".join(w.capitalize() for w in text.split())
        elif case == "snake":
            out = "_".join(w.lower() for w in words)
        else:
            out = words[0].lower() + "".join(w.capitalize() for w in words[1:]) if words else ""
        return self.log.add({"kind": "case", "case": case, "text": out})

    @tool(returns=False)
    def count_words(self, text: str) -> dict[str, Any]:
        """Count words, characters and sentences."""
        sentences = len([s for s in re.split(r"[.!?]+", text) if s.strip()])
        return self.log.add(
            {
                "kind": "counts",
                "words": len(_words(text)),
                "characters": len(text),
                "sentences": sentences,
            }
        )

    @tool(returns=False)
    def make_acronym(self, text: str) -> dict[str, Any]:
        """The acronym of a phrase."""
        small = {"of", "and", "the", "for", "a", "an", "in", "on", "to"}
        letters = "".join(w[0].upper() for w in _words(text) if w.lower() not in small)
        return self.log.add({"kind": "acronym", "acronym": letters})

    @tool(returns=False)
    def lorem_ipsum(
        self, sentences: Annotated[int, Param(minimum=1, maximum=5)] = 2
    ) -> dict[str, Any]:
        """Placeholder text."""
        return self.log.add({"kind": "lorem", "text": " ".join(_LOREM[:sentences])})

    @tool(returns=False)
    def write_greeting(
        self,
        name: str,
        occasion: Literal["birthday", "wedding", "graduation", "new year", "thanks", "retirement"],
        tone: Literal["casual", "formal"] = "casual",
    ) -> dict[str, Any]:
        """A short greeting card text."""
        body = _GREETINGS[(occasion, tone)].format(name=name.strip())
        return self.log.add({"kind": "greeting", "text": body})
