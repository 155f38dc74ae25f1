"""Why a sample failed: one error class per sample, from its instance and its prediction.

:func:`classify` reads the instance's answer key (the gold program, its acceptable alternatives,
the decision label) and the prediction (the model's failure, the parse result, the calls and the
execution record) and returns the first check that fails, in the order the pipeline runs:

1. **format** — the model failed (``model_failure``: backend error, timeout) or its output could
   not be read (``unparsable``);
2. **call / no-call decision** — no call where one was due (``missed_call``), or a call where
   the answer needs none (``unexpected_call``);
3. **tool choice** — the calls name other tools than the reference program (``wrong_tool``);
4. **call count** — the right tools, but more or fewer calls (``wrong_call_count``);
5. **arguments** — a matched call's argument value differs, or one is missing or extra
   (``wrong_argument``);
6. **execution** — the program crashed in the environment (``crash``, with the environment's
   reason code, e.g. ``unknown_value``, and its message, e.g. ``city not found: 'Berlin'``), or
   it ran but its final state is not a label's (``wrong_outcome``).

A sample whose program was executed and checked against the labels and *succeeded* has no
error, whatever its calls look like (the outcome is the judge: another program may reach the
same state).  Calls are compared with every acceptable reference program (the gold and its
alternatives) and the sample gets the class of the reference it comes furthest with; arguments
compare as the ``environment`` scorer compares them (numbers by value, a gold call's
``acceptable`` values, a parameter stated at its schema default equals one left out, an
acceptable ``""`` lets an argument be omitted).  For instances that are not executed this is a
check of the calls against the answer key only, so it can be stricter than a benchmark's own
checker (e.g. BFCL's string normalisation).

The classes are a view for people (the report's error table and its per-sample drill-down); no
figure is computed from them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from toollab.schema import Decision, GoldCall, Instance, Tool, ToolCall
from toollab.schema.measures import same_value
from toollab.schema.record import ParseStatus, Prediction

#: longest detail text (model output can be anything)
MAX_DETAIL = 240


class ErrorClass(StrEnum):
    """The error classes, in pipeline order (the order :func:`classify` checks them)."""

    MODEL_FAILURE = "model_failure"
    UNPARSABLE = "unparsable"
    MISSED_CALL = "missed_call"
    UNEXPECTED_CALL = "unexpected_call"
    WRONG_TOOL = "wrong_tool"
    WRONG_CALL_COUNT = "wrong_call_count"
    WRONG_ARGUMENT = "wrong_argument"
    CRASH = "crash"
    WRONG_OUTCOME = "wrong_outcome"

    @property
    def label(self) -> str:
        """How every view names the class."""
        return _LABELS[self]

    @property
    def stage(self) -> int:
        """Its position in pipeline order (0 = first)."""
        return list(ErrorClass).index(self)


_LABELS = {
    ErrorClass.MODEL_FAILURE: "model failure",
    ErrorClass.UNPARSABLE: "unparsable output",
    ErrorClass.MISSED_CALL: "no call where a call was due",
    ErrorClass.UNEXPECTED_CALL: "call where no call was due",
    ErrorClass.WRONG_TOOL: "wrong tool",
    ErrorClass.WRONG_CALL_COUNT: "wrong call count",
    ErrorClass.WRONG_ARGUMENT: "wrong argument",
    ErrorClass.CRASH: "crash",
    ErrorClass.WRONG_OUTCOME: "wrong final state",
}


@dataclass(frozen=True)
class SampleError:
    """Why one sample failed: its class, what exactly went wrong, and for a crash the
    environment's reason code."""

    kind: ErrorClass
    detail: str
    #: the environment's reason code of a crash (``None`` for every other class)
    reason: str | None = None

    @property
    def key(self) -> str:
        """The error table's row: the class, a crash split by its reason code."""
        if self.kind is ErrorClass.CRASH:
            return f"{self.kind.value}: {self.reason or 'unknown'}"
        return self.kind.value

    @property
    def label(self) -> str:
        """The row's label for people."""
        if self.kind is ErrorClass.CRASH:
            return f"crash: {self.reason or 'no reason given'}"
        return self.kind.label


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


def _value(value: Any) -> str:
    return _short(repr(value))


def made_call(prediction: Prediction) -> bool:
    """Whether the prediction decided to call (a decision read from the output wins)."""
    parsed = prediction.parsed
    if parsed is not None and parsed.decision is not None:
        return parsed.decision is Decision.CALL
    return bool(prediction.calls)


def _defaults(tool: Tool | None) -> dict[str, Any]:
    if tool is None:
        return {}
    return {
        k: spec["default"]
        for k, spec in tool.properties.items()
        if isinstance(spec, dict) and "default" in spec
    }


def _acceptable(gold: ToolCall, key: str) -> list[Any]:
    ok = [gold.arguments[key]] if key in gold.arguments else []
    if isinstance(gold, GoldCall):
        ok.extend(gold.acceptable.get(key, []))
    return ok


