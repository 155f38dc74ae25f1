"""Scoring speed: 10,000 predictions scored with every rule-based scorer.

The predictions cover every rule-based scorer and its corrected variant: Seal-Tools, BFCL and
DEER gold plus perturbed outputs, the DEER baseline sets, ToolEyes ReAct traces over the real
ToolEyes tools (the rule part: IF and tool reality), execution records of environment programs,
alpha-UMi steps and general-dialogue answers — the last two with real prose (DEER's plugin
descriptions) as references and perturbed copies as outputs.  They are written to a temporary
``predictions.jsonl``; the benchmark times (1) loading the file alone and (2) scoring it with every
scorer that applies, variants included (``applicable_scorers(include_variants=True)``, no judge).

``--text-scale`` adds the text-overlap scorers alone at 10,000 predictions of 50 and 150 words
(dialogue: BLEU + ROUGE-1/2/L; alpha-UMi: Rouge-L over conclusion steps), with toollab's exact
implementation and, on 1,000 predictions, with the ``rouge`` / ``sacrebleu`` packages.

Prints one JSON object.

    python benchmarks/bench_scoring.py [--data ../shared/data] [--n 10000] [--text-scale]
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
from toollab.eval.metrics import applicable_scorers, get_scorer
from toollab.eval.metrics.bfcl import bfcl_docs
from toollab.eval.metrics.deer import deer_forced_prefix, deer_gold_chain
from toollab.eval.record import Prediction, Step
from toollab.schema import Decision, GoldCall, Instance

ROUND1 = "#Begin# Need to look up the API Pool. #SearchAPI#"
#: share of the predictions per family (sums to 1)
PLAN = {
    "seal-tools": 0.25,
    "bfcl": 0.25,
    "deer": 0.13,
    "deer-baseline": 0.03,
    "tooleyes": 0.10,
    "env": 0.07,
    "alpha-umi": 0.10,
    "dialogue": 0.07,
}


def _first(vals: list[Any]) -> Any:
    opts = [v for v in vals if v != ""]
    v = opts[0] if opts else None
    if isinstance(v, dict):
        return {k: _first(x if isinstance(x, list) else [x]) for k, x in v.items()}
    return v


def perturb(text: str, rng: random.Random, rate: float = 0.15) -> str:
    """A related text: words dropped, repeated and swapped."""
    out: list[str] = []
    for w in text.split(" "):
        r = rng.random()
        if r < rate:
            continue
        out.append(w)
        if r > 1 - rate / 2:
            out.append(w)
    if len(out) > 3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]
    return " ".join(out)


def prose(data: Path) -> list[str]:
    """Real English prose: DEER's plugin descriptions (model- and human-facing)."""
    tools = json.loads((data / "deer" / "tool.json").read_text(encoding="utf-8"))
    texts = [
        t[k]
        for t in tools
        for k in ("description_for_model", "description_for_human")
        if isinstance(t.get(k), str) and len(t[k].split()) >= 8
    ]
    return texts


def clip_words(text: str, lo: int, hi: int, rng: random.Random) -> str:
    words = text.split(" ")
    return " ".join(words[: rng.randint(lo, hi)])


# -- the families --------------------------------------------------------------------------------


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


def baseline_output(inst: Instance, rng: random.Random) -> str:
    labels = inst.metadata.get("api_label") or []
    wrong = rng.random() < 0.25
    if inst.label() is not Decision.CALL:
        if not wrong:
            return "Thought: none of these fit.\nAction: NoCallAPI\nAction Input: {}"
        return "Thought: I will call it.\nAction: some_api\nAction Input: {}"
    name = labels[0] if labels and not wrong else "some_other_api"
    return f"Thought: I will call it.\nAction: {name}\nAction Input: {{}}"


def tooleyes_trace(inst: Instance, rng: random.Random) -> list[Step]:
    """2-5 ReAct turns over the instance's real tools: correct calls, a missing or unknown
    parameter, a hallucinated tool, an unreadable Action Input; then ``finish``."""
    real = [t for t in inst.tools if t.name not in ("finish", "ask_to_user")] or inst.tools
    steps: list[Step] = []
    for _ in range(rng.randint(1, 4)):
        tool = rng.choice(real)
        args: dict[str, Any] = {p: "x" for p in tool.required}
        r = rng.random()
        if r < 0.15 and args:
            args.pop(next(iter(args)))
        elif r < 0.25:
            args["bogus"] = 1
        name = tool.name + ("_v2" if 0.25 <= r < 0.32 else "")
        text = f"Thought: I use {name}.\nAction: {name}\nAction Input: {args!r}"
        if 0.32 <= r < 0.4:
            text = f"Thought: I use {name}.\nAction: {name}\nAction Input: {{city: Paris}}"
        steps.append(Step(role="assistant", text=text))
        steps.append(Step(role="observation", text='{"result": "ok"}'))
    answer = "Thought: done.\nAction: finish\nAction Input: {'answer': 'Here it is.'}"
    steps.append(Step(role="assistant", text=answer))
    return steps


