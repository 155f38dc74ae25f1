"""Datasets: adapters for the upstream benchmark files, and the :class:`Dataset` they return.

>>> from toollab.data import load_dataset
>>> ds = load_dataset("data/seal-tools", "seal-tools")   # doctest: +SKIP
>>> ds.stats()["instances"]                              # doctest: +SKIP
1354
"""

from toollab.data.base import (
    Adapter,
    DataNote,
    Dataset,
    available_formats,
    get_adapter,
    load_dataset,
    load_tools,
    register_adapter,
    tool_pool,
)
from toollab.data.samples import load_sample, sample_names, sample_path

__all__ = [
    "Adapter",
    "DataNote",
    "Dataset",
    "available_formats",
    "get_adapter",
    "load_dataset",
    "load_sample",
    "load_tools",
    "register_adapter",
    "sample_names",
    "sample_path",
    "tool_pool",
]
