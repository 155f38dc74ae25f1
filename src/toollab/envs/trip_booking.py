"""Trip Booking (SambaNova ToolBench): hotels, transport tickets or both; 20 functions.

Rules of the upstream simulator (``evaluator/booking_evaluator.py``), in toollab's JSON-call world:

* ``select_booking_type`` (``hotels`` / ``trip tickets`` / ``both``) must be the first call;
* upstream ``Loc("Fort Worth")`` is a plain ``location`` string here and is stored as given;
* upstream ``Date(5, 17, 2023)`` is a ``"YYYY-MM-DD"`` string here (``"2023-05-17"``) and is
  stored in the upstream form ``"m-d-y"`` without padding (``"5-17-2023"``);
* ``search_bookings()`` (upstream ``search()``; renamed so that tool names stay unique across
  the built-in environments) fills ``min_price_ticket = 0`` and ``min_price_room = 0``, checks the keys the
  booking type requires (tickets: transportation, origin, destination, departure date; hotels:
  hotel location, check-in, check-out; both: all of those but the departure date) and fills
  ``num_rooms = 1`` (hotels, both) and, for both, ``departure_date`` / ``return_date`` from the
  check-in / check-out dates.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from toollab.envs.base import (
    BAD_VALUE,
    MISSING,
    ORDER,
    EnvError,
    Environment,
    make_tool,
    register_env,
)
from toollab.schema import Tool

BOOKING_TYPES = ("hotels", "trip tickets", "both")
TRANSPORT = ("flight", "train", "bus", "cruise")
SEAT_CLASSES = ("economy", "premium economy", "business", "first")
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"

_LOC = {"location": {"type": "string"}}
_DATE = {"date": {"type": "string", "pattern": DATE_PATTERN}}

#: setters: tool -> (criteria key, description, parameter name, JSON schema, kind)
_SETTERS: dict[str, tuple[str, str, str, dict[str, Any], str]] = {
    "set_origin": ("location_from", "Where the trip starts.", "location", _LOC["location"], "loc"),
    "set_destination": ("location_to", "Where the trip goes.", "location", _LOC["location"], "loc"),
    "set_hotel_location": ("location", "Where to stay.", "location", _LOC["location"], "loc"),
    "set_departure_date": ("departure_date", "Day of departure.", "date", _DATE["date"], "date"),
    "set_return_date": ("return_date", "Day of the return trip.", "date", _DATE["date"], "date"),
    "set_checkin_date": ("checkin_date", "Hotel check-in day.", "date", _DATE["date"], "date"),
    "set_checkout_date": ("checkout_date", "Hotel check-out day.", "date", _DATE["date"], "date"),
    "set_num_adults": (
        "num_adults",
        "Number of adults.",
        "num_adults",
        {"type": "integer", "minimum": 1},
        "raw",
    ),
    "set_num_children": (
        "num_children",
        "Number of children.",
        "num_children",
        {"type": "integer", "minimum": 0},
        "raw",
    ),
    "set_num_rooms": (
        "num_rooms",
        "Number of hotel rooms.",
        "num_rooms",
        {"type": "integer", "minimum": 1},
        "raw",
    ),
    "set_min_ticket_price": (
        "min_price_ticket",
        "Minimum ticket price.",
        "price",
        {"type": "number", "minimum": 0},
        "raw",
    ),
    "set_max_ticket_price": (
        "max_price_ticket",
        "Maximum ticket price.",
        "price",
        {"type": "number", "minimum": 0},
        "raw",
    ),
    "set_min_room_price": (
        "min_price_room",
        "Minimum room price per night.",
        "price",
        {"type": "number", "minimum": 0},
        "raw",
    ),
    "set_max_room_price": (
        "max_price_room",
        "Maximum room price per night.",
        "price",
        {"type": "number", "minimum": 0},
        "raw",
    ),
    "select_room_type": (
        "room_type",
        "Room type, e.g. single, double, suite.",
        "room_type",
        {"type": "string"},
        "raw",
    ),
    "set_min_hotel_rating": (
        "min_rating",
        "Minimum hotel star rating (1-5).",
        "stars",
        {"type": "integer", "minimum": 1, "maximum": 5},
        "raw",
    ),
    "select_seat_class": (
        "seat_class",
        "Ticket class.",
        "seat_class",
        {"type": "string", "enum": list(SEAT_CLASSES)},
        "raw",
    ),
}

REQUIRED = {
    "trip tickets": ("means_of_transportation", "location_from", "location_to", "departure_date"),
    "hotels": ("location", "checkin_date", "checkout_date"),
    "both": (
        "means_of_transportation",
        "location_from",
        "location_to",
        "location",
        "checkin_date",
        "checkout_date",
    ),
}


def to_mdy(date: str) -> str:
    """``"2023-05-17"`` -> ``"5-17-2023"`` (upstream ``Date(5, 17, 2023)``)."""
    try:
        d = dt.date.fromisoformat(date)
    except ValueError as exc:
        raise EnvError(f"{date!r} is not a real date (YYYY-MM-DD)", BAD_VALUE) from exc
    return f"{d.month}-{d.day}-{d.year}"


@register_env("trip_booking")
class TripBookingEnv(Environment):
    description = "Search transport tickets, hotel rooms or both; pick the booking type first."
    scenario = "PL"

    def build_tools(self) -> list[Tool]:
        tools = [
            make_tool(
                "select_booking_type",
                "Choose what to book. Must be the first call.",
                {"booking_type": {"type": "string", "enum": list(BOOKING_TYPES)}},
                ["booking_type"],
            ),
            make_tool(
                "select_transportation",
                "Means of transportation for tickets.",
                {"transportation": {"type": "string", "enum": list(TRANSPORT)}},
                ["transportation"],
            ),
        ]
        for fn, (_key, desc, param, schema, _kind) in _SETTERS.items():
            tools.append(make_tool(fn, desc, {param: schema}, [param]))
        tools.append(
            make_tool(
                "search_bookings",
                "Submit the search for bookable offers. Required settings must be made.",
            )
        )
        return tools

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.criteria: dict[str, Any] = {}

    def state(self) -> dict[str, Any]:
        return dict(self.criteria)

    def _need_type(self) -> None:
        if "booking_type" not in self.criteria:
            raise EnvError("select_booking_type must be the first call", ORDER)

    def do_select_booking_type(self, booking_type: str) -> str:
        if self.criteria:
            raise EnvError("select_booking_type must be the first call", ORDER)
        self.criteria["booking_type"] = booking_type
        return "ok"

    def do_select_transportation(self, transportation: str) -> str:
        self._need_type()
        self.criteria["means_of_transportation"] = transportation
        return "ok"

    def _set(self, fn: str, value: Any) -> str:
        self._need_type()
        key, _desc, _param, _schema, kind = _SETTERS[fn]
        if kind == "date":
            value = to_mdy(value)
        elif kind == "loc":
            value = " ".join(str(value).split())
        self.criteria[key] = value
        return "ok"

    def do_search_bookings(self) -> dict[str, Any]:
        self._need_type()
        c = self.criteria
        c.setdefault("min_price_ticket", 0)
        c.setdefault("min_price_room", 0)
        btype = c["booking_type"]
        missing = [k for k in REQUIRED[btype] if k not in c]
        if missing:
            raise EnvError(f"a {btype!r} search needs {', '.join(missing)}", MISSING)
        if btype in ("hotels", "both"):
            c.setdefault("num_rooms", 1)
        if btype == "both":
            c.setdefault("departure_date", c["checkin_date"])
            c.setdefault("return_date", c["checkout_date"])
        return {"status": "searched", "booking_type": btype}

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("do_") and attr[3:] in _SETTERS:
            fn = attr[3:]
            param = _SETTERS[fn][2]
            return lambda **kw: self._set(fn, kw[param])
        raise AttributeError(attr)
