"""The OpenAI ``tools`` / Hugging Face ``tools=`` dict of a tool, written and read exactly.

Both formats are the same wrapper, ``{"type": "function", "function": {"name", "description",
"parameters", ...}}``; Hugging Face adds ``"return"`` (the JSON Schema of the result).

Reading keeps whatever toollab has no field for: keys a source puts beside the known ones
(OpenAI's ``"strict"``, a provider's ``"cache_control"`` on the wrapper, ...), the order of the
keys, a missing ``description`` or ``parameters`` and values such as ``"description": null``.
When a dict is not exactly what :func:`write_function` would write for the tool anyway, that
*layout* is kept with the tool (``Tool.wire_layout``, never serialised and never written onto
the wire) and writing follows it, so a dict read and written again in the same format is equal
to the original, key order included.  The result schema's key follows the format written:
Hugging Face's ``"return"`` (what chat templates read) wherever the source had its result key,
the source's own key (``"return"`` or ``"returns"``) in OpenAI form.

toollab's own fields that a format has no slot for (``returns`` in OpenAI, ``category``,
``metadata``) travel under the extension key ``"x-toollab"`` inside the function dict when
asked for (``extras=True``), so that a tool written and read again is the same tool; the key
keeps the position it had in the source (last otherwise).  A dict written with extras follows
the source's layout, so reading it gives the layout back without carrying it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from toollab.errors import ToolSchemaError

#: key under which toollab-only fields travel inside the function dict (opt-in)
EXTRAS_KEY = "x-toollab"
#: key of ``Tool.metadata`` under which older versions carried the layout (dropped on reading)
LAYOUT_KEY = "wire_layout"
OPENAI = "openai"
HF = "hf"
#: the keys a function dict may use for the result schema (HF writes ``return``)
RETURN_KEYS = ("return", "returns")
WRAPPER_KEYS = ("type", "function")


def default_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "required": []}


@dataclass
class Layout:
    """How a source dict was laid out: key order at both levels, unknown keys, raw values."""

    #: wrapper keys in order; ``None`` when the source was a bare function dict
    outer: list[str] | None = field(default_factory=lambda: list(WRAPPER_KEYS))
    #: unknown wrapper keys and their values
    outer_extra: dict[str, Any] = field(default_factory=dict)
    #: function-dict keys in order (known and unknown)
    inner: list[str] = field(default_factory=list)
    #: unknown function-dict keys and their values
    inner_extra: dict[str, Any] = field(default_factory=dict)
    #: source values toollab's fields hold converted (``"description": null``, ``"parameters":
    #: null``): written back while the field still holds the converted value
    raw: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"outer": self.outer, "inner": list(self.inner)}
        if self.outer_extra:
            out["outer_extra"] = dict(self.outer_extra)
        if self.inner_extra:
            out["inner_extra"] = dict(self.inner_extra)
        if self.raw:
            out["raw"] = dict(self.raw)
        return out

    @classmethod
    def from_json(cls, value: Any) -> Layout | None:
        """The layout stored in metadata, or ``None`` when there is none (or it is malformed)."""
        if not isinstance(value, dict):
            return None
        outer = value.get("outer")
        inner = value.get("inner")
        if outer is not None and not _str_list(outer):
            return None
        if not _str_list(inner):
            return None
        parts = [value.get(k, {}) for k in ("outer_extra", "inner_extra", "raw")]
        if not all(isinstance(p, dict) for p in parts):
            return None
        return cls(outer, dict(parts[0]), list(inner), dict(parts[1]), dict(parts[2]))


def _str_list(value: Any) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _same(a: Any, b: Any) -> bool:
    """Equal, key order included."""
    try:
        return json.dumps(a, default=repr) == json.dumps(b, default=repr)
    except (TypeError, ValueError):  # circular or otherwise unserialisable: plain equality
        return bool(a == b)


# -- reading ----------------------------------------------------------------------------------
@dataclass
class Parsed:
    """A function dict read into toollab's fields (what ``Tool.build`` takes)."""

    name: Any
    description: str
    parameters: Any
    returns: Any
    category: Any
    metadata: dict[str, Any]
    #: the source's layout (:meth:`Layout.to_json`) when it is not the canonical one
    layout: dict[str, Any] | None = None


