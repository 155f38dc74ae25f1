"""Every verb of the CLI has --help, and the CLI reports bad input with exit code 2."""

from __future__ import annotations

import itertools

import typer
from typer.testing import CliRunner

from toollab.cli.main import app


def _verbs() -> list[list[str]]:
    root = typer.main.get_command(app)
    out: list[list[str]] = []

    def walk(cmd: object, path: list[str]) -> None:
        out.append(path)
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*path, name])

    walk(root, [])
    return out


def test_every_verb_has_help() -> None:
    verbs = _verbs()
    names = {" ".join(v) for v in verbs}
    for expected in (
        "data inspect",
        "tools validate",
        "eval",
        "score",
        "report",
        "bench",
        "chat",
        "retrieve eval",
    ):
        assert expected in names, f"missing verb {expected!r}; have {sorted(names)}"
    runner = CliRunner()
    for verb in verbs:
        res = runner.invoke(app, [*verb, "--help"])
        assert res.exit_code == 0, f"{verb}: {res.output}"
        assert "Usage" in res.output
        if verb:
            # every verb says what it does
            cmd = typer.main.get_command(app)
            for name in verb:
                cmd = cmd.commands[name]  # type: ignore[attr-defined]
            assert (cmd.help or cmd.short_help or "").strip(), f"{verb} has no help text"


def test_version() -> None:
    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output.strip() == "0.1.0"


def test_help_wraps_at_the_terminal_width_not_at_docstring_line_breaks() -> None:
    """Each paragraph of a command's help is one logical line that the terminal wraps: a
    description continued on a next line fills the line before it."""
    from toollab.cli.main import reflow

    assert reflow("One line\n    goes on.\n\n    Second paragraph\n    here.") == (
        "One line goes on.\n\nSecond paragraph here."
    )
    runner = CliRunner()
    for verb in ([], ["data"], ["train"]):
        res = runner.invoke(app, [*verb, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
        assert res.exit_code == 0
        lines = res.output.splitlines()
        start = next(i for i, line in enumerate(lines) if "Commands" in line)
        box = []
        for line in lines[start + 1 :]:
            if line.startswith("╰"):
                break
            box.append(line[1:-1].rstrip())
        assert box
        for line, following in itertools.pairwise(box):
            continued = following.startswith("  ")  # an entry starts one space in
            if continued and len(line.strip()) < 45:
                raise AssertionError(f"a short line before a continuation: {line!r}")
