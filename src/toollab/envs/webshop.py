"""WebShop (Yao et al. 2022; SambaNova ToolBench, Appendix A.7): find and buy a product in a
simulated online shop, with two text web actions.

The shop is :func:`toollab.envs.webshop_store.catalogue` (3,000 seeded synthetic products,
searched with BM25).  The environment seed picks the shopper's goal (:func:`goal_of`): a target
product, some of its attributes, one value of some of its option kinds, and a price ceiling above
its price.  The agent acts with WebShop's vocabulary:

* ``search_products(query)`` — WebShop's ``search[...]``: the results page (top 50, ten a page);
* ``click(target)`` — WebShop's ``click[...]``: a product id on the results page, an option value
  on the item page, ``next >`` / ``< prev`` (pages; from an item page ``< prev`` goes back to the
  results), ``back to search``, ``buy now`` (on an item page: the purchase ends the episode).

Each action returns the new page as text.  A click on something the page does not show, an empty
or garbled target, a search after the episode ended: the observation says so and the episode goes
on (nothing crashes but an unknown function or arguments outside the schema, as in every
environment).  After :data:`MAX_STEPS` actions without a purchase the episode is over.

**Reward** (WebShop's ``get_reward``): r = r_type × (matched attributes + matched options +
[price ≤ ceiling]) / (goal attributes + goal options + 1), in [0, 1].  r_type is 1 when the
product type matches (WebShop: the category path or the type's words), 0.5 when nothing matches,
0.1 when under a tenth of the type's words match and 0 when none do.  An attribute matches when
the product has it (or its title says it), an option when it was selected.  The state holds the
goal and what was bought; :meth:`WebShopEnv.check` scores the bought product against the label's
goal, so buying *any* product that satisfies the goal scores 1: success is reward 1, and the
check's F1 is the reward.

**Splits** (:func:`goal_split`): a goal belongs to the test split when its target product is a
test product (20 % of the shop, by a stable hash of seed and id) and its attribute combination
(product type and requested attributes) is a test combination (30 %); to training and validation
when both are training ones; mixed goals are never generated.  So test goals ask for products and
attribute combinations no training goal asks for.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from toollab.envs.base import CheckResult, Environment, register_env
from toollab.envs.taskset import TaskSet
from toollab.envs.webshop_store import MAX_RESULTS, PAGE_SIZE, Product, catalogue
from toollab.schema import GoldCall
from toollab.tools.decorator import tool

#: actions per episode (SambaNova: a purchase within 25 steps)
MAX_STEPS = 25
#: shares of the shop's products and of the attribute combinations reserved for the test split
TEST_PRODUCTS = 0.2
TEST_COMBOS = 0.3

SEARCH, RESULTS, ITEM, DONE = "search", "results", "item", "done"
_NEXT = ("next >", "next", "next page", "next>")
_PREV = ("< prev", "prev", "previous", "prev page", "<prev", "< previous")
_BACK = ("back to search", "back", "back to search page")
_BUY = ("buy now", "buy")


@dataclass(frozen=True)
class ShopGoal:
    """What the shopper asks for (drawn from the environment seed)."""

    product_id: str
    category: str
    product_type: str
    attributes: tuple[str, ...]
    #: (kind, value) pairs
    options: tuple[tuple[str, str], ...]
    price_max: float


def _ceiling(rng: random.Random, price: float) -> float:
    step = 5 if price < 30 else 10
    return float(math.ceil(price * rng.uniform(1.05, 1.6) / step) * step)


def goal_of(seed: int) -> ShopGoal:
    """The goal of environment seed ``seed``: a product of the shop, one to three of its
    attributes, a value for most of its option kinds, a price ceiling above its price."""
    rng = random.Random(f"webshop-goal|{seed}")
    shop = catalogue()
    product = shop.products[rng.randrange(len(shop))]
    n_attr = rng.randint(1, min(3, len(product.attributes)))
    attributes = tuple(sorted(rng.sample(product.attributes, n_attr)))
    options = tuple(
        (kind, rng.choice(values))
        for kind, values in product.options
        if len(product.options) == 1 or rng.random() < 0.75
    )
    return ShopGoal(
        product_id=product.id,
        category=product.category,
        product_type=product.product_type,
        attributes=attributes,
        options=options,
        price_max=_ceiling(rng, product.price),
    )


def _share(key: str) -> float:
    return int(hashlib.sha1(key.encode()).hexdigest()[:12], 16) % 1000 / 1000


def goal_split(calls: Sequence[GoldCall], env_seed: int, seed: int) -> bool | None:
    """Whether the goal of ``env_seed`` is a test goal (``True``), a training / validation goal
    (``False``) or neither (``None``) under split seed ``seed`` (see the module doc)."""
    goal = goal_of(env_seed)
    product = _share(f"webshop|{seed}|product|{goal.product_id}") < TEST_PRODUCTS
    combo = "+".join(goal.attributes)
    attrs = _share(f"webshop|{seed}|attributes|{goal.product_type}|{combo}") < TEST_COMBOS
    return product if product == attrs else None


# -- reward ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Purchase:
    """What was bought: the product's facts and the selected option values."""

    product_id: str
    title: str
    category: str
    product_type: str
    attributes: tuple[str, ...]
    options: tuple[str, ...]
    price: float


