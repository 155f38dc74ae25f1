"""The ``toollab`` command line."""

from __future__ import annotations

import importlib
import inspect
import os
import re
import signal
import sys
from types import FrameType

import typer

from toollab import __version__

app = typer.Typer(
    name="toollab",
    help="toollab: make small open LLMs good tool users, and prove it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# each module adds its verbs with ``register(app)``; the order is the order of ``--help``
_COMMAND_MODULES = [
    "toollab.cli.data_cmd",
    "toollab.cli.generate_cmd",
    "toollab.cli.alpha_umi_cmd",
    "toollab.cli.sft_cmd",
    "toollab.cli.synth_cmd",
    "toollab.cli.tools_cmd",
    "toollab.cli.chat_cmd",
    "toollab.cli.retrieve_cmd",
    "toollab.cli.eval_cmd",
    "toollab.cli.bench_cmd",
    "toollab.cli.plugins_cmd",
    "toollab.cli.train_cmd",
]


def reflow(text: str | None) -> str | None:
    """A docstring as help text: each paragraph on one logical line, so the terminal wraps it at
    its own width (the docstring's line breaks would otherwise cut sentences mid-line)."""
    if text is None:
        return None
    paragraphs = re.split(r"\n\s*\n", inspect.cleandoc(text))
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def _reflow_all(typer_app: typer.Typer) -> None:
    """Reflow the help of every command and command group, at every depth."""
    for command in typer_app.registered_commands:
        command.help = reflow(command.help or inspect.getdoc(command.callback))
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            info = group.typer_instance.info
            if isinstance(info.help, str):
                info.help = reflow(info.help)
            _reflow_all(group.typer_instance)


def _register() -> None:
    for mod in _COMMAND_MODULES:
        importlib.import_module(mod).register(app)
    _reflow_all(app)


_register()


def _print_version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        is_eager=True,
        callback=_print_version,
    ),
) -> None:
    """toollab: make small open LLMs good tool users, and prove it."""


class _Terminated:
    """Whether ``SIGTERM`` arrived (set by :func:`_on_sigterm`)."""

    seen = False
    #: the process that installed the handler (a forked child is not it)
    pid = -1


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """``SIGTERM`` raises ``KeyboardInterrupt`` in the main thread, so a terminated command
    cleans up as an interrupted one does (temporary files removed, a run's lock released,
    predictions so far kept); :func:`main` then exits with 128 + SIGTERM."""
    if os.getpid() != _Terminated.pid:  # a forked child: dies as SIGTERM says, cleaning nothing
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    _Terminated.seen = True
    raise KeyboardInterrupt


def main() -> None:
    _Terminated.pid = os.getpid()
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        app()
    except SystemExit:
        if _Terminated.seen:
            sys.exit(128 + signal.SIGTERM)
        raise


if __name__ == "__main__":
    main()
