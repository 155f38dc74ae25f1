"""``toollab tools``: working with tool pool files."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from toollab.cli.common import JsonOpt, console, emit_json, handle_errors
from toollab.tools.pool import check_format, read_pool_file


def register(app: typer.Typer) -> None:
    tools_app = typer.Typer(
        name="tools",
        help="Tool pools: check pool files (JSON Lines or a JSON list of tools).",
        no_args_is_help=True,
    )

    @tools_app.command("validate")
    @handle_errors
    def validate(
        path: Path = typer.Argument(
            ...,
            help="Pool file: JSON Lines (one tool per line), a .json or .yaml list, or a .py module of "
            "@tool functions. Each tool in toollab, OpenAI ({type: function, function: {...}} or bare) "
            "or Seal-Tools (api_name, ...) format.",
            show_default=False,
        ),
        fmt: str = typer.Option(
            "auto",
            "--format",
            help="Require every tool in one format: auto, toollab, openai, seal-tools, deer.",
        ),
        strict: bool = typer.Option(
            False,
            "--strict",
            help="Treat warnings (unknown type names) as errors: exit 2 when there is any.",
        ),
        json_out: bool = JsonOpt,
    ) -> None:
        """Check a tool pool file and report every problem with file and line.

        Errors: a line that is not JSON, a tool without a name, parameters that are not a valid
        JSON Schema (Draft 2020-12) of type object, required names missing from properties,
        duplicate names, a file without any tool.  Warnings: type names toollab does not know
        (e.g. a misspelt "strng"), which leave the value unchecked.  Exit code 0 when there is no
        error (warnings are listed), 2 when there is one (or any warning, with --strict).
        """
        check_format(fmt)
        tools, problems = read_pool_file(path, fmt=fmt)
        errors = sum(1 for p in problems if p.is_error)
        warnings = len(problems) - errors
        failed = errors > 0 or (strict and warnings > 0)
        if json_out:
            emit_json(
                {
                    "path": str(path),
                    "tools": len(tools),
                    "problems": [p.to_json() for p in problems],
                    "errors": errors,
                    "warnings": warnings,
                    "strict": strict,
                    "ok": not failed,
                }
            )
        else:
            for p in problems:
                label = (
                    "[bold red]error:[/]" if p.is_error or strict else "[bold yellow]warning:[/]"
                )
                console.print(
                    f"{label} {escape(p.format())}",
                    highlight=False,
                    markup=True,
                    soft_wrap=True,
                )
            counts = [
                f"{n} {what}{'s' if n != 1 else ''}"
                for n, what in ((errors, "error"), (warnings, "warning"))
                if n
            ]
            status = f"[red]{', '.join(counts)}[/]" if failed else "[green]ok[/]"
            if not failed and warnings:
                status += f" [yellow]({', '.join(counts)})[/]"
            console.print(
                f"{escape(str(path))}: {len(tools)} valid tool{'s' if len(tools) != 1 else ''}, "
                f"{status}",
                highlight=False,
                soft_wrap=True,
            )
        if failed:
            raise typer.Exit(2)

    app.add_typer(tools_app, name="tools")