def type_reward(bought: Purchase, goal: ShopGoal) -> float:
    """WebShop's r_type: the category path (category › type) or the type's words."""
    if (bought.category, bought.product_type) == (goal.category, goal.product_type):
        return 1.0
    want = set(goal.product_type.split())
    score = len(want & set(bought.product_type.split())) / len(want)
    r_type = 1.0 if score > 0.2 else 0.5
    if score < 0.1:
        r_type = 0.1
    if score == 0.0:
        r_type = 0.0
    return r_type


@dataclass(frozen=True)
class Reward:
    """WebShop's reward of a purchase and its parts (shares of the goal's attributes and options
    matched, whether the price is within the ceiling, r_type)."""

    reward: float
    r_type: float
    attributes: float
    options: float
    price: float


def reward(bought: Purchase, goal: ShopGoal) -> Reward:
    """The reward of buying ``bought`` for ``goal`` and its parts."""
    title = bought.title.lower()
    attrs = sum(1 for a in goal.attributes if a in bought.attributes or a in title)
    chosen = {o.lower() for o in bought.options}
    opts = sum(1 for _kind, value in goal.options if value.lower() in chosen)
    price = 1.0 if bought.price <= goal.price_max else 0.0
    r_type = type_reward(bought, goal)
    total = len(goal.attributes) + len(goal.options) + 1
    return Reward(
        reward=r_type * (attrs + opts + price) / total,
        r_type=r_type,
        attributes=attrs / len(goal.attributes) if goal.attributes else 1.0,
        options=opts / len(goal.options) if goal.options else 1.0,
        price=price,
    )


