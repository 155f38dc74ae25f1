"""``toollab tools``: working with tool pool files."""

from __future__ import annotations

from pathlib import Path

import typer

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
            help="Require every tool in one format: auto, toollab, openai, seal-tools.",
        ),
        json_out: bool = JsonOpt,
    ) -> None:
        """Check a tool pool file and report every problem with file and line.

        Checks that each line is JSON, that each tool has a name, that its parameters are a valid
        JSON Schema (Draft 2020-12) of type object whose required names exist, and that names are
        unique.  Exit code 0 when the file is clean, 2 when it has problems.
        """
        check_format(fmt)
        tools, problems = read_pool_file(path, fmt=fmt)
        if json_out:
            emit_json(
                {
                    "path": str(path),
                    "tools": len(tools),
                    "problems": [p.to_json() for p in problems],
                    "ok": not problems,
                }
            )
        else:
            for p in problems:
                console.print(
                    f"[bold red]error:[/] {p.format()}",
                    highlight=False,
                    markup=True,
                    soft_wrap=True,
                )
            status = (
                "[green]ok[/]"
                if not problems
                else f"[red]{len(problems)} problem{'s' if len(problems) != 1 else ''}[/]"
            )
            console.print(
                f"{path}: {len(tools)} valid tool{'s' if len(tools) != 1 else ''}, {status}",
                highlight=False,
            )
        if problems:
            raise typer.Exit(2)

    app.add_typer(tools_app, name="tools")
