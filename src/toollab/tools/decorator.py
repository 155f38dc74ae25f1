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
* ``Annotated[X, Param(...)]`` adds JSON-Schema facts the type cannot say
  (``Param(minimum=0, maximum=90)``, ``Param(minItems=1)``, ``Param(pattern="^[A-Z]{3}$")``);
  ``Param(optional=True)`` makes a parameter with a default optional without recording the default
  (the function's own default applies when a call leaves it out; ``X | None`` then gives X's
  schema);
* a parameter without a default is required; a JSON-serialisable default is recorded;
* the docstring's summary is the description; Google-style ``Args:`` entries describe the
  parameters; the ``Returns:`` section describes the result, and entries written as
  ``name (type): description`` in it declare the output's fields (in order) so that later calls can
  reference them;
* the return annotation gives the ``returns`` schema (``-> None`` gives none;
  ``@tool(returns=False)`` leaves the result undescribed).

The decorated object stays callable exactly like the function (sync or async) and exposes
``.tool`` (the schema), ``.fn``, ``.is_async``, ``.sandboxed``, ``.parallel`` and ``.timeout``.

``@tool`` works on methods too: ``self`` is left out of the schema, and reading the attribute from
an instance gives a :class:`ToolFunction` bound to it (``obj.method.tool`` is the schema,
``obj.method(**arguments)`` the call)::

    class Thermostat:
        def __init__(self) -> None:
            self.target = 20.0

        @tool
        def set_target(self, celsius: Annotated[float, Param(minimum=5, maximum=30)]) -> str:
            '''Set the target temperature.

            Args:
                celsius: Degrees Celsius.
            '''
            self.target = celsius
            return "ok"
"""

from __future__ import annotations

import enum
import functools
import inspect
import json
import math
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from toollab.errors import ArgumentError, ToolSchemaError, check_arg
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


class Param:
    """JSON-Schema facts for one parameter, given as ``Annotated[X, Param(...)]``.

    ``description`` describes the parameter (the docstring's ``Args:`` entry wins when both are
    given); every other keyword is a JSON-Schema keyword added as it is (``minimum``, ``maximum``,
    ``exclusiveMinimum``, ``pattern``, ``minLength``, ``minItems``, ``format``, ...).
    ``optional=True`` keeps the parameter out of ``required`` without recording its default.
    """

    __slots__ = ("description", "facts", "optional")

    def __init__(
        self, description: str | None = None, *, optional: bool = False, **facts: Any
    ) -> None:
        if description is not None:
            check_arg("Param(description)", description, str, "a string or None")
        check_arg("Param(optional=...)", optional, bool, "True or False")
        for key in ("type", "properties", "required"):
            if key in facts:
                raise ToolSchemaError(
                    f"Param({key}=...) is not allowed: the {key!r} comes from the type annotation"
                )
        self.description = description
        self.optional = optional
        self.facts = facts

    def __repr__(self) -> str:
        args = [repr(self.description)] if self.description is not None else []
        if self.optional:
            args.append("optional=True")
        args.extend(f"{k}={v!r}" for k, v in self.facts.items())
        return f"Param({', '.join(args)})"


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
            for meta in args[1:]:
                if isinstance(meta, Param):
                    if meta.optional:
                        inner = _drop_null(inner)
                    inner = {**inner, **meta.facts}
                    if meta.description is not None:
                        notes.append(meta.description)
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


def _drop_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without ``null`` among its types (an optional parameter need not be null)."""
    kinds = schema.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        rest = [k for k in kinds if k != "null"]
        return {**schema, "type": rest[0] if len(rest) == 1 else rest}
    members = schema.get("anyOf")
    if isinstance(members, list) and {"type": "null"} in members:
        rest = [m for m in members if m != {"type": "null"}]
        if len(rest) == 1:
            out = {k: v for k, v in schema.items() if k != "anyOf"}
            return {**rest[0], **out}
        return {**schema, "anyOf": rest}
    return schema


def _is_optional(ann: Any) -> bool:
    """Does ``ann`` carry ``Param(optional=True)``?"""
    if typing.get_origin(ann) is not typing.Annotated:
        return False
    return any(isinstance(m, Param) and m.optional for m in typing.get_args(ann)[1:])


