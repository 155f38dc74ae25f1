"""The environment suite behind ``toollab bench``.

For each environment: generate its test split (API combinations unseen in training), run it
through the evaluation runner (model -> agent -> template -> parse -> execute in the
environment), and summarise per environment:

* **success** — Call instances whose final state equals a label's (dict-F1 == 1);
* **crash rate** — Call instances whose program did not execute (or could not be parsed);
* **dict-F1** — mean F1 between the predicted and the best label's final state (Call instances);
* **Tool F1 / Param F1** — micro F1 of predicted calls against the reference calls (one-to-one
  matching by name, then equal argument values; numbers compare by value, so ``185`` matches
  ``185.0``; an argument also matches any of the gold call's ``acceptable`` values), over every
  instance; a parameter one side states at its schema default and the other leaves out counts
  as stated alike on both sides (``k=3`` vs. no ``k``), defaults neither side mentions are not
  counted; the reference is whichever of the
  gold program and its acceptable alternatives scores best for the instance (success accepts
  them too);
* **decision accuracy** — call vs. no call against the DEER label (Call vs. NoCall / NoSearch);
* **LCS** — household only: the VirtualHome plan similarity to the closest reference.

Everything runs offline on the bundled model by default.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from toollab.envs.base import same_value
from toollab.eval.record import Prediction
from toollab.schema import Decision, Instance, Tool, ToolCall

DEFAULT_MODEL = "bundled:smollm2-135m"
#: test instances per environment in a default run (sized to finish in ~10 min on 2 CPU cores)
DEFAULT_LIMIT = 6
#: generation budget per environment: room for about 90 % of the test split's gold programs in
#: the json template (SmolLM2 tokens, seed 0: home_search p90 191, trip_booking p90 250,
#: household p90 203; every other environment's longest gold program is at most 92)
MAX_TOKENS: dict[str, int] = {"home_search": 208, "trip_booking": 256, "household": 208}
DEFAULT_MAX_TOKENS = 96
#: size of the training set the test split's API complexity is measured against
REFERENCE_TRAIN = 100


@dataclass
class EnvSummary:
    env: str
    n: int
    n_call: int
    success: float | None
    crash_rate: float | None
    dict_f1: float | None
    tool_f1: float | None
    param_f1: float | None
    decision_acc: float | None
    lcs: float | None = None
    seconds: float = 0.0
    run_dir: str = ""
    api_complexity: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class BenchResult:
    model: str
    agent: str | None
    constrained: bool
    limit: int
    seed: int
    envs: list[EnvSummary] = field(default_factory=list)
    wall_s: float = 0.0
    report: str | None = None
    out: str = ""

    def overall(self) -> dict[str, float | None]:
        keys = ("success", "crash_rate", "dict_f1", "tool_f1", "param_f1", "decision_acc")
        out: dict[str, float | None] = {}
        for k in keys:
            vals = [getattr(e, k) for e in self.envs if getattr(e, k) is not None]
            out[k] = round(sum(vals) / len(vals), 4) if vals else None
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "agent": self.agent,
            "constrained": self.constrained,
            "limit": self.limit,
            "seed": self.seed,
            "wall_s": round(self.wall_s, 2),
            "out": self.out,
            "report": self.report,
            "overall": self.overall(),
            "envs": {e.env: e.as_dict() for e in self.envs},
        }


# -- per-call matching ------------------------------------------------------------------------------
def _arg_matches(value: Any, gold: ToolCall, key: str) -> bool:
    if key not in gold.arguments:
        return False
    ok = [gold.arguments[key], *getattr(gold, "acceptable", {}).get(key, [])]
    return any(same_value(value, v) for v in ok)


def _filled(
    pred: ToolCall, gold: ToolCall, tools: Mapping[str, Tool]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two calls' arguments with a schema default filled in on each side for every
    parameter that the other side states (so ``k=3`` stated and ``k`` left out at its default
    of 3 agree, while defaults neither side mentions are not counted)."""
    tool = tools.get(gold.name)
    if tool is None:
        return dict(pred.arguments), dict(gold.arguments)
    defaults = {
        k: spec["default"]
        for k, spec in tool.properties.items()
        if isinstance(spec, dict) and "default" in spec
    }
    said = set(pred.arguments) | set(gold.arguments)
    fill = {k: v for k, v in defaults.items() if k in said}
    return {**fill, **pred.arguments}, {**fill, **gold.arguments}


