"""The one tool schema every part of toollab speaks.

A :class:`Tool` is a name, a description, a JSON Schema object for its parameters and (optionally)
one for what it returns.  It converts losslessly to and from the OpenAI ``tools`` format and the
Hugging Face chat-template ``tools=`` format (which is the same JSON Schema wrapper plus an
optional ``return`` key).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toollab.errors import ToolSchemaError

#: key under which toollab-only fields travel inside an OpenAI function dict (opt-in)
EXTRAS_KEY = "x-toollab"


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

    # -- OpenAI ``tools`` format ----------------------------------------------------------------
    def to_openai(self, *, extras: bool = False) -> dict[str, Any]:
        """``{"type": "function", "function": {...}}``.

        With ``extras=True`` the fields OpenAI has no slot for (returns, category, metadata) travel
        under ``"x-toollab"`` so that :meth:`from_openai` restores the tool exactly.
        """
        fn: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }
        if extras:
            extra = {
                k: v
                for k, v in (
                    ("returns", self.returns),
                    ("category", self.category),
                    ("metadata", self.metadata or None),
                )
                if v is not None
            }
            if extra:
                fn[EXTRAS_KEY] = extra
        return {"type": "function", "function": fn}

    @classmethod
    def from_openai(cls, data: dict[str, Any]) -> Tool:
        """Accepts ``{"type": "function", "function": {...}}`` or the bare function dict."""
        if not isinstance(data, dict):
            raise ToolSchemaError(f"a tool must be a JSON object, got {type(data).__name__}")
        fn = data.get("function", data) if data.get("type", "function") == "function" else None
        if not isinstance(fn, dict):
            raise ToolSchemaError(f"not an OpenAI function tool: type={data.get('type')!r}")
        extra = fn.get(EXTRAS_KEY) or {}
        metadata = dict(extra.get("metadata") or {})
        known = {"name", "description", "parameters", EXTRAS_KEY, "return", "returns"}
        unknown = {k: v for k, v in fn.items() if k not in known}
        if unknown:  # e.g. "strict": kept so that to_openai(extras=True) is lossless
            metadata.setdefault("openai_extra", unknown)
        return cls.build(
            name=fn.get("name"),
            description=fn.get("description") or "",
            parameters=fn.get("parameters"),
            returns=extra.get("returns", fn.get("return", fn.get("returns"))),
            category=extra.get("category"),
            metadata=metadata,
        )

    # -- Hugging Face chat-template ``tools=`` format ---------------------------------------------
    def to_hf(self) -> dict[str, Any]:
        """The dict ``transformers.utils.get_json_schema`` produces (``return`` when known)."""
        fn: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }
        if self.returns is not None:
            fn["return"] = self.returns
        return {"type": "function", "function": fn}

    @classmethod
    def from_hf(cls, data: dict[str, Any]) -> Tool:
        return cls.from_openai(data)

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
