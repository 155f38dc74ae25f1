"""DEER decision accuracies (``src/inference.py: main``) and the baselines rule.

Expected prediction layout (what a runner writes for a DEER instance):

* ``steps[0].text`` — the round-1 generation for the DEER prompt (text after ``Assistant:``);
* ``steps[1].text`` — only when round 1 stopped at ``#SearchAPI#``: the round-2 generation, i.e.
  the continuation the model wrote after the teacher-forced input
  :func:`deer_second_round_prompt` (``prompt + " " + gold-before-#CallAPI#/#NoCallAPI# + "#"``);
* ``raw`` — the concatenation of the generations (used as round 1 when ``steps`` is empty).

Scoring replays the upstream loop on ``decoded = forced input + generation`` (upstream decodes the
whole sequence), so the round-2 text is read after the forced gold prefix.  Counting rules:
``#Begin#`` missing → error; ``#End#`` → NoSearch correct iff gold and output both contain
``#Begin# Don't need``; ``#NoCallAPI#`` → search counted if the gold needs search, no-call counted
if the gold is NoCall; ``#CallAPI#`` → search counted if the gold needs search, call correct iff
the gold is Call, the output has ``#APIResponse#`` and ``call_api[:call_api.find("(")]`` is a
substring of the gold call (no ``(`` → the last character is dropped); ``#SearchAPI#`` → round 2.

``deer_strict`` checks the call exactly instead: same tool name and same arguments.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from toollab.eval.metrics.registry import (
    MetricResult,
    Scorer,
    instance_key,
    mean,
    ratio,
    scorer,
)
from toollab.schema import Decision, Instance
from toollab.schema.record import Prediction

NO_SEARCH_CHAIN = (
    "#Begin# Don't need to look up the API Pool, I can answer this question with my own "
    "knowledge. #End#"
)
DEER_PROMPT = (
    "A chat between a curious user and an artificial intelligence assistant who can use external "
    "tools and APIs to solve the user's question. The assistant gives tools and APIs calling "
    "processes or final answer to the human's question. Human: {} Assistant:"
)


def deer_prompt(query: str) -> str:
    return DEER_PROMPT.format(query)


def deer_forced_prefix(gold_chain: str) -> str:
    """The gold chain up to the decision marker, plus ``"#"`` (what round 2 continues)."""
    if "#CallAPI#" in gold_chain:
        return gold_chain.split("#CallAPI#")[0] + "#"
    if "#NoCallAPI#" in gold_chain:
        return gold_chain.split("#NoCallAPI#")[0] + "#"
    return gold_chain + "#"


def deer_second_round_prompt(prompt: str, gold_chain: str) -> str:
    """Upstream teacher forcing: ``prompt + " " + gold.split(<decision marker>)[0] + "#"``."""
    return prompt + " " + deer_forced_prefix(gold_chain)


def _call_text(name: str, args: dict[str, Any]) -> str:
    return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


def deer_gold_chain(inst: Instance) -> str:
    """The instance's gold decision chain (``#Begin# ... #End#``).

    Read from ``metadata["chain"]`` / ``["gold_chain"]`` / ``["target"]`` or ``answer`` when it is a
    chain; otherwise rebuilt from the decision and gold call (enough for scoring, not for teacher
    forcing, which needs the API-pool text).
    """
    for key in ("chain", "gold_chain", "target", "output"):
        v = inst.metadata.get(key)
        if isinstance(v, str) and "#Begin#" in v:
            return v
    if inst.answer and "#Begin#" in inst.answer:
        return inst.answer
    label = inst.label()
    if label is Decision.NO_SEARCH:
        return NO_SEARCH_CHAIN
    pool = "#Begin# Need to look up the API Pool. #SearchAPI# The API Pool including: " + str(
        inst.tool_names
    )
    if label is Decision.NO_CALL:
        return (
            pool + " #NoCallAPI# There is no proper API and I need to answer this question with "
            "my own knowledge. #End#"
        )
    g = inst.gold[0]
    return pool + f" #CallAPI# {_call_text(g.name, g.to_seal()['parameters'])} #APIResponse#  #End#"


@dataclass
class DeerOutcome:
    gold: str  # NoSearch / Call / NoCall / other
    no_search: bool = False
    search: bool = False
    no_call: bool = False
    call: bool = False
    error: str | None = None
    rounds: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def gold_kind(chain: str) -> str:
    if "#Begin# Don't need" in chain:
        return "NoSearch"
    if "#CallAPI#" in chain:
        return "Call"
    if "#NoCallAPI#" in chain:
        return "NoCall"
    return "other"


def parse_deer_call(text: str) -> tuple[str, dict[str, Any]] | None:
    """``name(k=v, ...)`` → (name, kwargs); literal values are evaluated, anything else (a
    variable name) is kept as its source text.  ``None`` when the text is not one call."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        return None
    if not isinstance(node, ast.Call):
        return None
    kwargs: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            return None
        try:
            kwargs[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, SyntaxError, TypeError, RecursionError):
            kwargs[kw.arg] = ast.unparse(kw.value)  # a variable or expression: its source text
    return ast.unparse(node.func), kwargs


