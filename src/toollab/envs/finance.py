"""ToolEyes scenario *financial transactions* (FT): accounts and transactions over a bundled table.

:func:`bank_table` generates the accounts (id, owner, currency, balance) and six months of
transactions deterministically from a seed.  Transfers, deposits, withdrawals and bill payments
change balances and append transactions; balance and history queries are logged.  The state is
every balance, the new transactions (sorted) and the query responses.
"""

from __future__ import annotations

import datetime as dt
import random
from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal

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

OWNERS = ("Alice Moreau", "Bilal Khan", "Chen Wei", "Dana Novak")
CATEGORIES = ("groceries", "rent", "utilities", "dining", "travel", "salary", "shopping")
PAYEES = {
    "groceries": "FreshMart",
    "rent": "City Homes",
    "utilities": "PowerCo",
    "dining": "Bistro 9",
    "travel": "SkyAir",
    "salary": "Acme Corp",
    "shopping": "ShopHub",
}
BILL_PAYEES = ("PowerCo", "WaterWorks", "NetFiber", "City Homes", "PhoneOne")
RATES = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.0, "CHF": 0.88}
MONTHS = ("2024-01", "2024-02", "2024-03", "2024-04", "2024-05", "2024-06")


def bank_table(seed: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(accounts, transactions)`` of the bundled bank for ``seed``."""
    accounts, txs = _bank_table(seed)
    return [dict(a) for a in accounts], [dict(t) for t in txs]


@lru_cache(maxsize=256)
def _bank_table(seed: int) -> tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...]]:
    rng = random.Random(f"bank:{seed}")
    accounts = []
    for i, owner in enumerate(OWNERS):
        accounts.append(
            {
                "account_id": f"ACC-{1001 + i + 10 * (seed % 7)}",
                "owner": owner,
                "currency": "USD",
                "balance": round(rng.uniform(800, 9000), 2),
            }
        )
    txs = []
    for acc in accounts:
        for month in MONTHS:
            for _ in range(2):
                cat = rng.choice(CATEGORIES)
                amount = round(rng.uniform(20, 400), 2) * (1 if cat == "salary" else -1)
                day = rng.randint(1, 28)
                txs.append(
                    {
                        "account_id": acc["account_id"],
                        "date": f"{month}-{day:02d}",
                        "payee": PAYEES[cat],
                        "category": cat,
                        "amount": amount,
                    }
                )
    txs.sort(key=lambda t: (t["date"], t["account_id"], t["payee"]))
    return tuple(accounts), tuple(txs)


def _money(v: float) -> float:
    return round(float(v) + 0.0, 2)


@register_env("finance")
class FinanceEnv(Environment):
    description = "Bank accounts: balances, history, transfers, deposits, withdrawals, bills."
    scenario = "FT"
    #: the split policy of its generated data (goal templates: :mod:`toollab.envs.tasks.finance`)
    tasks: ClassVar[TaskSet] = TaskSet("finance", lends_goals=True)

    def reset(self, seed: int = 0) -> None:
        self.seed = seed
        accounts, history = _bank_table(seed)
        self.history = list(history)  # read-only rows, shared
        self.accounts = {a["account_id"]: dict(a) for a in accounts}
        self.today = "2024-07-01"
        self.new: list[dict[str, Any]] = []
        self.log = QueryLog()

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            f"balance:{k}": v["balance"] for k, v in sorted(self.accounts.items())
        }
        for i, t in enumerate(sorted(self.new, key=lambda t: sorted(t.items()))):
            out[f"new_tx.{i}"] = t
        out.update(self.log.flat("query."))
        return out

    def _acc(self, account_id: str) -> dict[str, Any]:
        key = account_id.strip().upper()
        if key not in self.accounts:
            raise EnvError(f"no account {account_id!r}", NOT_FOUND)
        return self.accounts[key]

    def _move(self, acc: dict[str, Any], amount: float, payee: str, category: str) -> None:
        if acc["balance"] + amount < 0:
            raise EnvError(f"insufficient funds in {acc['account_id']}", BAD_VALUE)
        acc["balance"] = _money(acc["balance"] + amount)
        self.new.append(
            {
                "account_id": acc["account_id"],
                "payee": payee,
                "category": category,
                "amount": _money(amount),
            }
        )

    @tool(returns=False)
    def get_balance(self, account_id: str) -> dict[str, Any]:
        """Balance of an account.

        Args:
            account_id: e.g. ACC-1001
        """
        acc = self._acc(account_id)
        return self.log.add(
            {"kind": "balance", "account_id": acc["account_id"], "balance": acc["balance"]}
        )

    @tool(returns=False)
    def list_transactions(
        self,
        account_id: str,
        category: Annotated[
            Literal["groceries", "rent", "utilities", "dining", "travel", "salary", "shopping"]
            | None,
            Param(optional=True),
        ] = None,
        start_date: Annotated[
            str | None, Param(optional=True, pattern=r"^\d{4}-\d{2}-\d{2}$")
        ] = None,
        end_date: Annotated[
            str | None, Param(optional=True, pattern=r"^\d{4}-\d{2}-\d{2}$")
        ] = None,
        limit: Annotated[int, Param(minimum=1, maximum=20)] = 5,
    ) -> dict[str, Any]:
        """Transactions of an account, newest first.

        Args:
            account_id: e.g. ACC-1001
        """
        acc = self._acc(account_id)
        for d in (start_date, end_date):
            if d is not None:
                try:
                    dt.date.fromisoformat(d)
                except ValueError as exc:
                    raise EnvError(f"{d!r} is not a real date", BAD_VALUE) from exc
        hits = [
            t
            for t in self.history
            if t["account_id"] == acc["account_id"]
            and (category is None or t["category"] == category)
            and (start_date is None or t["date"] >= start_date)
            and (end_date is None or t["date"] <= end_date)
        ]
        hits = sorted(hits, key=lambda t: t["date"], reverse=True)[:limit]
        return self.log.add(
            {"kind": "transactions", "account_id": acc["account_id"], "transactions": hits}
        )

    @tool(returns=False)
    def spending_summary(
        self, account_id: str, month: Annotated[str, Param(pattern=r"^\d{4}-\d{2}$")]
    ) -> dict[str, Any]:
        """Total spending per category in a month.

        Args:
            account_id: e.g. ACC-1001
        """
        acc = self._acc(account_id)
        totals: dict[str, float] = {}
        for t in self.history:
            if (
                t["account_id"] == acc["account_id"]
                and t["date"].startswith(month)
                and t["amount"] < 0
            ):
                totals[t["category"]] = _money(totals.get(t["category"], 0.0) - t["amount"])
        return self.log.add(
            {
                "kind": "summary",
                "account_id": acc["account_id"],
                "month": month,
                "spending": dict(sorted(totals.items())),
            }
        )

    @tool(returns=False)
    def transfer(
        self,
        from_account: str,
        to_account: str,
        amount: Annotated[float, Param(exclusiveMinimum=0)],
        memo: str = "",
    ) -> dict[str, Any]:
        """Move money between two accounts."""
        src, dst = self._acc(from_account), self._acc(to_account)
        if src is dst:
            raise EnvError("cannot transfer to the same account", BAD_VALUE)
        self._move(src, -amount, dst["account_id"], "transfer")
        self._move(dst, amount, src["account_id"], "transfer")
        return {"status": "done", "balance": src["balance"]}

    @tool(returns=False)
    def deposit(
        self, account_id: str, amount: Annotated[float, Param(exclusiveMinimum=0)]
    ) -> dict[str, Any]:
        """Deposit money into an account.

        Args:
            account_id: e.g. ACC-1001
        """
        acc = self._acc(account_id)
        self._move(acc, amount, "cash", "deposit")
        return {"status": "done", "balance": acc["balance"]}

    @tool(returns=False)
    def withdraw(
        self, account_id: str, amount: Annotated[float, Param(exclusiveMinimum=0)]
    ) -> dict[str, Any]:
        """Withdraw money from an account.

        Args:
            account_id: e.g. ACC-1001
        """
        acc = self._acc(account_id)
        self._move(acc, -amount, "cash", "withdrawal")
        return {"status": "done", "balance": acc["balance"]}

    @tool(returns=False)
    def pay_bill(
        self,
        account_id: str,
        payee: Literal["PowerCo", "WaterWorks", "NetFiber", "City Homes", "PhoneOne"],
        amount: Annotated[float, Param(exclusiveMinimum=0)],
    ) -> dict[str, Any]:
        """Pay a bill from an account.

        Args:
            account_id: e.g. ACC-1001
        """
        acc = self._acc(account_id)
        self._move(acc, -amount, payee, "bill")
        return {"status": "paid", "balance": acc["balance"]}

    @tool(returns=False)
    def convert_currency(
        self,
        amount: Annotated[float, Param(exclusiveMinimum=0)],
        from_currency: Literal["USD", "EUR", "GBP", "JPY", "CHF"],
        to_currency: Literal["USD", "EUR", "GBP", "JPY", "CHF"],
    ) -> dict[str, Any]:
        """Convert an amount between currencies."""
        value = amount / RATES[from_currency] * RATES[to_currency]
        return self.log.add(
            {
                "kind": "conversion",
                "amount": _money(amount),
                "from": from_currency,
                "to": to_currency,
                "result": _money(value),
            }
        )
