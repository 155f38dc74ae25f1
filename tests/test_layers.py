"""The import contract: toollab's packages import only the layers below them.

The contract is ``[tool.importlinter]`` in pyproject.toml (import-linter's own format, so
``lint-imports`` checks the same thing).  This test reads it and checks every import statement of
src/toollab (module level, in functions and under ``TYPE_CHECKING`` alike) with :mod:`ast`:

* a module may import a lower layer, never a higher one;
* siblings of one layer written ``a | b`` may not import each other;
* every module directly under ``toollab`` has a place in the layers (``exhaustive``), so a new
  package fails here until it is given one;
* each ``ignore_imports`` entry (a known violation still to be fixed) matches an import that
  still exists, so the list empties as the violations go.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE = "toollab"


@dataclass
class Layer:
    #: the children of the container in this layer, and whether each may be absent
    members: dict[str, bool]
    independent: bool


@dataclass
class Contract:
    container: str
    layers: list[Layer]
    exhaustive: bool
    ignore: list[str] = field(default_factory=list)

    def rank(self, child: str) -> int | None:
        """0 for the top layer, growing downwards; None when the child has no place."""
        for i, layer in enumerate(self.layers):
            if child in layer.members:
                return i
        return None


def read_contract(pyproject: Path) -> Contract:
    config = tomllib.loads(pyproject.read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c.get("type") == "layers"]
    (container,) = contract["containers"]
    layers = []
    for raw in contract["layers"]:
        independent = ":" not in raw
        members = {}
        for part in re.split(r"[|:]", raw):
            name = part.strip()
            optional = name.startswith("(") and name.endswith(")")
            members[name.strip("()").strip()] = optional
        layers.append(Layer(members, independent))
    return Contract(
        container,
        layers,
        bool(contract.get("exhaustive")),
        list(contract.get("ignore_imports", [])),
    )


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    where: str

    def __str__(self) -> str:
        return f"{self.importer} -> {self.imported} ({self.where})"


def module_names(src: Path, package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports_of(src: Path, package: str) -> Iterator[Import]:
    """Every import of a module of ``package`` by a module of ``package``."""
    modules = module_names(src, package)
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                # ``from a.b import c`` imports the module a.b.c when there is one
                targets = [
                    f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module
                    for a in node.names
                ]
            for target in targets:
                while target and target not in modules:  # ``import a.b.c`` of a name in a.b
                    target = target.rpartition(".")[0]
                if target and target.split(".")[0] == package:
                    yield Import(name, target, f"{path.relative_to(src.parent)}:{node.lineno}")


def children(src: Path, package: str) -> set[str]:
    """The modules and packages directly under ``package``."""
    out = set()
    for p in (src / package).iterdir():
        if p.is_dir() and (p / "__init__.py").exists():
            out.add(p.name)
        elif p.suffix == ".py" and p.name != "__init__.py":
            out.add(p.stem)
    return out


def _pattern(expr: str) -> re.Pattern[str]:
    parts = []
    for part in expr.strip().split("."):
        if part == "**":
            parts.append(r"[^.]+(?:\.[^.]+)*")
        elif part == "*":
            parts.append(r"[^.]+")
        else:
            parts.append(re.escape(part))
    return re.compile(r"\.".join(parts))


def ignore_matches(expr: str, imp: Import) -> bool:
    left, _, right = expr.partition("->")
    return bool(_pattern(left).fullmatch(imp.importer) and _pattern(right).fullmatch(imp.imported))


def child_of(module: str, container: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == container and len(parts) > 1 else None


def violations(contract: Contract, imports: list[Import]) -> list[str]:
    """Imports against the layers (ignored ones left out)."""
    out = []
    for imp in imports:
        a, b = (
            child_of(imp.importer, contract.container),
            child_of(imp.imported, contract.container),
        )
        if a is None or b is None or a == b:
            continue  # the package facade, or inside one package
        ra, rb = contract.rank(a), contract.rank(b)
        if ra is None or rb is None:
            continue  # reported by the exhaustiveness check
        if any(ignore_matches(e, imp) for e in contract.ignore):
            continue
        if rb < ra:
            out.append(f"{imp}: {a} imports the higher layer {b}")
        elif rb == ra and contract.layers[ra].independent:
            out.append(f"{imp}: {a} and {b} are independent siblings")
    return list(dict.fromkeys(out))


def unplaced(contract: Contract, src: Path) -> list[str]:
    """Problems with the list itself: a child with no place, a required layer that is missing."""
    have = children(src, contract.container)
    listed = {m: opt for layer in contract.layers for m, opt in layer.members.items()}
    out = [
        f"{contract.container}.{c} has no place in the layers of pyproject.toml "
        "[tool.importlinter]: give it one"
        for c in sorted(have - set(listed))
        if contract.exhaustive
    ]
    out += [
        f"layer {m!r} does not exist (write '({m})' for a layer that may be absent)"
        for m, optional in listed.items()
        if m not in have and not optional
    ]
    return out


def cycles(contract: Contract, imports: list[Import]) -> list[list[str]]:
    """Cycles in the package graph (ignored imports left out)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        a, b = (
            child_of(imp.importer, contract.container),
            child_of(imp.imported, contract.container),
        )
        if a and b and a != b and not any(ignore_matches(e, imp) for e in contract.ignore):
            graph.setdefault(a, set()).add(b)
    found: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    return found