def call_counts(
    pred: Sequence[ToolCall],
    gold: Sequence[ToolCall],
    tools: Mapping[str, Tool] | None = None,
) -> tuple[int, int, int, int, int, int]:
    """(correct tools, predicted tools, gold tools, correct params, predicted params, gold params).

    Calls are matched one to one: each gold call takes the not-yet-matched predicted call of the
    same name that agrees on the most argument values (a value agrees when it equals the gold
    value or one of the gold call's ``acceptable`` values; numbers by value).  With ``tools``
    (name -> offered tool) a matched pair has the schema defaults filled in on both sides for
    the parameters either side states (:func:`_filled`) before its parameters are counted.
    """
    tools = tools or {}
    free = list(range(len(pred)))
    ct = cp = pp = gp = 0
    for g in gold:
        best: int | None = None
        best_score = -1
        best_args: tuple[dict[str, Any], dict[str, Any]] = ({}, dict(g.arguments))
        for j in free:
            if pred[j].name != g.name:
                continue
            p_args, g_args = _filled(pred[j], g, tools)
            filled = g.model_copy(update={"arguments": g_args})
            score = sum(1 for k, v in p_args.items() if _arg_matches(v, filled, k))
            if score > best_score:
                best, best_score, best_args = j, score, (p_args, g_args)
        gp += len(best_args[1])
        if best is not None:
            free.remove(best)
            ct += 1
            cp += best_score
            pp += len(best_args[0])
    pp += sum(len(pred[j].arguments) for j in free)
    return ct, len(pred), len(gold), cp, pp, gp


def best_call_counts(
    pred: Sequence[ToolCall],
    references: Sequence[Sequence[ToolCall]],
    tools: Mapping[str, Tool] | None = None,
) -> tuple[int, int, int, int, int, int]:
    """:func:`call_counts` against the reference program that suits ``pred`` best: the highest
    Tool F1 + Param F1 for this instance, the first (the gold program) on a tie.  Without any
    reference (a NoCall / NoSearch instance) the counts are those against an empty program."""
    best: tuple[int, int, int, int, int, int] | None = None
    best_score = -1.0
    for ref in references or [[]]:
        counts = call_counts(pred, ref, tools)
        ct, pt, gt, cp, pp, gp = counts
        score = (_f1(ct, pt, gt) or 0.0) + (_f1(cp, pp, gp) or 0.0)
        if score > best_score:
            best, best_score = counts, score
    assert best is not None
    return best


def _f1(correct: int, predicted: int, gold: int) -> float | None:
    if predicted == 0 and gold == 0:
        return None
    p = correct / predicted if predicted else 0.0
    r = correct / gold if gold else 0.0
    return 2 * p * r / (p + r) if p + r else 0.0


