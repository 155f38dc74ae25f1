"""The one tool schema every part of toollab speaks.

A :class:`Tool` is a name, a description, a JSON Schema object for its parameters and (optionally)
one for what it returns.  It converts losslessly to and from the OpenAI ``tools`` format and the
Hugging Face chat-template ``tools=`` format (which is the same JSON Schema wrapper plus an
optional ``return`` key):

* a dict read and written in the same format comes back equal, key order and keys toollab has no
  field for (``"strict"``, ...) included (:mod:`toollab.schema.wire`); the source's layout is
  kept in memory (:attr:`Tool.wire_layout`), never in ``metadata`` nor on the wire;
* a tool written with ``extras=True`` and read back is the same tool: ``returns`` (OpenAI only),
  ``category`` and ``metadata`` travel under ``"x-toollab"``.  The plain form carries ``name``,
  ``description``, ``parameters``, the source's own extra keys and, for Hugging Face, ``return``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from toollab.errors import ToolSchemaError
from toollab.schema import wire

#: key under which toollab-only fields travel inside an OpenAI function dict (opt-in)
EXTRAS_KEY = wire.EXTRAS_KEY


class Tool(BaseModel):
    """A callable tool as offered to a model."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}, "required": []}
    )
    returns: dict[str, Any] | None = None
    category: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: the layout of the wire dict the tool was read from, when it was not the canonical one
    #: (:mod:`toollab.schema.wire`); kept in memory only, never serialised
    _wire_layout: dict[str, Any] | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        """Equal fields: the layout of the dict a tool was read from is not part of it."""
        if not isinstance(other, Tool):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    @property
    def wire_layout(self) -> dict[str, Any] | None:
        """How the source dict was laid out, when that was not what toollab writes anyway."""
        return self._wire_layout

    @field_validator("name")
    @classmethod
    def _name_not_empty(cls, v: str) -> str:
        if not isinstance(v, str) or not v.strip():
            raise ValueError("a tool needs a non-empty name")
        return v

    # -- convenient views -------------------------------------------------------------------
    @property
    def properties(self) -> dict[str, Any]:
        props = self.parameters.get("properties") or {}
        return props if isinstance(props, dict) else {}

    @property
    def required(self) -> list[str]:
        req = self.parameters.get("required") or []
        return [r for r in req if isinstance(r, str)] if isinstance(req, list) else []

    @property
    def optional(self) -> list[str]:
        req = set(self.required)
        return [p for p in self.properties if p not in req]

    @property
    def return_fields(self) -> list[str]:
        """Names of the output fields (Seal-Tools' ``responses`` keys), in order."""
        if not self.returns:
            return []
        props = self.returns.get("properties")
        return list(props) if isinstance(props, dict) else []

    # -- OpenAI ``tools`` and Hugging Face ``tools=`` formats ---------------------------------------
    def to_openai(self, *, extras: bool = False) -> dict[str, Any]:
        """``{"type": "function", "function": {"name", "description", "parameters"}}``.

        Keys the source dict had beside these (``"strict"``, ...) are written back in place, in
        the source's order (see :mod:`toollab.schema.wire`).  OpenAI has no slot for
        ``returns``, ``category`` and ``metadata``: with ``extras=True`` they travel under
        ``"x-toollab"`` so that :meth:`from_openai` gives back this very tool.
        """
        fn, layout = self._function(wire.OPENAI, extras)
        return wire.wrap(fn, layout)

    def to_openai_function(self, *, extras: bool = False) -> dict[str, Any]:
        """The bare function dict (the ``"function"`` of :meth:`to_openai`); a bare dict read by
        :meth:`from_openai` comes back exactly here."""
        return self._function(wire.OPENAI, extras)[0]

    def to_hf(self, *, extras: bool = False) -> dict[str, Any]:
        """The dict ``transformers.utils.get_json_schema`` produces, with ``"return"`` when the
        result schema is known; ``extras=True`` adds ``category`` and ``metadata`` under
        ``"x-toollab"``."""
        fn, layout = self._function(wire.HF, extras)
        return wire.wrap(fn, layout)

    def _function(self, fmt: str, extras: bool) -> tuple[dict[str, Any], wire.Layout]:
        return wire.write_function(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            returns=self.returns,
            category=self.category,
            metadata=self.metadata,
            fmt=fmt,
            extras=extras,
            layout=self._wire_layout,
        )

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> Tool:
        """Accepts ``{"type": "function", "function": {...}}`` or the bare function dict."""
        return cls._from_wire(data, wire.OPENAI)

    @classmethod
    def from_hf(cls, data: dict[str, Any]) -> Tool:
        """The Hugging Face ``tools=`` dict (``"return"`` becomes ``returns``)."""
        return cls._from_wire(data, wire.HF)

    @classmethod
    def _from_wire(cls, data: Any, fmt: str) -> Tool:
        p = wire.read_tool(data, fmt)
        tool = cls.build(
            name=p.name,
            description=p.description,
            parameters=p.parameters,
            returns=p.returns,
            category=p.category,
            metadata=p.metadata,
        )
        tool._wire_layout = p.layout
        return tool

    # -- construction with clear errors ------------------------------------------------------
    @classmethod
    def build(
        cls,
        *,
        name: Any,
        description: Any = "",
        parameters: Any = None,
        returns: Any = None,
        category: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> Tool:
        """Construct a tool, raising :class:`ToolSchemaError` with a plain reason."""
        if not isinstance(name, str) or not name.strip():
            raise ToolSchemaError("tool has no name")
        if parameters is None:
            parameters = {"type": "object", "properties": {}, "required": []}
        if not isinstance(parameters, dict):
            raise ToolSchemaError(
                f"parameters of {name!r} must be a JSON Schema object, got {type(parameters).__name__}"
            )
        if returns is not None and not isinstance(returns, dict):
            raise ToolSchemaError(f"returns of {name!r} must be a JSON Schema object")
        return cls(
            name=name,
            description=description if isinstance(description, str) else str(description),
            parameters=parameters,
            returns=returns,
            category=category if category is None or isinstance(category, str) else str(category),
            metadata=metadata or {},
        )


def tools_to_openai(tools: list[Tool]) -> list[dict[str, Any]]:
    return [t.to_openai() for t in tools]


def tools_from_openai(items: list[dict[str, Any]]) -> list[Tool]:
    return [Tool.from_openai(d) for d in items]
