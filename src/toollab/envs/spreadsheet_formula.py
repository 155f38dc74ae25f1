"""Formulas of the spreadsheet environment: ``+ - * /`` over numbers, cell names and the five
functions ``SUM``, ``AVERAGE``, ``MIN``, ``MAX``, ``COUNT``, evaluated safely (an AST walk, never
``eval``); and the comparison rule of row filters."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from toollab.envs.base import BAD_VALUE, EnvError

OPERATORS = ("==", "!=", ">", ">=", "<", "<=", "contains")
_BIN: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def compare(v: Any, op: str, target: Any) -> bool:
    """Whether a cell value ``v`` meets ``op target`` (text compares without case)."""
    if op == "contains":
        return str(target).lower() in str(v).lower()
    if op in ("==", "!="):
        eq = v == target or str(v).lower() == str(target).lower()
        return eq if op == "==" else not eq
    if not isinstance(v, int | float) or not isinstance(target, int | float):
        raise EnvError(f"{op} needs numbers, got {v!r} and {target!r}", BAD_VALUE)
    return {">": v > target, ">=": v >= target, "<": v < target, "<=": v <= target}[op]


_FUNCS: dict[str, Callable[[list[Any]], Any]] = {
    "SUM": lambda xs: sum(xs),
    "AVERAGE": lambda xs: sum(xs) / len(xs) if xs else 0,
    "MIN": lambda xs: min(xs) if xs else 0,
    "MAX": lambda xs: max(xs) if xs else 0,
    "COUNT": lambda xs: len(xs),
}


def evaluate(expr: str, name: Callable[[str], Any]) -> Any:
    """Evaluate ``+ - * /`` over numbers, names and the five spreadsheet functions, safely."""
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as exc:
        raise EnvError(f"cannot read expression {expr!r}", BAD_VALUE) from exc

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.Name):
            return name(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -_num(ev(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
            a, b = _num(ev(node.left)), _num(ev(node.right))
            if isinstance(node.op, ast.Div) and b == 0:
                raise EnvError("division by zero", BAD_VALUE)
            return _BIN[type(node.op)](a, b)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id.upper() in _FUNCS
        ):
            xs: list[Any] = []
            for arg in node.args:
                v = ev(arg)
                xs.extend(v if isinstance(v, list) else [_num(v)])
            return _FUNCS[node.func.id.upper()](xs)
        raise EnvError(f"unsupported expression part in {expr!r}", BAD_VALUE)

    return ev(tree)


def _num(v: Any) -> Any:
    if isinstance(v, int | float) and not isinstance(v, bool):
        return v
    raise EnvError(f"{v!r} is not a number", BAD_VALUE)
