"""Seal-Tools' parameter values (``rules.py``, ``get_example_list``, ``get_api_param_example``)
and call skeletons (``get_api_calling``, ``get_api_calling_list``).

Every draw takes an explicit :class:`random.Random`, so a pipeline gives each instance its own
seeded generator and gets the same values whatever order its requests finish in.
"""

from __future__ import annotations

import random
import re
import string
from typing import Any

_EG = re.compile(r"\(e\.g\.,.+\)")
_STR_RULES = ("ID", "time", "date", "timestamp", "email", "IP")
_INT_RULES = ("age", "year", "")
_FLOAT_RULES = ("rate", "rating", "latitude", "longtitude", "temperature", "speed", "weight", "")
_DOMAINS = ("gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "aol.com", "icloud.com")

Spec = dict[str, Any]
#: tool name -> parameter -> the teacher's value pool
Pools = dict[str, dict[str, list[Any]]]


def example_list(type_str: str, description: str) -> list[str] | None:
    """The values of a description's ``(e.g., a, b, c)``, or ``None`` when it has none or one of
    them does not cast to the parameter's type (upstream's ``get_example_list``)."""
    m = _EG.search(description)
    if m is None:
        return None
    values = [v.strip(" ").strip(",").strip('"').strip("'") for v in m.group(0)[6:-1].split(",")]
    cast = {"int": int, "float": float}.get(type_str)
    if cast is not None:
        try:
            for v in values:
                cast(v)
        except ValueError:
            return None
    return values


def _rule(type_str: str, param: str, description: str) -> str | None:
    text = f"{param} {description}".lower()
    patterns = {"str": _STR_RULES, "int": _INT_RULES, "float": _FLOAT_RULES}.get(type_str)
    if type_str == "bool":
        return "bool"
    for p in patterns or ():
        if p.lower() in text:
            return p
    return None


def has_rule(type_str: str, param: str, description: str) -> bool:
    """Whether ``rules.py`` makes this parameter's values (every int, float and bool does)."""
    return _rule(type_str, param, description) is not None


def _ident(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def _date(rng: random.Random) -> str:
    return f"{rng.randint(2000, 2023)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _clock(rng: random.Random) -> str:
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"


def rule_value(rng: random.Random, type_str: str, param: str, description: str) -> Any:
    """The rule's value (mostly strings, as upstream's)."""
    pattern = _rule(type_str, param, description)
    if type_str == "bool":
        return rng.choice([True, False])
    if type_str == "str":
        if pattern == "ID":
            return _ident(rng, rng.randint(8, 12))
        if pattern == "time":
            return _clock(rng)
        if pattern == "date":
            return _date(rng)
        if pattern == "timestamp":  # unreachable: "time" matches first, as upstream
            return f"{_date(rng)} {_clock(rng)}:{rng.randint(0, 59):02d}"
        if pattern == "email":
            return f"{_ident(rng, rng.randint(8, 12))}@{rng.choice(_DOMAINS)}"
        return f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 255)}"
    if type_str == "int":
        low, high = {"age": (5, 80), "year": (1975, 2023)}.get(pattern or "", (1, 100))
        return str(rng.randint(low, high))
    ranges = {
        "rating": (0.0, 10.0, 1),
        "latitude": (-90.0, 90.0, 4),
        "longtitude": (-180.0, 180.0, 4),
        "temperature": (20.0, 32.0, 1),
        "speed": (1.0, 20.0, 1),
        "weight": (50.0, 70.0, 1),
    }
    if pattern == "rate":
        return rng.random()
    low_f, high_f, digits = ranges.get(pattern or "", (5.0, 50.0, 1))
    return str(round(rng.uniform(low_f, high_f), digits))


def needs_pool(tool: Spec) -> dict[str, str]:
    """Required parameters of ``tool`` that neither an e.g.-list nor a rule can fill (only
    ``str`` ones: every other type has a rule): parameter -> description."""
    out: dict[str, str] = {}
    for p in tool.get("required", []):
        spec = tool["parameters"][p]
        t, d = spec["type"], spec["description"]
        if example_list(t, d) is None and not has_rule(t, p, d) and t == "str":
            out[p] = d
    return out


class NoValue(Exception):
    """A required parameter has no rule, no e.g.-list and no value pool."""


def param_value(rng: random.Random, tool: Spec, param: str, pools: Pools) -> Any:
    """A rule first, then an item of the e.g.-list, then one of the teacher's pool."""
    spec = tool["parameters"][param]
    t, d = spec["type"], spec["description"]
    if has_rule(t, param, d):
        return rule_value(rng, t, param, d)
    examples = example_list(t, d)
    if examples:
        return rng.choice(examples)
    pool = pools.get(tool["api_name"], {}).get(param)
    if not pool:
        raise NoValue(f"{tool['api_name']}.{param}")
    return rng.choice(pool)


def calling(rng: random.Random, tool: Spec, pools: Pools) -> dict[str, Any]:
    """``get_api_calling``: every required parameter, and each optional one that has an e.g.-list
    with probability 0.5."""
    params: dict[str, Any] = {}
    for p, spec in tool["parameters"].items():
        if p in tool["required"] or (
            rng.random() >= 0.5 and example_list(spec["type"], spec["description"])
        ):
            params[p] = param_value(rng, tool, p, pools)
    return {"api": tool["api_name"], "parameters": params}


def calling_list(rng: random.Random, tools: list[Spec], pools: Pools) -> list[dict[str, Any]]:
    """``get_api_calling_list``: one call per tool, responses numbered globally in call order."""
    out: list[dict[str, Any]] = []
    n = 0
    for tool in tools:
        call = calling(rng, tool, pools)
        call["responses"] = [f"API_call_{n + i}" for i in range(len(tool["responses"]))]
        n += len(tool["responses"])
        out.append(call)
    return out


def with_responses(call: dict[str, Any], tool: Spec) -> dict[str, Any]:
    """An easy instance's call with ``responses`` = ``API_call_0..n-1`` (n response fields)."""
    return {**call, "responses": [f"API_call_{i}" for i in range(len(tool["responses"]))]}