def _is_method(fn: Callable[..., Any], params: list[inspect.Parameter]) -> bool:
    """Is ``fn`` a function defined in a class body, taking ``self`` first?"""
    qual = getattr(fn, "__qualname__", "")
    owner = qual.rsplit(".", 1)[0] if "." in qual else ""
    return bool(
        owner
        and not owner.endswith("<locals>")
        and params
        and params[0].name in ("self", "cls")
        and params[0].kind
        in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )


def _jsonable_default(value: Any) -> tuple[bool, Any]:
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        return False, None
    return True, json.loads(text)  # the JSON value: a tuple default is recorded as a list


def tool_schema(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    returns: bool = True,
) -> Tool:
    """Build the :class:`Tool` for ``fn`` from its signature, type hints and docstring.

    A function defined in a class (a method) leaves its first parameter (``self``) out;
    ``returns=False`` leaves the result undescribed."""
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
    params = list(sig.parameters.values())
    if _is_method(fn, params):
        params = params[1:]
    for param in params:
        pname = param.name
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
        described = schema.pop("description", None)
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        elif not _is_optional(ann):
            ok, default = _jsonable_default(param.default)
            if ok:
                schema["default"] = default
        if doc.params.get(pname):
            described = doc.params[pname]
        if described is not None:
            schema["description"] = described
        properties[pname] = schema
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if extra is not None:
        parameters["additionalProperties"] = extra
    if schemer.defs:
        parameters["$defs"] = dict(schemer.defs)

    result = (
        _returns_schema(fname, hints.get("return", inspect.Parameter.empty), doc)
        if returns
        else None
    )
    return Tool.build(
        name=fname,
        description=description if description is not None else doc.description,
        parameters=parameters,
        returns=result,
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
        returns: bool = True,
    ) -> None:
        self.fn = fn
        self.tool: Tool = tool_schema(fn, name=name, description=description, returns=returns)
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

    def __get__(self, obj: Any, objtype: type | None = None) -> ToolFunction:
        """Read from an instance: the same tool, bound to the instance (``self`` supplied)."""
        if obj is None:
            return self
        return self.bind(obj)

    def bind(self, obj: Any) -> ToolFunction:
        """This method's tool with ``obj`` as ``self`` (the schema is shared, not rebuilt)."""
        bound = object.__new__(ToolFunction)
        bound.__dict__.update(self.__dict__)
        bound.fn = types.MethodType(self.fn, obj)
        return bound

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
    returns: bool = True,
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
    returns: bool = True,
) -> ToolFunction | Callable[[Callable[..., Any]], ToolFunction]:
    """Turn a function (or a method) into a tool: ``@tool`` or ``@tool(name=..., ...)``.

    ``sandboxed=True`` runs it through :class:`~toollab.tools.sandbox.Sandbox` when executed;
    ``parallel=False`` keeps the executor from running it alongside other calls; ``timeout``
    overrides the executor's per-call timeout (seconds); ``returns=False`` leaves the result
    out of the schema.
    """

    if fn is not None and not callable(fn):
        hint = " (the name is a keyword: @tool(name=...))" if isinstance(fn, str) else ""
        raise ArgumentError("tool(fn)", f"a function or method{hint}", fn)
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ArgumentError("tool(name=...)", "a non-empty string or None", name)
    if description is not None:
        check_arg("tool(description=...)", description, str, "a string or None")
    for flag, value in (("sandboxed", sandboxed), ("parallel", parallel), ("returns", returns)):
        check_arg(f"tool({flag}=...)", value, bool, "True or False")
    if timeout is not None and not (
        isinstance(timeout, int | float)
        and not isinstance(timeout, bool)
        and math.isfinite(timeout)
        and timeout > 0
    ):
        raise ArgumentError("tool(timeout=...)", "seconds > 0 or None", timeout)

    def wrap(f: Callable[..., Any]) -> ToolFunction:
        if not callable(f):
            raise ArgumentError("@tool(...)", "to decorate a function or method", f)
        return ToolFunction(
            f,
            name=name,
            description=description,
            sandboxed=sandboxed,
            parallel=parallel,
            timeout=timeout,
            returns=returns,
        )

    return wrap(fn) if fn is not None else wrap
