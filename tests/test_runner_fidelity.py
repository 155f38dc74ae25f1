"""The oracle through the whole runner reproduces the benchmarks' fixed points.

Gold answers rendered in a benchmark's own template, parsed, scored with the upstream rules:
Seal-Tools (gold as JSON lists) in-domain Format ACC 1.0, Tool F1 1.0, Param F1 0.99940;
out-of-domain Format ACC 0.99694, Param F1 0.99864 (two gold values contain an apostrophe that the
upstream quote swap breaks); BFCL's four AST categories 100 %.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toollab.eval.runner import EvalConfig, run_eval


def _seal(shared_data: Path, tmp_path: Path, split: str) -> dict[str, float]:
    out = run_eval(
        EvalConfig(
            model="oracle",
            data=str(shared_data / "seal-tools"),
            format="seal-tools",
            template="seal",
            data_options={"splits": split},
        ),
        tmp_path / split,
    )
    assert out.results.counts.errors == 0
    figures: dict[str, float] = out.results.metrics["seal_tools"]
    return figures


def test_seal_tools_in_domain_fixed_points(shared_data: Path, tmp_path: Path) -> None:
    m = _seal(shared_data, tmp_path, "test_in_domain")
    assert m["format_acc"] == 1.0 and m["tool_f1"] == 1.0
    assert m["param_f1"] == pytest.approx(0.99940, abs=5e-6)


def test_seal_tools_out_of_domain_fixed_points(shared_data: Path, tmp_path: Path) -> None:
    m = _seal(shared_data, tmp_path, "test_out_domain")
    assert m["format_acc"] == pytest.approx(0.99694, abs=5e-6)
    assert m["param_p"] == pytest.approx(0.99909, abs=5e-6)
    assert m["param_f1"] == pytest.approx(0.99864, abs=5e-6)


def test_bfcl_ast_categories_are_perfect(shared_data: Path, tmp_path: Path) -> None:
    out = run_eval(
        EvalConfig(
            model="oracle", data=str(shared_data / "bfcl"), format="bfcl", template="python"
        ),
        tmp_path / "bfcl",
    )
    m = out.results.metrics["bfcl"]
    for category in ("simple_python", "multiple", "parallel", "parallel_multiple"):
        assert m[category] == 1.0, (category, out.results.errors["bfcl"])
    assert m["irrelevance"] == 1.0 and m["non_live_ast_python"] == 1.0
    # the data has no Java / JavaScript entries: the leaderboard's "simple" is N/A, not 1.0
    assert m["simple"] is None
