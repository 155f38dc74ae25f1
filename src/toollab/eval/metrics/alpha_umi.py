"""alpha-UMi step-level metrics (``GLPFT/inference_utils/toolbench/evaluate-multi_agent.py``).

One instance is one step of a ToolBench dialogue.  Its metadata carries the upstream reference
string of that step, ``metadata["reference"]`` — ``"assistant: <planner></s>caller: <call></s>"``,
``"assistant: <planner></s>conclusion: <answer></s>"`` or the planner text alone for give-up —
and the names of the tools on offer (``metadata["tool_names"]``, else ``Instance.tools``).

The prediction is ``Prediction.raw`` in the upstream layout
(``"assistant: <planner></s>caller: <caller output>"``); when ``raw`` is empty and ``steps`` are
given, the steps are joined as ``"<role>: <text>"`` with ``</s>``.

Figures: ``plan_acc`` (all steps), ``act_em`` (call steps), ``hallu_rate`` (hallucinated action
names over **all** steps), ``arg_f1`` (call steps; half credit for a present key with another
value, reference that is not JSON → step skipped, ``{}`` reference → 1 iff ``{}`` predicted, the
``1e-30`` terms as upstream), ``easy_f1`` / ``hard_f1`` and ``rouge_l`` (conclusion steps, the
``rouge`` package's figure; computed by :mod:`.text_overlap` unless ``backend="package"``).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from toollab.eval.metrics.registry import MetricResult, Scorer, instance_key, scorer
from toollab.eval.metrics.text_overlap import check_backend, rouge_scores
from toollab.schema import Instance
from toollab.schema.record import Prediction


class StepOutput(NamedTuple):
    plan: str  # "call" | "finish" | "give up"
    action: str | None
    action_input: str | None
    answer: str | None


def parse_alpha_umi_output(text: str) -> StepOutput:
    """Upstream ``parse_output``.  A call step without ``</s>`` has no caller part (upstream would
    raise an IndexError): its action is ``'none'`` and its input ``'{}'``."""
    if "Next: give up" in text:
        return StepOutput("give up", None, None, None)
    if "Next: conclusion" in text:
        if "conclusion:" in text and "conclusion: " in text:
            answer = text[text.rindex("conclusion: ") + len("conclusion: ") :]
        else:
            answer = text
        return StepOutput("finish", None, None, answer.replace("</s>", ""))
    parts = text.split("</s>")
    body = parts[1] if len(parts) > 1 else ""
    if "Action Input:" in body:
        action_input = body[body.rindex("Action Input:") + len("Action Input:") :].strip()
    else:
        action_input = "{}"
    if "Action:" in body:
        action = body[body.rindex("Action:") + len("Action:") :].strip()
        if "Action Input:" in action:
            action = action[: action.index("Action Input:")].strip()
    else:
        action = "none"
    return StepOutput("call", action, action_input, None)


def arg_f1_step(
    pred_action: str, ref_action: str, pred_input: str, ref_input: str
) -> tuple[str, float] | None:
    """One call step's argument score: ``("easy"|"hard", f1)``, or ``None`` when skipped."""
    if pred_action != ref_action:
        return ("wrong_action", 0.0)
    try:
        ref = json.loads(ref_input)
    except (ValueError, TypeError):
        return None  # reference not JSON: upstream skips the step
    try:
        cand = json.loads(pred_input)
        if ref == {}:
            return ("easy", 1.0 if cand == {} else 0.0)
        if not isinstance(cand, dict) or not isinstance(ref, dict):
            raise TypeError("not a JSON object")  # upstream: .keys()/.items() fail → 0
        half = full = 0
        for k, v in ref.items():
            if k in cand:
                if cand[k] == v:
                    full += 1
                else:
                    half += 1
        recall = (0.5 * half + full) / (len(ref) + 1e-30)
        precision = (0.5 * half + full) / (len(cand) + 1e-30)
        return ("hard", (2 * recall * precision) / (recall + precision))
    except Exception:  # bad JSON, non-dict, or 0/0: upstream's inner except scores 0
        return ("easy" if ref == {} else "hard", 0.0)


