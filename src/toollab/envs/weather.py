"""Weather: nine OpenWeather-style query kinds over a seeded synthetic weather model.

Current weather, forecasts and air quality, by city name, zip code or coordinates, with the
optional ``units`` (``standard`` Kelvin — the default —, ``metric``, ``imperial``) and ``lang``
parameters.  As in SambaNova's OpenWeather task two programs agree when their *responses* agree:
the state is the sorted list of responses, each echoing the resolved place, units and language.
"""

from __future__ import annotations

import math
import zlib
from typing import Annotated, Any, ClassVar, Literal, get_args

from toollab.envs.base import (
    BAD_VALUE,
    NOT_FOUND,
    EnvError,
    Environment,
    QueryLog,
    register_env,
)
from toollab.envs.taskset import TaskSet
from toollab.tools.decorator import Param, tool

#: name, country, lat, lon, zip code
CITIES: list[tuple[str, str, float, float, str]] = [
    ("Palo Alto", "US", 37.44, -122.14, "94301"),
    ("San Francisco", "US", 37.77, -122.42, "94103"),
    ("Seattle", "US", 47.61, -122.33, "98101"),
    ("Austin", "US", 30.27, -97.74, "73301"),
    ("Boston", "US", 42.36, -71.06, "02108"),
    ("Chicago", "US", 41.88, -87.63, "60601"),
    ("Denver", "US", 39.74, -104.99, "80202"),
    ("Miami", "US", 25.76, -80.19, "33101"),
    ("New York", "US", 40.71, -74.01, "10001"),
    ("Phoenix", "US", 33.45, -112.07, "85001"),
    ("London", "GB", 51.51, -0.13, "EC1A"),
    ("Paris", "FR", 48.86, 2.35, "75001"),
    ("Berlin", "DE", 52.52, 13.40, "10115"),
    ("Madrid", "ES", 40.42, -3.70, "28001"),
    ("Rome", "IT", 41.90, 12.50, "00118"),
    ("Tokyo", "JP", 35.68, 139.69, "100-0001"),
    ("Sydney", "AU", -33.87, 151.21, "2000"),
    ("Toronto", "CA", 43.65, -79.38, "M5H"),
    ("Mumbai", "IN", 19.08, 72.88, "400001"),
    ("Cairo", "EG", 30.04, 31.24, "11511"),
    ("Lisbon", "PT", 38.72, -9.14, "1100"),
    ("Oslo", "NO", 59.91, 10.75, "0150"),
]
Units = Literal["standard", "metric", "imperial"]
UNITS: tuple[str, ...] = get_args(Units)
Lang = Literal["en", "es", "fr", "de", "it", "pt"]
LANGS: tuple[str, ...] = get_args(Lang)
CONDITIONS = (
    "clear sky",
    "few clouds",
    "overcast clouds",
    "light rain",
    "thunderstorm",
    "snow",
    "mist",
)
_TRANSLATIONS: dict[str, tuple[str, ...]] = {
    "en": CONDITIONS,
    "es": ("cielo claro", "algo de nubes", "nubes", "lluvia ligera", "tormenta", "nieve", "niebla"),
    "fr": ("ciel dégagé", "peu nuageux", "couvert", "pluie légère", "orage", "neige", "brume"),
    "de": (
        "klarer Himmel",
        "ein paar Wolken",
        "bedeckt",
        "leichter Regen",
        "Gewitter",
        "Schnee",
        "Dunst",
    ),
    "it": (
        "cielo sereno",
        "poche nuvole",
        "nubi",
        "pioggia leggera",
        "temporale",
        "neve",
        "foschia",
    ),
    "pt": ("céu limpo", "algumas nuvens", "nublado", "chuva leve", "trovoada", "neve", "névoa"),
}


def _hash(*parts: Any) -> int:
    return zlib.crc32("|".join(str(p) for p in parts).encode())


