"""``@tool``: a Python function becomes a :class:`~toollab.schema.Tool`.

The schema comes from the signature and the docstring::

    @tool
    def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict:
        '''Current weather for a city.

        Args:
            city: Name of the city.
            unit: Temperature unit.

        Returns:
            The weather report.
            temperature (float): Temperature in the chosen unit.
            conditions (str): Sky conditions.
        '''

* type hints → JSON Schema: ``str``/``int``/``float``/``bool``, ``list[X]``, ``tuple``,
  ``dict[str, X]``, ``Literal[...]`` and ``Enum`` (→ ``enum``), ``X | None`` / ``Optional[X]``
  (→ nullable), ``Annotated[X, "description"]``; anything else pydantic can describe (dataclasses,
  ``TypedDict``, pydantic models, ``datetime``) through ``pydantic.TypeAdapter``;
* a parameter without a default is required; a JSON-serialisable default is recorded;
* the docstring's summary is the description; Google-style ``Args:`` entries describe the
  parameters; the ``Returns:`` section describes the result, and entries written as
  ``name (type): description`` in it declare the output's fields (in order) so that later calls can
  reference them;
* the return annotation gives the ``returns`` schema (``-> None`` gives none).

The decorated object stays callable exactly like the function (sync or async) and exposes
``.tool`` (the schema), ``.fn``, ``.is_async``, ``.sandboxed``, ``.parallel`` and ``.timeout``.
"""

from __future__ import annotations

import enum
import functools
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from toollab.errors import ToolSchemaError
from toollab.schema import Tool
from toollab.schema.wire import json_kind
from toollab.tools.formats import json_type_for

_SECTIONS = {
    "args": "args",
    "arguments": "args",
    "parameters": "args",
    "params": "args",
    "keyword args": "args",
    "returns": "returns",
    "return": "returns",
    "yields": "returns",
    "raises": "other",
    "examples": "other",
    "example": "other",
    "note": "other",
    "notes": "other",
    "see also": "other",
    "attributes": "other",
    "warnings": "other",
    "todo": "other",
}
#: enum values of one of these kinds give the enum a ``type``
_SCALAR_KINDS = {"string", "integer", "number", "boolean"}

_ENTRY = re.compile(r"^\s*\**(?P<name>[A-Za-z_]\w*)\s*(?:\((?P<type>[^)]*)\))?\s*:\s*(?P<desc>.*)$")
_TYPED_ENTRY = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*\((?P<type>[^)]*)\)\s*:\s*(?P<desc>.*)$")


