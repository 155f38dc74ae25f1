"""WebShop: the seeded catalogue, BM25 search, the text web actions, WebShop's reward, the
goal split, and the oracle through the bench."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from toollab.envs import get_env
from toollab.envs.base import UNKNOWN_TOOL
from toollab.envs.generate import generate
from toollab.envs.splits import is_test_combo, is_test_goal
from toollab.envs.tasks.webshop import gold_program, search_text
from toollab.envs.webshop import (
    MAX_STEPS,
    Purchase,
    ShopGoal,
    WebShopEnv,
    goal_of,
    goal_split,
    reward,
)
from toollab.envs.webshop_store import MAX_RESULTS, PAGE_SIZE, TYPES, Product, catalogue
from toollab.errors import UsageError
from toollab.retrieval import TextIndex
from toollab.schema import Decision, GoldCall, Instance, ToolCall
from toollab.sft.guard import LeakageGuard


def _env(seed: int = 0) -> WebShopEnv:
    env = get_env("webshop", seed)
    assert isinstance(env, WebShopEnv)
    return env


def _c(name: str, **arguments: object) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def _click(target: str) -> ToolCall:
    return _c("click", target=target)


def _bought(p: Product, options: tuple[str, ...] = ()) -> Purchase:
    return Purchase(p.id, p.title, p.category, p.product_type, p.attributes, options, p.price)


def _score(seed: int, program: list[ToolCall]) -> tuple[float, bool]:
    env = _env()
    ex = env.run(program, seed)
    assert not ex.crashed, ex.error
    labels = env.label_states([gold_program(_env(seed), goal_of(seed))], seed)
    res = env.check(ex.state, labels)
    return res.f1, res.success


# -- catalogue and search ------------------------------------------------------------------------
def test_catalogue_is_deterministic_and_well_formed() -> None:
    shop = catalogue()
    again = catalogue.__wrapped__()  # built anew, not the cached one
    assert shop.products == again.products and len(shop) == 3000
    assert len({p.id for p in shop.products}) == 3000
    names = {t.name: t for t in TYPES}
    for p in shop.products:
        assert re.fullmatch(r"B0[A-Z0-9]{8}", p.id)
        kind = names[p.product_type]
        assert p.category == kind.category and set(p.attributes) <= set(kind.attributes)
        assert 2 <= len(p.attributes) <= 4 and kind.price[0] <= p.price <= kind.price[1] + 1
        assert [k for k, _ in p.options] == [k for k, _ in kind.options]
        assert all(2 <= len(values) <= 5 for _k, values in p.options)
    assert len({p.product_type for p in shop.products}) == len(TYPES) >= 30
    assert {p.category for p in shop.products} == {
        "beauty", "food", "fashion", "home", "electronics"
    }  # fmt: skip
    # another size or seed is another shop
    assert catalogue(200, 1).products[0] != catalogue(200, 0).products[0]


def test_text_index_ranks_by_bm25_and_breaks_ties_by_order() -> None:
    index = TextIndex(["red wool socks", "blue socks", "red red red apple", "green tea"])
    hits = index.search("red socks", 10)
    assert [h.doc for h in hits][:2] == [0, 2] and {h.doc for h in hits} == {0, 1, 2}
    assert hits == sorted(hits, key=lambda h: -h.score)
    assert index.search("the and of") == [] and index.search("purple") == []
    assert [h.doc for h in TextIndex(["tea", "tea"]).search("tea")] == [0, 1]
    with pytest.raises(UsageError, match="positive integer"):
        index.search("socks", 0)
    with pytest.raises(UsageError, match="string"):
        index.search(None)  # type: ignore[arg-type]


def test_search_finds_matching_products_up_to_fifty() -> None:
    shop = catalogue()
    found = shop.search("gluten free protein bars chocolate")
    assert len(found) == MAX_RESULTS
    assert all(p.product_type == "protein bars" for p in found[:10])
    assert shop.search("xyzzy") == [] and shop.search("") == []
    assert shop.get(found[0].id.lower()) == found[0]


# -- actions ---------------------------------------------------------------------------------------
def test_a_whole_episode_through_the_pages() -> None:
    env = _env(3)
    goal = env.goal
    assert "Search" in env.render()
    page = env.execute(_c("search_products", query=search_text(goal)))
    assert page.startswith("[Back to Search]\nPage 1 of 5") and "[Next >]" in page
    assert "[< Prev]" not in page and len(re.findall(r"^\[B0", page, re.M)) == PAGE_SIZE
    second = env.execute(_click("Next >"))
    assert "Page 2 of 5" in second and "[< Prev]" in second
    assert "Page 1 of 5" in env.execute(_click("< prev"))
    first_id = re.findall(r"^\[(B0\w+)\]", page, re.M)[0]
    item = env.execute(_click(f"[{first_id.lower()}]"))
    product = env.shop.get(first_id)
    assert product is not None and product.title in item and "[Buy Now]" in item
    value = product.options[0][1][0]
    assert f"[{value}] (selected)" in env.execute(_click(value.upper()))
    assert "Page 1 of 5" in env.execute(_click("< Prev"))  # back to the results
    assert "Search" in env.execute(_click("back to search"))
    ex = env.run([_c(c.name, **c.arguments) for c in gold_program(env, goal)], 3)
    assert not ex.crashed and ex.state["purchased"] == goal.product_id
    assert "Your score (min 0.0, max 1.0): 1.00" in ex.observations[-1]


@pytest.mark.parametrize(
    "program, says",
    [
        ([_click("buy now")], "no button 'buy now' on the search page"),
        ([_c("search_products", query="socks"), _click("B0NOPE0000")], "not a button on this results"),
        ([_c("search_products", query="socks"), _click("")], "the click target is empty"),
        ([_c("search_products", query="socks"), _click("[[]]")], "the click target is empty"),
        ([_c("search_products", query="socks"), _click("< prev")], "first page of results"),
        ([_c("search_products", query="   ")], "the search query is empty"),
        ([_c("search_products", query="xyzzy"), _click("next >")], "last page of results"),
    ],
)  # fmt: skip
def test_bad_actions_are_observations_not_crashes(program: list[ToolCall], says: str) -> None:
    ex = _env().run(program, 0)
    assert not ex.crashed and says in ex.observations[-1]
    assert "Invalid action" in ex.observations[-1] and ex.state["purchased"] is None


def test_item_page_refuses_what_it_does_not_show_and_the_episode_goes_on() -> None:
    env = _env(3)
    gold = [_c(c.name, **c.arguments) for c in gold_program(env, env.goal)]
    opened = gold.index(next(c for c in gold if c.arguments.get("target") == env.goal.product_id))
    calls = [
        *gold[: opened + 1],
        _click("purple polka dots"),
        _click("next >"),
        *gold[opened + 1 :],
    ]
    ex = env.run(calls, 3)
    assert "not a button on this item page" in ex.observations[opened + 1]
    assert not ex.crashed and env.check(ex.state, [ex.state]).success


def test_unknown_functions_still_crash_as_everywhere() -> None:
    ex = _env().run([_c("add_to_cart", item="x")], 0)
    assert ex.crashed and ex.reason == UNKNOWN_TOOL


def test_the_episode_ends_after_a_purchase_and_after_the_step_limit() -> None:
    env = _env(3)
    gold = [_c(c.name, **c.arguments) for c in gold_program(env, env.goal)]
    ex = env.run([*gold, _click("back to search"), *gold], 3)
    assert "the purchase is made" in ex.observations[-1]
    assert ex.state["purchased"] == env.goal.product_id
    # 25 actions that buy nothing, then the gold program: too late
    idle = [_c("search_products", query="socks")] * MAX_STEPS
    late = env.run([*idle, *gold], 3)
    assert not late.crashed and late.state["purchased"] is None
    assert f"{MAX_STEPS} steps without a purchase" in late.observations[-1]
    # the gold program at the very end of the budget still counts
    just = env.run([*idle[: MAX_STEPS - len(gold)], *gold], 3)
    assert just.state["purchased"] == env.goal.product_id


# -- reward -----------------------------------------------------------------------------------------
def _satisfying_other(goal: ShopGoal) -> Product | None:
    for p in catalogue().products:
        values = {v for _k, vs in p.options for v in vs}
        if (
            p.id != goal.product_id
            and p.product_type == goal.product_type
            and set(goal.attributes) <= set(p.attributes)
            and {v for _k, v in goal.options} <= values
            and p.price <= goal.price_max
        ):
            return p
    return None


def _seeds() -> Iterator[int]:
    yield from range(200)


def test_any_product_that_satisfies_the_goal_scores_one() -> None:
    for seed in _seeds():
        goal = goal_of(seed)
        other = _satisfying_other(goal)
        if other is None or not goal.options:
            continue
        env = _env(seed)
        ids = [p.id for p in env.shop.search(other.title)]
        if other.id not in ids[:PAGE_SIZE]:
            continue
        program = [
            _c("search_products", query=other.title),
            _click(other.id),
            *[_click(v) for _k, v in goal.options],
            _click("buy now"),
        ]
        assert _score(seed, program) == (1.0, True)
        return
    pytest.fail("no goal with another satisfying product found")


def test_reward_follows_webshop() -> None:
    goal = ShopGoal("B0X", "fashion", "running shoes", ("breathable", "non slip"),
                    (("size", "9"), ("color", "black")), 80.0)  # fmt: skip
    good = Purchase("B0X", "Brand Running Shoes", "fashion", "running shoes",
                    ("breathable", "non slip", "lightweight"), ("9", "black"), 59.99)  # fmt: skip
    assert reward(good, goal).reward == 1.0
    # one option wrong: 4 of 5 parts
    assert reward(replace(good, options=("9", "white")), goal).reward == pytest.approx(0.8)
    # over the price ceiling
    over = reward(replace(good, price=80.49), goal)
    assert over.reward == pytest.approx(0.8) and over.price == 0.0
    # an attribute the title states counts
    titled = replace(good, attributes=("breathable",), title="Brand Non Slip Running Shoes")
    assert reward(titled, goal).reward == 1.0
    # product type: half the type's words (shoes) keep r_type 1; none gives 0
    boots = replace(good, product_type="hiking boots")
    assert reward(boots, goal).r_type == 0.0 and reward(boots, goal).reward == 0.0
    walking = replace(good, product_type="walking shoes")
    assert reward(walking, goal).r_type == 1.0
    nothing = replace(good, options=(), attributes=(), price=100.0)
    assert reward(nothing, goal).reward == 0.0


def test_perturbed_programs_fail_for_the_right_reason() -> None:
    """Wrong option, over price, wrong product, no purchase: reward below 1, no crash."""
    checked = set()
    for inst in generate("webshop", "train", 30, seed=4, mix=(1, 0, 0)):
        seed = inst.metadata["seed"]
        goal = goal_of(seed)
        gold = [_c(c.name, **c.arguments) for c in inst.gold]
        assert _score(seed, gold) == (1.0, True)
        product = catalogue().get(goal.product_id)
        assert product is not None
        # wrong option: another value of a requested kind
        for i, (kind, value) in enumerate(goal.options):
            others = [v for k, vs in product.options if k == kind for v in vs if v != value]
            if others:
                at = next(j for j, c in enumerate(gold) if c.arguments.get("target") == value)
                wrong = [*gold[:at], _click(others[0]), *gold[at + 1 :]]
                total = len(goal.attributes) + len(goal.options) + 1
                assert _score(seed, wrong) == (pytest.approx((total - 1) / total), False), i
                checked.add("option")
                break
        # wrong product: the first result of another category
        other = next(p for p in catalogue().products if p.category != goal.category)
        wrong_product = [_c("search_products", query=other.title), _click(other.id),
                         _click("buy now")]  # fmt: skip
        assert _score(seed, wrong_product) == (0.0, False)
        checked.add("product")
        # no purchase
        assert _score(seed, gold[:-1]) == (0.0, False)
    # over price: a product of the goal's kind, all it asks, over the ceiling
    for seed in _seeds():
        goal = goal_of(seed)
        for p in catalogue().products:
            if (
                p.product_type == goal.product_type
                and set(goal.attributes) <= set(p.attributes)
                and not goal.options
                and p.price > goal.price_max
            ):
                ids = [q.id for q in catalogue().search(p.title)][:PAGE_SIZE]
                if p.id not in ids:
                    continue
                program = [_c("search_products", query=p.title), _click(p.id), _click("buy now")]
                total = len(goal.attributes) + 1
                assert _score(seed, program) == (pytest.approx((total - 1) / total), False)
                checked.add("price")
                break
        if "price" in checked:
            break
    assert checked == {"option", "product", "price"}


# -- splits and leakage --------------------------------------------------------------------------
def _goal_keys(insts: list[Instance]) -> tuple[set[str], set[tuple[str, ...]]]:
    calls = [i for i in insts if i.decision is Decision.CALL]
    products = {i.metadata["product"] for i in calls}
    combos = {(i.metadata["product_type"], *i.metadata["attributes"]) for i in calls}
    return products, combos


def test_test_goals_ask_for_unseen_products_and_attribute_combinations() -> None:
    train = generate("webshop", "train", 300, seed=0)
    val = generate("webshop", "validation", 60, seed=0)
    test = generate("webshop", "test", 80, seed=0)
    tp, tc = _goal_keys(test)
    for split in (train, val):
        p, c = _goal_keys(split)
        assert not p & tp and not c & tc
    assert len(tp) >= 40 and not {i.query for i in train} & {i.query for i in test}
    for inst in test:
        if inst.gold:
            assert is_test_goal("webshop", "", list(inst.gold), inst.metadata["seed"], 0) is True
            # no API combination is reserved: the goal decides
            assert not is_test_combo("webshop", tuple(sorted(c.name for c in inst.gold)), 0)
    for inst in train:
        if inst.gold:
            assert goal_split(list(inst.gold), inst.metadata["seed"], 0) is False
    # another split seed reserves other products
    assert _goal_keys(generate("webshop", "test", 30, seed=1))[0] != _goal_keys(test[:30])[0]


def test_the_export_guard_drops_webshop_test_goals() -> None:
    guard = LeakageGuard([], env_seeds=(0,))
    test = [i for i in generate("webshop", "test", 20, seed=0) if i.gold]
    train = [i for i in generate("webshop", "train", 20, seed=0) if i.gold]
    assert all(guard.reason(i) is not None for i in test)
    assert all(guard.reason(i) is None for i in train)
    # a goal of neither split (a training product asked with a test attribute combination)
    mixed = next(s for s in range(1000) if goal_split([], s, 0) is None)
    inst = train[0].model_copy(update={"metadata": {**train[0].metadata, "seed": mixed}})
    why = guard.reason(inst)
    assert why is not None and why[1] == "not a training goal (seed 0)"


def test_gold_programs_fit_the_step_limit_and_differ_by_goal() -> None:
    insts = [i for i in generate("webshop", "test", 40, seed=0) if i.gold]
    assert all(len(i.gold) <= MAX_STEPS for i in insts)
    assert any(any(c.arguments.get("target") == "next >" for c in i.gold) for i in insts)
    g: GoldCall = insts[0].gold[0]
    assert g.name == "search_products" and insts[0].metadata["product_type"] in g.arguments["query"]


# -- the oracle through the bench -----------------------------------------------------------------
@pytest.mark.parametrize("agent", [None, "react"])
def test_oracle_scores_one_through_the_bench(tmp_path: Path, agent: str | None) -> None:
    from toollab.eval.bench import run_bench

    res = run_bench(model="oracle", envs=["webshop"], limit=6, out=tmp_path, agent=agent)
    (row,) = res.envs
    assert row.env == "webshop" and row.n == 6 and row.n_call >= 4
    assert row.success == 1.0 and row.dict_f1 == 1.0 and row.crash_rate == 0.0
    assert row.decision_acc == 1.0