def rouge_l(hyps: list[str], refs: list[str], backend: str = "fast") -> float | None:
    """``rouge.Rouge().get_scores(hyps, refs, avg=True)['rouge-l']['f']``; an empty hypothesis
    or reference (which the package refuses) scores 0 and still counts in the average.

    ``backend="fast"`` computes the package's numbers without it (:mod:`.text_overlap`);
    ``"package"`` calls the package.
    """
    if not refs:
        return None
    check_backend(backend)
    total = 0.0
    for h, r in zip(hyps, refs, strict=True):
        if not h.strip() or not r.strip():
            continue
        try:
            total += rouge_scores(h, r, ("rouge-l",), backend)["rouge-l"]["f"]
        except ValueError:
            continue  # no word-bearing sentence: the package refuses the pair
    return total / len(refs)


def _prediction_text(pred: Prediction) -> str:
    if pred.raw or not pred.steps:
        return pred.raw
    return "</s>".join(f"{s.role}: {s.text}" for s in pred.steps)


def _tool_names(inst: Instance) -> set[str]:
    names = inst.metadata.get("tool_names")
    if isinstance(names, list):
        return {str(n) for n in names}
    return set(inst.tool_names)


def _reference(inst: Instance) -> str | None:
    for key in ("reference", "reference_step"):
        v = inst.metadata.get(key)
        if isinstance(v, str):
            return v
    return None


@scorer(
    "alpha_umi",
    formats=("alpha-umi",),
    needs=("raw",),
    description="alpha-UMi step metrics: Plan ACC, Act EM, hallucination, Arg F1, Rouge-L",
)
class AlphaUMiScorer(Scorer):
    """Step-level metrics of alpha-UMi, computed as the upstream evaluator does.

    ``backend``: ``"fast"`` (default) computes Rouge-L without the ``rouge`` package, with the
    same numbers; ``"package"`` calls the package.
    """

    def __init__(self, backend: str = "fast") -> None:
        self.backend = check_backend(backend)

    def accepts(self, instance: Instance) -> bool:
        return super().accepts(instance) or (
            instance.source is not None
            and instance.source.startswith(("toolbench", "alpha"))
            and _reference(instance) is not None
        )

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = self.new_result()
        plan_hits: list[float] = []
        act_hits: list[float] = []
        easy: list[float] = []
        hard: list[float] = []
        f1: list[float] = []
        hallu = 0
        hyps: list[str] = []
        refs: list[str] = []
        n = 0
        for pred, inst in self.pairs(predictions, instances, res):
            ref_text = _reference(inst)
            if ref_text is None:
                res.add_error("no_reference")
                continue
            n += 1
            ref = parse_alpha_umi_output(ref_text)
            out = parse_alpha_umi_output(_prediction_text(pred))
            row: dict[str, Any] = {"ref_plan": ref.plan, "plan": out.plan, "action": out.action}
            if (
                out.action is not None
                and out.action != "none"
                and out.action not in _tool_names(inst)
            ):
                hallu += 1
                row["hallucinated"] = True
            plan_hits.append(float(out.plan == ref.plan))
            if out.plan != ref.plan:
                res.add_error(f"plan:{ref.plan}->{out.plan}")
            if ref.plan == "finish":
                refs.append(ref.answer or "")
                hyps.append(out.answer if out.answer is not None else "none")
            elif ref.plan == "call":
                p_action = out.action if out.action is not None else "none"
                p_input = out.action_input if out.action_input is not None else "{}"
                act_hits.append(float(p_action == ref.action))
                step = arg_f1_step(
                    p_action, ref.action or "none", p_input, ref.action_input or "{}"
                )
                if step is not None:
                    kind, value = step
                    if kind == "wrong_action":
                        easy.append(0.0)
                        hard.append(0.0)
                    else:
                        (easy if kind == "easy" else hard).append(value)
                    f1.append(value)
                    row["arg_f1"] = value
                else:
                    res.add_error("reference_input_not_json")
                if p_action != ref.action:
                    res.add_error("wrong_action")
            res.per_instance[instance_key(pred)] = row
        res.metrics = {
            "plan_acc": sum(plan_hits) / len(plan_hits) if plan_hits else None,
            "act_em": sum(act_hits) / len(act_hits) if act_hits else None,
            "hallu_rate": hallu / n if n else None,
            "arg_f1": sum(f1) / len(f1) + 1e-30 if f1 else None,
            "easy_f1": sum(easy) / len(easy) + 1e-30 if easy else None,
            "hard_f1": sum(hard) / len(hard) + 1e-30 if hard else None,
            "rouge_l": rouge_l(hyps, refs, self.backend),
        }
        res.counts = {
            "n": n,
            "call_steps": len(act_hits),
            "conclusion_steps": len(refs),
            "arg_scored_steps": len(f1),
            "hallucinated": hallu,
            **res.counts,
        }
        return res
