"""Shipped training recipes: YAML configs in the package (``toollab train recipe NAME``).

A recipe's relative paths (data, output_dir) are relative to the working directory, not to the
recipe file, since the file lives inside the installed package."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from toollab.errors import ArgumentError, UsageError, path_component

DEFAULT_RECIPE = "smollm2-135m-tools"


def _folder() -> Path:
    return Path(str(resources.files("toollab") / "resources" / "train" / "recipes"))


def recipe_names() -> list[str]:
    return sorted(p.stem for p in _folder().glob("*.yaml"))


def recipe_path(name: str) -> Path:
    """A shipped recipe by name, or a YAML file given by path."""
    p = Path(name)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return p
    try:
        path_component(name, "recipe")  # a name, never a path out of the recipes folder
    except ArgumentError as exc:
        raise UsageError(
            f"no training recipe {name!r}: {exc.problem}; give a shipped recipe's name "
            f"({', '.join(recipe_names()) or 'none'}) or the path of a .yaml file"
        ) from None
    found = _folder() / f"{name}.yaml"
    if not found.is_file():
        raise UsageError(
            f"no training recipe {name!r} (shipped: {', '.join(recipe_names()) or 'none'})"
        )
    return found