ENV_KEYS = ["location", "buy_or_rent", "home_type", "min_price", "max_price", "bedrooms", "baths"]


def env_instances(n: int, rng: random.Random) -> list[Instance]:
    out = []
    for k in range(n):
        gold = [
            GoldCall(name=f"set_{key}", arguments={"value": rng.randint(1, 9)})
            for key in rng.sample(ENV_KEYS, rng.randint(2, len(ENV_KEYS)))
        ]
        out.append(
            Instance(id=f"env-{k}", query="find a home", gold=gold, source="env:home_search")
        )
    return out


def env_record(inst: Instance, rng: random.Random) -> dict[str, Any]:
    label = {g.name[4:]: g.arguments["value"] for g in inst.gold}
    state = dict(label)
    actions = [g.action_text() for g in inst.gold]
    r = rng.random()
    if r < 0.2:
        state[next(iter(state))] = 0
    elif r < 0.3:
        actions = actions[::-1]
    crashed = r > 0.92
    return {
        "state": None if crashed else state,
        "crashed": crashed,
        "labels_states": [label],
        "actions": actions,
    }


def alpha_umi_instances(
    n: int, texts: list[str], tools: list[str], rng: random.Random
) -> list[Instance]:
    out = []
    for k in range(n):
        names = rng.sample(tools, 5)
        r = rng.random()
        if r < 0.74:
            args = json.dumps(
                {"query": rng.choice(texts).split(" ")[0], "limit": rng.randint(1, 9)}
                if rng.random() < 0.8
                else {}
            )
            ref = f"assistant: I call it. Next: caller.</s>caller: Action: {names[0]}\nAction Input: {args}</s>"
        elif r < 0.93:
            ref = (
                "assistant: I have the answer. Next: conclusion.</s>conclusion: "
                f"{clip_words(rng.choice(texts), 30, 150, rng)}</s>"
            )
        else:
            ref = "assistant: I cannot do it. Next: give up."
        out.append(
            Instance(
                id=f"umi-{k}",
                query="q",
                source="alpha-umi",
                metadata={"reference": ref, "tool_names": names},
            )
        )
    return out


def alpha_umi_output(inst: Instance, rng: random.Random) -> str:
    ref: str = inst.metadata["reference"]
    r = rng.random()
    if "Next: caller" in ref:
        head, call = ref.split("</s>", 1)
        if r < 0.2:
            call = call.replace("Action: ", "Action: x_")
        elif r < 0.35:
            call = call.replace('"limit": ', '"limit": 1')
        return f"asssitant: {head[len('assistant: ') :]}</s>{call.replace('</s>', '')}"
    if "Next: conclusion" in ref:
        answer = ref.split("conclusion: ", 2)[-1].replace("</s>", "")
        if r < 0.1:
            return "asssitant: I call it. Next: caller.</s>caller: Action: x\nAction Input: {}"
        return f"asssitant: Done. Next: conclusion.</s>conclusion: {perturb(answer, rng)}"
    return "asssitant: I cannot. Next: give up." if r < 0.8 else "asssitant: Next: conclusion."


def dialogue_instances(n: int, texts: list[str], rng: random.Random) -> list[Instance]:
    return [
        Instance(
            id=f"dlg-{k}",
            query="q",
            source="dialogue",
            metadata={"reference_output": clip_words(rng.choice(texts), 30, 200, rng)},
        )
        for k in range(n)
    ]


def dialogue_output(inst: Instance, rng: random.Random, texts: list[str]) -> str:
    if rng.random() < 0.15:
        return clip_words(rng.choice(texts), 30, 200, rng)
    return perturb(inst.metadata["reference_output"], rng)


# -- building the file ---------------------------------------------------------------------------


