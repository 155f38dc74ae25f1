"""ToolEyes scenario *text generation* (TG): deterministic text tools.

UUIDs, passwords, slugs, case changes, word counts, acronyms, filler text and greeting cards.
Random outputs (UUIDs, passwords) are seeded by the environment seed and the arguments, so the
same request always yields the same text.  The state is the sorted list of responses.
"""

from __future__ import annotations

import random
import re
import uuid
from typing import Any

from toollab.envs.base import BAD_VALUE, EnvError, Environment, QueryLog, make_tool, register_env
from toollab.schema import Tool

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

    def build_tools(self) -> list[Tool]:
        text = {"text": {"type": "string"}}
        return [
            make_tool(
                "generate_uuids",
                "Random UUID4 strings.",
                {"count": {"type": "integer", "minimum": 1, "maximum": 20, "default": 1}},
            ),
            make_tool(
                "generate_password",
                "A random password.",
                {
                    "length": {"type": "integer", "minimum": 6, "maximum": 64, "default": 12},
                    "symbols": {"type": "boolean", "default": True},
                    "digits": {"type": "boolean", "default": True},
                },
            ),
            make_tool("make_slug", "A URL slug of a title.", dict(text), ["text"]),
            make_tool(
                "change_case",
                "Convert text to another case.",
                {**text, "case": {"type": "string", "enum": list(CASES)}},
                ["text", "case"],
            ),
            make_tool(
                "count_words", "Count words, characters and sentences.", dict(text), ["text"]
            ),
            make_tool("make_acronym", "The acronym of a phrase.", dict(text), ["text"]),
            make_tool(
                "lorem_ipsum",
                "Placeholder text.",
                {"sentences": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2}},
            ),
            make_tool(
                "write_greeting",
                "A short greeting card text.",
                {
                    "name": {"type": "string"},
                    "occasion": {"type": "string", "enum": list(OCCASIONS)},
                    "tone": {"type": "string", "enum": list(TONES), "default": "casual"},
                },
                ["name", "occasion"],
            ),
        ]

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.log = QueryLog()

    def state(self) -> dict[str, Any]:
        return self.log.flat()

    def _rng(self, *key: Any) -> random.Random:
        return random.Random("|".join(map(str, (self.seed, *key))))

    def do_generate_uuids(self, count: int) -> dict[str, Any]:
        rng = self._rng("uuid", count)
        ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(count)]
        return self.log.add({"kind": "uuids", "uuids": ids})

    def do_generate_password(self, length: int, symbols: bool, digits: bool) -> dict[str, Any]:
        alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ"
        if digits:
            alphabet += "23456789"
        if symbols:
            alphabet += "!@#$%&*?"
        rng = self._rng("pw", length, symbols, digits)
        pw = "".join(rng.choice(alphabet) for _ in range(length))
        return self.log.add({"kind": "password", "password": pw})

    def do_make_slug(self, text: str) -> dict[str, Any]:
        slug = "-".join(w.lower() for w in _words(text))
        if not slug:
            raise EnvError("nothing to make a slug of", BAD_VALUE)
        return self.log.add({"kind": "slug", "slug": slug})

    def do_change_case(self, text: str, case: str) -> dict[str, Any]:
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

    def do_count_words(self, text: str) -> dict[str, Any]:
        sentences = len([s for s in re.split(r"[.!?]+", text) if s.strip()])
        return self.log.add(
            {
                "kind": "counts",
                "words": len(_words(text)),
                "characters": len(text),
                "sentences": sentences,
            }
        )

    def do_make_acronym(self, text: str) -> dict[str, Any]:
        small = {"of", "and", "the", "for", "a", "an", "in", "on", "to"}
        letters = "".join(w[0].upper() for w in _words(text) if w.lower() not in small)
        return self.log.add({"kind": "acronym", "acronym": letters})

    def do_lorem_ipsum(self, sentences: int) -> dict[str, Any]:
        return self.log.add({"kind": "lorem", "text": " ".join(_LOREM[:sentences])})

    def do_write_greeting(self, name: str, occasion: str, tone: str) -> dict[str, Any]:
        body = _GREETINGS[(occasion, tone)].format(name=name.strip())
        return self.log.add({"kind": "greeting", "text": body})
