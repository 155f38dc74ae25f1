"""Model strings (``provider:model``) and the provider registry.

A model string is parsed once into a typed :class:`ModelSpec`::

    bundled:smollm2-135m                                  the default
    llamacpp:/path/model.gguf+lora=/path/adapter.gguf?n_ctx=4096&n_threads=2
    openai:qwen2.5-0.5b@http://127.0.0.1:8000/v1
    hf:/path/to/model_dir            hf:bundled (the bundled GGUF through transformers)
    fake:                            fake:/path/script.json (scripted outputs)

``+key=value`` segments after the model name set ``lora`` (or other params); ``?k=v&k2=v2`` sets
params, whose values are read as int, float or bool when they look like one.  Keyword options
given to :func:`load_model` override params from the string.

Providers are registered with :func:`register_provider`; third-party packages add theirs through
``model:NAME`` entry points of the ``toollab.plugins`` group (see :mod:`toollab.registry`); the
older group ``toollab.models`` (an entry point naming a module that registers providers when
imported, or a factory ``(spec, **options) -> Model`` registered under the entry point's name) is
still read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from toollab.errors import ArgumentError, UsageError, did_you_mean
from toollab.models.base import Model
from toollab.registry import Registry

DEFAULT_MODEL = "bundled:smollm2-135m"
ENTRY_POINT_GROUP = "toollab.models"

ProviderFactory = Callable[..., Model]

_BUILTIN_MODULES = (
    "toollab.models.fake",
    "toollab.models.llamacpp",
    "toollab.models.openai_compat",
    "toollab.models.hf",
    "toollab.models.oracle",
    "toollab.models.replay",
)

_PLUS_SEGMENT = re.compile(r"\+(?=[A-Za-z_][A-Za-z0-9_]*=)")
_PROVIDER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model string."""

    provider: str
    model: str = ""
    base_url: str | None = None
    lora: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    #: the string it was parsed from
    raw: str = ""

    def __str__(self) -> str:
        s = f"{self.provider}:{self.model}"
        if self.base_url:
            s += f"@{self.base_url}"
        if self.lora:
            s += f"+lora={self.lora}"
        if self.params:
            s += "?" + "&".join(f"{k}={v}" for k, v in self.params.items())
        return s


def _coerce(value: str) -> Any:
    low = value.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    for typ in (int, float):
        try:
            return typ(value)
        except ValueError:
            pass
    return value


def _parse_query(query: str, raw: str) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for part in query.split("&"):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise UsageError(f"model string {raw!r}: parameter {part!r} is not key=value")
        params[key.strip()] = _coerce(value.strip())
    return params


def parse_model_spec(spec: str | None) -> ModelSpec:
    """Parse ``provider:model[@base_url][+lora=PATH][?k=v&...]``; an empty spec is the default."""
    raw = (spec or "").strip() or DEFAULT_MODEL
    provider, sep, rest = raw.partition(":")
    if not sep:
        if raw.lower().endswith(".gguf"):  # a bare GGUF path
            provider, rest = "llamacpp", raw
        elif raw.lower() in provider_names():
            rest = ""
        else:
            raise UsageError(
                f"model string {raw!r} has no provider{_hint_without_colon(raw)}; write "
                f"provider:model, e.g. "
                f"{DEFAULT_MODEL!r} or 'llamacpp:/path/model.gguf' "
                f"(providers: {', '.join(provider_names())})"
            )
    provider = provider.strip().lower()
    if not _PROVIDER_NAME.match(provider):
        raise UsageError(f"model string {raw!r}: {provider!r} is not a provider name")
    params: dict[str, Any] = {}
    if "?" in rest:
        rest, _, query = rest.rpartition("?")
        params = _parse_query(query, raw)
    segments = _PLUS_SEGMENT.split(rest)
    model = segments[0].strip()
    lora: str | None = None
    for seg in segments[1:]:
        key, _, value = seg.partition("=")
        if key == "lora":
            lora = value.strip() or None
        else:
            params[key] = _coerce(value.strip())
    base_url: str | None = None
    if provider == "openai" and "@" in model:
        model, _, base_url = model.partition("@")
        model, base_url = model.strip(), base_url.strip() or None
    return ModelSpec(provider, model, base_url, lora, params, raw)


def _hint_without_colon(raw: str) -> str:
    """A ' (did you mean ...?)' hint for a colon-less model string: a misspelt provider
    (``bundeled``, ``orcale``) or the bundled model's name without its provider."""
    hint = did_you_mean(raw.lower(), provider_names())
    if hint:
        return hint
    bundled = DEFAULT_MODEL.partition(":")[2]
    if did_you_mean(raw.lower(), [bundled]):
        return f" (did you mean {DEFAULT_MODEL!r}?)"
    return ""