def build(data: Path, n: int, seed: int) -> tuple[dict[str, Instance], list[Prediction]]:
    rng = random.Random(seed)
    texts = prose(data)
    deer_tools = [t["api_name"] for t in json.loads((data / "deer" / "tool.json").read_text())]
    counts = {k: int(n * share) for k, share in PLAN.items()}
    counts["seal-tools"] += n - sum(counts.values())
    pools: dict[str, list[Instance]] = {
        "seal-tools": load_dataset(data / "seal-tools", "seal-tools").instances,
        "bfcl": load_dataset(data / "bfcl", "bfcl").instances,
        "deer": load_dataset(data / "deer" / "test.json", "deer").instances,
        "deer-baseline": [
            *load_dataset(data / "deer" / "baselines" / "tool_bench.json", "deer").instances,
            *load_dataset(data / "deer" / "baselines" / "tool_corpus.json", "deer").instances,
        ],
        "tooleyes": load_dataset(data / "tooleyes", "tooleyes").instances,
        "env": env_instances(300, rng),
        "alpha-umi": alpha_umi_instances(counts["alpha-umi"], texts, deer_tools, rng),
        "dialogue": dialogue_instances(counts["dialogue"], texts, rng),
    }
    instances = {i.id: i for pool in pools.values() for i in pool}
    preds: list[Prediction] = []
    for family, pool in pools.items():
        for k in range(counts[family]):
            inst = pool[k % len(pool)]
            rep = k // len(pool)
            p = Prediction(id=inst.id, repeat=rep)
            if family == "seal-tools":
                p.raw = seal_output(inst, rng)
            elif family == "bfcl":
                p.raw = bfcl_output(inst, rng)
            elif family == "deer":
                p.steps = deer_steps(inst, rng)
                p.raw = "".join(s.text for s in p.steps)
            elif family == "deer-baseline":
                p.raw = baseline_output(inst, rng)
            elif family == "tooleyes":
                p.steps = tooleyes_trace(inst, rng)
                p.raw = p.steps[-1].text
                p.execution = {"ended_by": "finish"}
            elif family == "env":
                p.execution = env_record(inst, rng)
            elif family == "alpha-umi":
                p.raw = alpha_umi_output(inst, rng)
            else:
                p.raw = dialogue_output(inst, rng, texts)
            preds.append(p)
    return instances, preds


def score_file(instances: dict[str, Instance], preds: list[Prediction]) -> dict[str, Any]:
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

    scorers = applicable_scorers(instances, include_variants=True)
    timings: dict[str, float] = {}
    scored: dict[str, int] = {}
    headline: dict[str, Any] = {}
    t1 = time.perf_counter()
    for sc in scorers:
        ts = time.perf_counter()
        res = sc.score(loaded, instances)
        timings[sc.name] = round(time.perf_counter() - ts, 3)
        scored[sc.name] = res.counts.get("n", 0)
        headline[sc.name] = {k: round(v, 4) for k, v in res.metrics.items() if v is not None}
    score_s = time.perf_counter() - t1
    return {
        "predictions": len(loaded),
        "file_mb": round(size / 1e6, 2),
        "load_s": round(load_s, 3),
        "score_s": round(score_s, 3),
        "total_s": round(load_s + score_s, 3),
        "goal_s": 10.0,
        "predictions_per_scorer": scored,
        "per_scorer_s": timings,
        "metrics": headline,
    }


def text_scale(data: Path, seed: int) -> dict[str, Any]:
    """The text-overlap scorers alone: 10,000 predictions of ~50 and ~150 words."""
    rng = random.Random(seed)
    words = " ".join(prose(data)).split()
    out: dict[str, Any] = {}
    for length in (50, 150):

        def text(length: int = length) -> str:
            start = rng.randrange(len(words) - length)
            return " ".join(words[start : start + length])

        refs = [text() for _ in range(10_000)]
        hyps = [perturb(r, rng) if rng.random() < 0.85 else text() for r in refs]
        dlg = {
            f"d{k}": Instance(
                id=f"d{k}", query="q", source="dialogue", metadata={"reference_output": r}
            )
            for k, r in enumerate(refs)
        }
        umi = {
            f"u{k}": Instance(
                id=f"u{k}",
                query="q",
                source="alpha-umi",
                metadata={"reference": f"assistant: ok. Next: conclusion.</s>conclusion: {r}</s>"},
            )
            for k, r in enumerate(refs)
        }
        dlg_preds = [Prediction(id=f"d{k}", raw=h) for k, h in enumerate(hyps)]
        umi_preds = [
            Prediction(id=f"u{k}", raw=f"x. Next: conclusion.</s>conclusion: {h}")
            for k, h in enumerate(hyps)
        ]
        row: dict[str, Any] = {}
        for name, insts, preds in (("dialogue", dlg, dlg_preds), ("alpha_umi", umi, umi_preds)):
            figures = {}
            for backend, count in (("fast", 10_000), ("fast", 1_000), ("package", 1_000)):
                sub = {p.id: insts[p.id] for p in preds[:count]}
                t = time.perf_counter()
                res = get_scorer(name, backend=backend).score(preds[:count], sub)
                row[f"{name}_{backend}_{count}_s"] = round(time.perf_counter() - t, 3)
                figures[(backend, count)] = res.metrics
            row[f"{name}_1000_figures"] = figures[("package", 1_000)]
            row[f"{name}_1000_fast_equals_package"] = (
                figures[("fast", 1_000)] == figures[("package", 1_000)]
            )
        out[f"{length}_words"] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data"
    )
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--text-scale", action="store_true", help="also time the text scorers alone")
    args = ap.parse_args()

    instances, preds = build(args.data, args.n, args.seed)
    report = score_file(instances, preds)
    if args.text_scale:
        report["text_scale"] = text_scale(args.data, args.seed)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
