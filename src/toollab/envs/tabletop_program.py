"""Tabletop programs: a short Python policy run with only the tabletop's functions in scope.

A program (the ``run_program`` tool of :mod:`toollab.envs.tabletop`) is checked twice:

1. **statically** (:func:`check_program`): it must parse, be at most :data:`MAX_CODE` characters,
   import nothing, name none of :data:`FORBIDDEN` (``open``, ``exec``, ``eval``, ``__import__``,
   ``getattr``, ...), reach no attribute or name that starts with an underscore, and use no
   ``async``.  A refusal is a crash with reason ``refused`` (``syntax`` for a program that does
   not parse), before anything runs;
2. **at run time**, in toollab's :class:`~toollab.tools.sandbox.Sandbox` (a separate, confined
   process without network, with a CPU limit of :data:`CPU_SECONDS`, a memory limit of
   :data:`MEMORY_MB` and a wall-clock limit of :data:`TIMEOUT`): :func:`run_policy` builds the
   scene there and executes the program with the functions ``get_obj_names``, ``get_obj_pos``,
   ``is_obj_visible``, ``put_first_on_second`` and ``say`` and a small set of builtins
   (:data:`BUILTINS`) as its only names.  At most :data:`MAX_ACTIONS` actions run.

How a program ends (:func:`execute_program`): its final scene and what it said, or an
:class:`~toollab.envs.base.EnvError` whose reason says why it stopped — ``time_limit`` (a loop
that does not end), ``memory_limit`` (an allocation without bound), ``program_error`` (it
raised: the message names the exception and the line), the reason of a refused action
(``not_found``, ``precondition``, ``bad_value``), ``refused`` / ``syntax`` (the static check),
or ``sandbox`` (the sandbox itself failed, or cannot run here).
"""

from __future__ import annotations

import ast
import atexit
import threading
import traceback
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toollab.envs.base import EnvError
from toollab.envs.tabletop_scene import PLACES, Scene
from toollab.tools import Sandbox, SandboxError

#: limits of one program run
CPU_SECONDS, MEMORY_MB, TIMEOUT = 2.0, 256, 6.0
MAX_CODE = 4000
MAX_ACTIONS = 64
MAX_SAID = 64

#: crash reasons of a program (besides those of the actions it calls)
REFUSED = "refused"
SYNTAX = "syntax"
PROGRAM_ERROR = "program_error"
TIME_LIMIT = "time_limit"
MEMORY_LIMIT = "memory_limit"
SANDBOX = "sandbox"

#: names a program may not use, and why
FORBIDDEN: dict[str, str] = {
    "open": "programs cannot open files",
    "exec": "programs cannot run code from text",
    "eval": "programs cannot run code from text",
    "compile": "programs cannot run code from text",
    "__import__": "programs cannot import modules",
    "globals": "programs cannot inspect their scope",
    "locals": "programs cannot inspect their scope",
    "vars": "programs cannot inspect their scope",
    "getattr": "programs cannot reach attributes by name",
    "setattr": "programs cannot reach attributes by name",
    "delattr": "programs cannot reach attributes by name",
    "input": "programs cannot read input",
    "breakpoint": "programs cannot start a debugger",
    "help": "programs cannot start help",
    "exit": "programs cannot exit the interpreter",
    "quit": "programs cannot exit the interpreter",
    "memoryview": "programs cannot reach raw memory",
    "type": "programs cannot make types",
    "object": "programs cannot reach the object base",
    "super": "programs cannot reach the object base",
}
_ASYNC = (ast.AsyncFunctionDef, ast.AsyncFor, ast.AsyncWith, ast.Await)
#: the builtins a program sees (everything else is not defined)
BUILTINS: dict[str, Any] = {
    f.__name__: f
    for f in (
        abs,
        all,
        any,
        bool,
        dict,
        enumerate,
        filter,
        float,
        int,
        isinstance,
        len,
        list,
        map,
        max,
        min,
        range,
        reversed,
        round,
        set,
        sorted,
        str,
        sum,
        tuple,
        zip,
        Exception,
        ValueError,
        KeyError,
        IndexError,
    )
}


def check_program(code: str) -> ast.Module:
    """The parsed program; :class:`EnvError` (reason ``syntax`` or ``refused``) when it does
    not parse or does what programs may not do (see the module docs)."""
    if len(code) > MAX_CODE:
        raise EnvError(
            f"the program is {len(code):,} characters long; at most {MAX_CODE:,} are allowed",
            REFUSED,
        )
    try:
        tree = ast.parse(code, "<program>", "exec")
    except SyntaxError as exc:
        raise EnvError(
            f"the program does not parse: {exc.msg} (line {exc.lineno})", SYNTAX
        ) from None
    except ValueError as exc:  # NUL bytes
        raise EnvError(f"the program does not parse: {exc}", SYNTAX) from None
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Import | ast.ImportFrom):
            raise EnvError(
                f"line {line}: programs cannot import modules; use only get_obj_names, "
                "get_obj_pos, is_obj_visible, put_first_on_second and say",
                REFUSED,
            )
        if isinstance(node, _ASYNC):
            raise EnvError(f"line {line}: programs cannot use async code", REFUSED)
        if isinstance(node, ast.Name) and node.id in FORBIDDEN:
            raise EnvError(
                f"line {line}: {node.id} is not available: {FORBIDDEN[node.id]}", REFUSED
            )
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise EnvError(f"line {line}: the name {node.id} is not available", REFUSED)
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise EnvError(
                f"line {line}: programs cannot reach the attribute {node.attr!r}", REFUSED
            )
    return tree


