"""Scoring speed: 10,000 predictions (Seal-Tools, BFCL and DEER gold plus perturbed outputs).

Writes the predictions to a temporary ``predictions.jsonl``, then times (1) loading the file
alone and (2) scoring it with every rule-based scorer that applies.  Prints one JSON object.

    python benchmarks/bench_scoring.py [--data ../shared/data] [--n 10000]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from toollab.data import load_dataset
from toollab.eval.metrics import applicable_scorers
from toollab.eval.metrics.bfcl import bfcl_docs
from toollab.eval.metrics.deer import deer_forced_prefix, deer_gold_chain
from toollab.eval.record import Prediction, Step
from toollab.schema import Instance

ROUND1 = "#Begin# Need to look up the API Pool. #SearchAPI#"


def _first(vals: list[Any]) -> Any:
    opts = [v for v in vals if v != ""]
    v = opts[0] if opts else None
    if isinstance(v, dict):
        return {k: _first(x if isinstance(x, list) else [x]) for k, x in v.items()}
    return v


def seal_output(inst: Instance, rng: random.Random) -> str:
    calling = json.loads(json.dumps(inst.metadata["calling"]))
    r = rng.random()
    if r < 0.2 and calling and calling[0]["parameters"]:
        calling[0]["parameters"].pop(next(iter(calling[0]["parameters"])))
    elif r < 0.3 and calling:
        calling[0]["api"] += "X"
    elif r < 0.4:
        return "I would call " + repr(calling)
    return json.dumps(calling) if r < 0.7 else repr(calling)


def bfcl_output(inst: Instance, rng: random.Random) -> str:
    docs = {d["name"]: d for d in bfcl_docs(inst)}
    calls = []
    for g in inst.gold:
        props = docs.get(g.name, {}).get("parameters", {}).get("properties", {})
        args = [
            f"{k}={_first(v)!r}"
            for k, v in g.acceptable.items()
            if [x for x in v if x != ""] and not ("" in v and k not in props)
        ]
        calls.append(f"{g.name}({', '.join(args)})")
    r = rng.random()
    if r < 0.15 and calls:
        calls[0] = "wrong_" + calls[0]
    elif r < 0.25:
        return "Sure! " + ", ".join(calls)
    return "[" + ", ".join(calls) + "]" if calls else "I cannot answer that."


def deer_steps(inst: Instance, rng: random.Random) -> list[Step]:
    chain = deer_gold_chain(inst)
    if "#SearchAPI#" not in chain:
        return [Step(role="assistant", text=chain)]
    rest = chain[len(deer_forced_prefix(chain)) :]
    second = (
        rest.split("#APIResponse#")[0] + "#APIResponse#"
        if "#APIResponse#" in rest
        else "NoCallAPI#"
    )
    if rng.random() < 0.3:
        second = "CallAPI# other_tool(x=1) #APIResponse#"
    return [Step(role="assistant", text=ROUND1), Step(role="assistant", text=second)]


def build(data: Path, n: int, seed: int) -> tuple[dict[str, Instance], list[Prediction]]:
    rng = random.Random(seed)
    seal = load_dataset(data / "seal-tools", "seal-tools").instances
    bfcl = load_dataset(data / "bfcl", "bfcl").instances
    deer = load_dataset(data / "deer" / "test.json", "deer").instances
    instances = {i.id: i for i in [*seal, *bfcl, *deer]}
    plan = [(seal, 0.4), (bfcl, 0.4), (deer, 0.2)]
    preds: list[Prediction] = []
    for pool, share in plan:
        for k in range(int(n * share)):
            inst = pool[k % len(pool)]
            rep = k // len(pool)
            if inst.source == "seal-tools":
                preds.append(Prediction(id=inst.id, repeat=rep, raw=seal_output(inst, rng)))
            elif inst.source == "bfcl":
                preds.append(Prediction(id=inst.id, repeat=rep, raw=bfcl_output(inst, rng)))
            else:
                steps = deer_steps(inst, rng)
                preds.append(
                    Prediction(
                        id=inst.id, repeat=rep, raw="".join(s.text for s in steps), steps=steps
                    )
                )
    return instances, preds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    instances, preds = build(args.data, args.n, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "predictions.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for p in preds:
                fh.write(p.model_dump_json(exclude_none=True) + "\n")
        size = path.stat().st_size
        t0 = time.perf_counter()
        with path.open(encoding="utf-8") as fh:
            loaded = [Prediction.model_validate_json(line) for line in fh if line.strip()]
        load_s = time.perf_counter() - t0

    scorers = [s for s in applicable_scorers(instances) if "judge" not in s.needs]
    timings: dict[str, float] = {}
    headline: dict[str, Any] = {}
    t1 = time.perf_counter()
    for sc in scorers:
        ts = time.perf_counter()
        res = sc.score(loaded, instances)
        timings[sc.name] = round(time.perf_counter() - ts, 3)
        headline[sc.name] = {k: round(v, 4) for k, v in res.metrics.items() if v is not None}
    score_s = time.perf_counter() - t1
    print(
        json.dumps(
            {
                "predictions": len(loaded),
                "file_mb": round(size / 1e6, 2),
                "load_s": round(load_s, 3),
                "score_s": round(score_s, 3),
                "total_s": round(load_s + score_s, 3),
                "goal_s": 10.0,
                "per_scorer_s": timings,
                "metrics": headline,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
