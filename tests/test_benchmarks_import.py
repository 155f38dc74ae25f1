"""Every benchmark script still imports: the names it takes from toollab exist (a script that
imports a removed name fails here, not months later when someone measures with it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def test_there_are_benchmark_scripts() -> None:
    assert len(BENCHMARKS) >= 10


@pytest.mark.parametrize("path", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_benchmark_script_imports(path: Path) -> None:
    spec = importlib.util.spec_from_file_location(f"_bench_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs, as a real import does: dataclasses look their module up there.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)  # top-level code only: each script runs under __main__
    finally:
        del sys.modules[spec.name]
    assert callable(getattr(module, "main", None)) or module.__doc__
