"""JSON-Schema-constrained decoding for the transformers backend, through outlines.

outlines (its ``outlines_core`` backend: a Rust regex-to-token-index compiler, no triton, no
GPU) turns a JSON Schema into a regular expression over the model's vocabulary and a logits
processor that masks every token the expression cannot continue with, step by step, until only
end-of-sequence is left.  :class:`OutlinesConstrainer` builds one per loaded model and caches the
compiled index of each schema, so a tool set's schema is compiled once however many requests use
it.  The schemas are the ones :mod:`toollab.models.constrain` builds for llama.cpp (decision
first, one call, arrays of calls ...): outlines keeps the property order, so the decision and the
tool name come first here too.

Two adjustments (:func:`prepare_schema`) keep the regex faithful to the schema:

* a string ``pattern`` is spliced into the regex inside the JSON quotes as it is, so a ``.`` or
  a negated class could produce a raw ``"`` or control character and break the JSON;
  :func:`json_safe_pattern` makes them stop at those characters;
* a closed object without properties (a tool without parameters) gets an explicit empty
  ``properties``, the form outlines_core accepts.

``WHITESPACE`` (at most one space between tokens) bounds the whitespace a small model can loop
on.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from typing import Any

from toollab.errors import BackendError, InputError

#: JSON whitespace the model may write between tokens (outlines_core's default)
WHITESPACE = r"[ ]?"
#: one character of a JSON string that needs no escape (what ``.`` may match inside a string)
_JSON_CHAR = r'[^"\\\x00-\x1f]'
#: schemas whose compiled index is kept per model
INDEX_CACHE = 64


def available() -> bool:
    """Whether outlines (with outlines_core) is installed."""
    import importlib.util

    return (
        importlib.util.find_spec("outlines") is not None
        and importlib.util.find_spec("outlines_core") is not None
    )


def json_safe_pattern(pattern: str) -> str:
    """``pattern`` with ``.`` and negated classes unable to match ``"``, ``\\`` or control
    characters, which would end or break the JSON string the value is written in."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
            out.append(ch)
        elif ch == "[":
            in_class = True
            if pattern.startswith("[^", i):
                out.append('[^"\\\\\\x00-\\x1f')
                i += 2
                if i < n and pattern[i] == "]":  # "[^]...]": a literal ] first
                    out.append("\\]")
                    i += 1
                continue
            out.append(ch)
        elif ch == ".":
            out.append(_JSON_CHAR)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def prepare_schema(schema: Any) -> Any:
    """A copy of ``schema`` in the form outlines_core compiles: string patterns made JSON-safe
    (:func:`json_safe_pattern`) and a closed object without properties (a tool without
    parameters) given an explicit empty ``properties`` (the same values: only ``{}``)."""
    if isinstance(schema, dict):
        out = {k: prepare_schema(v) for k, v in schema.items()}
        if isinstance(out.get("pattern"), str):
            out["pattern"] = json_safe_pattern(out["pattern"])
        if out.get("additionalProperties") is False and "properties" not in out:
            out["properties"] = {}
        return out
    if isinstance(schema, list):
        return [prepare_schema(v) for v in schema]
    return schema


def schema_regex(schema: dict[str, Any]) -> str:
    """The regular expression outlines_core derives from a (prepared) JSON Schema."""
    from outlines_core.json_schema import build_regex_from_schema

    text = json.dumps(prepare_schema(schema), ensure_ascii=False)
    try:
        return str(build_regex_from_schema(text, WHITESPACE))
    except Exception as exc:  # outlines_core raises its own ValueError/TypeError subclasses
        raise InputError(f"outlines cannot turn the JSON Schema into a regex: {exc}") from exc


class OutlinesConstrainer:
    """Logits processors that hold a transformers model to a JSON Schema."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        if not available():
            raise BackendError(
                "constrained decoding with transformers needs outlines: pip install 'toollab[hf]'"
            )
        import outlines
        from outlines.backends.outlines_core import OutlinesCoreBackend

        try:
            self._backend = OutlinesCoreBackend(outlines.from_transformers(model, tokenizer))
        except Exception as exc:
            raise BackendError(f"outlines cannot use this tokenizer: {exc}") from exc
        self._indexes: OrderedDict[str, Any] = OrderedDict()

    def _index(self, schema: dict[str, Any]) -> Any:
        from outlines_core import Index

        # keep the key order: it is the order the regex makes the model write properties
        key = hashlib.sha256(json.dumps(schema, ensure_ascii=False).encode()).hexdigest()
        index = self._indexes.get(key)
        if index is not None:
            self._indexes.move_to_end(key)
            return index
        regex = schema_regex(schema)
        try:
            index = Index(regex, self._backend.vocabulary)
        except Exception as exc:
            raise InputError(f"outlines cannot compile the schema's regex: {exc}") from exc
        self._indexes[key] = index
        while len(self._indexes) > INDEX_CACHE:
            self._indexes.popitem(last=False)
        return index

    def processor(self, schema: dict[str, Any]) -> Any:
        """A fresh logits processor (it keeps the decoding state) for one generation."""
        from outlines.backends.outlines_core import OutlinesCoreLogitsProcessor

        return OutlinesCoreLogitsProcessor(self._index(schema), "torch")
