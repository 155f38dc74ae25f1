"""Constrained decoding with the bundled model on BFCL: what each call policy changes.

Every instance is prompted the same way (toollab's ``json`` template) and decoded under:

* ``unconstrained``  — free text, read with the ``json`` parser;
* ``naive``          — an array of calls, possibly empty, repeats kept (syntax only);
* ``naive_first``    — the same outputs as ``naive``, keeping only the first call;
* ``one_call``       — the task's shape without a decision: exactly one call object for
  single-call categories, a 1..8 array cut at the first repeat for parallel ones;
* ``decision_first`` — the same shape behind an explicit ``{"decision": "call" | "no_call"}``
  first property (the answer for irrelevance).

Figures per variant (and per category): ``valid_call`` (≥1 call, every call names an offered tool
with schema-valid arguments), ``empty`` (no call), ``error`` (unreadable), ``repeat`` (the raw
output repeats an identical call), ``hit_max_tokens``, ``name_args`` (names and required
arguments match the gold; no call on irrelevance) and ``ast`` (BFCL AST accuracy from
``toollab.eval.metrics.bfcl``, the calls rendered as BFCL Python calls).  These variants decode
without the repeat guard, to show what each shape does on its own.

``--parts repeat_guard`` measures the repeat guard: the first ``--guard-n`` BFCL ``parallel``
instances under the task's own multi-call plan (``CallPolicy.for_instance``: up to 16 calls,
repeats cut when read), decoded with ``stop_on_repeat`` off (``no_guard``) and on (``guard``:
llama.cpp stops at the first repeated call).  It reports the same figures plus
``stopped_at_repeat``, the completion tokens saved and how many answers parse to the same calls.

Usage::

    flock /tmp/toollab-heavy.lock python benchmarks/bench_constrained.py --n 50 --extra 5 --max-tokens 128
    flock /tmp/toollab-heavy.lock python benchmarks/bench_constrained.py --parts repeat_guard --guard-n 10 --max-tokens 128
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import jsonschema

from toollab.data import load_dataset
from toollab.eval.metrics.bfcl import bfcl_answers, bfcl_category, bfcl_docs, check_entry
from toollab.models.base import ChatRequest, GenerateOptions, ModelOutput, run_sync
from toollab.models.constrain import arguments_schema
from toollab.models.llamacpp import LlamaCppModel
from toollab.models.policy import CallPolicy, ConstraintPlan, parse_constrained
from toollab.parsing import ParseResult, ParseStatus
from toollab.schema import Instance, ToolCall
from toollab.templates import JsonTemplate, PythonTemplate

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "bfcl"
VARIANTS = ["unconstrained", "naive", "naive_first", "one_call", "decision_first"]
GUARD_VARIANTS = ["no_guard", "guard"]
PARTS = ("variants", "repeat_guard")


def shape_policy(inst: Instance, *, decision: bool) -> CallPolicy:
    multi = "parallel" in (inst.category or "")
    return CallPolicy(
        allow_no_call=decision, decision="inline", max_calls=8 if multi else 1, repetition="stop"
    )


def _norm(v: Any) -> Any:
    if isinstance(v, str):
        return "".join(ch for ch in v.lower() if ch not in " ,./-_*^")
    if isinstance(v, list | tuple):
        return [_norm(x) for x in v]
    return v


def name_args_match(inst: Instance, calls: list[ToolCall]) -> bool:
    """Names match the gold (as a multiset) and every required argument has an acceptable value."""
    if not inst.gold:
        return not calls
    if sorted(c.name for c in calls) != sorted(g.name for g in inst.gold):
        return False
    free = list(calls)
    for gold in inst.gold:
        tool = inst.tool(gold.name)
        required = tool.required if tool else list(gold.arguments)
        for i, call in enumerate(free):
            if call.name != gold.name:
                continue
            ok = True
            for p in required:
                accepted = gold.acceptable.get(p, [gold.arguments.get(p)])
                if p not in call.arguments or _norm(call.arguments[p]) not in [
                    _norm(a) for a in accepted
                ]:
                    ok = False
                    break
            if ok:
                free.pop(i)
                break
        else:
            return False
    return True


def valid_calls(inst: Instance, calls: list[ToolCall]) -> bool:
    if not calls:
        return False
    for call in calls:
        tool = inst.tool(call.name)
        if tool is None:
            return False
        try:
            jsonschema.validate(call.model_dump(mode="json")["arguments"], arguments_schema(tool))
        except jsonschema.ValidationError:
            return False
    return True


def has_repeat(result: ParseResult) -> bool:
    keys = [
        json.dumps([c.name, c.model_dump(mode="json")["arguments"]], sort_keys=True)
        for c in result.calls
    ]
    return len(keys) != len(set(keys))


def score(
    inst: Instance, out: ModelOutput, result: ParseResult, raw_calls: ParseResult
) -> dict[str, Any]:
    calls = list(result.calls) if result.status is ParseStatus.CALLS else []
    text = PythonTemplate().render_calls(calls) if calls else ""
    ast = check_entry(text, bfcl_category(inst), bfcl_docs(inst), bfcl_answers(inst))
    return {
        "valid_call": valid_calls(inst, calls),
        "empty": result.status is ParseStatus.NO_CALL,
        "error": result.status is ParseStatus.ERROR,
        "repeat": has_repeat(raw_calls),
        "hit_max_tokens": out.finish_reason == "length",
        "name_args": name_args_match(inst, calls),
        "ast": bool(ast["valid"]),
        "tokens": out.usage.completion_tokens,
        "seconds": out.timings.total_s,
    }


def pick(instances: list[Instance], n: int, extra: int) -> list[Instance]:
    by_cat: dict[str, list[Instance]] = defaultdict(list)
    for inst in instances:
        by_cat[inst.category or ""].append(inst)
    chosen = by_cat["simple_python"][:n]
    for cat in ("multiple", "parallel", "irrelevance"):
        chosen += by_cat[cat][:extra]
    return chosen


def _asker(model: LlamaCppModel, inst: Instance, msgs: list[dict[str, Any]]) -> Any:
    def ask(opts: GenerateOptions) -> ModelOutput:
        out: ModelOutput = run_sync(
            model.safe_request(
                ChatRequest(messages=msgs, tools=inst.tools, options=opts, tag=inst.id)
            )
        )
        return out

    return ask


def repeat_guard_rows(
    model: LlamaCppModel, instances: list[Instance], base: GenerateOptions
) -> list[dict[str, Any]]:
    """Each instance under its own multi-call plan, without and with the repeat guard.

    Every prompt is evaluated in full (no prefix reuse): a prompt partly served from the KV
    cache gets logits that differ in the last bits, enough to flip a near-tie and make the two
    greedy texts diverge for reasons that have nothing to do with the guard.  So both sides see
    identical logits, the guarded text is a prefix of the unguarded one, and both pay the same
    prompt time.
    """
    tpl = JsonTemplate()
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    reuse, model.prefix_reuse = model.prefix_reuse, False
    try:
        for k, inst in enumerate(instances):
            rows += _guard_pair(model, tpl, inst, base)
            print(
                f"[guard {k + 1}/{len(instances)}] {inst.id} {time.perf_counter() - t0:.0f}s",
                file=sys.stderr,
            )
    finally:
        model.prefix_reuse = reuse
    return rows


def _guard_pair(
    model: LlamaCppModel, tpl: JsonTemplate, inst: Instance, base: GenerateOptions
) -> list[dict[str, Any]]:
    """One instance decoded without and with the guard."""
    ask = _asker(model, inst, tpl.messages(inst))
    plan = ConstraintPlan(inst.tools, CallPolicy.for_instance(inst))
    keep = plan.policy.model_copy(update={"repetition": "keep"})
    # compile the schema's grammar before timing (it is cached), so neither side pays for it
    model._grammar(ChatRequest(options=plan.options(base)))
    rows: list[dict[str, Any]] = []
    for variant in GUARD_VARIANTS:
        opts = plan.options(base).model_copy(update={"stop_on_repeat": variant == "guard"})
        out = ask(opts)
        res = plan.parse(out.text)
        rows.append(
            {
                "id": inst.id,
                "category": inst.category,
                "variant": variant,
                "raw": out.text,
                "finish_reason": out.finish_reason,
                "calls": [c.model_dump(mode="json") for c in res.calls],
                **score(inst, out, res, parse_constrained(out.text, keep)),
            }
        )
    return rows


def summarise_guard(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = summarise(rows, GUARD_VARIANTS)
    for variant in GUARD_VARIANTS:
        rs = [r for r in rows if r["variant"] == variant]
        if rs:
            stopped = sum(r["finish_reason"] == "repeat" for r in rs)
            out[variant]["stopped_at_repeat"] = round(stopped / len(rs), 3)
            out[variant]["total_tokens"] = sum(r["tokens"] for r in rs)
            out[variant]["total_s"] = round(sum(r["seconds"] for r in rs), 1)
    off = {r["id"]: r for r in rows if r["variant"] == "no_guard"}
    on = {r["id"]: r for r in rows if r["variant"] == "guard"}
    both = [i for i in off if i in on]
    if both:
        before = sum(off[i]["tokens"] for i in both)
        after = sum(on[i]["tokens"] for i in both)
        out["tokens_saved"] = round(1 - after / before, 3) if before else 0.0
        out["same_calls"] = f"{sum(off[i]['calls'] == on[i]['calls'] for i in both)}/{len(both)}"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="BFCL data folder")
    ap.add_argument("--n", type=int, default=50, help="simple_python instances")
    ap.add_argument(
        "--extra", type=int, default=5, help="instances of multiple / parallel / irrelevance each"
    )
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--model", type=Path, default=None, help="GGUF (default: the bundled model)")
    ap.add_argument(
        "--parts",
        default=",".join(PARTS),
        help=f"comma-separated parts to run: {', '.join(PARTS)}",
    )
    ap.add_argument(
        "--guard-n", type=int, default=10, help="BFCL parallel instances for the repeat guard"
    )
    ap.add_argument(
        "--out", type=Path, default=None, help="also write per-instance rows here (JSONL)"
    )
    args = ap.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        ap.error(f"unknown part(s) {', '.join(unknown)}; known: {', '.join(PARTS)}")

    everything = load_dataset(args.data, "bfcl").instances
    model = LlamaCppModel(args.model, n_ctx=4096)
    base = GenerateOptions(max_tokens=args.max_tokens)
    t0 = time.perf_counter()
    report: dict[str, Any] = {"model": str(model.path.name), "max_tokens": args.max_tokens}
    rows: list[dict[str, Any]] = []
    if "variants" in parts:
        instances = pick(everything, args.n, args.extra)
        variant_rows = variant_rows_for(model, instances, base)
        rows += variant_rows
        report["n_instances"] = len(instances)
        report["overall"] = summarise(variant_rows)
        report["by_category"] = {
            cat: summarise([r for r in variant_rows if r["category"] == cat])
            for cat in sorted({str(r["category"]) for r in variant_rows})
        }
    if "repeat_guard" in parts:
        parallel = [i for i in everything if i.category == "parallel"][: args.guard_n]
        guard_rows = repeat_guard_rows(model, parallel, base)
        rows += guard_rows
        report["repeat_guard"] = {"n_instances": len(parallel), **summarise_guard(guard_rows)}
    model.close()
    report["wall_s"] = round(time.perf_counter() - t0, 1)
    if args.out:
        args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(json.dumps(report, indent=2))


def variant_rows_for(
    model: LlamaCppModel, instances: list[Instance], base: GenerateOptions
) -> list[dict[str, Any]]:
    """Every instance under each variant (no repeat guard)."""
    tpl = JsonTemplate()
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for k, inst in enumerate(instances):
        ask = _asker(model, inst, tpl.messages(inst))
        free = ask(base)
        res = tpl.parse(free.text)
        rows.append(
            {
                "id": inst.id,
                "category": inst.category,
                "variant": "unconstrained",
                "raw": free.text,
                **score(inst, free, res, res),
            }
        )

        naive = CallPolicy.naive()
        out = ask(base.model_copy(update={"json_schema": _schema(inst, naive)}))
        keep = parse_constrained(out.text, naive)
        rows.append(
            {
                "id": inst.id,
                "category": inst.category,
                "variant": "naive",
                "raw": out.text,
                **score(inst, out, keep, keep),
            }
        )
        first = parse_constrained(out.text, CallPolicy.naive_first())
        rows.append(
            {
                "id": inst.id,
                "category": inst.category,
                "variant": "naive_first",
                "raw": out.text,
                **score(inst, out, first, keep),
            }
        )

        for variant, decision in (("one_call", False), ("decision_first", True)):
            policy = shape_policy(inst, decision=decision)
            out = ask(base.model_copy(update={"json_schema": _schema(inst, policy)}))
            res = parse_constrained(out.text, policy)
            raw_calls = parse_constrained(
                out.text, policy.model_copy(update={"repetition": "keep"})
            )
            rows.append(
                {
                    "id": inst.id,
                    "category": inst.category,
                    "variant": variant,
                    "raw": out.text,
                    **score(inst, out, res, raw_calls),
                }
            )
        print(
            f"[{k + 1}/{len(instances)}] {inst.id} {time.perf_counter() - t0:.0f}s", file=sys.stderr
        )
    return rows


def _schema(inst: Instance, policy: CallPolicy) -> dict[str, Any]:
    from toollab.models.constrain import build_schema

    return build_schema(inst.tools, policy)


def summarise(
    rows: list[dict[str, Any]], variants: list[str] = VARIANTS
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for variant in variants:
        rs = [r for r in rows if r["variant"] == variant]
        if not rs:
            continue
        n = len(rs)
        out[variant] = {"n": n}
        for key in ("valid_call", "empty", "error", "repeat", "hit_max_tokens", "name_args", "ast"):
            out[variant][key] = round(sum(bool(r[key]) for r in rs) / n, 3)
        out[variant]["mean_tokens"] = round(sum(r["tokens"] for r in rs) / n, 1)
        out[variant]["mean_s"] = round(sum(r["seconds"] for r in rs) / n, 2)
    return out


if __name__ == "__main__":
    main()