def split_wrapper(data: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(the function dict, the wrapper or ``None`` for a bare function dict)."""
    if not isinstance(data, dict):
        raise ToolSchemaError(f"a tool must be a JSON object, got {type(data).__name__}")
    kind = data.get("type", "function")
    if kind != "function":
        raise ToolSchemaError(f"not an OpenAI function tool: type={kind!r}")
    if "function" not in data:
        return data, None
    fn = data["function"]
    if not isinstance(fn, dict):
        raise ToolSchemaError(
            f"'function' must be an object describing one tool, got {type(fn).__name__}"
        )
    return fn, data


def read_tool(data: Any, fmt: str) -> Parsed:
    """An OpenAI / HF tool dict (wrapped or bare) → toollab's fields plus, when the dict is not
    what :func:`write_function` writes for that tool in ``fmt``, its layout in the metadata."""
    fn, wrapper = split_wrapper(data)
    extra = fn.get(EXTRAS_KEY)
    returns_key = next((k for k in RETURN_KEYS if k in fn), None)
    # the keys read into toollab's fields; any other (a second result key, a non-object
    # extension) is kept as it is
    known = {"name", "description", "parameters", returns_key}
    if isinstance(extra, dict):
        known.add(EXTRAS_KEY)
    extra = extra if isinstance(extra, dict) else {}
    raw_meta = extra.get("metadata")
    metadata = dict(raw_meta) if isinstance(raw_meta, dict) else {}
    metadata.pop(LAYOUT_KEY, None)  # an older version's copy of the layout: read it from `fn`
    description = fn.get("description")
    parameters = fn.get("parameters")
    parsed = Parsed(
        name=fn.get("name"),
        description=_text(description),
        parameters=default_parameters() if parameters is None else parameters,
        returns=fn[returns_key] if returns_key is not None else extra.get("returns"),
        category=extra.get("category"),
        metadata=metadata,
    )
    layout = Layout(
        outer=None if wrapper is None else list(wrapper),
        outer_extra={k: v for k, v in (wrapper or {}).items() if k not in WRAPPER_KEYS},
        inner=list(fn),
        inner_extra={k: v for k, v in fn.items() if k not in known},
    )
    if "description" in fn and not isinstance(description, str):
        layout.raw["description"] = description
    if "parameters" in fn and parameters is None:
        layout.raw["parameters"] = None
    canonical = _canonical_layout(fmt, parsed.returns is not None, wrapped=wrapper is not None)
    if EXTRAS_KEY not in layout.inner_extra and layout.inner[-1:] == [EXTRAS_KEY]:
        layout.inner = layout.inner[:-1]  # where write_function puts the extras anyway
    if not _same(layout.to_json(), canonical.to_json()):
        parsed.layout = layout.to_json()
    return parsed


def _canonical_layout(fmt: str, has_returns: bool, *, wrapped: bool = True) -> Layout:
    inner = ["name", "description", "parameters"]
    if fmt == HF and has_returns:
        inner.append("return")
    return Layout(outer=list(WRAPPER_KEYS) if wrapped else None, inner=inner)


# -- writing ----------------------------------------------------------------------------------
def write_function(
    *,
    name: str,
    description: str,
    parameters: dict[str, Any],
    returns: dict[str, Any] | None,
    category: str | None,
    metadata: dict[str, Any],
    fmt: str,
    extras: bool,
    layout: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], Layout]:
    """The function dict of a tool (and the layout it followed: ``layout``, the source's, or
    the canonical one)."""
    source = Layout.from_json(layout) or _canonical_layout(fmt, returns is not None)
    fn: dict[str, Any] = {}
    returns_written = False
    ext: dict[str, Any] = {}
    for key in source.inner:
        if key == "name":
            fn[key] = name
        elif key == "description":
            keep_raw = key in source.raw and _text(source.raw[key]) == description
            fn[key] = source.raw[key] if keep_raw else description
        elif key == "parameters":
            keep_raw = key in source.raw and parameters == default_parameters()
            fn[key] = source.raw[key] if keep_raw else parameters
        elif key in RETURN_KEYS and key not in source.inner_extra and not returns_written:
            fn["return" if fmt == HF else key] = returns
            returns_written = True
        elif key in source.inner_extra:
            fn[key] = source.inner_extra[key]
        elif key == EXTRAS_KEY and extras:
            fn[key] = ext  # filled below, in the source's position
    # fields changed since the source was read, which the source layout had no key for
    fn.setdefault("name", name)
    if "description" not in fn and description:
        fn["description"] = description
    if "parameters" not in fn and parameters != default_parameters():
        fn["parameters"] = parameters
    if fmt == HF and not returns_written and returns is not None:
        fn["return"] = returns
        returns_written = True
    if extras:
        if not returns_written and returns is not None:
            ext["returns"] = returns
        if category is not None:
            ext["category"] = category
        if metadata:
            ext["metadata"] = metadata
        if ext:
            fn[EXTRAS_KEY] = ext
    if fn.get(EXTRAS_KEY) == {} and EXTRAS_KEY not in source.inner_extra:
        del fn[EXTRAS_KEY]  # nothing to carry
    return fn, source


def wrap(fn: dict[str, Any], layout: Layout) -> dict[str, Any]:
    """The ``{"type": "function", "function": ...}`` wrapper, following the source's layout."""
    out: dict[str, Any] = {}
    for key in WRAPPER_KEYS if layout.outer is None else layout.outer:
        if key == "type":
            out[key] = "function"
        elif key == "function":
            out[key] = fn
        elif key in layout.outer_extra:
            out[key] = layout.outer_extra[key]
    out.setdefault("function", fn)
    return out


def json_kind(value: Any) -> str:
    """The JSON type name of a Python value (``bool`` is ``boolean``, never ``integer``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__
