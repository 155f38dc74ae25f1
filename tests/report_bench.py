"""A two-model ``toollab bench`` with known failures, for the report tests.

The oracle (every answer right) runs beside a replay model whose recorded outputs are the gold
programs with planted mistakes, one per kind: a wrong argument value that makes the program
crash (``city not found: 'Atlantis'``), a plain-text answer where a call was due, unparsable
output, a wrong tool and one call too many.  Both run through the real bench (environments,
agent, template parser, execution, scorers), so the report reads real run directories.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.envs.generate import generate

ENVS = ("weather", "favourites")
LIMIT = 4
UNPARSABLE = '[{"name": "current_weather_by_city", "arguments": {"city": broken'
NO_CALL = "I cannot help with that, sorry."


def _program(calls: list[Any]) -> str:
    return json.dumps([{"name": c.name, "arguments": dict(c.arguments)} for c in calls])


def planted_outputs() -> dict[str, tuple[str, str | None]]:
    """Instance id -> (the recorded output, the error class it must get; None: right)."""
    weather = generate("weather", "test", LIMIT, 0)
    fav = generate("favourites", "test", LIMIT, 0)
    out: dict[str, tuple[str, str | None]] = {}
    out[weather[0].id] = (_program(weather[0].gold), None)
    wrong_city = [c.model_copy(deep=True) for c in weather[1].gold]
    assert wrong_city[0].arguments["city"] == "Madrid"  # the generator's seed-0 split
    wrong_city[0].arguments["city"] = "Atlantis"
    out[weather[1].id] = (_program(wrong_city), "wrong_value")
    out[weather[2].id] = (NO_CALL, "missed_call")
    out[weather[3].id] = (UNPARSABLE, "unparsed")
    out[fav[0].id] = (_program([*fav[0].gold, fav[0].gold[-1]]), "wrong_call_count")
    wrong_tool = [c.model_copy(deep=True) for c in fav[1].gold]
    wrong_tool[0] = wrong_tool[0].model_copy(update={"name": "list_breeds", "arguments": {}})
    out[fav[1].id] = (_program(wrong_tool), "wrong_tool")
    out[fav[2].id] = (_program(fav[2].gold), None)
    out[fav[3].id] = (_program(fav[3].gold), None)
    return out


def make_bench(root: Path) -> tuple[Path, str]:
    """Run the two-model bench under ``root``; (its output folder, the replay model string)."""
    replay = root / "outputs.jsonl"
    replay.write_text(
        "".join(json.dumps({"id": k, "output": v[0]}) + "\n" for k, v in planted_outputs().items())
    )
    model = f"replay:{replay}"
    out = root / "bench"
    r = CliRunner().invoke(
        app,
        [
            "bench",
            "-m",
            "oracle",
            "-m",
            model,
            "-e",
            ",".join(ENVS),
            "-n",
            str(LIMIT),
            "--out",
            str(out),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.stderr
    return out, model