@dataclass
class Docstring:
    """What :func:`parse_docstring` reads from a Google-style docstring."""

    description: str = ""
    params: dict[str, str] = field(default_factory=dict)
    returns: str = ""
    #: ``name (type): description`` entries of the ``Returns:`` section, in order
    return_fields: list[tuple[str, str, str]] = field(default_factory=list)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style docstring into summary, ``Args:`` and ``Returns:``."""
    out = Docstring()
    if not doc:
        return out
    lines = inspect.cleandoc(doc).splitlines()
    sections: dict[str, list[str]] = {"summary": [], "args": [], "returns": [], "other": []}
    current = "summary"
    for line in lines:
        header = line.strip().rstrip(":").lower()
        if _indent(line) == 0 and line.strip().endswith(":") and header in _SECTIONS:
            current = _SECTIONS[header]
            continue
        sections[current].append(line)
    out.description = "\n".join(sections["summary"]).strip()

    # Args: "name (type): text" entries; deeper-indented lines continue the previous entry
    base: int | None = None
    last: str | None = None
    for line in sections["args"]:
        if not line.strip():
            continue
        ind = _indent(line)
        m = _ENTRY.match(line)
        if m and (base is None or ind <= base):
            base = ind
            last = m.group("name")
            out.params[last] = m.group("desc").strip()
        elif last is not None:
            out.params[last] = (out.params[last] + " " + line.strip()).strip()

    text: list[str] = []
    entry_indent: int | None = None
    for line in sections["returns"]:
        if not line.strip():
            continue
        m = _TYPED_ENTRY.match(line)
        if m:
            entry_indent = _indent(line)
            out.return_fields.append(
                (m.group("name"), m.group("type").strip(), m.group("desc").strip())
            )
        elif out.return_fields and entry_indent is not None and _indent(line) > entry_indent:
            name, typ, desc = out.return_fields[-1]
            out.return_fields[-1] = (name, typ, (desc + " " + line.strip()).strip())
        else:
            text.append(line.strip())
    out.returns = " ".join(text).strip()
    return out


# -- type hints → JSON Schema -----------------------------------------------------------------------
class _Schemer:
    """Turns annotations into JSON Schema; shared definitions collect in :attr:`defs`."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.defs: dict[str, Any] = {}

    def __call__(self, ann: Any) -> dict[str, Any]:
        if ann is inspect.Parameter.empty or ann is Any or ann is object:
            return {}
        if ann is None or ann is type(None):
            return {"type": "null"}
        if ann is bool:
            return {"type": "boolean"}
        if ann is int:
            return {"type": "integer"}
        if ann is float:
            return {"type": "number"}
        if ann is str:
            return {"type": "string"}
        if ann in (list, tuple, set, frozenset, Sequence):
            return {"type": "array"}
        if ann in (dict, Mapping):
            return {"type": "object"}
        if isinstance(ann, type) and issubclass(ann, enum.Enum):
            return self._enum([m.value for m in ann])
        origin = typing.get_origin(ann)
        args = typing.get_args(ann)
        if origin is typing.Annotated:
            inner = self(args[0])
            notes = [a for a in args[1:] if isinstance(a, str)]
            if notes:
                inner = {**inner, "description": " ".join(notes)}
            return inner
        if origin is typing.Literal:
            return self._enum(list(args))
        if origin in (typing.Union, types.UnionType):
            return self._union(list(args))
        if origin in (list, set, frozenset, Sequence) or (
            origin is not None
            and isinstance(origin, type)
            and issubclass(origin, Sequence)
            and origin is not tuple
            and origin is not str
        ):
            schema: dict[str, Any] = {"type": "array"}
            if args:
                items = self(args[0])
                if items:
                    schema["items"] = items
            if origin in (set, frozenset):
                schema["uniqueItems"] = True
            return schema
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                items = self(args[0])
                return {"type": "array", **({"items": items} if items else {})}
            if args:
                return {
                    "type": "array",
                    "prefixItems": [self(a) for a in args],
                    "minItems": len(args),
                    "maxItems": len(args),
                }
            return {"type": "array"}
        if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
            schema = {"type": "object"}
            if len(args) == 2:
                values = self(args[1])
                if values:
                    schema["additionalProperties"] = values
            return schema
        return self._pydantic(ann)

    def _enum(self, values: list[Any]) -> dict[str, Any]:
        values = [v.value if isinstance(v, enum.Enum) else v for v in values]
        kinds = {json_kind(v) for v in values}
        schema: dict[str, Any] = {}
        if len(kinds) == 1 and kinds <= _SCALAR_KINDS:
            schema["type"] = kinds.pop()
        schema["enum"] = values
        return schema

    def _union(self, members: list[Any]) -> dict[str, Any]:
        nullable = any(m is type(None) or m is None for m in members)
        rest = [m for m in members if m is not type(None) and m is not None]
        schemas = [self(m) for m in rest]
        if any(not s for s in schemas):
            return {}
        if all(set(s) <= {"type"} and isinstance(s["type"], str) for s in schemas):
            names = [s["type"] for s in schemas] + (["null"] if nullable else [])
            names = list(dict.fromkeys(names))
            return {"type": names[0] if len(names) == 1 else names}
        if nullable and len(schemas) == 1 and isinstance(schemas[0].get("type"), str):
            return {**schemas[0], "type": [schemas[0]["type"], "null"]}
        if nullable:
            schemas.append({"type": "null"})
        return {"anyOf": schemas}

    def _pydantic(self, ann: Any) -> dict[str, Any]:
        from pydantic import TypeAdapter

        try:
            schema = TypeAdapter(ann).json_schema(ref_template="#/$defs/{model}")
        except Exception as exc:  # pydantic raises several error types for unsupported hints
            raise ToolSchemaError(
                f"{self.where}: cannot express the type {ann!r} as JSON Schema ({type(exc).__name__})"
            ) from None
        schema = _strip_titles(schema)
        self.defs.update(schema.pop("$defs", {}))
        return schema


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {
            k: (
                {pk: _strip_titles(pv) for pk, pv in v.items()}
                if k in ("properties", "$defs") and isinstance(v, dict)
                else _strip_titles(v)
            )
            for k, v in schema.items()
            if k != "title"
        }
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def _jsonable_default(value: Any) -> tuple[bool, Any]:
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False, None
    return True, value