# -- registry -------------------------------------------------------------------------------------
def _adopt_provider(registry: Registry[ProviderFactory], name: str, factory: Any) -> None:
    """An entry point's provider factory: registered under the entry point's name."""
    if not callable(factory):
        raise TypeError(
            f"a model provider must be a factory (spec, **options) -> Model, got {factory!r}"
        )
    register_provider(name)(factory)


#: provider factories ``(spec: ModelSpec, **options) -> Model``, by lower-case name; plugins:
#: ``model:NAME`` entry points of ``toollab.plugins`` (or, as before, ``NAME`` in
#: ``toollab.models``)
PROVIDERS: Registry[ProviderFactory] = Registry(
    "model",
    label="model provider",
    builtins=_BUILTIN_MODULES,
    normalize=str.lower,
    adopt=_adopt_provider,
    legacy_group=ENTRY_POINT_GROUP,
)


#: what the model part names, for each provider that cannot work without one (``llamacpp:``
#: alone is refused by :func:`check_model_string`, before any work)
_NEEDS_MODEL: dict[str, str] = {}


def register_provider(
    name: str, *, needs_model: str | None = None
) -> Callable[[ProviderFactory], ProviderFactory]:
    """Decorator: register ``factory(spec: ModelSpec, **options) -> Model`` under ``name``.
    ``needs_model``: the provider cannot work without a model part; what it names, with an
    example (``"a GGUF path: llamacpp:/path/model.gguf"``)."""
    if not isinstance(name, str) or not _PROVIDER_NAME.match(name):
        raise ArgumentError(
            "register_provider(name)", f"a provider name matching {_PROVIDER_NAME.pattern}", name
        )
    if needs_model is not None:
        _NEEDS_MODEL[name.strip().lower()] = needs_model
    return PROVIDERS.decorator(name)


def provider_names() -> list[str]:
    return PROVIDERS.names()


def get_provider(name: str) -> ProviderFactory:
    return PROVIDERS.get(name)


def check_model_string(spec: str) -> ModelSpec:
    """Parse a model string and check that its provider exists, loading nothing: a bad string is
    a :class:`UsageError` before any work."""
    parsed = parse_model_spec(spec)
    get_provider(parsed.provider)
    needs = _NEEDS_MODEL.get(parsed.provider)
    if needs is not None and not parsed.model:
        raise UsageError(
            f"model string {parsed.raw!r} has no model part: {parsed.provider} needs {needs}"
        )
    return parsed


def load_model(spec: str | ModelSpec | None = None, **options: Any) -> Model:
    """Build a model from a model string (default :data:`DEFAULT_MODEL`) and keyword options."""
    parsed = spec if isinstance(spec, ModelSpec) else parse_model_spec(spec)
    factory = get_provider(parsed.provider)
    model = factory(parsed, **options)
    model.name = parsed.raw or str(parsed)
    return model


class ModelSource:
    """The one way the evaluation loads a model: a ready :class:`Model`, or a model string
    loaded on first :meth:`get` (a run with nothing left to do never loads it).

    A source closes only a model it loaded itself (:meth:`close`); a model handed in ready
    belongs to whoever made it.  Use as a context manager."""

    def __init__(self, model: Model | str) -> None:
        if isinstance(model, str):
            check_model_string(model)  # a bad string fails here, before any work
            self._spec: str | None = model
            self._model: Model | None = None
        elif isinstance(model, Model):
            self._spec, self._model = None, model
        else:
            raise ArgumentError("model", "a Model or a model string", model)
        self._owned = False

    @property
    def name(self) -> str:
        if self._model is not None:
            return self._model.name or "model"
        return self._spec or "model"

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def get(self) -> Model:
        """The model, loaded now if it was not yet."""
        if self._model is None:
            self._model = load_model(self._spec)
            self._owned = True
        return self._model

    def close(self) -> None:
        if self._owned and self._model is not None:
            self._model.close()
            self._model = None
            self._owned = False

    def __enter__(self) -> ModelSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def merge_options(
    spec: ModelSpec,
    options: dict[str, Any],
    allowed: Iterable[str],
    aliases: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Spec params overridden by keyword options, with aliases resolved and unknown keys refused."""
    aliases = aliases or {}
    allowed = list(allowed)
    merged: dict[str, Any] = {}
    for source in (spec.params, options):
        for key, value in source.items():
            name = aliases.get(key, key)
            if name not in allowed:
                known = sorted(set(allowed) | set(aliases))
                raise UsageError(
                    f"model {spec.raw or spec}: unknown option {key!r}"
                    f"{did_you_mean(key, known)}; known: {', '.join(known)}"
                )
            merged[name] = value
    return merged
