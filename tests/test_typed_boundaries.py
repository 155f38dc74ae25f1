"""No untyped dict crosses a package boundary.

A public function, method or field whose annotation is an untyped mapping (``dict[str, Any]``,
a bare ``dict``, ``Mapping[str, Any]``) may be used inside its own package, but no other
package of toollab may import it: between packages, records are typed (pydantic models,
dataclasses) and JSON data is ``dict[str, JsonValue]``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "toollab"
UNTYPED = re.compile(r"\b(dict|Dict|Mapping|MutableMapping)\[str,\s*Any\]|^dict$")


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _untyped(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    text = ast.unparse(annotation)
    return bool(UNTYPED.search(text))


def _function_problems(fn: ast.FunctionDef | ast.AsyncFunctionDef, prefix: str) -> list[str]:
    args = fn.args
    out = [
        f"{prefix}{fn.name}({a.arg})"
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]
        if _untyped(a.annotation)
    ]
    if _untyped(fn.returns):
        out.append(f"{prefix}{fn.name} -> ...")
    return out


def untyped_public_symbols() -> dict[tuple[str, str], list[str]]:
    """(module, name) -> what is untyped, for every public top-level function and class."""
    found: dict[tuple[str, str], list[str]] = {}
    for path in SRC.rglob("*.py"):
        module = _module(path)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if node_name(node).startswith("_"):
                continue
            problems: list[str] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                problems = _function_problems(node, "")
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        if not item.target.id.startswith("_") and _untyped(item.annotation):
                            problems.append(f"field {item.target.id}")
                    elif isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                        not item.name.startswith("_") or item.name == "__init__"
                    ):
                        problems += _function_problems(item, f"{node.name}.")
            if problems:
                found[(module, node_name(node))] = problems
    return found


def node_name(node: ast.stmt) -> str:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    return "_"


def crossing_imports() -> dict[tuple[str, str], set[str]]:
    """(module, name) -> the modules of other packages that import it."""
    untyped = untyped_public_symbols()
    out: dict[tuple[str, str], set[str]] = {}
    for path in SRC.rglob("*.py"):
        module = _module(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            for alias in node.names:
                key = (node.module, alias.name)
                if key in untyped and _package(node.module) != _package(module):
                    out.setdefault(key, set()).add(module)
    return out


def test_the_checker_finds_an_untyped_dict() -> None:
    tree = ast.parse("def f(x: dict[str, Any]) -> Mapping[str, Any]: ...\nclass C:\n    y: dict")
    fn = tree.body[0]
    assert isinstance(fn, ast.FunctionDef)
    assert _function_problems(fn, "") == ["f(x)", "f -> ..."]
    cls = tree.body[1]
    assert isinstance(cls, ast.ClassDef) and isinstance(cls.body[0], ast.AnnAssign)
    assert _untyped(cls.body[0].annotation)
    assert not _untyped(ast.parse("x: dict[str, JsonValue]").body[0].annotation)  # type: ignore[attr-defined]


def test_no_untyped_dict_crosses_a_package_boundary() -> None:
    crossing = crossing_imports()
    lines = [
        f"{mod}.{name}: {', '.join(untyped_public_symbols()[(mod, name)])} "
        f"<- {', '.join(sorted(users))}"
        for (mod, name), users in sorted(crossing.items())
    ]
    assert not lines, "untyped dicts cross package boundaries:\n" + "\n".join(lines)
