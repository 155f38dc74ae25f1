"""BFCL's executable multi-turn backend, run through BFCL's own code (the ``[bfcl]`` extra).

The backend classes (``GorillaFileSystem``, ``TwitterAPI``, ``MathAPI``, ``TradingBot``,
``TravelAPI``, ``VehicleControlAPI``, ``MessageAPI``, ``TicketAPI``), their executor
(``multi_turn_utils.execute_multi_turn_func_call``) and the checker
(``multi_turn_checker.multi_turn_checker``: the state of every involved instance and the
execution results, turn by turn, against the ground truth's) are imported from the installed
``bfcl-eval`` and used unchanged.  Nothing here needs a network or a key.

BFCL executes a call by ``eval`` of its Python text, with the method names prefixed by the
instance they belong to.  toollab hands it only texts it has checked (:func:`guarded`): one call
of a plain name whose arguments are literals, where every name is a public method of an involved
class or a name the executor cannot resolve (which gives BFCL's own ``NameError`` result).  A
call that would reach anything else (a Python builtin such as ``open``, a module) is handed over
as ``exit()``, which BFCL refuses without evaluating it ("Function call exit is not allowed."):
an error result, as for any call the classes do not have, and nothing runs.

Instances live in the executor module's globals under a name made of a model name and the entry
id; every :class:`Episode` and every :func:`check_episode` uses a name of its own and removes
its instances when done, so runs and rescorings never share state.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from types import ModuleType
from typing import Any, cast

from toollab.data.adapters.bfcl_multi_turn import CLASS_DOC_FILES, INSTALL_HINT
from toollab.data.bfcl_multi_turn import EpisodeInputs, Verdict
from toollab.errors import UsageError
from toollab.parsing.python_calls import bfcl_decode_ast
from toollab.schema.json import JsonObject

#: what a call that may not be evaluated is handed to BFCL's executor as (refused unevaluated)
REFUSED = "exit()"
_NODES = (ast.Expression, ast.Call, ast.Name, ast.Load, ast.keyword, ast.Constant, ast.List,
          ast.Tuple, ast.Dict, ast.Set, ast.UnaryOp, ast.USub, ast.UAdd)  # fmt: skip


@cache
def _modules() -> tuple[ModuleType, ModuleType, ModuleType]:
    try:  # optional extra; the submodules directly (the package's handlers need heavy deps)
        from bfcl_eval.constants import default_prompts
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils
    except ImportError as exc:
        raise UsageError(f"BFCL multi-turn needs BFCL's package ({exc}): {INSTALL_HINT}") from None
    return multi_turn_utils, multi_turn_checker, default_prompts


def available() -> bool:
    """Whether ``bfcl-eval`` is installed and its multi-turn backend imports."""
    try:
        _modules()
    except UsageError:
        return False
    return True


def step_limit() -> int:
    """BFCL's ``MAXIMUM_STEP_LIMIT``: model steps in one user turn before the episode is
    force-terminated."""
    return int(_modules()[2].MAXIMUM_STEP_LIMIT)


def added_functions_prompt(docs: list[JsonObject]) -> str:
    """The user message of a turn that offers held-out functions (BFCL's prompting text)."""
    text: str = _modules()[2].DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING
    return text.format(functions=docs)


@cache
def backend_class(name: str) -> type:
    utils = _modules()[0]
    mapping = utils.CLASS_FILE_PATH_MAPPING
    if name not in mapping or name not in CLASS_DOC_FILES:
        raise UsageError(f"unknown BFCL class {name!r}; known: {', '.join(CLASS_DOC_FILES)}")
    module = __import__(mapping[name], fromlist=[name])
    cls: type = getattr(module, name)
    return cls


@cache
def method_names(classes: tuple[str, ...]) -> frozenset[str]:
    """The public methods of the classes (the names BFCL's executor routes to an instance)."""
    return frozenset(
        n
        for c in classes
        for n, _ in inspect.getmembers(backend_class(c), predicate=inspect.isfunction)
        if not n.startswith("_")
    )


# -- the calls as BFCL's executor reads them ---------------------------------------------------


def nested_value(value: Any) -> str:
    """BFCL's ``parse_nested_value`` (``model_handler/utils.py``, which cannot be imported
    without its parsers' dependencies): a dict whose values are all dicts is written as a call."""
    if isinstance(value, dict):
        if all(isinstance(v, dict) for v in value.values()):
            func_name = list(value.keys())[0]  # noqa: RUF015  (an empty dict fails, as upstream)
            args = value[func_name]
            args_str = ", ".join(f"{k}={nested_value(v)}" for k, v in args.items())
            return f"{func_name}({args_str})"
        return "{" + ", ".join(f"'{k}': {nested_value(v)}" for k, v in value.items()) + "}"
    return repr(value)


def execution_list(decoded: list[JsonObject]) -> list[str]:
    """BFCL's ``decoded_output_to_execution_list``: ``[{name: {kwarg: value}}]`` → call texts.
    Raises where upstream raises (the step then counts as not decoded)."""
    out = []
    for call in decoded:
        for key, value in call.items():
            if not isinstance(value, dict):  # upstream fails on it the same way
                raise TypeError(f"the arguments of {key!r} are not an object")
            args = ", ".join(f"{k}={nested_value(v)}" for k, v in value.items())
            out.append(f"{key}({args})")
    return out


def step_calls(raw: str, decoded: list[JsonObject] | None, prompting: bool) -> list[str]:
    """One step's calls as executor texts (``[]``: no call), as BFCL decodes a step: the calls
    already read (``decoded``: a function-calling handler's part), else BFCL's prompting decoder
    (``default_decode_execute_prompting``) on ``raw`` when ``prompting``.  Raises where BFCL's
    decoding fails (the step then counts as not decoded)."""
    if decoded is not None:
        return execution_list(decoded)
    if not prompting:
        raise ValueError("the output could not be read")
    return execution_list(cast(list[JsonObject], bfcl_decode_ast(raw)))


def _namespace() -> set[str]:
    return set(vars(_modules()[0])) | set(dir(builtins))


def guarded(call: str, methods: frozenset[str]) -> str:
    """``call`` when BFCL may ``eval`` it (see the module docs), else :data:`REFUSED`.  A text
    that does not parse is passed on: ``eval`` fails on it before anything runs."""
    try:
        tree = ast.parse(call.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return call if "\x00" not in call else REFUSED
    known = _namespace()
    funcs = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if not isinstance(node, _NODES):
            return REFUSED
        if isinstance(node, ast.Call) and not isinstance(node.func, ast.Name):
            return REFUSED
        if isinstance(node, ast.keyword) and node.arg is None:
            return REFUSED
        if isinstance(node, ast.Name):
            routed = id(node) in funcs and node.id in methods
            if not routed and node.id in known:
                return REFUSED
    return call


# -- episodes and the checker ------------------------------------------------------------------


def _fresh_name(kind: str) -> str:
    return f"toollab_{kind}_{uuid.uuid4().hex}"


def _forget(model_name: str) -> None:
    """Remove every instance the executor keeps under ``model_name``."""
    utils_globals = vars(_modules()[0])
    prefix = re.sub(r"[-./:]", "_", model_name)
    for key in [k for k in utils_globals if k.startswith(prefix)]:
        del utils_globals[key]


class Episode:
    """One entry's backend instances, built from its initial state, through BFCL's executor
    (``with Episode(inputs, entry_id) as ep: ep.execute([...])``)."""

    def __init__(self, inputs: EpisodeInputs, entry_id: str) -> None:
        self.inputs = inputs
        self.entry_id = entry_id
        self.model_name = _fresh_name("run")
        self.methods = method_names(tuple(inputs.involved_classes))
        self._run([])  # the instances, in their initial state

    def _run(self, calls: list[str]) -> list[str]:
        results, _ = _modules()[0].execute_multi_turn_func_call(
            calls,
            self.inputs.initial_config,
            self.inputs.involved_classes,
            self.model_name,
            self.entry_id,
            long_context=self.inputs.long_context,
            is_evaL_run=False,
        )
        return [str(r) for r in results]

    def execute(self, calls: list[str]) -> list[str]:
        """Each call's result text, as BFCL's executor gives it."""
        return self._run([guarded(c, self.methods) for c in calls])

    def close(self) -> None:
        _forget(self.model_name)

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def _checker_name() -> Iterator[str]:
    name = _fresh_name("check")
    try:
        yield name
    finally:
        _forget(name)


def check_episode(
    decoded: list[list[list[str]]],
    ground_truth: list[list[str]],
    inputs: EpisodeInputs,
    entry_id: str,
    category: str,
) -> Verdict:
    """BFCL's ``multi_turn_checker`` on the decoded steps of every turn (model call texts are
    :func:`guarded` first); its verdict."""
    methods = method_names(tuple(inputs.involved_classes))
    safe = [[[guarded(c, methods) for c in step] for step in turn] for turn in decoded]
    entry = {
        "id": entry_id,
        "initial_config": inputs.initial_config,
        "involved_classes": list(inputs.involved_classes),
    }
    with _checker_name() as name:
        result: dict[str, Any] = _modules()[1].multi_turn_checker(
            safe, ground_truth, entry, category, name
        )
    return Verdict(
        valid=bool(result.get("valid")),
        error_type=None if result.get("valid") else str(result.get("error_type")),
        error_message=str(result.get("error_message", "")),
    )
