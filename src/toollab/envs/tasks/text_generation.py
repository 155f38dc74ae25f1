"""Goal templates of the text-generation environment (ToolEyes scenario TG)."""

from __future__ import annotations

import random
from typing import Any

from toollab.envs.base import Environment
from toollab.envs.tasks.common import Goal, call, pick, plural, with_article
from toollab.envs.text_generation import TextGenerationEnv

TASKS = TextGenerationEnv.tasks
PHRASES = (
    "machine learning for small devices",
    "the quick brown fox",
    "annual budget review meeting",
    "open source tool learning",
    "summer garden party invitation",
    "how to bake sourdough bread",
)
NAMES = ("Maya", "Tom", "Priya", "Lucas", "Aiko", "Omar")
_CASE_WORDS = {
    "upper": "upper case",
    "lower": "lower case",
    "title": "title case",
    "snake": "snake_case",
    "camel": "camelCase",
}


@TASKS.template("uuids")
def uuids(rng: random.Random, env: Environment) -> Goal:
    n = rng.randint(1, 8)
    what = "a random UUID" if n == 1 else f"{n} random UUIDs"
    return Goal(
        query=f"I need {what} for my test database.",
        calls=[call("generate_uuids", **({"count": n} if n != 1 else {}))],
    )


@TASKS.template("password")
def password(rng: random.Random, env: Environment) -> Goal:
    n = rng.choice([8, 10, 12, 16, 20])
    args: dict[str, Any] = {} if n == 12 else {"length": n}
    extra = []
    if rng.random() < 0.4:
        args["symbols"] = False
        extra.append("special symbols")
    if rng.random() < 0.2:
        args["digits"] = False
        extra.append("digits")
    without = f" without {' or '.join(extra)}" if extra else ""
    return Goal(
        query=f"Generate {with_article(f'{n}-character')} password{without}.",
        calls=[call("generate_password", **args)],
    )


@TASKS.template("slug")
def slug(rng: random.Random, env: Environment) -> Goal:
    t = pick(rng, PHRASES).title()
    return Goal(query=f'Make a URL slug for the article "{t}".', calls=[call("make_slug", text=t)])


@TASKS.template("case")
def case(rng: random.Random, env: Environment) -> Goal:
    t = pick(rng, PHRASES)
    c = pick(rng, sorted(_CASE_WORDS))
    if c == "lower":
        t = t.title()
    return Goal(
        query=f'Convert "{t}" to {_CASE_WORDS[c]}.', calls=[call("change_case", text=t, case=c)]
    )


@TASKS.template("count")
def count(rng: random.Random, env: Environment) -> Goal:
    a, b = rng.sample(PHRASES, 2)
    t = a.capitalize() + ". " + b.capitalize() + "."
    return Goal(
        query=f'How many words are in this text: "{t}"', calls=[call("count_words", text=t)]
    )


@TASKS.template("acronym")
def acronym(rng: random.Random, env: Environment) -> Goal:
    t = pick(rng, PHRASES)
    return Goal(query=f'What is the acronym of "{t}"?', calls=[call("make_acronym", text=t)])


@TASKS.template("lorem")
def lorem(rng: random.Random, env: Environment) -> Goal:
    n = rng.randint(1, 5)
    return Goal(
        query=f"Give me {plural(n, 'sentence')} of placeholder text.",
        calls=[call("lorem_ipsum", **({"sentences": n} if n != 2 else {}))],
    )


@TASKS.template("greeting", weight=2)
def greeting(rng: random.Random, env: Environment) -> Goal:
    name = pick(rng, NAMES)
    occ = pick(rng, ["birthday", "wedding", "graduation", "new year", "thanks", "retirement"])
    formal = rng.random() < 0.4
    args: dict[str, Any] = {"name": name, "occasion": occ, **({"tone": "formal"} if formal else {})}
    tone = "formal" if formal else "casual"
    q = (
        f"Write a {tone} thank-you note for {name}."
        if occ == "thanks"
        else f"Write a {tone} {occ} greeting for {name}."
    )
    return Goal(query=q, calls=[call("write_greeting", **args)])


@TASKS.template("slug_and_case", atomic=False)
def slug_and_case(rng: random.Random, env: Environment) -> Goal:
    t = pick(rng, PHRASES)
    return Goal(
        query=f'For "{t}", give me a URL slug and the title-case version.',
        calls=[call("make_slug", text=t), call("change_case", text=t, case="title")],
    )


@TASKS.template("acronym_and_count", atomic=False)
def acronym_and_count(rng: random.Random, env: Environment) -> Goal:
    t = pick(rng, PHRASES)
    return Goal(
        query=f'What is the acronym of "{t}", and how many words does it have?',
        calls=[call("make_acronym", text=t), call("count_words", text=t)],
    )


TASKS.add_composition(weight=5)
