"""Model backends behind one interface (:class:`Model`), chosen by a ``provider:model`` string.

>>> model = load_model("fake:")            # or "bundled:smollm2-135m" (the default),
>>> model.generate([{"role": "user", "content": "hi"}]).text  # "llamacpp:/m.gguf", "openai:m@url", "hf:dir"
'hi'
"""

from toollab.models.base import (
    BindsInstances,
    ChatRequest,
    GenerateOptions,
    GoldWriter,
    Message,
    Model,
    ModelOutput,
    RendersPrompts,
    Timings,
    Usage,
    run_sync,
)
from toollab.models.fake import FakeModel
from toollab.models.prefix import PrefixStore, order_for_reuse
from toollab.models.registry import (
    DEFAULT_MODEL,
    ModelSpec,
    get_provider,
    load_model,
    parse_model_spec,
    provider_names,
    register_provider,
)

__all__ = [
    "DEFAULT_MODEL",
    "BindsInstances",
    "ChatRequest",
    "FakeModel",
    "GenerateOptions",
    "GoldWriter",
    "Message",
    "Model",
    "ModelOutput",
    "ModelSpec",
    "PrefixStore",
    "RendersPrompts",
    "Timings",
    "Usage",
    "get_provider",
    "load_model",
    "order_for_reuse",
    "parse_model_spec",
    "provider_names",
    "register_provider",
    "run_sync",
]