def tool_schema(
    fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> Tool:
    """Build the :class:`Tool` for ``fn`` from its signature, type hints and docstring."""
    fname = name or getattr(fn, "__name__", None)
    if not fname or fname == "<lambda>":
        raise ToolSchemaError("a tool needs a name: pass @tool(name=...) for lambdas")
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # a forward reference that does not resolve
        raise ToolSchemaError(f"tool {fname!r}: cannot resolve its type hints ({exc})") from None
    doc = parse_docstring(inspect.getdoc(fn))
    sig = inspect.signature(fn)
    schemer = _Schemer(f"tool {fname!r}")
    properties: dict[str, Any] = {}
    required: list[str] = []
    extra: dict[str, Any] | bool | None = None
    for pname, param in sig.parameters.items():
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            raise ToolSchemaError(
                f"tool {fname!r}: *{pname} is not allowed; tools take named parameters"
            )
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise ToolSchemaError(
                f"tool {fname!r}: parameter {pname!r} is positional-only; tools are called by keyword"
            )
        ann = hints.get(pname, inspect.Parameter.empty)
        schemer.where = f"tool {fname!r}, parameter {pname!r}"
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            extra = schemer(ann) or True
            continue
        schema = schemer(ann)
        if doc.params.get(pname):
            schema = {**schema, "description": doc.params[pname]}
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        else:
            ok, default = _jsonable_default(param.default)
            if ok:
                schema["default"] = default
        properties[pname] = schema
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if extra is not None:
        parameters["additionalProperties"] = extra
    if schemer.defs:
        parameters["$defs"] = dict(schemer.defs)

    returns = _returns_schema(fname, hints.get("return", inspect.Parameter.empty), doc)
    return Tool.build(
        name=fname,
        description=description if description is not None else doc.description,
        parameters=parameters,
        returns=returns,
    )


def _returns_schema(fname: str, ann: Any, doc: Docstring) -> dict[str, Any] | None:
    if ann is None or ann is type(None):
        return None
    schemer = _Schemer(f"tool {fname!r}, return value")
    schema: dict[str, Any] = {} if ann is inspect.Parameter.empty else schemer(ann)
    if doc.return_fields:
        props = {}
        for fname_, ftype, fdesc in doc.return_fields:
            fschema: dict[str, Any] = {}
            jt = json_type_for(ftype)
            if jt:
                fschema["type"] = jt
            elif ftype:
                fschema["x-original-type"] = ftype
            if fdesc:
                fschema["description"] = fdesc
            props[fname_] = fschema
        schema = {
            **schema,
            "type": "object",
            "properties": {**props, **schema.get("properties", {})},
        }
    if doc.returns:
        schema = {**schema, "description": doc.returns}
    if not schema:
        return None
    if schemer.defs:
        schema["$defs"] = dict(schemer.defs)
    return schema


class ToolFunction:
    """A Python function with its :class:`Tool` schema; calling it calls the function."""

    __name__: str
    __qualname__: str
    __wrapped__: Callable[..., Any]

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        sandboxed: bool = False,
        parallel: bool = True,
        timeout: float | None = None,
    ) -> None:
        self.fn = fn
        self.tool: Tool = tool_schema(fn, name=name, description=description)
        self.is_async = inspect.iscoroutinefunction(fn)
        self.sandboxed = sandboxed
        self.parallel = parallel
        self.timeout = timeout
        functools.update_wrapper(self, fn)

    @property
    def name(self) -> str:
        return self.tool.name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"ToolFunction({self.tool.name!r})"


@overload
def tool(fn: Callable[..., Any], /) -> ToolFunction: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    sandboxed: bool = False,
    parallel: bool = True,
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], ToolFunction]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    sandboxed: bool = False,
    parallel: bool = True,
    timeout: float | None = None,
) -> ToolFunction | Callable[[Callable[..., Any]], ToolFunction]:
    """Turn a function into a tool: ``@tool`` or ``@tool(name=..., sandboxed=True, ...)``.

    ``sandboxed=True`` runs it through :class:`~toollab.tools.sandbox.Sandbox` when executed;
    ``parallel=False`` keeps the executor from running it alongside other calls; ``timeout``
    overrides the executor's per-call timeout (seconds).
    """

    def wrap(f: Callable[..., Any]) -> ToolFunction:
        return ToolFunction(
            f,
            name=name,
            description=description,
            sandboxed=sandboxed,
            parallel=parallel,
            timeout=timeout,
        )

    return wrap(fn) if fn is not None else wrap
