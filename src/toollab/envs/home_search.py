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

from typing import Any

from toollab.envs.base import BAD_VALUE, ORDER, EnvError, Environment, make_tool, register_env
from toollab.schema import Tool

RENT_TYPES = ("house", "townhouse", "condo", "apartment")
BUY_TYPES = ("house", "townhouse", "condo", "land", "multi-family", "mobile", "co-op")

#: the 11 numeric setters: tool name -> (criteria key, description, JSON type)
CRITERIA: dict[str, tuple[str, str, str]] = {
    "set_min_price": ("min_price", "Minimum price in dollars.", "integer"),
    "set_max_price": ("max_price", "Maximum price in dollars.", "integer"),
    "set_min_square_feet": ("min_square_feet", "Minimum living area in square feet.", "integer"),
    "set_max_square_feet": ("max_square_feet", "Maximum living area in square feet.", "integer"),
    "set_num_beds": ("num_beds", "Number of bedrooms.", "integer"),
    "set_num_baths": ("num_baths", "Number of bathrooms.", "number"),
    "set_num_garages": ("num_garages", "Number of garages.", "integer"),
    "set_num_swimming_pools": ("num_swimming_pools", "Number of swimming pools.", "integer"),
    "set_floor_number": ("floor_number", "Floor the home is on.", "integer"),
    "set_max_commute_time": ("max_commute_time", "Maximum commute time in minutes.", "integer"),
    "set_num_balconies": ("num_balconies", "Number of balconies.", "integer"),
}


@register_env("home_search")
class HomeSearchEnv(Environment):
    description = (
        "Search homes to buy or rent: set the location, buy or rent, criteria, then search."
    )
    scenario = "PL"

    def build_tools(self) -> list[Tool]:
        tools = [
            make_tool(
                "set_location",
                "Set the city to search in. Must be the first call.",
                {"location": {"type": "string"}},
                ["location"],
            ),
            make_tool(
                "set_buy_or_rent",
                "Choose buying or renting. Must be the second call, right after set_location.",
                {"buy_or_rent": {"type": "string", "enum": ["buy", "rent"]}},
                ["buy_or_rent"],
            ),
            make_tool(
                "select_home_type",
                "Restrict the home types. Buy: house, townhouse, condo, land, multi-family, "
                "mobile, co-op. Rent: house, townhouse, condo, apartment.",
                {"home_types": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
                ["home_types"],
            ),
        ]
        for fn, (key, desc, typ) in CRITERIA.items():
            tools.append(make_tool(fn, desc, {key: {"type": typ, "minimum": 0}}, [key]))
        tools.append(make_tool("search", "Submit the search with the criteria set so far."))
        return tools

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.criteria: dict[str, Any] = {}

    def state(self) -> dict[str, Any]:
        return dict(self.criteria)

    # -- handlers ----------------------------------------------------------------------------
    def do_set_location(self, location: str) -> str:
        if self.criteria:
            raise EnvError("set_location must be the first call", ORDER)
        self.criteria["location"] = location.strip()
        return "ok"

    def do_set_buy_or_rent(self, buy_or_rent: str) -> str:
        if list(self.criteria) != ["location"]:
            raise EnvError("set_buy_or_rent must directly follow set_location", ORDER)
        self.criteria["buy_or_rent"] = buy_or_rent
        return "ok"

    def _need_mode(self) -> str:
        if "buy_or_rent" not in self.criteria:
            raise EnvError("call set_location and set_buy_or_rent before other criteria", ORDER)
        return str(self.criteria["buy_or_rent"])

    def do_select_home_type(self, home_types: list[str]) -> str:
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

    def do_search(self) -> dict[str, Any]:
        self.criteria.setdefault("min_price", 0)
        self.criteria.setdefault("min_square_feet", 0)
        return {"results": _fake_results(self.criteria)}

    def __getattr__(self, attr: str) -> Any:
        # the 11 numeric setters share one handler
        if attr.startswith("do_") and attr[3:] in CRITERIA:
            key = CRITERIA[attr[3:]][0]
            return lambda **kw: self._set(key, kw[key])
        raise AttributeError(attr)


def _fake_results(criteria: dict[str, Any]) -> int:
    """A deterministic result count, so that ``search`` has an observation."""
    import zlib

    return zlib.crc32(repr(sorted(criteria.items())).encode()) % 40