def _call_ok_upstream(decoded: str, gold_chain: str) -> bool:
    call_api = decoded.split("#CallAPI# ")[-1].split(" #APIResponse#")[0]
    idx = call_api.find("(")
    gt_call = gold_chain.split("#CallAPI#")[-1].split("#APIResponse#")[0]
    return call_api[:idx] in gt_call


def _call_ok_strict(decoded: str, gold_chain: str) -> bool:
    call_api = decoded.split("#CallAPI#")[-1].split("#APIResponse#")[0]
    gt_call = gold_chain.split("#CallAPI#")[-1].split("#APIResponse#")[0]
    p, g = parse_deer_call(call_api), parse_deer_call(gt_call)
    if g is None:  # the gold itself is not valid Python (an unescaped quote): compare the text
        return " ".join(call_api.split()) == " ".join(gt_call.split())
    if p is None:
        return False
    return p[0] == g[0] and {k: str(v) for k, v in p[1].items()} == {
        k: str(v) for k, v in g[1].items()
    }


def deer_outcome(rounds: list[str], gold_chain: str, *, strict: bool = False) -> DeerOutcome:
    """Replay the upstream decision loop over the generations of one item."""
    out = DeerOutcome(gold=gold_kind(gold_chain))
    decoded = rounds[0] if rounds else ""
    for k in range(2):
        out.rounds = k + 1
        if "#Begin#" not in decoded:
            out.error = "no_begin"
            return out
        if "#End#" in decoded:
            if out.gold == "NoSearch" and "#Begin# Don't need" in decoded:
                out.no_search = True
            else:
                out.error = "wrong_end"
            return out
        if "#NoCallAPI#" in decoded or "#CallAPI#" in decoded:
            if "#Begin# Need to" not in gold_chain:
                out.error = "search_not_needed"
                return out
            out.search = True
            if "#NoCallAPI#" in decoded:
                if "#NoCallAPI#" in gold_chain:
                    out.no_call = True
                else:
                    out.error = "no_call_but_call_needed"
            elif "#NoCallAPI#" in gold_chain:
                out.error = "call_but_no_call_needed"
            elif "#APIResponse#" not in decoded:
                out.error = "no_api_response"
            elif (_call_ok_strict if strict else _call_ok_upstream)(decoded, gold_chain):
                out.call = True
            else:
                out.error = "wrong_call"
            return out
        if "#SearchAPI#" in decoded:
            if "#SearchAPI#" not in gold_chain:
                out.error = "search_not_needed"
                return out
            if k == 0:
                if len(rounds) < 2:
                    out.error = "missing_second_round"
                    return out
                second = rounds[1]
                decoded = (
                    second
                    if second.lstrip().startswith("#Begin#")
                    else deer_forced_prefix(gold_chain) + second
                )
                continue
            out.error = "no_decision"
            return out
        # no marker: upstream generates again from the same input (greedy: the same text)
        out.error = "no_marker"
        return out
    return out


def prediction_rounds(pred: Prediction) -> list[str]:
    if pred.steps:
        return [s.text for s in pred.steps[:2]]
    return [pred.raw] if pred.raw else []


def deer_figures(outcomes: list[DeerOutcome]) -> dict[str, float | None]:
    tot_ns = sum(o.gold == "NoSearch" for o in outcomes)
    tot_call = sum(o.gold == "Call" for o in outcomes)
    tot_nc = sum(o.gold == "NoCall" for o in outcomes)
    tot_s = tot_call + tot_nc
    n_ns = sum(o.no_search for o in outcomes)
    n_s = sum(o.search for o in outcomes)
    n_c = sum(o.call for o in outcomes)
    n_nc = sum(o.no_call for o in outcomes)
    return {
        "P_NoSearch": ratio(n_ns, tot_ns),
        "P_Search": ratio(n_s, tot_s),
        "P_DS": ratio(n_ns + n_s, tot_ns + tot_s),
        "P_NoCall": ratio(n_nc, tot_nc),
        "P_Call": ratio(n_c, tot_call),
        "P_DC": ratio(n_nc + n_c, tot_nc + tot_call),
    }


