"""Screen written SFT files again with the leakage guard, independently of the export.

Every record's user turns become instances (the query, the offered tools, and for environment
records the calls each user turn made, read back from its assistant steps) and go through a
fresh :class:`~toollab.sft.guard.LeakageGuard` over every default evaluation set.  A leak found
here is an example the export let through.  Masked records carry random tool names: their texts
are screened, their names and API combinations were screened before masking, in the export.

    python benchmarks/check_guard.py --data ../shared/data sft-data/loop-*/examples.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from toollab.models.policy import parse_constrained
from toollab.schema import Decision, GoldCall, Instance, Tool
from toollab.sft.guard import LeakageGuard, load_eval_set, resolve_guards


def turns(rec: dict[str, Any]) -> list[Instance]:
    """One instance per user turn of a record."""
    tools = [Tool.from_openai(t) for t in rec.get("tools") or []]
    masked = "mask" in (rec.get("meta") or {}).get("augmented", [])
    out: list[Instance] = []
    current: dict[str, Any] | None = None
    for m in rec["messages"]:
        if m["role"] == "user":
            current = {"query": m["content"], "gold": []}
            out.append(Instance(id=f"{rec['id']}#{len(out)}", query=m["content"], tools=tools))
        elif m["role"] == "assistant" and current is not None and not masked:
            parsed = parse_constrained(m["content"])
            current["gold"].extend(
                GoldCall(name=c.name, arguments=c.arguments) for c in parsed.calls
            )
            out[-1] = out[-1].model_copy(
                update={
                    "gold": list(current["gold"]),
                    "decision": Decision.CALL if current["gold"] else Decision.NO_CALL,
                }
            )
    return [i.model_copy(update={"source": rec.get("source") or ""}) for i in out]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--data", type=Path, required=True, help="folder holding bfcl/, seal-tools/, deer/"
    )
    ap.add_argument("files", type=Path, nargs="+")
    args = ap.parse_args()
    t0 = time.perf_counter()
    guard = LeakageGuard([load_eval_set(n, p) for n, p in resolve_guards([], args.data, [])])
    for path in args.files:
        leaks: Counter[str] = Counter()
        records = checked = 0
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            records += 1
            for inst in turns(rec):
                checked += 1
                why = guard.reason(inst)
                if why is not None:
                    leaks[f"{why[0]}: {why[1].split(' (', 1)[0]}"] += 1
        print(
            f"{path}: {records} records, {checked} user turns screened, leaks: {dict(leaks) or 0}"
        )
    print(f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