class ProgramOutcome(BaseModel):
    """What a program run in the sandbox reports back."""

    model_config = ConfigDict(extra="forbid")

    scene: list[list[Any]] = Field(default_factory=list)
    said: list[str] = Field(default_factory=list)
    actions: list[str] = Field(default_factory=list)
    error: str | None = None
    reason: str | None = None


class _Api:
    """The functions a program calls, over one scene."""

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        self.said: list[str] = []
        self.actions: list[str] = []

    def get_obj_names(self) -> list[str]:
        return self.scene.names()

    def get_obj_pos(self, obj: str) -> list[float]:
        return self.scene.position(_text(obj, "get_obj_pos"))

    def is_obj_visible(self, obj: str) -> bool:
        return self.scene.visible(_text(obj, "is_obj_visible"))

    def put_first_on_second(self, obj: str, target: Any) -> str:
        if len(self.actions) >= MAX_ACTIONS:
            raise EnvError(f"more than {MAX_ACTIONS} actions", PROGRAM_ERROR)
        if not isinstance(target, str):
            target = [float(v) for v in target]
        self.actions.append(f"put_first_on_second({obj!r}, {target!r})")
        return self.scene.put(_text(obj, "put_first_on_second"), target)

    def say(self, message: object) -> None:
        if len(self.said) < MAX_SAID:
            self.said.append(str(message)[:500])

    def scope(self) -> dict[str, Any]:
        return {
            "__builtins__": {**BUILTINS, "print": self.say},
            "get_obj_names": self.get_obj_names,
            "get_obj_pos": self.get_obj_pos,
            "is_obj_visible": self.is_obj_visible,
            "put_first_on_second": self.put_first_on_second,
            "say": self.say,
        }


def _text(value: object, fn: str) -> str:
    if not isinstance(value, str):
        raise EnvError(f"{fn}: an object name is text, got {value!r}", PROGRAM_ERROR)
    return value


def _line(exc: BaseException) -> str:
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<program>"]
    return f" (line {lines[-1]})" if lines else ""


def run_policy(code: str, rows: list[list[Any]]) -> dict[str, Any]:
    """Run ``code`` over the scene ``rows`` (:meth:`Scene.to_json`): this is what the sandbox
    runs.  Returns a :class:`ProgramOutcome` as JSON; an allocation past the memory limit is
    left to the sandbox to report."""
    tree = check_program(code)
    api = _Api(Scene.from_json(rows))
    error: str | None = None
    reason: str | None = None
    try:
        exec(compile(tree, "<program>", "exec"), api.scope())
    except MemoryError:
        raise
    except EnvError as exc:
        error, reason = f"{exc}{_line(exc)}", exc.reason
    except Exception as exc:
        error, reason = f"{type(exc).__name__}: {exc}{_line(exc)}", PROGRAM_ERROR
    return ProgramOutcome(
        scene=api.scene.to_json(), said=api.said, actions=api.actions, error=error, reason=reason
    ).model_dump()


# -- the parent's side --------------------------------------------------------------------------------
_LOCK = threading.Lock()
_SANDBOXES: list[Sandbox] = []

#: the sandbox's failure kinds as program crash reasons
_REASON_OF_KIND = {"timeout": TIME_LIMIT, "cpu": TIME_LIMIT, "memory": MEMORY_LIMIT}


def policy_sandbox() -> Sandbox:
    """The process's sandbox for tabletop programs (made on first use, closed at exit)."""
    with _LOCK:
        if not _SANDBOXES:
            box = Sandbox(
                cpu_seconds=CPU_SECONDS,
                memory_mb=MEMORY_MB,
                timeout=TIMEOUT,
                network=False,
                max_file_mb=1,
                max_open_files=64,
                max_processes=4,
                max_result_bytes=64_000,
                max_workspace_mb=1,
                max_workspace_files=16,
            )
            _SANDBOXES.append(box)
            atexit.register(box.close)
        return _SANDBOXES[0]


def execute_program(code: str, scene: Scene) -> tuple[Scene, ProgramOutcome]:
    """Run a program over ``scene`` in the sandbox: the final scene and the outcome, or
    :class:`EnvError` with the reason it stopped (see the module docs)."""
    check_program(code)
    try:
        raw = policy_sandbox().run_callable(run_policy, code, scene.to_json())
    except SandboxError as exc:
        if exc.exc_type == "EnvError":  # the static check again, inside
            raise EnvError(f"the program was refused: {exc}", REFUSED) from None
        reason = _REASON_OF_KIND.get(exc.kind, REFUSED if exc.kind == "refused" else SANDBOX)
        raise EnvError(f"the program was stopped: {exc}", reason) from None
    try:
        outcome = ProgramOutcome.model_validate(raw)
        final = Scene.from_json(outcome.scene)
    except ValueError as exc:
        raise EnvError(f"the program's sandbox sent back no scene: {exc}", SANDBOX) from None
    if outcome.error is not None:
        raise EnvError(f"the program raised: {outcome.error}", outcome.reason or PROGRAM_ERROR)
    return final, outcome


__all__ = [
    "BUILTINS",
    "FORBIDDEN",
    "MEMORY_LIMIT",
    "PLACES",
    "PROGRAM_ERROR",
    "REFUSED",
    "SANDBOX",
    "SYNTAX",
    "TIME_LIMIT",
    "ProgramOutcome",
    "check_program",
    "execute_program",
    "policy_sandbox",
    "run_policy",
]