def _mean(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def summarise(env: str, instances: Sequence[Instance], preds: Sequence[Prediction]) -> EnvSummary:
    """The per-environment figures from a run's predictions."""
    by_id = {p.id: p for p in preds if p.repeat == 0}
    succ: list[float] = []
    crash: list[float] = []
    f1s: list[float] = []
    lcs: list[float] = []
    decision: list[float] = []
    totals = Counter[str]()
    for inst in instances:
        pred = by_id.get(inst.id)
        calls = list(pred.parsed.calls) if pred is not None and pred.parsed is not None else []
        ex = (pred.execution if pred is not None else None) or {}
        is_call = inst.label() is Decision.CALL
        made_call = bool(calls)
        if pred is not None and pred.parsed is not None and pred.parsed.decision is not None:
            made_call = pred.parsed.decision is Decision.CALL
        decision.append(float(made_call == is_call))
        refs = [list(inst.gold), *[list(a) for a in inst.alternatives]] if inst.gold else []
        ct, pt, gt, cp, pp, gp = best_call_counts(calls, refs, {t.name: t for t in inst.tools})
        totals.update({"ct": ct, "pt": pt, "gt": gt, "cp": cp, "pp": pp, "gp": gp})
        if not is_call:
            continue
        crashed = pred is None or bool(pred.error) or bool(ex.get("crashed")) or not ex
        crash.append(float(crashed))
        ok = (not crashed) and bool(ex.get("success"))
        succ.append(float(ok))
        f1s.append(0.0 if crashed else float(ex.get("f1") or 0.0))
        if env == "household":
            lcs.append(_household_lcs(calls, inst))
    return EnvSummary(
        env=env,
        n=len(instances),
        n_call=len(succ),
        success=_mean(succ),
        crash_rate=_mean(crash),
        dict_f1=_mean(f1s),
        tool_f1=_round(_f1(totals["ct"], totals["pt"], totals["gt"])),
        param_f1=_round(_f1(totals["cp"], totals["pp"], totals["gp"])),
        decision_acc=_mean(decision),
        lcs=_mean(lcs) if env == "household" else None,
    )


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def _household_lcs(calls: list[ToolCall], inst: Instance) -> float:
    from toollab.envs.household import HouseholdEnv

    refs: list[Sequence[ToolCall]] = [inst.gold, *inst.alternatives]
    return HouseholdEnv().plan_lcs(calls, refs)


# -- the suite ----------------------------------------------------------------------------------------
class Progress(Protocol):
    """What :func:`run_bench` reports to."""

    def env_started(self, env: str, total: int) -> Any:
        """An environment starts; returns the runner's progress sink for it (or None)."""

    def env_finished(self, summary: EnvSummary) -> None: ...


def run_bench(
    *,
    model: str = DEFAULT_MODEL,
    agent: str | None = None,
    template: str | None = None,
    envs: Sequence[str] | None = None,
    limit: int = DEFAULT_LIMIT,
    out: str | Path = "runs/bench",
    seed: int = 0,
    constrained: bool = True,
    max_tokens: int | None = None,
    progress: Progress | None = None,
    model_factory: Callable[[str], Any] | None = None,
) -> BenchResult:
    """Run the environment suite and write ``bench.json`` (+ the HTML report) into ``out``."""
    from toollab.envs.base import env_class, env_names
    from toollab.envs.generate import generate, split_complexity
    from toollab.eval.runner import EvalConfig, run_eval
    from toollab.eval.store import read_predictions

    t0 = time.perf_counter()
    names = list(envs) if envs else env_names()
    for name in names:
        env_class(name)  # unknown name -> did-you-mean before any work
    out = Path(out)
    load = model_factory or _load_model
    active = load(model)  # a bad model string fails here, before anything is written
    (out / "data").mkdir(parents=True, exist_ok=True)
    use_constraints = constrained and bool(getattr(active, "supports_constraints", False))
    result = BenchResult(
        model=model, agent=agent, constrained=use_constraints, limit=limit, seed=seed, out=str(out)
    )
    run_dirs: list[Path] = []
    try:
        for name in names:
            e0 = time.perf_counter()
            insts = generate(name, "test", limit, seed)
            data = out / "data" / f"{name}.jsonl"
            data.write_text("".join(i.model_dump_json() + "\n" for i in insts), encoding="utf-8")
            cfg = EvalConfig(
                model=model,
                data=str(data),
                format="toollab",
                agent=agent,
                template=template,
                constrained=use_constraints,
                seed=seed,
                max_tokens=max_tokens or MAX_TOKENS.get(name, DEFAULT_MAX_TOKENS),
            )
            run_dir = out / "runs" / name
            sink = progress.env_started(name, len(insts)) if progress is not None else None
            run_eval(cfg, run_dir, model=active, progress=sink)
            preds = read_predictions(run_dir / "predictions.jsonl")
            summary = summarise(name, insts, preds)
            summary.seconds = round(time.perf_counter() - e0, 2)
            summary.run_dir = str(run_dir)
            train = generate(name, "train", REFERENCE_TRAIN, seed, (1, 0, 0))
            summary.api_complexity = split_complexity(name, insts, train)
            result.envs.append(summary)
            run_dirs.append(run_dir)
            if progress is not None:
                progress.env_finished(summary)
    finally:
        close = getattr(active, "close", None)
        if callable(close):
            close()
    result.wall_s = time.perf_counter() - t0
    result.report = _write_report(run_dirs, out)
    (out / "bench.json").write_text(json.dumps(result.as_dict(), indent=2), encoding="utf-8")
    return result


def _load_model(spec: str) -> Any:
    from toollab.models.registry import load_model

    return load_model(spec)


def _write_report(run_dirs: list[Path], out: Path) -> str | None:
    if not run_dirs:
        return None
    from toollab.report import write_report

    html, _md, _runs = write_report(
        [str(d) for d in run_dirs],
        out / "report.html",
        title="toollab bench: executable environments",
    )
    return str(html)
