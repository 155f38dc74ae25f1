"""General-dialogue preservation (DEER §5.3): BLEU and ROUGE-1/2/L against a reference model.

The reference output of each instance is ``metadata["reference_output"]`` (the original model's
answer) or, failing that, ``Instance.answer``.  BLEU is sacrebleu's corpus BLEU, ROUGE the F
scores of the ``rouge`` package averaged over instances; all figures are fractions (BLEU / 100).
Both are computed by :mod:`.text_overlap` (same numbers, much faster) unless the scorer is made
with ``backend="package"``.
An empty prediction scores 0 on every ROUGE figure and enters BLEU as an empty hypothesis.
"""

from __future__ import annotations

from toollab.eval.metrics.registry import MetricResult, Scorer, instance_key, scorer
from toollab.eval.metrics.text_overlap import (
    ROUGE_METRICS,
    check_backend,
    corpus_bleu,
    rouge_scores,
)
from toollab.schema import Instance
from toollab.schema.record import Prediction


def reference_output(inst: Instance) -> str | None:
    ref = inst.metadata.get("reference_output")
    if isinstance(ref, str):
        return ref
    return inst.answer


def _final_text(pred: Prediction) -> str:
    if pred.parsed is not None and pred.parsed.text:
        return pred.parsed.text
    return pred.raw


def dialogue_scores(
    hyps: list[str], refs: list[str], backend: str = "fast"
) -> dict[str, float | None]:
    """Corpus BLEU and mean ROUGE-1/2/L F of ``hyps`` against ``refs``.

    ``backend="fast"`` computes sacrebleu's and the ``rouge`` package's numbers without them
    (:mod:`.text_overlap`); ``"package"`` calls the packages.
    """
    if not refs:
        return {"bleu": None, "rouge_1": None, "rouge_2": None, "rouge_l": None}
    check_backend(backend)
    bleu = corpus_bleu(hyps, refs, backend) / 100
    sums = {"rouge-1": 0.0, "rouge-2": 0.0, "rouge-l": 0.0}
    for h, ref in zip(hyps, refs, strict=True):
        if not h.strip() or not ref.strip():
            continue
        try:
            s = rouge_scores(h, ref, ROUGE_METRICS, backend)
        except ValueError:
            continue  # the package refuses texts with no words: scores 0
        for k in sums:
            sums[k] += s[k]["f"]
    n = len(refs)
    return {
        "bleu": bleu,
        "rouge_1": sums["rouge-1"] / n,
        "rouge_2": sums["rouge-2"] / n,
        "rouge_l": sums["rouge-l"] / n,
    }


@scorer(
    "dialogue",
    formats=("dialogue", "general-dialogue"),
    needs=("raw",),
    description="BLEU and ROUGE-1/2/L against a reference model's outputs (DEER §5.3)",
)
class DialogueScorer(Scorer):
    """How close the model's plain answers stay to the reference model's.

    ``backend``: ``"fast"`` (default) or ``"package"`` (sacrebleu and ``rouge`` themselves).
    """

    def __init__(self, backend: str = "fast") -> None:
        self.backend = check_backend(backend)

    def accepts(self, instance: Instance) -> bool:
        return super().accepts(instance) or isinstance(
            instance.metadata.get("reference_output"), str
        )

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = self.new_result()
        hyps: list[str] = []
        refs: list[str] = []
        for pred, inst in self.pairs(predictions, instances, res):
            ref = reference_output(inst)
            if ref is None:
                res.add_error("no_reference")
                continue
            hyp = _final_text(pred)
            if not hyp:
                res.add_error("prediction_error" if pred.error else "empty_output")
            hyps.append(hyp)
            refs.append(ref)
            res.per_instance[instance_key(pred)] = {"chars": len(hyp)}
        res.metrics = dialogue_scores(hyps, refs, self.backend)
        res.counts = {"n": len(refs), **res.counts}
        return res