@register_env("weather")
class WeatherEnv(Environment):
    description = "Current weather, forecasts and air quality by city, zip code or coordinates."
    scenario = "RS"
    #: the split policy of its generated data (goal templates: :mod:`toollab.envs.tasks.weather`)
    tasks: ClassVar[TaskSet] = TaskSet("weather", lends_goals=True)

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.log = QueryLog()

    def state(self) -> dict[str, Any]:
        return self.log.flat()

    # -- the synthetic model --------------------------------------------------------------------
    def _by_city(self, city: str, country: str | None) -> tuple[str, str, float, float, str]:
        key = city.strip().lower()
        for rec in CITIES:
            if rec[0].lower() == key and (country is None or rec[1] == country.strip().upper()):
                return rec
        raise EnvError(f"city not found: {city!r}", NOT_FOUND)

    def _by_zip(self, zip_code: str, country: str) -> tuple[str, str, float, float, str]:
        for rec in CITIES:
            if rec[4].lower() == zip_code.strip().lower() and rec[1] == country.strip().upper():
                return rec
        raise EnvError(f"zip code not found: {zip_code!r} ({country})", NOT_FOUND)

    def _by_coords(self, lat: float, lon: float) -> tuple[str, str, float, float, str]:
        best = min(CITIES, key=lambda r: (r[2] - lat) ** 2 + (r[3] - lon) ** 2)
        if math.hypot(best[2] - lat, best[3] - lon) > 0.5:
            return ("", "", round(lat, 2), round(lon, 2), "")
        return best

    def _place(self, rec: tuple[str, str, float, float, str]) -> str:
        return f"{rec[0]}, {rec[1]}" if rec[0] else f"{rec[2]:.2f},{rec[3]:.2f}"

    def _temp_c(self, rec: tuple[str, str, float, float, str], day: int) -> float:
        h = _hash(self.seed, rec[2], rec[3], day)
        base = 28.0 - 0.45 * abs(rec[2])
        return round(base + (h % 100) / 10.0 - 5.0, 1)

    def _convert(self, temp_c: float, units: str) -> float:
        if units == "metric":
            return round(temp_c, 1)
        if units == "imperial":
            return round(temp_c * 9 / 5 + 32, 1)
        return round(temp_c + 273.15, 2)

    def _wind(self, rec: tuple[str, str, float, float, str], day: int, units: str) -> float:
        ms = (_hash("wind", self.seed, rec[2], rec[3], day) % 150) / 10.0
        return round(ms * 2.237, 1) if units == "imperial" else ms

    def _condition(self, rec: tuple[str, str, float, float, str], day: int, lang: str) -> str:
        i = _hash("sky", self.seed, rec[2], rec[3], day) % len(CONDITIONS)
        if CONDITIONS[i] == "snow" and self._temp_c(rec, day) > 3:
            i = CONDITIONS.index("light rain")
        return _TRANSLATIONS[lang][i]

    def _day(
        self, rec: tuple[str, str, float, float, str], day: int, units: str, lang: str
    ) -> dict[str, Any]:
        return {
            "temp": self._convert(self._temp_c(rec, day), units),
            "humidity": 30 + _hash("hum", self.seed, rec[2], day) % 65,
            "wind_speed": self._wind(rec, day, units),
            "description": self._condition(rec, day, lang),
        }

    def _current(
        self, rec: tuple[str, str, float, float, str], units: str, lang: str
    ) -> dict[str, Any]:
        return self.log.add(
            {
                "kind": "current",
                "place": self._place(rec),
                "units": units,
                "lang": lang,
                **self._day(rec, 0, units, lang),
            }
        )

    def _forecast(
        self, rec: tuple[str, str, float, float, str], days: int, units: str, lang: str
    ) -> dict[str, Any]:
        return self.log.add(
            {
                "kind": "forecast",
                "place": self._place(rec),
                "units": units,
                "lang": lang,
                "days": [self._day(rec, d, units, lang) for d in range(1, days + 1)],
            }
        )

    def _aqi(self, rec: tuple[str, str, float, float, str], hour: int) -> dict[str, Any]:
        h = _hash("aqi", self.seed, rec[2], rec[3], hour)
        return {
            "aqi": 1 + h % 5,
            "pm2_5": round((h % 700) / 10.0, 1),
            "o3": round((h % 1300) / 10.0, 1),
        }

    # -- tools -----------------------------------------------------------------------------------
    @tool(returns=False)
    def current_weather_by_city(
        self,
        city: str,
        country_code: Annotated[str | None, Param(optional=True)] = None,
        units: Units = "standard",
        lang: Lang = "en",
    ) -> dict[str, Any]:
        """Current weather in a city.

        Args:
            country_code: e.g. US
            units: standard=Kelvin, metric=Celsius, imperial=Fahrenheit
        """
        return self._current(self._by_city(city, country_code), units, lang)

    @tool(returns=False)
    def current_weather_by_zip(
        self,
        zip_code: str,
        country_code: str,
        units: Units = "standard",
        lang: Lang = "en",
    ) -> dict[str, Any]:
        """Current weather for a zip code.

        Args:
            country_code: e.g. US
            units: standard=Kelvin, metric=Celsius, imperial=Fahrenheit
        """
        return self._current(self._by_zip(zip_code, country_code), units, lang)

    @tool(returns=False)
    def current_weather_by_coordinates(
        self,
        lat: Annotated[float, Param(minimum=-90, maximum=90)],
        lon: Annotated[float, Param(minimum=-180, maximum=180)],
        units: Units = "standard",
        lang: Lang = "en",
    ) -> dict[str, Any]:
        """Current weather at coordinates.

        Args:
            units: standard=Kelvin, metric=Celsius, imperial=Fahrenheit
        """
        return self._current(self._by_coords(lat, lon), units, lang)

    @tool(returns=False)
    def forecast_by_city(
        self,
        city: str,
        days: Annotated[int, Param(minimum=1, maximum=7)] = 5,
        units: Units = "standard",
        lang: Lang = "en",
    ) -> dict[str, Any]:
        """Daily forecast for a city.

        Args:
            units: standard=Kelvin, metric=Celsius, imperial=Fahrenheit
        """
        return self._forecast(self._by_city(city, None), days, units, lang)

    @tool(returns=False)
    def forecast_by_zip(
        self,
        zip_code: str,
        country_code: str,
        days: Annotated[int, Param(minimum=1, maximum=7)] = 5,
        units: Units = "standard",
    ) -> dict[str, Any]:
        """Daily forecast for a zip code.

        Args:
            country_code: e.g. US
            units: standard=Kelvin, metric=Celsius, imperial=Fahrenheit
        """
        return self._forecast(self._by_zip(zip_code, country_code), days, units, "en")

    @tool(returns=False)
    def forecast_by_coordinates(
        self,
        lat: Annotated[float, Param(minimum=-90, maximum=90)],
        lon: Annotated[float, Param(minimum=-180, maximum=180)],
        days: Annotated[int, Param(minimum=1, maximum=7)] = 5,
        units: Units = "standard",
    ) -> dict[str, Any]:
        """Daily forecast at coordinates.

        Args:
            units: standard=Kelvin, metric=Celsius, imperial=Fahrenheit
        """
        return self._forecast(self._by_coords(lat, lon), days, units, "en")

    @tool(returns=False)
    def air_quality_by_coordinates(
        self,
        lat: Annotated[float, Param(minimum=-90, maximum=90)],
        lon: Annotated[float, Param(minimum=-180, maximum=180)],
    ) -> dict[str, Any]:
        """Current air quality index and pollutants."""
        rec = self._by_coords(lat, lon)
        return self.log.add({"kind": "air_quality", "place": self._place(rec), **self._aqi(rec, 0)})

    @tool(returns=False)
    def air_quality_forecast_by_coordinates(
        self,
        lat: Annotated[float, Param(minimum=-90, maximum=90)],
        lon: Annotated[float, Param(minimum=-180, maximum=180)],
        hours: Annotated[int, Param(minimum=1, maximum=24)] = 3,
    ) -> dict[str, Any]:
        """Hourly air quality forecast."""
        rec = self._by_coords(lat, lon)
        return self.log.add(
            {
                "kind": "air_quality_forecast",
                "place": self._place(rec),
                "hours": [self._aqi(rec, h) for h in range(1, hours + 1)],
            }
        )

    @tool(returns=False)
    def geocode_city(
        self, city: str, country_code: Annotated[str | None, Param(optional=True)] = None
    ) -> dict[str, Any]:
        """Coordinates of a city.

        Args:
            country_code: e.g. US
        """
        if not city.strip():
            raise EnvError("city must not be empty", BAD_VALUE)
        rec = self._by_city(city, country_code)
        return self.log.add(
            {"kind": "geocode", "place": self._place(rec), "lat": rec[2], "lon": rec[3]}
        )
