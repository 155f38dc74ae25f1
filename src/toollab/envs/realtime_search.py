"""ToolEyes scenario *real-time search* (RS): exchange rates, stock quotes, news, local time,
flight status — from a seeded synthetic "now", so answers are live-looking yet reproducible.
The state is the sorted list of responses."""

from __future__ import annotations

import datetime as dt
import zlib
from typing import Annotated, Any, ClassVar, Literal

from toollab.envs.base import NOT_FOUND, EnvError, Environment, QueryLog, register_env
from toollab.envs.taskset import TaskSet
from toollab.tools.decorator import Param, tool

CURRENCIES = {
    "USD": 1.0,
    "EUR": 0.92,
    "GBP": 0.79,
    "JPY": 151.0,
    "CHF": 0.88,
    "CAD": 1.36,
    "AUD": 1.52,
    "INR": 83.2,
    "CNY": 7.23,
    "MXN": 17.1,
}
STOCKS = {
    "AAPL": 190.0,
    "MSFT": 410.0,
    "GOOGL": 150.0,
    "AMZN": 180.0,
    "NVDA": 880.0,
    "TSLA": 175.0,
    "META": 490.0,
    "IBM": 185.0,
}
TOPICS = ("technology", "sports", "science", "business", "health", "travel")
LANGS = ("en", "es", "fr", "de")
#: city -> UTC offset in hours
TIMEZONES = {
    "New York": -5,
    "London": 0,
    "Paris": 1,
    "Berlin": 1,
    "Tokyo": 9,
    "Sydney": 10,
    "Mumbai": 5.5,
    "Los Angeles": -8,
    "Chicago": -6,
    "Dubai": 4,
    "Singapore": 8,
    "Sao Paulo": -3,
}
AIRLINES = ("UA", "BA", "LH", "AF", "JL", "QF", "EK", "DL")
_HEADLINES = (
    "{t} leaders meet to discuss the year ahead",
    "New study shakes up {t} world",
    "Five {t} trends to watch",
    "Local {t} scene celebrates record week",
    "Experts weigh in on the latest {t} debate",
    "{T} update: what changed today",
)
_STATUS = ("on time", "delayed", "boarding", "landed", "departed")


def _h(*parts: Any) -> int:
    return zlib.crc32("|".join(map(str, parts)).encode())


@register_env("realtime_search")
class RealtimeSearchEnv(Environment):
    description = "Live-style lookups: exchange rates, stock quotes, news, local time, flights."
    scenario = "RS"
    #: the split policy of its generated data (the goal templates are in
    #: :mod:`toollab.envs.tasks.realtime_search`)
    tasks: ClassVar[TaskSet] = TaskSet("realtime_search", lends_goals=True)

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        self.now = dt.datetime(2024, 3, 1, 12, 0) + dt.timedelta(
            minutes=(seed * 97) % (60 * 24 * 30)
        )
        self.log = QueryLog()

    def state(self) -> dict[str, Any]:
        return self.log.flat()

    def _drift(self, key: str) -> float:
        return 1 + ((_h(self.seed, key) % 200) - 100) / 2000.0

    @tool(returns=False)
    def get_exchange_rate(
        self,
        base: Literal["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "INR", "CNY", "MXN"],
        quote: Literal["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "INR", "CNY", "MXN"],
    ) -> dict[str, Any]:
        """Current exchange rate from one currency to another."""
        rate = CURRENCIES[quote] / CURRENCIES[base] * self._drift(quote) / self._drift(base)
        return self.log.add({"kind": "fx", "base": base, "quote": quote, "rate": round(rate, 4)})

    @tool(returns=False)
    def get_stock_quote(self, symbol: str) -> dict[str, Any]:
        """Latest price and daily change of a stock.

        Args:
            symbol: Ticker, e.g. AAPL.
        """
        sym = symbol.strip().upper()
        if sym not in STOCKS:
            raise EnvError(f"unknown ticker {symbol!r}", NOT_FOUND)
        price = round(STOCKS[sym] * self._drift(sym), 2)
        change = round(((_h("chg", self.seed, sym) % 800) - 400) / 100.0, 2)
        return self.log.add({"kind": "quote", "symbol": sym, "price": price, "change_pct": change})

    @tool(returns=False)
    def search_news(
        self,
        topic: Literal["technology", "sports", "science", "business", "health", "travel"],
        limit: Annotated[int, Param(minimum=1, maximum=5)] = 3,
        language: Literal["en", "es", "fr", "de"] = "en",
    ) -> dict[str, Any]:
        """Latest headlines on a topic."""
        items = []
        for i in range(limit):
            k = _h("news", self.seed, topic, i) % len(_HEADLINES)
            items.append(
                {
                    "title": _HEADLINES[k].format(t=topic, T=topic.capitalize()),
                    "source": f"{topic[:3]}-wire-{_h(topic, i) % 9}",
                    "language": language,
                }
            )
        return self.log.add({"kind": "news", "topic": topic, "articles": items})

    @tool(returns=False)
    def get_local_time(self, city: str) -> dict[str, Any]:
        """The current local time in a city."""
        name = next((c for c in TIMEZONES if c.lower() == city.strip().lower()), None)
        if name is None:
            raise EnvError(f"no time zone known for {city!r}", NOT_FOUND)
        local = self.now + dt.timedelta(hours=TIMEZONES[name])
        return self.log.add(
            {"kind": "time", "city": name, "time": local.strftime("%Y-%m-%d %H:%M")}
        )

    @tool(returns=False)
    def get_flight_status(
        self, flight_number: Annotated[str, Param(pattern="^[A-Z]{2}[0-9]{1,4}$")]
    ) -> dict[str, Any]:
        """Status of a flight today."""
        if flight_number[:2] not in AIRLINES:
            raise EnvError(f"unknown airline in {flight_number!r}", NOT_FOUND)
        h = _h("flight", self.seed, flight_number)
        return self.log.add(
            {
                "kind": "flight",
                "flight": flight_number,
                "status": _STATUS[h % len(_STATUS)],
                "gate": f"{chr(65 + h % 6)}{h % 40 + 1}",
            }
        )
