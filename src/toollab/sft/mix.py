"""The data card of a training mix: what a recipe's data files hold and what share of the
training draws each kind of example gets once the recipe's weights apply.

``python -m toollab.sft.mix RECIPE.yaml OUT.md [NOTES.md]`` reads the recipe's ``data`` list
(``{path, weight}`` entries or ``PATH[:WEIGHT]`` strings; paths relative to the working
directory, as ``toollab train recipe`` takes them), counts every file's records by
kind from their ``meta`` (the export writes it), and writes the card: per file, the records, the
weight, the records drawn per epoch (the trainer repeats a file ``floor(w)`` times and adds a
random ``w - floor(w)`` share), and per kind (Call with one call, Call with several, no-call,
hard no-call, no-search, masked names, composed, conversations) the count and the share of the
draws.  ``NOTES.md`` (the choices behind the mix, written by hand) is put first.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from toollab.data.jsonl import iter_jsonl, require_object
from toollab.data.yaml_limits import read_yaml_file
from toollab.errors import InputError

KINDS = (
    "conversation",
    "call: one call",
    "call: several calls",
    "no-call: hard (close tools that cannot serve)",
    "no-call: other",
    "no-search",
)


def _meta(rec: dict[str, Any]) -> dict[str, Any]:
    meta = rec.get("meta")
    return meta if isinstance(meta, dict) else {}


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def record_kind(rec: dict[str, Any]) -> str:
    """The kind of one exported record (see :data:`KINDS`); a record without the export's
    ``meta`` counts as no-search."""
    meta = _meta(rec)
    if meta.get("pack") == "conversation":
        return "conversation"
    decisions = _listed(meta.get("decision"))
    calls = _listed(meta.get("n_calls"))
    decision = decisions[0] if decisions else ""
    if decision == "Call":
        several = bool(calls) and isinstance(calls[0], int | float) and calls[0] > 1
        return "call: several calls" if several else "call: one call"
    if decision == "NoCall":
        if "hard-nocall" in _listed(meta.get("augmented")):
            return "no-call: hard (close tools that cannot serve)"
        return "no-call: other"
    return "no-search"


def count_file(path: Path) -> tuple[Counter[str], Counter[str]]:
    """(records per kind, records per augmentation tag) of one export."""
    kinds: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    for record in iter_jsonl(path):  # the JSON-lines limits, file:line errors
        rec: dict[str, Any] = dict(require_object(record))
        kinds[record_kind(rec)] += 1
        for tag in _listed(_meta(rec).get("augmented")):
            tags[str(tag).split(":", 1)[0]] += 1
    return kinds, tags


def recipe_data(recipe: Path) -> list[tuple[Path, float]]:
    """(path, weight) of every data file a recipe trains on."""
    loaded = read_yaml_file(recipe)  # the YAML limits, file:line errors
    entries = loaded.get("data") if isinstance(loaded, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InputError("the recipe has no `data` list", path=recipe)
    out: list[tuple[Path, float]] = []
    for i, entry in enumerate(entries):
        if isinstance(entry, dict) and isinstance(entry.get("path"), str):
            weight = entry.get("weight", 1.0)
            path = entry["path"]
        elif isinstance(entry, str):
            path, _, w = entry.rpartition(":") if ":" in entry else (entry, "", "1")
            weight = w
        else:
            raise InputError(
                f"data[{i}] is neither {{path, weight}} nor PATH[:WEIGHT]", path=recipe
            )
        try:
            value = float(weight)
        except (TypeError, ValueError, OverflowError):
            value = math.nan
        if not (math.isfinite(value) and value > 0):
            raise InputError(
                f"data[{i}]: weight {weight!r} is not a finite number > 0", path=recipe
            ) from None
        out.append((Path(path), value))
    return out


def mix_card(recipe: Path, notes: str = "") -> str:
    rows = []
    weights: dict[str, float] = {}
    total_drawn = 0.0
    for path, weight in recipe_data(recipe):
        kinds, tags = count_file(path)
        records = sum(kinds.values())
        total_drawn += records * weight
        for k, v in kinds.items():
            weights[k] = weights.get(k, 0.0) + v * weight
        for k, v in tags.items():
            weights["tag:" + k] = weights.get("tag:" + k, 0.0) + v * weight
        rows.append((f"`{path}`", records, f"{weight:g}", round(records * weight)))
    total = max(total_drawn, 1.0)
    parts = [notes.strip(), ""] if notes.strip() else []
    parts += [
        f"## The files of `{recipe.name}`",
        "",
        "| file | records | weight | drawn per epoch |",
        "|---|---|---|---|",
        *(f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows),
        f"| all | {sum(r[1] for r in rows)} | | {round(total_drawn)} |",
        "",
        "## Kinds of example in the draws",
        "",
        "| kind | drawn per epoch | share |",
        "|---|---|---|",
        *(
            f"| {k} | {round(weights.get(k, 0.0))} | {100 * weights.get(k, 0.0) / total:.1f}% |"
            for k in KINDS
        ),
        "",
        "| augmentation (records carrying it) | drawn per epoch | share |",
        "|---|---|---|",
        *(
            f"| {k[4:]} | {round(v)} | {100 * v / total:.1f}% |"
            for k, v in sorted(weights.items())
            if k.startswith("tag:")
        ),
        "",
        "Each file's own card (`README.md` beside it) has its sources, guard drops, checks and "
        "token lengths.",
        "",
    ]
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: python -m toollab.sft.mix RECIPE.yaml OUT.md [NOTES.md]", file=sys.stderr)
        return 2
    notes = Path(argv[2]).read_text(encoding="utf-8") if len(argv) == 3 else ""
    Path(argv[1]).write_text(mix_card(Path(argv[0]), notes), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
