"""Trip Booking goal templates: tickets, hotels, or both, with required and optional settings.

``set_min_hotel_rating`` and ``select_seat_class`` are held out of training and validation.
"""

from __future__ import annotations

import datetime as dt
import random

from toollab.envs.base import Environment
from toollab.envs.tasks.common import (
    Goal,
    call,
    date_style,
    join_and,
    money,
    pick,
    say_date,
    with_article,
)
from toollab.envs.trip_booking import SEAT_CLASSES, TRANSPORT, TripBookingEnv
from toollab.schema import GoldCall

TASKS = TripBookingEnv.tasks

PLACES = (
    "San Francisco",
    "Los Angeles",
    "Fort Worth",
    "Ontario",
    "Seattle",
    "Boston",
    "Chicago",
    "Miami",
    "New Orleans",
    "Denver",
    "Nashville",
    "Portland",
    "Atlanta",
    "Phoenix",
    "Las Vegas",
    "San Diego",
    "Orlando",
    "Houston",
    "Salt Lake City",
    "Honolulu",
)
ROOM_TYPES = ("single", "double", "twin", "suite", "family")
_VEHICLE = {"flight": "flight", "train": "train", "bus": "bus", "cruise": "cruise"}


def _dates(rng: random.Random) -> tuple[str, str]:
    start = dt.date(2024, 1, 1) + dt.timedelta(days=rng.randrange(600))
    end = start + dt.timedelta(days=rng.randint(1, 10))
    return start.isoformat(), end.isoformat()


def _people(rng: random.Random, calls: list[GoldCall], parts: list[str]) -> None:
    if rng.random() < 0.6:
        n = rng.randint(1, 5)
        calls.append(call("set_num_adults", num_adults=n))
        parts.append(f"{n} adult{'s' if n > 1 else ''}")
    if rng.random() < 0.3:
        n = rng.randint(1, 3)
        calls.append(call("set_num_children", num_children=n))
        parts.append(f"{n} child{'ren' if n > 1 else ''}")


@TASKS.template("tickets", weight=2)
def tickets(rng: random.Random, env: Environment) -> Goal:
    mode = pick(rng, TRANSPORT)
    a, b = rng.sample(PLACES, 2)
    dep, ret = _dates(rng)
    calls = [
        call("select_transportation", transportation=mode),
        call("set_origin", location=a),
        call("set_destination", location=b),
        call("set_departure_date", date=dep),
    ]
    extra: list[str] = []
    style = date_style(rng)
    text = (
        f"Search {_VEHICLE[mode]} tickets from {a} to {b}, leaving on {say_date(rng, dep, style)}"
    )
    if rng.random() < 0.4:
        calls.append(call("set_return_date", date=ret))
        text += f" and coming back on {say_date(rng, ret, style)}"
    parts: list[str] = []
    _people(rng, calls, parts)
    if rng.random() < 0.4:
        hi = rng.randrange(5, 60) * 10
        calls.append(call("set_max_ticket_price", price=hi))
        extra.append(f"at most {money(hi)} per ticket")
    if rng.random() < 0.2:
        lo = rng.randrange(1, 5) * 10
        calls.append(call("set_min_ticket_price", price=lo))
        extra.append(f"at least {money(lo)} per ticket")
    if rng.random() < 0.25:
        cls = pick(rng, SEAT_CLASSES)
        calls.append(call("select_seat_class", seat_class=cls))
        extra.append(f"in {cls} class")
    if parts:
        text += ", for " + join_and(parts)
    if extra:
        text += ", " + join_and(extra)
    return Goal(
        query=text + ".",
        calls=[
            call("select_booking_type", booking_type="trip tickets"),
            *calls,
            call("search_bookings"),
        ],
    )


_ROOM_WORDS = {"suite": ("a suite", "suites")}


def _room_phrase(rt: str, n: int | None) -> str:
    """``a double room``, ``3 double rooms``, ``a suite``, ``2 suites``."""
    one, many = _ROOM_WORDS.get(rt, (with_article(f"{rt} room"), f"{rt} rooms"))
    return one if n is None else f"{n} {many}"