def _strings(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else math.inf


def goal_from_state(state: Mapping[str, object]) -> ShopGoal | None:
    """The goal a state records (``None`` when it records none)."""
    if not isinstance(state.get("goal.product"), str):
        return None
    options = [o.split(": ", 1) for o in _strings(state.get("goal.options"))]
    return ShopGoal(
        product_id=str(state["goal.product"]),
        category=str(state.get("goal.category", "")),
        product_type=str(state.get("goal.product_type", "")),
        attributes=_strings(state.get("goal.attributes")),
        options=tuple((o[0], o[-1]) for o in options),
        price_max=_number(state.get("goal.price_max")),
    )


def purchase_from_state(state: Mapping[str, object]) -> Purchase | None:
    """What a state records as bought (``None``: nothing was bought)."""
    if not isinstance(state.get("purchased"), str):
        return None
    return Purchase(
        product_id=str(state["purchased"]),
        title=str(state.get("purchased.title", "")),
        category=str(state.get("purchased.category", "")),
        product_type=str(state.get("purchased.product_type", "")),
        attributes=_strings(state.get("purchased.attributes")),
        options=_strings(state.get("purchased.options")),
        price=_number(state.get("purchased.price")),
    )


# -- the environment --------------------------------------------------------------------------------
@register_env("webshop")
class WebShopEnv(Environment):
    #: the split policy of its generated data: by goal (target product and attribute
    #: combination), not by API combination; the goal templates are in
    #: :mod:`toollab.envs.tasks.webshop`
    tasks: ClassVar[TaskSet] = TaskSet("webshop", goal_split=goal_split)
    #: room for the test split's gold programs in the json template (SmolLM2 tokens, seed 0:
    #: p90 119, max 126; SambaNova's WebShop budget is 128 too)
    max_tokens = 128
    description = (
        "Shop in an online store: search for products, open one, choose its options, buy it."
    )
    scenario = "AM"

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.goal = goal_of(seed)
        self.shop = catalogue()
        self.page = SEARCH
        self.query = ""
        self.results: list[Product] = []
        self.page_no = 0
        self.item: Product | None = None
        self.chosen: dict[str, str] = {}
        self.steps = 0
        self.bought: Purchase | None = None

    def state(self) -> dict[str, Any]:
        g = self.goal
        out: dict[str, Any] = {
            "goal.product": g.product_id,
            "goal.category": g.category,
            "goal.product_type": g.product_type,
            "goal.attributes": list(g.attributes),
            "goal.options": [f"{k}: {v}" for k, v in g.options],
            "goal.price_max": g.price_max,
            "purchased": None,
        }
        b = self.bought
        if b is not None:
            out.update(
                {
                    "purchased": b.product_id,
                    "purchased.title": b.title,
                    "purchased.category": b.category,
                    "purchased.product_type": b.product_type,
                    "purchased.attributes": list(b.attributes),
                    "purchased.options": list(b.options),
                    "purchased.price": b.price,
                }
            )
        return out

    def check(
        self, state: Mapping[str, object], labels: Sequence[Mapping[str, object]]
    ) -> CheckResult:
        """The reward of what ``state`` bought, against each label's goal (the best kept):
        success is reward 1, the F1 (and precision, recall) is the reward."""
        best = CheckResult(success=False)
        bought = purchase_from_state(state)
        for i, label in enumerate(labels):
            goal = goal_from_state(label)
            parts = reward(bought, goal) if bought is not None and goal is not None else None
            r = parts.reward if parts is not None else 0.0
            if best.label is None or r > best.f1:
                best = CheckResult(
                    success=r >= 1.0 - 1e-9,
                    precision=r,
                    recall=r,
                    f1=r,
                    label=i,
                    details=asdict(parts) if parts is not None else {"reward": 0.0},
                )
        return best

    def score(self) -> float:
        """The reward of the episode so far (0 until something is bought)."""
        return 0.0 if self.bought is None else reward(self.bought, self.goal).reward

    # -- pages ----------------------------------------------------------------------------------
    def _page_products(self) -> list[Product]:
        start = self.page_no * PAGE_SIZE
        return self.results[start : start + PAGE_SIZE]

    def _pages(self) -> int:
        return max(1, math.ceil(len(self.results) / PAGE_SIZE))

    def render(self) -> str:
        """The current page as text (WebShop's simple text mode, one element a line)."""
        if self.page == SEARCH:
            return "[Search]\nType a query with search_products to see matching products."
        if self.page == DONE:
            b = self.bought
            assert b is not None  # the done page is only reached by a purchase
            opts = ", ".join(b.options) or "none"
            return (
                f"Thank you for shopping with us!\nYou bought {b.product_id} ({b.title}), "
                f"options: {opts}, for ${b.price:.2f}.\n"
                f"Your score (min 0.0, max 1.0): {self.score():.2f}"
            )
        if self.page == RESULTS:
            lines = [
                "[Back to Search]",
                f"Page {self.page_no + 1} of {self._pages()} (total results: {len(self.results)})"
                f" for '{self.query}'",
            ]
            if self.page_no > 0:
                lines.append("[< Prev]")
            if self.page_no + 1 < self._pages():
                lines.append("[Next >]")
            for p in self._page_products():
                lines.append(f"[{p.id}] {p.title} | ${p.price:.2f}")
            if not self.results:
                lines.append("No products match the query.")
            return "\n".join(lines)
        item = self.item
        assert item is not None  # the item page always shows one
        lines = ["[Back to Search]", "[< Prev]"]
        for kind, values in item.options:
            shown = " ".join(
                f"[{v}]" + (" (selected)" if self.chosen.get(kind) == v else "") for v in values
            )
            lines.append(f"{kind}: {shown}")
        lines += [
            item.title,
            f"Price: ${item.price:.2f}",
            f"Features: {', '.join(item.attributes)}",
            "[Buy Now]",
        ]
        return "\n".join(lines)

    def _refuse(self, why: str) -> str:
        return f"Invalid action: {why}. The page is unchanged.\n{self.render()}"

    def _over(self) -> str | None:
        """The observation of an action after the episode ended, else ``None`` (and the action
        counts as a step)."""
        if self.page == DONE:
            return "The episode is over: the purchase is made. Nothing more can be done."
        if self.steps >= MAX_STEPS:
            return f"The episode is over: {MAX_STEPS} steps without a purchase."
        self.steps += 1
        return None

    # -- tools ----------------------------------------------------------------------------------
    @tool(returns=False)
    def search_products(self, query: str) -> str:
        """Search the shop for products; returns the first page of results.

        Args:
            query: What to look for, e.g. "gluten free protein bars chocolate".
        """
        over = self._over()
        if over is not None:
            return over
        text = query.strip()
        if not text:
            return self._refuse("the search query is empty")
        self.query = text
        self.results = self.shop.search(text, MAX_RESULTS)
        self.page, self.page_no, self.item, self.chosen = RESULTS, 0, None, {}
        return self.render()

    @tool(returns=False)
    def click(self, target: str) -> str:
        """Click a button of the page: a product id, an option, next >, < prev, back to search, buy now.

        Args:
            target: The button's text, as the page shows it between brackets (e.g. "buy now").
        """
        over = self._over()
        if over is not None:
            return over
        t = target.strip().strip("[]").strip().lower()
        if not t:
            return self._refuse("the click target is empty")
        if t in _BACK:
            self.page, self.item, self.chosen = SEARCH, None, {}
            return self.render()
        if self.page == RESULTS:
            return self._click_results(t, target)
        if self.page == ITEM:
            return self._click_item(t, target)
        return self._refuse(f"there is no button {target!r} on the search page; search first")

    def _click_results(self, t: str, target: str) -> str:
        if t in _NEXT:
            if self.page_no + 1 >= self._pages():
                return self._refuse("this is the last page of results")
            self.page_no += 1
            return self.render()
        if t in _PREV:
            if self.page_no == 0:
                return self._refuse("this is the first page of results")
            self.page_no -= 1
            return self.render()
        for p in self._page_products():
            if p.id.lower() == t:
                self.page, self.item, self.chosen = ITEM, p, {}
                return self.render()
        return self._refuse(
            f"{target!r} is not a button on this results page (a product id shown on it, "
            "'next >', '< prev' or 'back to search')"
        )

    def _click_item(self, t: str, target: str) -> str:
        item = self.item
        assert item is not None  # the item page always shows one
        if t in _PREV:
            self.page, self.item, self.chosen = RESULTS, None, {}
            return self.render()
        if t in _BUY:
            self.bought = Purchase(
                product_id=item.id,
                title=item.title,
                category=item.category,
                product_type=item.product_type,
                attributes=item.attributes,
                options=tuple(self.chosen[k] for k, _v in item.options if k in self.chosen),
                price=item.price,
            )
            self.page = DONE
            return self.render()
        for kind, values in item.options:
            for v in values:
                if v.lower() == t:
                    self.chosen[kind] = v
                    return self.render()
        return self._refuse(
            f"{target!r} is not a button on this item page (an option shown on it, 'buy now', "
            "'< prev' or 'back to search')"
        )
