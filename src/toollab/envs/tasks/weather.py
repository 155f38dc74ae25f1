"""Weather goal templates: nine query kinds, with units and language where the goal asks."""

from __future__ import annotations

import random
from typing import Any

from toollab.envs.base import Environment
from toollab.envs.tasks.common import Goal, call, pick
from toollab.envs.weather import CITIES, WeatherEnv

TASKS = WeatherEnv.tasks

_UNIT_WORDS = {
    "metric": ["in Celsius", "in metric units"],
    "imperial": ["in Fahrenheit", "in imperial units"],
    "standard": ["in Kelvin", "in standard units"],
}
_LANG_WORDS = {
    "es": "Spanish",
    "fr": "French",
    "de": "German",
    "it": "Italian",
    "pt": "Portuguese",
    "en": "English",
}
#: (phrase, closing punctuation)
_CURRENT = (
    ("What's the weather like in {p} right now", "?"),
    ("Tell me the current weather in {p}", "."),
    ("How is the weather in {p} at the moment", "?"),
    ("Show me the current conditions in {p}", "."),
)
_FORECAST = (
    ("Give me the {d}-day forecast for {p}", "."),
    ("What will the weather be in {p} over {n}", "?"),
    ("Get the forecast for {p} for {n}", "."),
)


def _next_days(d: int) -> str:
    return "the next day" if d == 1 else f"the next {d} days"


def _options(rng: random.Random, lang: bool = True) -> tuple[str, dict[str, Any]]:
    """Optional units / language phrases and the matching arguments."""
    text, args = "", {}
    r = rng.random()
    if r < 0.45:
        units = pick(rng, ["metric", "imperial"])
        text += " " + pick(rng, _UNIT_WORDS[units])
        args["units"] = units
    elif r < 0.55:
        text += " " + pick(rng, _UNIT_WORDS["standard"])
        args["units"] = "standard"
    if lang and rng.random() < 0.3:
        code = pick(rng, ["es", "fr", "de", "it", "pt"])
        text += f", with descriptions in {_LANG_WORDS[code]}"
        args["lang"] = code
    return text, args


def _city(rng: random.Random) -> tuple[str, str, float, float, str]:
    return CITIES[rng.randrange(len(CITIES))]


@TASKS.template("current_city", weight=2)
def current_city(rng: random.Random, env: Environment) -> Goal:
    c = _city(rng)
    opt, args = _options(rng)
    q, end = pick(rng, _CURRENT)
    return Goal(
        query=f"{q.format(p=c[0])}{opt}{end}",
        calls=[call("current_weather_by_city", city=c[0], **args)],
    )


@TASKS.template("current_zip")
def current_zip(rng: random.Random, env: Environment) -> Goal:
    c = _city(rng)
    opt, args = _options(rng)
    return Goal(
        query=f"What's the current weather for zip code {c[4]}, country {c[1]}{opt}?",
        calls=[call("current_weather_by_zip", zip_code=c[4], country_code=c[1], **args)],
    )


@TASKS.template("current_coordinates")
def current_coordinates(rng: random.Random, env: Environment) -> Goal:
    c = _city(rng)
    opt, args = _options(rng)
    return Goal(
        query=f"Get the current weather at latitude {c[2]} and longitude {c[3]}{opt}.",
        calls=[call("current_weather_by_coordinates", lat=c[2], lon=c[3], **args)],
    )


def _days(rng: random.Random) -> tuple[int, dict[str, Any]]:
    d = rng.choice([1, 2, 3, 5, 7])
    return d, ({} if d == 5 else {"days": d})


@TASKS.template("forecast_city")
def forecast_city(rng: random.Random, env: Environment) -> Goal:
    c = _city(rng)
    d, dargs = _days(rng)
    opt, args = _options(rng)
    q, end = pick(rng, _FORECAST)
    return Goal(
        query=f"{q.format(p=c[0], d=d, n=_next_days(d))}{opt}{end}",
        calls=[call("forecast_by_city", city=c[0], **dargs, **args)],
    )


