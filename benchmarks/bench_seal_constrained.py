"""Seal-Tools under constrained decoding: the figures before and after the answer key was sealed off.

Before, ``CallPolicy.for_instance`` decoded a Seal-Tools instance whose gold had one call with
"exactly one call" and the others with "one or more": the grammar carried the gold call count.
Now every Seal-Tools instance admits one or more calls (the count is not published).

Steps (the ``old`` run needs the code before the change, e.g. ``git worktree add /tmp/base 7d0476b``)::

    python benchmarks/bench_seal_constrained.py subset /tmp/sealm/new.jsonl
    (cd /tmp/base && PYTHONPATH=src python $OLDPWD/benchmarks/bench_seal_constrained.py subset /tmp/sealm/old.jsonl)
    (cd /tmp/base && PYTHONPATH=src toollab eval --model bundled:smollm2-135m --data /tmp/sealm/old.jsonl \\
        --format toollab --constrained --max-tokens 160 --out /tmp/sealm/run_old)
    toollab eval --model bundled:smollm2-135m --data /tmp/sealm/new.jsonl --format toollab \\
        --constrained --max-tokens 160 --out /tmp/sealm/run_new
    python benchmarks/bench_seal_constrained.py score /tmp/sealm/new.jsonl /tmp/sealm/run_old /tmp/sealm/run_new

``subset`` writes every 8th instance of ``test_out_domain`` (with upstream's offered tools) as
toollab JSONL; ``score`` counts Tool / Param F1 by the upstream rule from each run's parsed calls
(the json template's calls, so the Seal-Tools output format plays no part), overall and for the
single-call and multi-call instances.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections import defaultdict
from pathlib import Path

SHARED = Path(
    os.environ.get("TOOLLAB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def subset(out: str) -> None:
    from toollab.data import load_dataset

    ds = load_dataset(SHARED / "seal-tools", "seal-tools", splits="test_out_domain")
    with open(out, "w", encoding="utf-8") as f:
        for inst in list(ds)[::8]:
            f.write(inst.model_dump_json() + "\n")


def score(data: str, *runs: str) -> None:
    from toollab.data import load_dataset
    from toollab.eval.metrics.seal_tools import SealCounts, count_instance, seal_gold
    from toollab.eval.store import read_predictions

    insts = {i.id: i for i in load_dataset(data, "toollab").instances}
    for run in runs:
        by: dict[str, SealCounts] = defaultdict(SealCounts)
        calls_made: dict[str, list[int]] = defaultdict(list)
        for p in read_predictions(Path(run) / "predictions.jsonl"):
            inst = insts[p.id]
            ok = p.parsed is not None and not p.parsed.is_error
            calls = [c.to_seal() for c in p.parsed.calls] if ok and p.parsed else None
            counts = count_instance(calls, seal_gold(inst))
            group = "single" if inst.category == "single" else "multi"
            for key in ("all", group):
                by[key].add(counts)
                calls_made[key].append(len(calls or []))
        for key in ("all", "single", "multi"):
            fig = {k: None if v is None else round(v, 3) for k, v in by[key].figures().items()}
            mean = sum(calls_made[key]) / len(calls_made[key])
            print(f"{run}\t{key}\tn={len(calls_made[key])}\tmean calls {mean:.2f}\t{fig}")


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    verb, *rest = sys.argv[1:]
    subset(*rest) if verb == "subset" else score(*rest)