class _DeerBase(Scorer):
    strict: bool = False

    def accepts(self, instance: Instance) -> bool:
        return super().accepts(instance) and "api_label" not in instance.metadata

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = self.new_result()
        outcomes: list[DeerOutcome] = []
        chains: dict[str, str] = {}
        for pred, inst in self.pairs(predictions, instances, res):
            chain = chains.get(inst.id)
            if chain is None:
                chain = chains[inst.id] = deer_gold_chain(inst)
            if pred.error and not pred.raw and not pred.steps:
                o = DeerOutcome(gold=gold_kind(chain), error="prediction_error")
            else:
                o = deer_outcome(prediction_rounds(pred), chain, strict=self.strict)
            if o.gold == "other":
                res.add_error("gold_without_decision")
                continue
            outcomes.append(o)
            if o.error:
                res.add_error(o.error)
            res.per_instance[instance_key(pred)] = {
                "gold": o.gold,
                "no_search": o.no_search,
                "search": o.search,
                "no_call": o.no_call,
                "call": o.call,
                "rounds": o.rounds,
                "error": o.error,
            }
        res.metrics = deer_figures(outcomes)
        res.counts = {
            "n": len(outcomes),
            "NoSearch": sum(o.gold == "NoSearch" for o in outcomes),
            "Call": sum(o.gold == "Call" for o in outcomes),
            "NoCall": sum(o.gold == "NoCall" for o in outcomes),
            **res.counts,
        }
        # the deployable mode (a retriever chose the candidates): how often the query's own
        # tool was among them, i.e. how many instances it made Call ones
        retrieved = [
            inst.metadata["source_offered"]
            for inst in (instances.get(p.id) for p in predictions)
            if inst is not None and isinstance(inst.metadata.get("source_offered"), bool)
        ]
        if retrieved:
            res.counts["source_tool_retrieved"] = sum(retrieved)
            res.counts["source_tool_missed"] = len(retrieved) - sum(retrieved)
        return res


@scorer(
    "deer",
    formats=("deer",),
    needs=("steps",),
    description="DEER decision accuracies P_NoSearch/P_Search/P_DS/P_NoCall/P_Call/P_DC (upstream)",
)
class DeerScorer(_DeerBase):
    """DEER decision accuracies with the upstream name-substring call check."""


@scorer(
    "deer_strict",
    formats=("deer",),
    needs=("steps",),
    description="DEER decision accuracies with an exact call check (name and arguments)",
    default=False,
)
class DeerStrictScorer(_DeerBase):
    """Corrected variant: a call counts only when the name and arguments equal the gold's."""

    strict = True


def baseline_correct(text: str, api_label: list[str] | str, is_call: bool) -> bool:
    """Baselines rule: a call is correct iff the first line after ``Action: `` is in
    ``api_label``; a no-call iff ``NoCallAPI`` appears."""
    if not is_call:
        return "NoCallAPI" in text
    if "Action: " not in text:
        return False
    action = text.split("Action: ", 1)[1].split("\n", 1)[0]
    labels = api_label if isinstance(api_label, list) else [api_label]
    return action in labels


@scorer(
    "deer_baseline",
    formats=("deer", "deer-baseline"),
    needs=("raw",),
    description="DEER baselines (ToolBench / ToolAlpaca sets): call and no-call accuracy",
)
class DeerBaselineScorer(Scorer):
    """Accuracy on the DEER baseline sets (``metadata["api_label"]``, ``metadata["is_call"]``)."""

    def accepts(self, instance: Instance) -> bool:
        return super().accepts(instance) and "api_label" in instance.metadata

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = self.new_result()
        calls: list[float] = []
        no_calls: list[float] = []
        for pred, inst in self.pairs(predictions, instances, res):
            is_call = bool(inst.metadata.get("is_call", inst.label() is Decision.CALL))
            ok = baseline_correct(pred.raw, inst.metadata.get("api_label") or [], is_call)
            (calls if is_call else no_calls).append(float(ok))
            if not ok:
                res.add_error("wrong_call" if is_call else "missed_no_call")
            res.per_instance[instance_key(pred)] = {"is_call": is_call, "correct": ok}
        res.metrics = {
            "call_acc": mean(calls),
            "no_call_acc": mean(no_calls),
            "acc": mean(calls + no_calls),
        }
        res.counts = {"n": len(calls) + len(no_calls), "call": len(calls), "no_call": len(no_calls)}
        return res