def _argument_problems(pred: ToolCall, gold: ToolCall, tool: Tool | None) -> list[str]:
    """What differs between a predicted call and the gold call it is matched with."""
    defaults = _defaults(tool)
    problems: list[str] = []
    for key in gold.arguments:
        ok = _acceptable(gold, key)
        if key not in pred.arguments:
            omittable = "" in ok or (
                key in defaults and any(same_value(defaults[key], v) for v in ok)
            )
            if not omittable:
                problems.append(
                    f"{gold.name}: missing {key!r} (expected {_value(gold.arguments[key])})"
                )
            continue
        if not any(same_value(pred.arguments[key], v) for v in ok):
            problems.append(
                f"{gold.name}.{key} = {_value(pred.arguments[key])} "
                f"(expected {_value(gold.arguments[key])})"
            )
    for key, value in pred.arguments.items():
        if key in gold.arguments:
            continue
        if key in defaults and same_value(value, defaults[key]):
            continue  # stated at its default, which the gold leaves out
        problems.append(f"{gold.name}: unexpected {key!r} = {_value(value)}")
    return problems


def _matched_problems(
    pred: Sequence[ToolCall], ref: Sequence[ToolCall], tools: Mapping[str, Tool]
) -> list[str]:
    """Each reference call takes the free predicted call of its name with the fewest problems
    (one-to-one, as the scorers match); the problems of the matched pairs."""
    free = list(range(len(pred)))
    problems: list[str] = []
    for gold in ref:
        best: tuple[int, list[str]] | None = None
        for j in free:
            if pred[j].name != gold.name:
                continue
            found = _argument_problems(pred[j], gold, tools.get(gold.name))
            if best is None or len(found) < len(best[1]):
                best = (j, found)
        if best is not None:
            free.remove(best[0])
            problems.extend(best[1])
    return problems


def _names(calls: Sequence[ToolCall]) -> str:
    return ", ".join(c.name for c in calls) or "nothing"


def _against(
    pred: Sequence[ToolCall], ref: Sequence[ToolCall], tools: Mapping[str, Tool]
) -> SampleError | None:
    """The first call-level check that fails against one reference program (None: all pass)."""
    if {c.name for c in pred} != {c.name for c in ref}:
        extra = sorted({c.name for c in pred} - {c.name for c in ref})
        missing = sorted({c.name for c in ref} - {c.name for c in pred})
        parts = [
            f"called {', '.join(extra)}" if extra else "",
            f"no call to {', '.join(missing)}" if missing else "",
        ]
        return SampleError(ErrorClass.WRONG_TOOL, _short("; ".join(p for p in parts if p)))
    if len(pred) != len(ref):
        return SampleError(
            ErrorClass.WRONG_CALL_COUNT,
            _short(f"{len(pred)} call(s): {_names(pred)}; expected {len(ref)}: {_names(ref)}"),
        )
    problems = _matched_problems(pred, ref, tools)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return SampleError(ErrorClass.WRONG_ARGUMENT, _short(problems[0]) + more)
    return None


def _call_error(prediction: Prediction, instance: Instance) -> SampleError | None:
    """The call-level error against the reference the calls come furthest with."""
    tools = {t.name: t for t in instance.tools}
    refs = [list(instance.gold), *[list(a) for a in instance.alternatives]]
    best: SampleError | None = None
    for ref in refs:
        err = _against(prediction.calls, ref, tools)
        if err is None:
            return None
        if best is None or err.kind.stage > best.kind.stage:
            best = err
    return best


def _execution_error(prediction: Prediction) -> SampleError | None:
    ex = prediction.execution
    if ex is None:
        return None
    if ex.crashed:
        where = f"call {ex.failed_call + 1}: " if ex.failed_call is not None else ""
        return SampleError(
            ErrorClass.CRASH, _short(where + (ex.error or "the program crashed")), ex.reason
        )
    if ex.success is False:
        f1 = f" (dict-F1 {ex.f1:.2f})" if ex.f1 is not None else ""
        return SampleError(ErrorClass.WRONG_OUTCOME, f"the final state is not a label's{f1}")
    return None


def classify(instance: Instance, prediction: Prediction) -> SampleError | None:
    """The sample's error class (``None`` when it did not fail); see the module docs for the
    order of the checks.  Never raises on model output."""
    if prediction.error:
        return SampleError(ErrorClass.MODEL_FAILURE, _short(prediction.error))
    parsed = prediction.parsed
    if parsed is None or parsed.status is ParseStatus.ERROR:
        why = parsed.error if parsed is not None and parsed.error else "no parse result"
        return SampleError(ErrorClass.UNPARSABLE, _short(why))
    ex = prediction.execution
    if ex is not None and ex.success is True:
        return None  # the outcome was checked and is a label's
    due = instance.label() is Decision.CALL
    called = made_call(prediction)
    if due and not called:
        return SampleError(
            ErrorClass.MISSED_CALL,
            _short(f"answered without a call; expected {_names(instance.gold)}"),
        )
    if not due and called:
        return SampleError(
            ErrorClass.UNEXPECTED_CALL,
            _short(
                f"called {_names(prediction.calls)}; the answer needs no call ({instance.label().value})"
            ),
        )
    if not due:
        return None
    if not prediction.calls:
        return SampleError(
            ErrorClass.MISSED_CALL,
            _short(f"decided to call but made none; expected {_names(instance.gold)}"),
        )
    return _call_error(prediction, instance) or _execution_error(prediction)


__all__ = ["ErrorClass", "SampleError", "classify", "made_call"]
