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
from typing import Annotated, Any, ClassVar, Literal

from toollab.envs.base import (
    BAD_VALUE,
    MISSING,
    ORDER,
    EnvError,
    Environment,
    register_env,
)
from toollab.envs.taskset import TaskSet
from toollab.tools.decorator import Param, tool

BOOKING_TYPES = ("hotels", "trip tickets", "both")
TRANSPORT = ("flight", "train", "bus", "cruise")
SEAT_CLASSES = ("economy", "premium economy", "business", "first")
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
#: a "YYYY-MM-DD" date
IsoDate = Annotated[str, Param(pattern=DATE_PATTERN)]

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
    #: the split policy of its generated data (the goal templates are in
    #: :mod:`toollab.envs.tasks.trip_booking`)
    tasks: ClassVar[TaskSet] = TaskSet(
        "trip_booking",
        held_out_tools=("set_min_hotel_rating", "select_seat_class"),
        lends_goals=True,
    )
    #: room for about 90 % of the test split's gold programs in the json template (SmolLM2
    #: tokens, seed 0: p90 250)
    max_tokens = 256

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.criteria: dict[str, Any] = {}

    def state(self) -> dict[str, Any]:
        return dict(self.criteria)

    def _need_type(self) -> None:
        if "booking_type" not in self.criteria:
            raise EnvError("select_booking_type must be the first call", ORDER)

    @tool(returns=False)
    def select_booking_type(self, booking_type: Literal["hotels", "trip tickets", "both"]) -> str:
        """Choose what to book. Must be the first call."""
        if self.criteria:
            raise EnvError("select_booking_type must be the first call", ORDER)
        self.criteria["booking_type"] = booking_type
        return "ok"

    @tool(returns=False)
    def select_transportation(
        self, transportation: Literal["flight", "train", "bus", "cruise"]
    ) -> str:
        """Means of transportation for tickets."""
        self._need_type()
        self.criteria["means_of_transportation"] = transportation
        return "ok"

    def _set(self, key: str, value: Any, kind: str) -> str:
        """Store a criterion: ``kind`` ``date`` (upstream m-d-y form), ``loc`` (spaces
        collapsed) or ``raw``."""
        self._need_type()
        if kind == "date":
            value = to_mdy(value)
        elif kind == "loc":
            value = " ".join(str(value).split())
        self.criteria[key] = value
        return "ok"

    @tool(returns=False)
    def set_origin(self, location: str) -> str:
        """Where the trip starts."""
        return self._set("location_from", location, "loc")

    @tool(returns=False)
    def set_destination(self, location: str) -> str:
        """Where the trip goes."""
        return self._set("location_to", location, "loc")

    @tool(returns=False)
    def set_hotel_location(self, location: str) -> str:
        """Where to stay."""
        return self._set("location", location, "loc")

    @tool(returns=False)
    def set_departure_date(self, date: IsoDate) -> str:
        """Day of departure."""
        return self._set("departure_date", date, "date")

    @tool(returns=False)
    def set_return_date(self, date: IsoDate) -> str:
        """Day of the return trip."""
        return self._set("return_date", date, "date")

    @tool(returns=False)
    def set_checkin_date(self, date: IsoDate) -> str:
        """Hotel check-in day."""
        return self._set("checkin_date", date, "date")

    @tool(returns=False)
    def set_checkout_date(self, date: IsoDate) -> str:
        """Hotel check-out day."""
        return self._set("checkout_date", date, "date")

    @tool(returns=False)
    def set_num_adults(self, num_adults: Annotated[int, Param(minimum=1)]) -> str:
        """Number of adults."""
        return self._set("num_adults", num_adults, "raw")

    @tool(returns=False)
    def set_num_children(self, num_children: Annotated[int, Param(minimum=0)]) -> str:
        """Number of children."""
        return self._set("num_children", num_children, "raw")

    @tool(returns=False)
    def set_num_rooms(self, num_rooms: Annotated[int, Param(minimum=1)]) -> str:
        """Number of hotel rooms."""
        return self._set("num_rooms", num_rooms, "raw")

    @tool(returns=False)
    def set_min_ticket_price(self, price: Annotated[float, Param(minimum=0)]) -> str:
        """Minimum ticket price."""
        return self._set("min_price_ticket", price, "raw")

    @tool(returns=False)
    def set_max_ticket_price(self, price: Annotated[float, Param(minimum=0)]) -> str:
        """Maximum ticket price."""
        return self._set("max_price_ticket", price, "raw")

    @tool(returns=False)
    def set_min_room_price(self, price: Annotated[float, Param(minimum=0)]) -> str:
        """Minimum room price per night."""
        return self._set("min_price_room", price, "raw")

    @tool(returns=False)
    def set_max_room_price(self, price: Annotated[float, Param(minimum=0)]) -> str:
        """Maximum room price per night."""
        return self._set("max_price_room", price, "raw")

    @tool(returns=False)
    def select_room_type(self, room_type: str) -> str:
        """Room type, e.g. single, double, suite."""
        return self._set("room_type", room_type, "raw")

    @tool(returns=False)
    def set_min_hotel_rating(self, stars: Annotated[int, Param(minimum=1, maximum=5)]) -> str:
        """Minimum hotel star rating (1-5)."""
        return self._set("min_rating", stars, "raw")

    @tool(returns=False)
    def select_seat_class(
        self, seat_class: Literal["economy", "premium economy", "business", "first"]
    ) -> str:
        """Ticket class."""
        return self._set("seat_class", seat_class, "raw")

    @tool(returns=False)
    def search_bookings(self) -> dict[str, Any]:
        """Submit the search for bookable offers. Required settings must be made."""
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
