"""WebShop goal templates: the environment seed's goal (:func:`toollab.envs.webshop.goal_of`)
phrased as a shopper's instruction, and the gold program that buys the target product.

The gold program searches with the goal's words (requested attributes, product type, option
values), pages to the target product, opens it, selects each requested option and buys it.  A
goal whose target the search does not return (not in the top 50) is redrawn.
"""

from __future__ import annotations

import random

from toollab.envs.base import Environment
from toollab.envs.tasks.common import Goal, call, join_and, pick
from toollab.envs.taskset import TemplateError
from toollab.envs.webshop import ShopGoal, WebShopEnv
from toollab.envs.webshop_store import MAX_RESULTS, PAGE_SIZE
from toollab.schema import GoldCall

TASKS = WebShopEnv.tasks

_OPENERS = (
    "i'm looking for {what}",
    "i need {what}",
    "find me {what}",
    "i want to buy {what}",
    "please get me {what}",
    "show me {what} and buy it",
)
_PRICES = (
    "and price lower than {p:.2f} dollars",
    "priced under ${p:.0f}",
    "that costs less than {p:.0f} dollars",
    "for no more than ${p:.2f}",
)
#: option kinds named after their value ("navy color"); the others before it ("size large")
_VALUE_FIRST = ("color", "flavor", "scent")


def _option(kind: str, value: str, rng: random.Random) -> str:
    if kind in _VALUE_FIRST:
        return pick(rng, (f"{value} {kind}", f"in {value} {kind}"))
    return pick(rng, (f"{kind} {value}", f"in {kind} {value}"))


def instruction(goal: ShopGoal, rng: random.Random) -> str:
    """The shopper's request for ``goal``, in WebShop's lower-case instruction style."""
    attrs = join_and(list(goal.attributes))
    what = pick(
        rng,
        (
            f"{attrs} {goal.product_type}",
            f"{goal.product_type}: {attrs}",
            f"{goal.product_type} ({attrs})",
        ),
    )
    text = pick(rng, _OPENERS).format(what=what)
    if goal.options:
        text += ", " + join_and([_option(k, v, rng) for k, v in goal.options])
    return f"{text}, {pick(rng, _PRICES).format(p=goal.price_max)}"


def search_text(goal: ShopGoal) -> str:
    """The gold program's search query: the attributes, the type and the option values."""
    return " ".join([*goal.attributes, goal.product_type, *(v for _k, v in goal.options)])


def gold_program(env: WebShopEnv, goal: ShopGoal) -> list[GoldCall]:
    """Search, page to the target, open it, select the options, buy (TemplateError when the
    search does not return the target)."""
    query = search_text(goal)
    ids = [p.id for p in env.shop.search(query, MAX_RESULTS)]
    if goal.product_id not in ids:
        raise TemplateError(f"webshop: the search {query!r} does not return {goal.product_id}")
    page = ids.index(goal.product_id) // PAGE_SIZE
    return [
        call("search_products", query=query),
        *[call("click", target="next >") for _ in range(page)],
        call("click", target=goal.product_id),
        *[call("click", target=v) for _k, v in goal.options],
        call("click", target="buy now"),
    ]


@TASKS.template("buy")
def buy(rng: random.Random, env: Environment) -> Goal:
    if not isinstance(env, WebShopEnv):
        raise TypeError(f"the webshop templates need a WebShopEnv, got {type(env).__name__}")
    goal = env.goal
    return Goal(
        query=instruction(goal, rng),
        calls=gold_program(env, goal),
        metadata={
            "product": goal.product_id,
            "product_type": goal.product_type,
            "attributes": list(goal.attributes),
            "options": [v for _k, v in goal.options],
            "price_max": goal.price_max,
        },
    )
