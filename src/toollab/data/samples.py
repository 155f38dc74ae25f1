"""Small sample datasets shipped with toollab, in their benchmarks' own formats.

They are written for toollab (not copied from the benchmarks) and let every command run without
downloading anything: ``toollab data inspect --sample seal-tools``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from toollab.data.base import Dataset, load_dataset
from toollab.errors import UsageError, did_you_mean

#: sample name → (folder under resources/samples, dataset format)
SAMPLES: dict[str, tuple[str, str]] = {
    "seal-tools": ("seal-tools", "seal-tools"),
    "bfcl": ("bfcl", "bfcl"),
}


def sample_names() -> list[str]:
    return sorted(SAMPLES)


def sample_path(name: str) -> tuple[Path, str]:
    """(folder, format) of a bundled sample."""
    key = name.strip().lower().replace("_", "-")
    if key not in SAMPLES:
        raise UsageError(
            f"unknown sample {name!r}{did_you_mean(key, list(SAMPLES))}; "
            f"available: {', '.join(sample_names())}"
        )
    folder, fmt = SAMPLES[key]
    root = resources.files("toollab") / "resources" / "samples" / folder
    return Path(str(root)), fmt


def load_sample(name: str, **options: Any) -> Dataset:
    """The bundled sample as a :class:`toollab.data.Dataset`."""
    path, fmt = sample_path(name)
    return load_dataset(path, fmt, **options)