CONTRACT = read_contract(ROOT / "pyproject.toml")
IMPORTS = list(imports_of(SRC, PACKAGE))


def test_every_package_has_a_place_in_the_layers() -> None:
    assert unplaced(CONTRACT, SRC) == []


def test_no_import_runs_against_the_layers() -> None:
    assert violations(CONTRACT, IMPORTS) == []


def test_no_cycle_between_packages() -> None:
    assert cycles(CONTRACT, IMPORTS) == []


def facade_imports(src: Path, package: str) -> list[str]:
    """``from toollab import X`` inside the package, for X other than a submodule or
    ``__version__``: the facade imports the whole library, so a module importing names from it
    would import everything above itself."""
    out = []
    modules = module_names(src, package)
    for name, path in modules.items():
        if name == package:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == package:
                for alias in node.names:
                    if alias.name != "__version__" and f"{package}.{alias.name}" not in modules:
                        out.append(f"{name} imports {alias.name!r} from the {package} facade")
    return out


def test_no_module_imports_names_from_the_facade() -> None:
    assert facade_imports(SRC, PACKAGE) == []


@pytest.mark.parametrize("expr", CONTRACT.ignore)
def test_each_known_violation_still_exists(expr: str) -> None:
    """A fixed violation must leave ``ignore_imports``, so the contract tightens."""
    assert any(ignore_matches(expr, imp) for imp in IMPORTS), (
        f"no import matches {expr!r} any more: remove it from ignore_imports in pyproject.toml"
    )


def test_the_checker_finds_what_it_must(tmp_path: Path) -> None:
    """A small package with a backward import, a sibling import, a cycle, a package with no
    place and a relative import: each is reported."""
    pkg = tmp_path / "pkg"
    files = {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": "from ..high import b\n",  # backward, relative
        "high/__init__.py": "",
        "high/b.py": "def f():\n    import pkg.low.a\n",
        "left/__init__.py": "from pkg import right\n",
        "right/__init__.py": "",
        "extra.py": "import pkg.low\nfrom pkg import low, __version__, Thing\n",
    }
    for rel, text in files.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.importlinter]\nroot_package = "pkg"\n'
        '[[tool.importlinter.contracts]]\nname = "t"\ntype = "layers"\ncontainers = ["pkg"]\n'
        'exhaustive = true\nlayers = ["high", "left | right", "low", "(later)", "gone"]\n'
    )
    contract = read_contract(tmp_path / "pyproject.toml")
    imports = list(imports_of(tmp_path, "pkg"))
    found = violations(contract, imports)
    assert any("pkg.low.a -> pkg.high.b" in v and "higher layer high" in v for v in found)
    assert any("pkg.left -> pkg.right" in v and "independent siblings" in v for v in found)
    assert len(found) == 2  # high -> low is allowed
    assert [sorted(set(c)) for c in cycles(contract, imports)] == [["high", "low"]]
    problems = unplaced(contract, tmp_path)
    assert any("pkg.extra has no place" in p for p in problems)
    assert any("'gone' does not exist" in p for p in problems)
    assert not any("later" in p for p in problems)
    assert facade_imports(tmp_path, "pkg") == ["pkg.extra imports 'Thing' from the pkg facade"]
    contract.ignore = ["pkg.low.* -> pkg.high.**"]
    assert len(violations(contract, imports)) == 1


def test_import_linter_keeps_the_contract() -> None:
    """import-linter (the dev extra) reads the same contract and agrees."""
    pytest.importorskip("importlinter")
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    r = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
