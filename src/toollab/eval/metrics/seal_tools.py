"""Seal-Tools: Format ACC, Tool P/R/F1 and Parameter P/R/F1.

``seal_tools`` is the upstream rule (``calculate_score_ToolLearning``), quirks included:

* the prediction is read by the upstream parser (``'`` → ``"`` swap, ``[{"api"`` search, the word
  ``responses`` must appear, ``json.loads``) — :func:`toollab.parsing.seal.seal_upstream_parse`;
* micro counts over the whole file; gold counts include format failures;
* each predicted call matches the **first** gold call with the same name (no one-to-one removal);
* a parameter is correct when its name is in that gold call and ``str(pred) == str(gold)``.

``seal_tools_strict`` is the corrected variant: the output is read by toollab's own ``seal``
parser (no quote swap, Python literals accepted) and every gold call is matched at most once.

Breakdown groups: ``single`` (1 gold call), ``multiple`` (more than one, nested included),
``nested`` (a parameter value is an ``API_call_N`` output label), ``easy`` / ``difficult`` (from
the id), and ``split:<name>`` when the instances carry a split.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, fields
from typing import Any

from toollab.eval.metrics.registry import MetricResult, Scorer, instance_key, prf, scorer
from toollab.parsing import parse
from toollab.parsing.seal import seal_upstream_parse
from toollab.schema import Instance
from toollab.schema.record import Prediction

_LABEL = re.compile(r"^API_call_\d+$")


@dataclass
class SealCounts:
    n: int = 0
    format_ok: int = 0
    gold_api: int = 0
    gold_param: int = 0
    pred_api: int = 0
    pred_param: int = 0
    correct_api: int = 0
    correct_param: int = 0

    def add(self, other: SealCounts) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def figures(self) -> dict[str, float | None]:
        tp, tr, tf = prf(self.correct_api, self.pred_api, self.gold_api)
        pp, pr, pf = prf(self.correct_param, self.pred_param, self.gold_param)
        return {
            "format_acc": self.format_ok / self.n if self.n else None,
            "tool_p": tp,
            "tool_r": tr,
            "tool_f1": tf,
            "param_p": pp,
            "param_r": pr,
            "param_f1": pf,
        }


def seal_gold(inst: Instance) -> list[dict[str, Any]]:
    """The instance's gold in the upstream ``calling`` form (``[{api, parameters, responses}]``)."""
    for meta in (inst.metadata, inst.metadata.get("raw")):
        if isinstance(meta, dict) and isinstance(meta.get("calling"), list):
            return list(meta["calling"])
    return [g.to_seal() for g in inst.gold]


def _has_label(value: Any) -> bool:
    if isinstance(value, str):
        return bool(_LABEL.match(value))
    if isinstance(value, dict):
        return any(_has_label(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_label(v) for v in value)
    return False


def seal_groups(inst: Instance, gold: list[dict[str, Any]]) -> list[str]:
    groups = ["single" if len(gold) == 1 else "multiple"]
    if any(isinstance(c, dict) and _has_label(c.get("parameters")) for c in gold):
        groups.append("nested")
    groups.append("easy" if "easy" in inst.id else "difficult")
    if inst.split:
        groups.append(f"split:{inst.split}")
    return groups


def count_instance(
    pred_calls: list[Any] | None, gold: list[dict[str, Any]], *, one_to_one: bool = False
) -> SealCounts:
    """The upstream counts of one instance; ``pred_calls is None`` is a format failure."""
    c = SealCounts(n=1)
    c.gold_api = len(gold)
    c.gold_param = sum(len(g.get("parameters") or {}) for g in gold if isinstance(g, dict))
    if pred_calls is None:
        return c
    c.format_ok = 1
    used: set[int] = set()
    for call in pred_calls:
        if not isinstance(call, dict) or "api" not in call:
            continue
        c.pred_api += 1
        raw_params = call.get("parameters")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        has_params = isinstance(raw_params, dict)
        if has_params:
            c.pred_param += len(params)
        match = -1
        for idx, g in enumerate(gold):
            if isinstance(g, dict) and g.get("api") == call["api"] and idx not in used:
                match = idx
                break
        if match == -1:
            continue
        if one_to_one:
            used.add(match)
        c.correct_api += 1
        if has_params:
            gparams = gold[match].get("parameters") or {}
            for name, value in params.items():
                if name in gparams and str(value) == str(gparams[name]):
                    c.correct_param += 1
    return c


def upstream_calls(text: str) -> list[Any] | None:
    """The upstream reading of a model output: the list of call dicts, or ``None`` (format error)."""
    return _as_call_list(seal_upstream_parse(text))


def _as_call_list(out: Any) -> list[Any] | None:
    if isinstance(out, list):
        return out
    if out is None or isinstance(out, int | str):  # upstream returns -1 on failure
        return None
    # a ParseResult: prefer the untouched upstream structure when the parser keeps it
    if getattr(out, "is_error", False):
        return None
    details = getattr(out, "details", None) or {}
    for key in ("upstream", "raw", "calling", "data"):
        if isinstance(details.get(key), list):
            return list(details[key])
    calls = getattr(out, "calls", None)
    if calls is None:
        return None
    return [c.to_seal() for c in calls]


def toollab_calls(text: str) -> list[Any] | None:
    """toollab's own ``seal`` reading (no quote swap); ``None`` on a format error."""
    res = parse(text, "seal")
    if res.is_error:
        return None
    return [c.to_seal() for c in res.calls]


class _SealBase(Scorer):
    one_to_one: bool = False

    def read(self, text: str) -> list[Any] | None:
        return upstream_calls(text)

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = self.new_result()
        total = SealCounts()
        groups: dict[str, SealCounts] = defaultdict(SealCounts)
        gold_cache: dict[str, list[dict[str, Any]]] = {}
        for pred, inst in self.pairs(predictions, instances, res):
            gold = gold_cache.get(inst.id)
            if gold is None:
                gold = gold_cache[inst.id] = seal_gold(inst)
            calls = self.read(pred.raw) if pred.raw else None
            if calls is None:
                res.add_error("prediction_error" if pred.error and not pred.raw else "format_error")
            c = count_instance(calls, gold, one_to_one=self.one_to_one)
            total.add(c)
            for g in seal_groups(inst, gold):
                groups[g].add(c)
            res.per_instance[instance_key(pred)] = {
                "format_ok": bool(c.format_ok),
                "correct_api": c.correct_api,
                "pred_api": c.pred_api,
                "gold_api": c.gold_api,
                "correct_param": c.correct_param,
                "pred_param": c.pred_param,
                "gold_param": c.gold_param,
            }
        res.metrics = total.figures()
        res.breakdown = {g: groups[g].figures() for g in sorted(groups)}
        res.counts = {"n": total.n, **res.counts}
        for g in sorted(groups):
            res.counts[f"n:{g}"] = groups[g].n
        return res


@scorer(
    "seal_tools",
    formats=("seal-tools",),
    needs=("raw",),
    description="Seal-Tools Format ACC, Tool and Parameter P/R/F1 (upstream rule, first-match)",
)
class SealToolsScorer(_SealBase):
    """Seal-Tools metrics exactly as the upstream code computes them."""


@scorer(
    "seal_tools_strict",
    formats=("seal-tools",),
    needs=("raw",),
    description="Seal-Tools metrics with one-to-one call matching and no quote swap",
    default=False,
)
class SealToolsStrictScorer(_SealBase):
    """Corrected variant: toollab's ``seal`` parser and one-to-one matching."""

    one_to_one = True

    def read(self, text: str) -> list[Any] | None:
        return toollab_calls(text)
