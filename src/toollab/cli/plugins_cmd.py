"""``toollab plugins``: every registered component of every kind, and where it comes from."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from toollab.cli.common import JsonOpt, console, emit_json, handle_errors
from toollab.errors import InputError, UsageError, did_you_mean
from toollab.registry import (
    PLUGIN_GROUP,
    PluginWarning,
    broken_distributions,
    kinds,
    unknown_kind_entries,
)

#: the modules that own the kinds, in the order they are listed
KIND_MODULES = {
    "model": "toollab.models.registry",
    "agent": "toollab.agents.base",
    "scorer": "toollab.eval.metrics.registry",
    "template": "toollab.templates.base",
    "environment": "toollab.envs.base",
    "format": "toollab.data.base",
    "retriever": "toollab.retrieval.base",
    "parser": "toollab.parsing.base",
}


def listing(only: str | None = None) -> dict[str, Any]:
    """``{"kinds": {kind: [{"name", "origin"}]}, "problems": [...]}`` for every kind (or one)."""
    for mod in KIND_MODULES.values():
        importlib.import_module(mod)
    registries = kinds()
    order = [k for k in KIND_MODULES if k in registries] + sorted(
        set(registries) - set(KIND_MODULES)
    )
    if only is not None and only not in registries:
        raise UsageError(
            f"unknown kind {only!r}{did_you_mean(only, order)}; kinds: {', '.join(order)}"
        )
    out: dict[str, Any] = {"group": PLUGIN_GROUP, "kinds": {}, "problems": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)  # reported below instead
        for kind in order:
            if only is not None and kind != only:
                continue
            reg = registries[kind]
            out["kinds"][kind] = [{"name": n, "origin": reg.origin(n)} for n in reg.names()]
            out["problems"] += [{"kind": kind, "problem": p} for p in reg.problems()]
    if only is None:
        out["problems"] += [{"kind": e.kind, "problem": p} for e, p in unknown_kind_entries()]
        out["problems"] += [{"kind": "", "problem": p} for p in broken_distributions()]
    return out


def _fail_on_problems(problems: list[dict[str, str]]) -> None:
    """After the listing: exit status 2 and one ``error:`` line when any plugin is unusable."""
    if problems:
        n = len(problems)
        raise InputError(f"{n} plugin problem{'s' if n > 1 else ''} (listed above)")


def register(app: typer.Typer) -> None:
    @app.command("plugins")
    @handle_errors
    def plugins_cmd(
        kind: str | None = typer.Option(
            None, "--kind", help="List one kind only (model, agent, scorer, template, ...)."
        ),
        json_out: bool = JsonOpt,
    ) -> None:
        """List the models, agents, scorers, templates, environments, dataset formats,
        retrievers and parsers toollab knows, built in or from installed plugins (entry points
        of the toollab.plugins group), and any plugin that cannot be loaded.  Exit status 2
        when there is such a problem (the listing is printed first)."""
        data = listing(kind)
        if json_out:
            emit_json(data)
            _fail_on_problems(data["problems"])
            return
        table = Table(title="registered components", title_justify="left")
        for col in ("kind", "name", "from"):
            table.add_column(col)
        for k, rows in data["kinds"].items():
            for row in rows:
                table.add_row(k, row["name"], row["origin"])
        console.print(table)
        for p in data["problems"]:
            console.print(f"[bold yellow]plugin problem:[/] {escape(p['problem'])}", soft_wrap=True)
        _fail_on_problems(data["problems"])
