"""SFT export throughput: examples per second on DEER ``tool.json`` (9,393 query → call
examples) and Seal-Tools ``dev.jsonl`` (700 instances), constrained ``json`` targets through
the bundled model's chat template, guarded against BFCL, the Seal-Tools test splits and DEER's
test set.

For each source, one export with token counting (the card's token lengths) and one without;
reports the stage timings, the examples per second of the per-example stages (screen + check +
write: what grows with the data) and end to end (evaluation sets and sources loaded too).
Prints one JSON object.

Usage::

    flock /tmp/toollab-heavy.lock nice -n 10 python benchmarks/bench_sft.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from toollab.sft import SFTConfig, export_sft, parse_source

REPO = Path(__file__).resolve().parents[1]


def run(source: str, data: Path, tokens: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = SFTConfig(
            sources=[parse_source(source)],
            out=Path(tmp) / "train.jsonl",
            guards=[(n, data / n) for n in ("bfcl", "seal-tools", "deer")],
            count_tokens=tokens,
        )
        result = export_sft(cfg)
        fig = result.figures
        size = result.path.stat().st_size
    t = result.timings
    per_example = t["screen"] + t["check"] + t["write"]
    return {
        "loaded": fig["loaded"],
        "written": fig["examples"],
        "rejected": sum(fig["rejected"].values()),
        "dropped": sum(fig["dropped"].values()),
        "file_mib": round(size / 2**20, 1),
        "timings_s": t,
        "per_example_stages_per_s": round(fig["loaded"] / per_example, 1),
        "written_per_s": round(fig["examples"] / (t["check"] + t["write"]), 1),
        "end_to_end_s": round(result.seconds, 2),
        "end_to_end_per_s": round(fig["loaded"] / result.seconds, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    args = ap.parse_args()
    data = args.data.resolve()
    sources = {
        "deer tool.json": f"deer-examples:{data / 'deer' / 'tool.json'}",
        "seal-tools dev": f"seal-tools:{data / 'seal-tools' / 'dev.jsonl'}",
    }
    out: dict[str, Any] = {}
    for name, src in sources.items():
        out[name] = {
            "with tokens": run(src, data, tokens=True),
            "without tokens": run(src, data, tokens=False),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
