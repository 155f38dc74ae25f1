"""CLI verbs (filled in by their module)."""

import typer


def register(app: typer.Typer) -> None:
    return None
