"""Parsing speed: real gold outputs in every format, and 1 MB hostile inputs.

Renders real gold answers (Seal-Tools calling lists as JSON and as Python literals, BFCL possible
answers as Python calls, DEER gold chains) plus the same calls as ``json``, ``react`` and
``hermes`` outputs, and times each parser over them (outputs per second).  Then times every
parser on 1 MB pathological inputs (the worst single parse is reported).  Prints one JSON object.

    python benchmarks/bench_parsing.py [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from toollab.parsing import get_parser, parser_names

MB = 1_000_000


def _seal_outputs(data: Path) -> list[list[dict[str, Any]]]:
    calling: list[list[dict[str, Any]]] = []
    for name in ("test_in_domain.jsonl", "test_out_domain.jsonl"):
        with open(data / "seal-tools" / name, encoding="utf-8") as f:
            calling.extend(json.loads(line)["calling"] for line in f)
    return calling


def _bfcl_outputs(data: Path) -> list[str]:
    out = []
    for cat in ("simple_python", "multiple", "parallel", "parallel_multiple"):
        path = data / "bfcl" / "possible_answer" / f"BFCL_v4_{cat}.json"
        for line in path.read_text(encoding="utf-8").splitlines():
            parts = []
            for call in json.loads(line)["ground_truth"]:
                ((fn, params),) = call.items()
                args = ", ".join(f"{k}={v[0]!r}" for k, v in params.items() if v and v[0] != "")
                parts.append(f"{fn}({args})")
            out.append("[" + ", ".join(parts) + "]")
    return out


def _deer_outputs(data: Path) -> list[str]:
    items = json.loads((data / "deer" / "test.json").read_text(encoding="utf-8"))
    items += json.loads((data / "deer" / "valid.json").read_text(encoding="utf-8"))
    return [x["conversations"][1]["value"] for x in items]


def corpus(data: Path) -> dict[str, list[str]]:
    seal = _seal_outputs(data)
    calls = [c for rec in seal for c in rec]
    return {
        "seal": [json.dumps(r) for r in seal] + [str(r) for r in seal],
        "python": _bfcl_outputs(data),
        "deer": _deer_outputs(data),
        "json": [json.dumps({"name": c["api"], "arguments": c["parameters"]}) for c in calls],
        "react": [
            f"Thought: use {c['api']}.\nAction: {c['api']}\nAction Input: {json.dumps(c['parameters'])}"
            for c in calls
        ],
        "hermes": [
            "<tool_call>\n"
            + json.dumps({"name": c["api"], "arguments": c["parameters"]})
            + "\n</tool_call>"
            for c in calls
        ],
    }


HOSTILE = {
    "open_brackets": "[" * MB,
    "deep_balanced": "[" * 200_000 + "]" * 200_000,
    "open_calls": "f(" * (MB // 2),
    "hermes_tags": "<tool_call>" * (MB // 11),
    "react_markers": "Thought: Action: Action Input: " * (MB // 31),
    "seal_starts": "[{'api'" * (MB // 7),
    "surrogates": "\ud800\udfff" * (MB // 2),
    "null_bytes": "\x00" * MB,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = ap.parse_args()
    outputs = corpus(args.data)
    speed: dict[str, Any] = {}
    for fmt, texts in outputs.items():
        parser = get_parser(fmt)
        start = time.perf_counter()
        statuses: dict[str, int] = {}
        for t in texts:
            s = parser.parse(t).status.value
            statuses[s] = statuses.get(s, 0) + 1
        dt = time.perf_counter() - start
        speed[fmt] = {
            "outputs": len(texts),
            "seconds": round(dt, 3),
            "per_second": round(len(texts) / dt),
            "statuses": statuses,
        }
    worst: dict[str, Any] = {"seconds": 0.0}
    for name, text in HOSTILE.items():
        for fmt in parser_names():
            start = time.perf_counter()
            get_parser(fmt).parse(text)
            dt = time.perf_counter() - start
            if dt > worst["seconds"]:
                worst = {"seconds": round(dt, 3), "input": name, "parser": fmt}
    print(json.dumps({"gold_outputs": speed, "hostile_1mb_worst": worst}))


if __name__ == "__main__":
    main()
