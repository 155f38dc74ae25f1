"""Home Search (SambaNova ToolBench): 15 functions that build a search-criteria dict.

Rules of the upstream simulator (``evaluator/home_search_evaluator.py``):

* ``set_location`` must be the first call (the criteria must be empty);
* ``set_buy_or_rent`` (``buy`` or ``rent``) must be the second (``location`` the only key);
* every other setter needs ``buy_or_rent`` to be set;
* ``select_home_type`` lowercases and validates each type against the buy / rent list, sorts them
  and stores them comma-joined;
* ``search()`` fills the defaults ``min_price = 0`` and ``min_square_feet = 0``.

The state is the criteria dict; a later call overwrites an earlier value.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from toollab.envs.base import BAD_VALUE, ORDER, EnvError, Environment, register_env
from toollab.envs.taskset import TaskSet
from toollab.tools.decorator import Param, tool

RENT_TYPES = ("house", "townhouse", "condo", "apartment")
BUY_TYPES = ("house", "townhouse", "condo", "land", "multi-family", "mobile", "co-op")


@register_env("home_search")
class HomeSearchEnv(Environment):
    #: the split policy of its generated data (the goal templates are in
    #: :mod:`toollab.envs.tasks.home_search`)
    tasks: ClassVar[TaskSet] = TaskSet(
        "home_search",
        held_out_tools=("set_num_garages", "set_floor_number", "set_num_balconies"),
        lends_goals=True,
    )
    #: room for about 90 % of the test split's gold programs in the json template (SmolLM2
    #: tokens, seed 0: p90 191)
    max_tokens = 208
    description = (
        "Search homes to buy or rent: set the location, buy or rent, criteria, then search."
    )
    scenario = "PL"

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.criteria: dict[str, Any] = {}

    def state(self) -> dict[str, Any]:
        return dict(self.criteria)

    # -- tools -------------------------------------------------------------------------------
    @tool(returns=False)
    def set_location(self, location: str) -> str:
        """Set the city to search in. Must be the first call."""
        if self.criteria:
            raise EnvError("set_location must be the first call", ORDER)
        self.criteria["location"] = location.strip()
        return "ok"

    @tool(returns=False)
    def set_buy_or_rent(self, buy_or_rent: Literal["buy", "rent"]) -> str:
        """Choose buying or renting. Must be the second call, right after set_location."""
        if list(self.criteria) != ["location"]:
            raise EnvError("set_buy_or_rent must directly follow set_location", ORDER)
        self.criteria["buy_or_rent"] = buy_or_rent
        return "ok"

    def _need_mode(self) -> str:
        if "buy_or_rent" not in self.criteria:
            raise EnvError("call set_location and set_buy_or_rent before other criteria", ORDER)
        return str(self.criteria["buy_or_rent"])

    @tool(returns=False)
    def select_home_type(self, home_types: Annotated[list[str], Param(minItems=1)]) -> str:
        """Restrict the home types. Buy: house, townhouse, condo, land, multi-family, mobile, co-op. Rent: house, townhouse, condo, apartment."""
        mode = self._need_mode()
        allowed = BUY_TYPES if mode == "buy" else RENT_TYPES
        types = [t.strip().lower() for t in home_types]
        for t in types:
            if t not in allowed:
                raise EnvError(
                    f"home type {t!r} is not available to {mode}; choose from {', '.join(allowed)}",
                    BAD_VALUE,
                )
        self.criteria["home_type"] = ",".join(sorted(set(types)))
        return "ok"

    def _set(self, key: str, value: Any) -> str:
        self._need_mode()
        self.criteria[key] = value
        return "ok"

    @tool(returns=False)
    def set_min_price(self, min_price: Annotated[int, Param(minimum=0)]) -> str:
        """Minimum price in dollars."""
        return self._set("min_price", min_price)

    @tool(returns=False)
    def set_max_price(self, max_price: Annotated[int, Param(minimum=0)]) -> str:
        """Maximum price in dollars."""
        return self._set("max_price", max_price)

    @tool(returns=False)
    def set_min_square_feet(self, min_square_feet: Annotated[int, Param(minimum=0)]) -> str:
        """Minimum living area in square feet."""
        return self._set("min_square_feet", min_square_feet)

    @tool(returns=False)
    def set_max_square_feet(self, max_square_feet: Annotated[int, Param(minimum=0)]) -> str:
        """Maximum living area in square feet."""
        return self._set("max_square_feet", max_square_feet)

    @tool(returns=False)
    def set_num_beds(self, num_beds: Annotated[int, Param(minimum=0)]) -> str:
        """Number of bedrooms."""
        return self._set("num_beds", num_beds)

    @tool(returns=False)
    def set_num_baths(self, num_baths: Annotated[float, Param(minimum=0)]) -> str:
        """Number of bathrooms."""
        return self._set("num_baths", num_baths)

    @tool(returns=False)
    def set_num_garages(self, num_garages: Annotated[int, Param(minimum=0)]) -> str:
        """Number of garages."""
        return self._set("num_garages", num_garages)

    @tool(returns=False)
    def set_num_swimming_pools(self, num_swimming_pools: Annotated[int, Param(minimum=0)]) -> str:
        """Number of swimming pools."""
        return self._set("num_swimming_pools", num_swimming_pools)

    @tool(returns=False)
    def set_floor_number(self, floor_number: Annotated[int, Param(minimum=0)]) -> str:
        """Floor the home is on."""
        return self._set("floor_number", floor_number)

    @tool(returns=False)
    def set_max_commute_time(self, max_commute_time: Annotated[int, Param(minimum=0)]) -> str:
        """Maximum commute time in minutes."""
        return self._set("max_commute_time", max_commute_time)

    @tool(returns=False)
    def set_num_balconies(self, num_balconies: Annotated[int, Param(minimum=0)]) -> str:
        """Number of balconies."""
        return self._set("num_balconies", num_balconies)

    @tool(returns=False)
    def search(self) -> dict[str, Any]:
        """Submit the search with the criteria set so far."""
        self.criteria.setdefault("min_price", 0)
        self.criteria.setdefault("min_square_feet", 0)
        return {"results": _fake_results(self.criteria)}


def _fake_results(criteria: dict[str, Any]) -> int:
    """A deterministic result count, so that ``search`` has an observation."""
    import zlib

    return zlib.crc32(repr(sorted(criteria.items())).encode()) % 40
