"""Goal templates of the information-retrieval environment (ToolEyes scenario IR): books,
country facts, definitions and recipes from the bundled catalogue."""

from __future__ import annotations

import random

from toollab.envs.base import Environment
from toollab.envs.info_retrieval import BOOKS, COUNTRIES, GENRES, RECIPES, WORDS, InfoRetrievalEnv
from toollab.envs.tasks.common import Goal, call, pick

TASKS = InfoRetrievalEnv.tasks
_FIELD_ORDER = ["capital", "population_millions", "currency", "language", "continent"]
_INGREDIENT_WORDS = {"egg": "eggs", "tomato": "tomatoes", "banana": "bananas"}


@TASKS.template("books_by_author", weight=2)
def books_by_author(rng: random.Random, env: Environment) -> Goal:
    author = pick(rng, sorted({b[2] for b in BOOKS}))
    return Goal(
        query=f"Which books by {author} are in the catalogue?",
        calls=[call("search_books", author=author)],
    )


@TASKS.template("books_by_genre")
def books_by_genre(rng: random.Random, env: Environment) -> Goal:
    g = pick(rng, GENRES)
    y = rng.choice([1800, 1850, 1870, 1890])
    return Goal(
        query=f"Find {g} books published in {y} or later.",
        calls=[call("search_books", genre=g, year_from=y)],
    )


@TASKS.template("book")
def book(rng: random.Random, env: Environment) -> Goal:
    b = BOOKS[rng.randrange(len(BOOKS))]
    return Goal(
        query=f"Give me the details of book {b[0]}.", calls=[call("get_book", book_id=b[0])]
    )


@TASKS.template("country", weight=2)
def country(rng: random.Random, env: Environment) -> Goal:
    c = pick(rng, list(COUNTRIES))
    fields = sorted(
        rng.sample(["capital", "currency", "language", "population_millions"], rng.randint(1, 2)),
        key=_FIELD_ORDER.index,
    )
    words = " and ".join("population" if f == "population_millions" else f for f in fields)
    return Goal(
        query=f"What is the {words} of {c}?",
        calls=[call("get_country_facts", country=c, fields=fields)],
    )


@TASKS.template("country_all")
def country_all(rng: random.Random, env: Environment) -> Goal:
    c = pick(rng, list(COUNTRIES))
    return Goal(
        query=f"Tell me everything you have about {c}.",
        calls=[call("get_country_facts", country=c)],
    )


@TASKS.template("define")
def define(rng: random.Random, env: Environment) -> Goal:
    w = pick(rng, list(WORDS))
    return Goal(query=f'What does "{w}" mean?', calls=[call("define_word", word=w)])


@TASKS.template("recipes")
def recipes(rng: random.Random, env: Environment) -> Goal:
    ing = pick(rng, sorted({r[1] for r in RECIPES}))
    said = _INGREDIENT_WORDS.get(ing, ing)
    if rng.random() < 0.5:
        m = rng.choice([15, 30, 45])
        return Goal(
            query=f"Which recipes with {said} take at most {m} minutes?",
            calls=[call("search_recipes", ingredient=ing, max_minutes=m)],
        )
    return Goal(
        query=f"What can I cook with {said}?", calls=[call("search_recipes", ingredient=ing)]
    )


@TASKS.template("two_words", atomic=False)
def two_words(rng: random.Random, env: Environment) -> Goal:
    a, b = rng.sample(list(WORDS), 2)
    return Goal(
        query=f'Define "{a}" and "{b}".',
        calls=[call("define_word", word=a), call("define_word", word=b)],
    )


TASKS.add_composition(weight=4, three=0.4)