@TASKS.template("forecast_zip")
def forecast_zip(rng: random.Random, env: Environment) -> Goal:
    c = _city(rng)
    d, dargs = _days(rng)
    opt, args = _options(rng, lang=False)
    return Goal(
        query=f"Give me the forecast for {_next_days(d)} for zip code {c[4]}, country {c[1]}{opt}.",
        calls=[call("forecast_by_zip", zip_code=c[4], country_code=c[1], **dargs, **args)],
    )


@TASKS.template("forecast_coordinates")
def forecast_coordinates(rng: random.Random, env: Environment) -> Goal:
    c = _city(rng)
    d, dargs = _days(rng)
    opt, args = _options(rng, lang=False)
    return Goal(
        query=f"What's the {d}-day forecast at coordinates {c[2]}, {c[3]}{opt}?",
        calls=[call("forecast_by_coordinates", lat=c[2], lon=c[3], **dargs, **args)],
    )


@TASKS.template("air_quality")
def air_quality(rng: random.Random, env: Environment) -> Goal:
    c = _city(rng)
    return Goal(
        query=f"How is the air quality at latitude {c[2]}, longitude {c[3]}?",
        calls=[call("air_quality_by_coordinates", lat=c[2], lon=c[3])],
    )


@TASKS.template("air_quality_forecast")
def air_quality_forecast(rng: random.Random, env: Environment) -> Goal:
    c = _city(rng)
    h = rng.choice([3, 6, 12, 24])
    args = {} if h == 3 else {"hours": h}
    return Goal(
        query=f"Give me the air quality forecast for the next {h} hours at {c[2]}, {c[3]}.",
        calls=[call("air_quality_forecast_by_coordinates", lat=c[2], lon=c[3], **args)],
    )


@TASKS.template("geocode")
def geocode(rng: random.Random, env: Environment) -> Goal:
    c = _city(rng)
    return Goal(
        query=f"What are the coordinates of {c[0]}?", calls=[call("geocode_city", city=c[0])]
    )


@TASKS.template("two_cities", atomic=False)
def two_cities(rng: random.Random, env: Environment) -> Goal:
    a, b = rng.sample(CITIES, 2)
    opt, args = _options(rng, lang=False)
    return Goal(
        query=f"Compare the current weather in {a[0]} and {b[0]}{opt}.",
        calls=[
            call("current_weather_by_city", city=a[0], **args),
            call("current_weather_by_city", city=b[0], **args),
        ],
    )


@TASKS.template("weather_and_air", atomic=False)
def weather_and_air(rng: random.Random, env: Environment) -> Goal:
    c = _city(rng)
    opt, args = _options(rng, lang=False)
    return Goal(
        query=f"Get the current weather{opt} and the air quality at latitude {c[2]}, longitude {c[3]}.",
        calls=[
            call("current_weather_by_coordinates", lat=c[2], lon=c[3], **args),
            call("air_quality_by_coordinates", lat=c[2], lon=c[3]),
        ],
    )


@TASKS.template("geocode_then_forecast", atomic=False)
def geocode_then_forecast(rng: random.Random, env: Environment) -> Goal:
    c = _city(rng)
    d, dargs = _days(rng)
    where = [call("geocode_city", city=c[0])]
    return Goal(
        query=f"Look up the coordinates of {c[0]} and give me the {d}-day forecast there.",
        calls=[*where, call("forecast_by_coordinates", lat=c[2], lon=c[3], **dargs)],
        # the forecast by the city's name is the same forecast
        alternatives=[[*where, call("forecast_by_city", city=c[0], **dargs)]],
    )


@TASKS.template("air_now_and_later", atomic=False)
def air_now_and_later(rng: random.Random, env: Environment) -> Goal:
    c = _city(rng)
    h = rng.choice([6, 12, 24])
    return Goal(
        query=f"What's the air quality at {c[2]}, {c[3]} now, and how will it be over the next {h} hours?",
        calls=[
            call("air_quality_by_coordinates", lat=c[2], lon=c[3]),
            call("air_quality_forecast_by_coordinates", lat=c[2], lon=c[3], hours=h),
        ],
    )


TASKS.add_composition(weight=5)
