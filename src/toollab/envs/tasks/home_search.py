"""Home Search goal templates: a location, buy or rent, home types and any of the criteria.

The three setters ``set_num_garages``, ``set_floor_number`` and ``set_num_balconies`` are held out
of the training and validation splits (the paper excludes three criterion setters from all
demonstrations to test unseen functions).
"""

from __future__ import annotations

import random
from typing import Any

from toollab.envs.base import Environment
from toollab.envs.home_search import BUY_TYPES, RENT_TYPES, HomeSearchEnv
from toollab.envs.tasks.common import Goal, call, join_and, money, pick, with_article

TASKS = HomeSearchEnv.tasks

LOCATIONS = (
    "Palo Alto",
    "Cape Coral",
    "Austin",
    "San Diego",
    "Boise",
    "Raleigh",
    "Tampa",
    "Denver",
    "Portland",
    "Columbus",
    "Sacramento",
    "Madison",
    "Reno",
    "Savannah",
    "Tucson",
    "Omaha",
    "Pittsburgh",
    "Spokane",
    "Fort Worth",
    "Ann Arbor",
)
_TYPE_WORDS = {
    "house": "house",
    "townhouse": "townhouse",
    "condo": "condo",
    "apartment": "apartment",
    "land": "plot of land",
    "multi-family": "multi-family",
    "mobile": "mobile home",
    "co-op": "co-op",
}
_DISPLAY = {
    "house": "House",
    "townhouse": "Townhouse",
    "condo": "Condo",
    "apartment": "Apartment",
    "land": "Land",
    "multi-family": "Multi-family",
    "mobile": "Mobile",
    "co-op": "Co-op",
}
_NUMERIC = (
    "price",
    "square_feet",
    "num_beds",
    "num_baths",
    "num_garages",
    "num_swimming_pools",
    "floor_number",
    "max_commute_time",
    "num_balconies",
)


def _criterion(
    rng: random.Random, kind: str, mode: str
) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """A phrase and the calls (in canonical order) for one criterion."""
    if kind == "price":
        lo, hi = (
            (rng.randrange(8, 30) * 100, rng.randrange(31, 70) * 100)
            if mode == "rent"
            else (rng.randrange(20, 150) * 10000, rng.randrange(151, 400) * 10000)
        )
        form = rng.randrange(3)
        if form == 0:
            return f"between {money(lo)} and {money(hi)}", [
                ("set_min_price", {"min_price": lo}),
                ("set_max_price", {"max_price": hi}),
            ]
        if form == 1:
            return f"under {money(hi)}", [("set_max_price", {"max_price": hi})]
        return f"for at least {money(lo)}", [("set_min_price", {"min_price": lo})]
    if kind == "square_feet":
        lo, hi = rng.randrange(5, 20) * 100, rng.randrange(21, 50) * 100
        form = rng.randrange(3)
        if form == 0:
            return (
                f"between {lo} and {hi} square feet",
                [
                    ("set_min_square_feet", {"min_square_feet": lo}),
                    ("set_max_square_feet", {"max_square_feet": hi}),
                ],
            )
        if form == 1:
            return f"at most {hi} square feet", [("set_max_square_feet", {"max_square_feet": hi})]
        return f"at least {lo} square feet", [("set_min_square_feet", {"min_square_feet": lo})]
    if kind == "num_beds":
        n = rng.randint(1, 6)
        return f"{n} bedroom{'s' if n > 1 else ''}", [("set_num_beds", {"num_beds": n})]
    if kind == "num_baths":
        baths = rng.choice([1, 1.5, 2, 2.5, 3, 4])
        return f"{baths:g} bathroom{'s' if baths != 1 else ''}", [
            ("set_num_baths", {"num_baths": baths})
        ]
    if kind == "num_garages":
        n = rng.randint(1, 3)
        return f"{n} garage{'s' if n > 1 else ''}", [("set_num_garages", {"num_garages": n})]
    if kind == "num_swimming_pools":
        n = rng.randint(1, 2)
        return f"{n} swimming pool{'s' if n > 1 else ''}", [
            ("set_num_swimming_pools", {"num_swimming_pools": n})
        ]
    if kind == "floor_number":
        n = rng.randint(1, 20)
        return f"on floor {n}", [("set_floor_number", {"floor_number": n})]
    if kind == "max_commute_time":
        n = rng.choice([15, 20, 30, 45, 60])
        return f"a commute of at most {n} minutes", [
            ("set_max_commute_time", {"max_commute_time": n})
        ]
    n = rng.randint(1, 3)
    return f"{n} balcon{'ies' if n > 1 else 'y'}", [("set_num_balconies", {"num_balconies": n})]


def join_or(parts: list[str]) -> str:
    """Home types are alternatives: ``house, condo or townhouse``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def _build(rng: random.Random, n_criteria: tuple[int, int], with_types: float) -> Goal:
    mode = pick(rng, ["buy", "rent"])
    loc = pick(rng, LOCATIONS)
    kinds = rng.sample(_NUMERIC, rng.randint(*n_criteria))
    kinds.sort(key=_NUMERIC.index)
    phrases, setters = [], []
    for kind in kinds:
        phrase, calls = _criterion(rng, kind, mode)
        phrases.append(phrase)
        setters.extend(calls)
    types: list[str] = []
    if rng.random() < with_types:
        types = rng.sample(BUY_TYPES if mode == "buy" else RENT_TYPES, rng.randint(1, 3))
    what = with_article(
        join_or([_TYPE_WORDS[t] for t in types])
        if types
        else pick(rng, ["home", "place", "property"])
    )
    if mode == "buy":
        opener = pick(
            rng,
            [
                f"Find {what} for sale in {loc}",
                f"I want to buy {what} in {loc}",
                f"Looking for {what} to buy in {loc}",
                f"Search {loc} for {what} to purchase",
            ],
        )
    else:
        opener = pick(
            rng,
            [
                f"Find {what} for rent in {loc}",
                f"I want to rent {what} in {loc}",
                f"Looking for {what} to rent in {loc}",
                f"Search rentals in {loc}: {what}",
            ],
        )
    with_words = [
        p for p in phrases if not p.startswith(("between $", "under $", "for at least", "on floor"))
    ]
    price_words = [p for p in phrases if p not in with_words]
    text = opener
    if with_words:
        text += " with " + join_and(with_words)
    if price_words:
        text += (", " if with_words else " ") + join_and(price_words)
    program = [call("set_location", location=loc), call("set_buy_or_rent", buy_or_rent=mode)]
    if types:
        program.append(call("select_home_type", home_types=[_DISPLAY[t] for t in types]))
    program.extend(call(name, **args) for name, args in setters)
    program.append(call("search"))
    return Goal(query=text + ".", calls=program)


@TASKS.template("few_criteria", weight=2)
def few_criteria(rng: random.Random, env: Environment) -> Goal:
    return _build(rng, (1, 2), 0.3)


@TASKS.template("many_criteria", weight=2)
def many_criteria(rng: random.Random, env: Environment) -> Goal:
    return _build(rng, (3, 4), 0.5)


@TASKS.template("types_only")
def types_only(rng: random.Random, env: Environment) -> Goal:
    return _build(rng, (0, 0), 1.0)
