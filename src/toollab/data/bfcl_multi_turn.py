"""BFCL's executable multi-turn entries: what an episode is given, and what playing it recorded.

An entry of ``BFCL_v4_multi_turn_<category>.json`` is a scripted conversation run against BFCL's
own Python backend classes (``GorillaFileSystem``, ``TwitterAPI``, ``MathAPI``, ...): the user
turns, each class's initial state (``initial_config``), the classes in play
(``involved_classes``) and, in ``miss_func``, the functions held back until a given turn
(``missed_function``: turn index → function names; that turn has no user message and the
functions are offered to the model then).  Its answer (``possible_answer/``) is one list of
Python call strings per turn.

* :class:`EpisodeInputs` is what the model's side of an episode may use (the instance's
  ``metadata["bfcl_multi_turn"]``, one of the input metadata keys);
* :class:`EpisodeLog` is what playing it recorded (the prediction's
  ``metadata["bfcl_multi_turn"]``): per user turn, per model step, the raw output, the calls
  as BFCL's executor reads them and their results.  The ``bfcl_multi_turn`` scorer reads it;
* :func:`parse_call` reads one ground-truth call string (Python syntax, literal values).
"""

from __future__ import annotations

import ast
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from toollab.schema.json import JsonObject

#: the instance (inputs) and prediction (record) metadata key
KEY = "bfcl_multi_turn"
#: the instance metadata key of the ground truth (one list of call strings per turn)
GROUND_TRUTH = "ground_truth"
#: the instance metadata key of the number of gold calls per user turn (the oracle reads it)
GOLD_TURNS = "gold_turns"
#: the four executable multi-turn categories of BFCL v4
CATEGORIES = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param",
              "multi_turn_long_context")  # fmt: skip


class EpisodeInputs(BaseModel):
    """What an episode starts from (inputs only; the ground truth is answer key)."""

    model_config = ConfigDict(extra="forbid")

    #: the messages of each user turn as the data gives them (``[]`` for a held-out-function turn)
    turns: list[list[JsonObject]]
    #: each stateful class's initial attributes, by class name
    initial_config: JsonObject = Field(default_factory=dict)
    involved_classes: list[str]
    #: turn index (as text, as upstream keys it) → the function docs offered at that turn
    missed_function: dict[str, list[JsonObject]] = Field(default_factory=dict)
    #: BFCL loads the long-context variant of each class's scenario
    long_context: bool = False


class StepLog(BaseModel):
    """One model step of a user turn."""

    model_config = ConfigDict(extra="forbid")

    raw: str = ""
    #: ``raw`` is read by BFCL's prompting decoder (the ``python`` template, free decoding)
    prompting: bool = True
    #: otherwise the calls read from the output (native tool calls, constrained decoding, a
    #: template parser other than ``python``: BFCL's function-calling handlers decode such
    #: outputs themselves), ``[{name: arguments}]``; ``None`` = the output could not be read
    decoded: list[JsonObject] | None = None
    #: the calls executed, as BFCL's executor strings (``[]``: the step ended the turn)
    executed: list[str] = Field(default_factory=list)
    #: one result string per executed call
    results: list[str] = Field(default_factory=list)
    #: the backend failed on this step
    error: str | None = None


class TurnLog(BaseModel):
    model_config = ConfigDict(extra="forbid")

    steps: list[StepLog] = Field(default_factory=list)


class EpisodeLog(BaseModel):
    """What playing one entry recorded; ``turns`` is shorter than the entry's turns when the
    episode was cut short (BFCL's step limit, or a backend failure)."""

    model_config = ConfigDict(extra="forbid")

    turns: list[TurnLog] = Field(default_factory=list)
    #: ended by BFCL's step limit (``MAXIMUM_STEP_LIMIT`` steps in one turn)
    force_quit: bool = False


class Verdict(BaseModel):
    """BFCL's checker's verdict on one entry (its ``valid``, ``error_type``, ``error_message``)."""

    valid: bool
    error_type: str | None = None
    error_message: str = ""


class CallSyntaxError(ValueError):
    """A ground-truth call string that is not one Python call with literal arguments."""


def parse_call(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """``"mv(source='a', destination='b')"`` → ``("mv", [], {"source": "a", ...})``: the name,
    the positional and the keyword arguments (literal values)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError) as exc:
        raise CallSyntaxError(
            f"not Python syntax: {exc.msg if isinstance(exc, SyntaxError) else exc}"
        ) from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise CallSyntaxError("not a call of a plain function name")
    try:
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise CallSyntaxError("**-unpacking is not a literal argument")
            kwargs[kw.arg] = ast.literal_eval(kw.value)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        raise CallSyntaxError("an argument is not a literal value") from None
    return node.func.id, args, kwargs
