"""Shared fixtures: the reference data in ../shared/data and the bundled model."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("TOOLLAB_SHARED_DATA", REPO.parent / "shared" / "data"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real benchmark data (Seal-Tools, BFCL, DEER, ToolEyes) next to the repository."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"reference data not found at {SHARED_DATA} (set TOOLLAB_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def bundled_gguf() -> Path:
    from toollab.models.bundled import bundled_gguf_path

    return bundled_gguf_path()


@pytest.fixture(scope="session")
def train_base() -> Any:
    """The bundled base as training reads it: its transformers folder (converted once) and GGUF."""
    pytest.importorskip("trl")
    pytest.importorskip("peft")
    pytest.importorskip("gguf")
    from toollab.train.base import resolve_base

    return resolve_base("bundled")
