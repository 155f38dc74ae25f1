"""Typed options of a command, from a YAML ``--config`` file and from flags, checked by one model.

A command's options are a pydantic model (strict types, no NaN or infinity, ranges as field
constraints).  :func:`read_config_mapping` reads a config file through the YAML limits
(:func:`toollab.data.yaml_limits.read_yaml_file`); :func:`typed_options` merges its values with
the flags given on the command line (the flags win) and validates the result with the model.

Every problem is an :class:`InputError` that names where the value came from (the file and the
key, or the flag), what was expected and what was given, before the command does any work: an
unknown key (with a did-you-mean), a value of the wrong type (a number where a string is due, a
list where a mapping is due), a number that is not finite or out of its range.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from toollab.data.yaml_limits import read_yaml_file
from toollab.errors import InputError, did_you_mean

M = TypeVar("M", bound=BaseModel)

#: longest rendering of a bad value in an error message
_SHOWN = 80


def read_config_mapping(path: str | Path) -> dict[str, object]:
    """The ``option: value`` mapping of a YAML config file (``{}`` when the file is empty);
    option names are given with underscores (``pack_size``) or dashes (``pack-size``)."""
    value = read_yaml_file(path)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(
            f"a config file is a mapping of option: value, got {_kind(value)}", path=path
        )
    out: dict[str, object] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise InputError(f"option names are text, got {_shown(key)}", path=path)
        out[key.replace("-", "_")] = item
    return out


def typed_options(
    model: type[M],
    file_values: Mapping[str, object],
    flags: Mapping[str, object],
    *,
    file: str | Path | None = None,
) -> M:
    """``model`` validated on ``file_values`` (a config file's mapping) overridden by ``flags``
    (the options given on the command line, keyed by field name).

    A scalar given for a list option is taken as a list of one (``source: env:weather``)."""
    names = list(model.model_fields)
    for key in file_values:
        if key not in names:
            raise InputError(f"unknown option `{key}`{did_you_mean(key, names)}", path=file)
    for key in flags:
        if key not in names:
            raise InputError(f"unknown option {_flag(key)}{did_you_mean(key, names)}")
    merged = {k: _listed(model, k, v) for k, v in {**file_values, **flags}.items()}
    try:
        return model.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else ""
        inner = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"][1:])
        problem = f"{_message(err['msg'])}, got {_shown(err.get('input'))}"
        if key in flags:
            raise InputError(problem, where=f"{_flag(key)}{inner}") from None
        raise InputError(problem, path=file, where=f"{key}{inner}" or None) from None


def _listed(model: type[BaseModel], key: str, value: Any) -> Any:
    field = model.model_fields.get(key)
    if field is None or isinstance(value, list):
        return value
    types = [field.annotation, *typing.get_args(field.annotation)]
    if any(typing.get_origin(t) is list for t in types) and isinstance(value, str):
        return [value]
    return value


def _message(msg: str) -> str:
    head = "Input should be "
    msg = msg.removeprefix("Value error, ")
    if msg.startswith(head):
        return "expected " + msg[len(head) :]
    return msg[:1].lower() + msg[1:]


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    return type(value).__name__


def _shown(value: Any) -> str:
    text = repr(value)
    if len(text) > _SHOWN:
        text = text[: _SHOWN - 3] + "..."
    return text
