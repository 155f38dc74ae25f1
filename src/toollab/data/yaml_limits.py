"""YAML with explicit limits: every YAML file toollab reads goes through :func:`load_yaml`.

YAML aliases (``&a`` / ``*a``) share one node between many places, so 600 bytes can describe a
document of billions of values (the "billion laughs"); deep nesting exhausts the recursion of
the composer; an integer of thousands of digits costs quadratic time to convert.  The limits:

* :data:`MAX_ALIASES` alias uses per document;
* :data:`MAX_EXPANDED` values in the document once every alias is expanded;
* :data:`MAX_DEPTH` levels of nesting;
* :data:`MAX_LINE_CHARS` characters per line;
* :data:`MAX_INT_DIGITS` digits per integer.

Breaking one is a :class:`YamlLimitError` (a ``yaml.MarkedYAMLError``, so it carries the line)
before the document is built.  See ``docs/input-limits.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from toollab.data.jsonl import read_text
from toollab.errors import InputError

MAX_ALIASES = 100
MAX_EXPANDED = 100_000
MAX_DEPTH = 100
MAX_LINE_CHARS = 1_000_000
MAX_INT_DIGITS = 4_300


class YamlLimitError(yaml.MarkedYAMLError):
    """A YAML document breaks one of the limits; ``problem_mark`` says where."""

    def __init__(self, problem: str, mark: Any = None) -> None:
        super().__init__(problem=problem, problem_mark=mark)


class LimitedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that counts aliases and nesting while it composes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise YamlLimitError(
                    f"more than {MAX_ALIASES} alias uses (*name); expand them in the file",
                    self.peek_event().start_mark,
                )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise YamlLimitError(
                    f"nested more than {MAX_DEPTH} levels deep", self.peek_event().start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_yaml_int(self, node: Any) -> Any:
        digits = sum(c.isdigit() for c in str(node.value))
        if digits > MAX_INT_DIGITS:
            raise YamlLimitError(
                f"an integer of {digits:,} digits (limit {MAX_INT_DIGITS:,})", node.start_mark
            )
        return super().construct_yaml_int(node)


LimitedLoader.add_constructor("tag:yaml.org,2002:int", LimitedLoader.construct_yaml_int)


def expanded_size(node: Any, cap: int = MAX_EXPANDED) -> int:
    """How many nodes ``node`` stands for once aliases are expanded (stops counting past
    ``cap``); linear in the number of distinct nodes."""
    memo: dict[int, int] = {}

    def size(n: Any) -> int:
        key = id(n)
        if key in memo:
            return memo[key]
        memo[key] = cap + 1  # a cycle (recursive alias) counts as too large
        total = 1
        if isinstance(n, yaml.SequenceNode):
            children: list[Any] = list(n.value)
        elif isinstance(n, yaml.MappingNode):
            children = [c for pair in n.value for c in pair]
        else:
            children = []
        for child in children:
            total += size(child)
            if total > cap:
                break
        memo[key] = total
        return total

    return size(node)


def load_yaml(text: str) -> tuple[Any, Any]:
    """``(root node, value)`` of a YAML document within the limits (``(None, None)`` when it
    is empty); a ``yaml.YAMLError`` (with its line) when it is malformed or breaks a limit."""
    for n, line in enumerate(text.splitlines(), 1):
        if len(line) > MAX_LINE_CHARS:
            raise YamlLimitError(
                f"line {n} is longer than {MAX_LINE_CHARS:,} characters",
                yaml.Mark("<text>", 0, n - 1, 0, None, None),
            )
    loader = LimitedLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, None
        if expanded_size(root) > MAX_EXPANDED:
            raise YamlLimitError(
                f"the document expands to more than {MAX_EXPANDED:,} values (aliases repeat "
                "their content)",
                root.start_mark,
            )
        return root, loader.construct_document(root)
    finally:
        loader.dispose()


def yaml_error(exc: yaml.YAMLError, path: str | Path) -> InputError:
    """An :class:`InputError` naming the file and the line of a malformed YAML document or of
    the limit it breaks."""
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    what = "YAML beyond a limit" if isinstance(exc, YamlLimitError) else "malformed YAML"
    return InputError(f"{what}: {problem}", path=path, line=line)


def read_yaml_file(path: str | Path) -> Any:
    """The value of a YAML file read within the limits (``None`` when it is empty).

    Every problem is an :class:`InputError` naming the file (and the line where there is one):
    a path that is not a readable regular file, text that is not UTF-8, malformed YAML, a
    broken limit."""
    text = read_text(path)
    try:
        return load_yaml(text)[1]
    except yaml.YAMLError as exc:
        raise yaml_error(exc, path) from None
    except RecursionError:  # pragma: no cover - the depth limit comes first
        raise InputError(f"nested more than {MAX_DEPTH} levels deep", path=path) from None
