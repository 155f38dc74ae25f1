"""Every metric family of toollab's evaluation, behind one scorer registry.

>>> from toollab.eval.metrics import applicable_scorers, score_all
>>> results = score_all(predictions, {i.id: i for i in instances})

Scorers: ``seal_tools``, ``bfcl``, ``bfcl_multi_turn`` (BFCL's executable multi-turn checker), ``deer``, ``deer_baseline``, ``alpha_umi``, ``tooleyes``
(optional LLM judge), ``environment`` (toollab's environments), ``conversation`` (whole
conversations over held-out environment episodes), ``execution`` (SambaNova ToolBench data),
``dialogue``, ``retrieval`` (runs with retrieval in the loop); corrected variants, run only when named:
``seal_tools_strict``, ``deer_strict``, ``tooleyes_strict``.  See docs/metrics.md.
"""

from toollab.eval.metrics import (  # noqa: F401  (registration)
    alpha_umi,
    bfcl,
    bfcl_multi_turn,
    conversation,
    deer,
    dialogue,
    environment,
    execution,
    retrieval,
    seal_tools,
    tooleyes,
)
from toollab.eval.metrics.alpha_umi import parse_alpha_umi_output
from toollab.eval.metrics.deer import deer_prompt, deer_second_round_prompt
from toollab.eval.metrics.execution import (
    api_complexity_score,
    api_rf1_score,
    compute_f1_between_dicts,
    normalized_lcs,
)
from toollab.eval.metrics.judge import Judge, parse_judge_score
from toollab.eval.metrics.registry import (
    MetricResult,
    Scorer,
    applicable_scorers,
    get_scorer,
    score_all,
    scorer,
    scorer_names,
)
from toollab.eval.metrics.stats import Estimate, aggregate_repeats, mean_ci, score_repeats

__all__ = [
    "Estimate",
    "Judge",
    "MetricResult",
    "Scorer",
    "aggregate_repeats",
    "api_complexity_score",
    "api_rf1_score",
    "applicable_scorers",
    "compute_f1_between_dicts",
    "deer_prompt",
    "deer_second_round_prompt",
    "get_scorer",
    "mean_ci",
    "normalized_lcs",
    "parse_alpha_umi_output",
    "parse_judge_score",
    "score_all",
    "score_repeats",
    "scorer",
    "scorer_names",
]