def _hotel_extras(rng: random.Random, calls: list[GoldCall], extra: list[str]) -> None:
    n: int | None = None
    if rng.random() < 0.4:
        n = rng.randint(2, 4)
        calls.append(call("set_num_rooms", num_rooms=n))
    if rng.random() < 0.4:
        rt = pick(rng, ROOM_TYPES)
        calls.append(call("select_room_type", room_type=rt))
        extra.append(_room_phrase(rt, n))
    elif n is not None:
        extra.append(f"{n} rooms")
    hi = rng.randrange(8, 40) * 10 if rng.random() < 0.4 else None
    lo = rng.randrange(5, 8) * 10 if rng.random() < 0.15 else None
    if lo is not None:
        calls.append(call("set_min_room_price", price=lo))
    if hi is not None:
        calls.append(call("set_max_room_price", price=hi))
    if lo is not None and hi is not None:
        extra.append(f"a room price between {money(lo)} and {money(hi)} a night")
    elif hi is not None:
        extra.append(f"a room price of at most {money(hi)} a night")
    elif lo is not None:
        extra.append(f"a room price of at least {money(lo)} a night")
    if rng.random() < 0.25:
        stars = rng.randint(3, 5)
        calls.append(call("set_min_hotel_rating", stars=stars))
        extra.append(f"a rating of {stars} stars or more")


@TASKS.template("hotels", weight=2)
def hotels(rng: random.Random, env: Environment) -> Goal:
    place = pick(rng, PLACES)
    cin, cout = _dates(rng)
    calls = [
        call("set_hotel_location", location=place),
        call("set_checkin_date", date=cin),
        call("set_checkout_date", date=cout),
    ]
    extra: list[str] = []
    parts: list[str] = []
    _people(rng, calls, parts)
    _hotel_extras(rng, calls, extra)
    style = date_style(rng)
    when_in, when_out = say_date(rng, cin, style), say_date(rng, cout, style)
    text = (
        f"Find a hotel in {place} from {when_in} to {when_out}"
        if rng.random() < 0.5
        else f"Book a stay in {place}, checking in {when_in} and checking out {when_out}"
    )
    if parts:
        text += ", for " + join_and(parts)
    if extra:
        text += ", with " + join_and(extra)
    return Goal(
        query=text + ".",
        calls=[call("select_booking_type", booking_type="hotels"), *calls, call("search_bookings")],
    )


@TASKS.template("both", weight=2)
def both(rng: random.Random, env: Environment) -> Goal:
    mode = pick(rng, TRANSPORT)
    a, b = rng.sample(PLACES, 2)
    cin, cout = _dates(rng)
    calls = [
        call("select_transportation", transportation=mode),
        call("set_origin", location=a),
        call("set_destination", location=b),
        call("set_hotel_location", location=b),
        call("set_checkin_date", date=cin),
        call("set_checkout_date", date=cout),
    ]
    extra: list[str] = []
    parts: list[str] = []
    _people(rng, calls, parts)
    _hotel_extras(rng, calls, extra)
    style = date_style(rng)
    text = (
        f"I need {_VEHICLE[mode]} tickets from {a} to {b} and a hotel there, "
        f"from {say_date(rng, cin, style)} to {say_date(rng, cout, style)}"
    )
    if parts:
        text += ", for " + join_and(parts)
    if extra:
        text += "; the hotel with " + join_and(extra)
    # departure and return default to the check-in and check-out days: setting them is equivalent
    explicit = [*calls, call("set_departure_date", date=cin), call("set_return_date", date=cout)]
    return Goal(
        query=text + ".",
        calls=[call("select_booking_type", booking_type="both"), *calls, call("search_bookings")],
        alternatives=[
            [call("select_booking_type", booking_type="both"), *explicit, call("search_bookings")]
        ],
    )
