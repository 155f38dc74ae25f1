"""Goal templates of the finance environment (ToolEyes scenario FT).  Currency conversion needs
the ``currency`` capability, which the real-time search's exchange rates also serve."""

from __future__ import annotations

import random

from toollab.envs.base import Environment
from toollab.envs.finance import BILL_PAYEES, CATEGORIES, MONTHS, RATES, FinanceEnv
from toollab.envs.tasks.common import MONTH_NAMES, Goal, call, money, pick

TASKS = FinanceEnv.tasks


def _fin(env: Environment) -> FinanceEnv:
    if not isinstance(env, FinanceEnv):
        raise TypeError("finance templates need a FinanceEnv")
    return env


def _amount(rng: random.Random) -> float:
    return float(rng.randrange(2, 60) * 5)


def _accounts(env: Environment) -> list[str]:
    return sorted(_fin(env).accounts)


@TASKS.template("balance", weight=2)
def balance(rng: random.Random, env: Environment) -> Goal:
    a = pick(rng, _accounts(env))
    return Goal(
        query=pick(rng, [f"What's the balance of account {a}?", f"How much money is in {a}?"]),
        calls=[call("get_balance", account_id=a)],
    )


@TASKS.template("transfer", weight=2)
def transfer(rng: random.Random, env: Environment) -> Goal:
    a, b = rng.sample(_accounts(env), 2)
    amt = _amount(rng)
    return Goal(
        query=f"Transfer {money(amt)} from {a} to {b}.",
        calls=[call("transfer", from_account=a, to_account=b, amount=amt)],
    )


@TASKS.template("deposit")
def deposit(rng: random.Random, env: Environment) -> Goal:
    a = pick(rng, _accounts(env))
    amt = _amount(rng)
    return Goal(
        query=f"Deposit {money(amt)} into {a}.", calls=[call("deposit", account_id=a, amount=amt)]
    )


@TASKS.template("withdraw")
def withdraw(rng: random.Random, env: Environment) -> Goal:
    a = pick(rng, _accounts(env))
    amt = _amount(rng)
    return Goal(
        query=f"Withdraw {money(amt)} from {a}.", calls=[call("withdraw", account_id=a, amount=amt)]
    )


@TASKS.template("bill")
def bill(rng: random.Random, env: Environment) -> Goal:
    a = pick(rng, _accounts(env))
    p, amt = pick(rng, BILL_PAYEES), _amount(rng)
    return Goal(
        query=f"Pay my {p} bill of {money(amt)} from {a}.",
        calls=[call("pay_bill", account_id=a, payee=p, amount=amt)],
    )


@TASKS.template("history")
def history(rng: random.Random, env: Environment) -> Goal:
    a = pick(rng, _accounts(env))
    cat = pick(rng, [c for c in CATEGORIES if c != "salary"])
    return Goal(
        query=f"List the {cat} transactions of {a}.",
        calls=[call("list_transactions", account_id=a, category=cat)],
    )


@TASKS.template("summary")
def summary(rng: random.Random, env: Environment) -> Goal:
    a, m = pick(rng, _accounts(env)), pick(rng, MONTHS)
    year, month = m.split("-")
    return Goal(
        query=f"How much did {a} spend per category in {MONTH_NAMES[int(month) - 1]} {year}?",
        calls=[call("spending_summary", account_id=a, month=m)],
    )


@TASKS.template("convert", needs=("currency",))
def convert(rng: random.Random, env: Environment) -> Goal:
    a, b = rng.sample(list(RATES), 2)
    amt = _amount(rng)
    return Goal(
        query=f"How much is {amt:g} {a} in {b}?",
        calls=[call("convert_currency", amount=amt, from_currency=a, to_currency=b)],
    )


@TASKS.template("transfer_and_check", atomic=False)
def transfer_and_check(rng: random.Random, env: Environment) -> Goal:
    a, b = rng.sample(_accounts(env), 2)
    amt = _amount(rng)
    return Goal(
        query=f"Send {money(amt)} from {a} to {b}, then tell me {a}'s new balance.",
        calls=[
            call("transfer", from_account=a, to_account=b, amount=amt),
            call("get_balance", account_id=a),
        ],
    )


@TASKS.template("pay_and_check", atomic=False)
def pay_and_check(rng: random.Random, env: Environment) -> Goal:
    a = pick(rng, _accounts(env))
    p, amt = pick(rng, BILL_PAYEES), _amount(rng)
    return Goal(
        query=f"Pay the {p} bill of {money(amt)} from {a} and show me what's left in the account.",
        calls=[
            call("pay_bill", account_id=a, payee=p, amount=amt),
            call("get_balance", account_id=a),
        ],
    )


TASKS.add_composition(weight=4)
