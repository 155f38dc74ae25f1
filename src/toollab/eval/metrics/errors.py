"""The error taxonomy: one class per sample, from its instance and its prediction.

:data:`CLASSES` is the one table of the classes (key, pipeline stage, label, definition): the
docs, ``results.json``, the terminal summary and the report all print from it.  :func:`classify`
reads the instance's answer key (the gold program, its acceptable alternatives, the decision
label) and the prediction (what was offered, the model's failure, the parse result, the calls
and the execution record) and returns the **first check that fails, in pipeline order**:

1. **retrieval** — a retriever offered the tools (``Prediction.offered_tools``) and a tool of
   the reference program is not among them (``retriever_miss``);
2. **format** — no output at all (``model_failure``: backend error, timeout), output that could
   not be read (``unparsed``) or read but not executable (``invalid``);
3. **decision** — the model gave up (``give_up``), made no call where one was due
   (``missed_call``) or a call where none was due (``unexpected_call``);
4. **tool choice** — a call names a tool that was not offered (``hallucinated_tool``), or other
   offered tools than the reference program (``wrong_tool``);
5. **call count** — the right tools, but more or fewer calls (``wrong_call_count``);
6. **arguments** — in a matched call a parameter of the reference is missing
   (``missing_argument``), one it does not have is stated (``extra_argument``), or a value
   differs (``wrong_value``), checked in that order over all the matched calls;
7. **execution** — the program raised in the environment (``crash``, with the environment's
   reason code) or ran to a final state that is not a label's (``wrong_outcome``);

and ``correct`` when every check passes.  A sample whose executed program reached a label's
final state is correct whatever its calls (the outcome is the judge: another program may reach
the same state); the final state is judged as the ``environment`` scorer judges it (its
:class:`~toollab.eval.metrics.environment.Judge`).  Calls are compared with every acceptable
reference program (the gold and its alternatives) and the sample gets the class of the
reference it comes furthest with; arguments compare as the ``environment`` scorer compares them
(numbers by value, a gold call's ``acceptable`` values, a parameter stated at its schema default
equals one left out, an acceptable ``""`` lets an argument be omitted).  For instances that are
not executed this is a check of the calls against the answer key only, so it can be stricter
than a benchmark's own checker (e.g. BFCL's string normalisation).

Only instances with an answer key to check against are classified (:func:`has_answer_key`):
gold calls, or a label that needs no call; never those of a dataset that gives no answer key
(``Instance.reference`` false: ToolEyes).  The decision check is call vs. no call; DEER's
search decision (NoSearch vs. NoCall) is the ``deer`` scorer's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from toollab.eval.metrics.environment import Judge
from toollab.eval.metrics.registry import instance_key
from toollab.schema import Decision, GoldCall, Instance, Tool, ToolCall
from toollab.schema.measures import same_value
from toollab.schema.record import ExecutionRecord, ParseStatus, Prediction

#: longest detail text (model output can be anything)
MAX_DETAIL = 240

#: ``ExecutionRecord.ended_by`` of a run the model ended by giving up (α-UMi's ``give up``)
GIVE_UP_ENDINGS = frozenset({"give_up"})
#: ``ExecutionRecord.reason`` of output the environment could not read as calls
FORMAT_REASON = "format"


class ErrorClass(StrEnum):
    """The classes, in precedence order (the order :func:`classify` checks them)."""

    RETRIEVER_MISS = "retriever_miss"
    MODEL_FAILURE = "model_failure"
    UNPARSED = "unparsed"
    INVALID = "invalid"
    GIVE_UP = "give_up"
    MISSED_CALL = "missed_call"
    UNEXPECTED_CALL = "unexpected_call"
    HALLUCINATED_TOOL = "hallucinated_tool"
    WRONG_TOOL = "wrong_tool"
    WRONG_CALL_COUNT = "wrong_call_count"
    MISSING_ARGUMENT = "missing_argument"
    EXTRA_ARGUMENT = "extra_argument"
    WRONG_VALUE = "wrong_value"
    CRASH = "crash"
    WRONG_OUTCOME = "wrong_outcome"
    CORRECT = "correct"

    @property
    def info(self) -> ClassDef:
        return _BY_KIND[self]

    @property
    def label(self) -> str:
        """How every view names the class."""
        return self.info.label

    @property
    def stage(self) -> str:
        """The pipeline stage whose check it fails."""
        return self.info.stage

    @property
    def rank(self) -> int:
        """Its precedence (0 = checked first)."""
        return list(ErrorClass).index(self)


@dataclass(frozen=True)
class ClassDef:
    """One row of the taxonomy: the class, its stage, its label and its definition."""

    kind: ErrorClass
    stage: str
    label: str
    definition: str


#: the pipeline stages, in the order they are checked
STAGES = (
    "retrieval",
    "format",
    "decision",
    "tool choice",
    "call count",
    "arguments",
    "execution",
)

#: the taxonomy: every class in precedence order, with its definition (the one table)
CLASSES: tuple[ClassDef, ...] = (
    ClassDef(
        ErrorClass.RETRIEVER_MISS,
        "retrieval",
        "retriever miss",
        "a retriever chose the tools offered (the prediction records offered_tools) and a tool "
        "of the reference program is not among them (for every acceptable program)",
    ),
    ClassDef(
        ErrorClass.MODEL_FAILURE,
        "format",
        "no output (run failure)",
        "the model or the agent failed before answering (backend error, timeout, agent crash): "
        "there is no output to judge",
    ),
    ClassDef(
        ErrorClass.UNPARSED,
        "format",
        "non-executable: unparsed",
        "the output could not be read as calls or as an answer (the parser's format error)",
    ),
    ClassDef(
        ErrorClass.INVALID,
        "format",
        "non-executable: invalid",
        "the output was read but cannot run as a program: a decision to call with no call in "
        "it, a call with no tool name, an argument that refers to an output no earlier call "
        "produces, or output the environment refused as unreadable",
    ),
    ClassDef(
        ErrorClass.GIVE_UP,
        "decision",
        "give-up",
        "a call was due and the model gave up (the agent recorded that the run ended by the "
        "model giving up, e.g. α-UMi's planner 'give up')",
    ),
    ClassDef(
        ErrorClass.MISSED_CALL,
        "decision",
        "no call where a call was due",
        "the instance needs a call (label Call) and the model answered without one",
    ),
    ClassDef(
        ErrorClass.UNEXPECTED_CALL,
        "decision",
        "call where no call was due",
        "the instance needs no call (label NoCall or NoSearch) and the model called",
    ),
    ClassDef(
        ErrorClass.HALLUCINATED_TOOL,
        "tool choice",
        "hallucinated tool",
        "a call names a tool that was not offered (not in offered_tools, or not among the "
        "instance's tools when no retriever chose them) and is not in the reference program",
    ),
    ClassDef(
        ErrorClass.WRONG_TOOL,
        "tool choice",
        "wrong tool",
        "the calls name offered tools, but not the reference program's set of tools",
    ),
    ClassDef(
        ErrorClass.WRONG_CALL_COUNT,
        "call count",
        "wrong call count",
        "the reference program's tools, but more or fewer calls than it has",
    ),
    ClassDef(
        ErrorClass.MISSING_ARGUMENT,
        "arguments",
        "parameter omission",
        "a matched call leaves out a parameter the reference call states (one at its schema "
        "default, or with an acceptable empty value, may be left out)",
    ),
    ClassDef(
        ErrorClass.EXTRA_ARGUMENT,
        "arguments",
        "parameter surplus",
        "a matched call states a parameter the reference call does not (one stated at its "
        "schema default is not surplus)",
    ),
    ClassDef(
        ErrorClass.WRONG_VALUE,
        "arguments",
        "parameter wrong value",
        "a matched call gives a parameter a value the reference does not accept (numbers by "
        "value, any acceptable value counts)",
    ),
    ClassDef(
        ErrorClass.CRASH,
        "execution",
        "execution: program raised",
        "the calls match the reference but the program raised in the environment (split in "
        "the report by the environment's reason code)",
    ),
    ClassDef(
        ErrorClass.WRONG_OUTCOME,
        "execution",
        "execution: wrong final state",
        "the program ran, but its final state is not a label's (as the environment scorer "
        "judges it)",
    ),
    ClassDef(
        ErrorClass.CORRECT,
        "",
        "correct",
        "every check passes; or the executed program reached a label's final state, whatever "
        "its calls",
    ),
)

_BY_KIND = {c.kind: c for c in CLASSES}


@dataclass(frozen=True)
class SampleClass:
    """The class of one sample, what exactly went wrong, and for a crash the environment's
    reason code."""

    kind: ErrorClass
    detail: str = ""
    #: the environment's reason code of a crash (``None`` for every other class)
    reason: str | None = None

    @property
    def failed(self) -> bool:
        return self.kind is not ErrorClass.CORRECT

    @property
    def key(self) -> str:
        """The report's error-table row: the class, a crash split by its reason code."""
        if self.kind is ErrorClass.CRASH:
            return f"{self.kind.value}: {self.reason or 'unknown'}"
        return self.kind.value

    @property
    def label(self) -> str:
        """The row's label for people."""
        if self.kind is ErrorClass.CRASH:
            return f"{self.kind.label}: {self.reason or 'no reason given'}"
        return self.kind.label

    def row(self) -> dict[str, str | None]:
        """The per-sample score row (``results.json``'s ``per_sample``)."""
        return {
            "class": self.kind.value,
            "stage": self.kind.stage,
            "detail": self.detail,
            "reason": self.reason,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, object]) -> SampleClass | None:
        """A stored per-sample row read back (``None`` when it is not one)."""
        try:
            kind = ErrorClass(str(row.get("class")))
        except ValueError:
            return None
        reason = row.get("reason")
        return cls(kind, str(row.get("detail") or ""), reason if isinstance(reason, str) else None)


CORRECT = SampleClass(ErrorClass.CORRECT)


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


def _value(value: Any) -> str:
    return _short(repr(value))


def has_answer_key(instance: Instance) -> bool:
    """Whether the instance can be classified: the dataset gives an answer key, and it has gold
    calls or a label that needs no call."""
    return instance.reference and (bool(instance.gold) or instance.label() is not Decision.CALL)


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


Problem = tuple[ErrorClass, str]


def _argument_problems(pred: ToolCall, gold: ToolCall, tool: Tool | None) -> list[Problem]:
    """What differs between a predicted call and the gold call it is matched with."""
    defaults = _defaults(tool)
    problems: list[Problem] = []
    for key in gold.arguments:
        ok = _acceptable(gold, key)
        if key not in pred.arguments:
            omittable = "" in ok or (
                key in defaults and any(same_value(defaults[key], v) for v in ok)
            )
            if not omittable:
                problems.append(
                    (
                        ErrorClass.MISSING_ARGUMENT,
                        f"{gold.name}: missing {key!r} (expected {_value(gold.arguments[key])})",
                    )
                )
            continue
        if not any(same_value(pred.arguments[key], v) for v in ok):
            problems.append(
                (
                    ErrorClass.WRONG_VALUE,
                    f"{gold.name}.{key} = {_value(pred.arguments[key])} "
                    f"(expected {_value(gold.arguments[key])})",
                )
            )
    for key, value in pred.arguments.items():
        if key in gold.arguments:
            continue
        if key in defaults and same_value(value, defaults[key]):
            continue  # stated at its default, which the gold leaves out
        problems.append(
            (ErrorClass.EXTRA_ARGUMENT, f"{gold.name}: unexpected {key!r} = {_value(value)}")
        )
    return problems


def _matched_problems(
    pred: Sequence[ToolCall], ref: Sequence[ToolCall], tools: Mapping[str, Tool]
) -> list[Problem]:
    """Each reference call takes the free predicted call of its name with the fewest problems
    (one-to-one, as the scorers match); the problems of the matched pairs."""
    free = list(range(len(pred)))
    problems: list[Problem] = []
    for gold in ref:
        best: tuple[int, list[Problem]] | None = None
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
) -> SampleClass:
    """The first call-level check that fails against one reference program."""
    if {c.name for c in pred} != {c.name for c in ref}:
        extra = sorted({c.name for c in pred} - {c.name for c in ref})
        missing = sorted({c.name for c in ref} - {c.name for c in pred})
        parts = [
            f"called {', '.join(extra)}" if extra else "",
            f"no call to {', '.join(missing)}" if missing else "",
        ]
        return SampleClass(ErrorClass.WRONG_TOOL, _short("; ".join(p for p in parts if p)))
    if len(pred) != len(ref):
        return SampleClass(
            ErrorClass.WRONG_CALL_COUNT,
            _short(f"{len(pred)} call(s): {_names(pred)}; expected {len(ref)}: {_names(ref)}"),
        )
    problems = _matched_problems(pred, ref, tools)
    if problems:
        kind = min((k for k, _ in problems), key=lambda k: k.rank)
        first = next(text for k, text in problems if k is kind)
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return SampleClass(kind, _short(first) + more)
    return CORRECT


def _references(instance: Instance) -> list[list[GoldCall]]:
    return [list(instance.gold), *[list(a) for a in instance.alternatives]]


def _call_class(prediction: Prediction, instance: Instance) -> SampleClass:
    """The call-level class against the reference the calls come furthest with."""
    tools = {t.name: t for t in instance.tools}
    best: SampleClass | None = None
    for ref in _references(instance):
        got = _against(prediction.calls, ref, tools)
        if not got.failed:
            return got
        if best is None or got.kind.rank > best.kind.rank:
            best = got
    return best or CORRECT


def _retriever_miss(prediction: Prediction, instance: Instance) -> SampleClass | None:
    offered = prediction.offered_tools
    if offered is None or not instance.gold:
        return None
    have = set(offered)
    missing = [sorted({c.name for c in ref} - have) for ref in _references(instance) if ref]
    if not missing or any(not m for m in missing):
        return None
    return SampleClass(
        ErrorClass.RETRIEVER_MISS,
        _short(f"not offered: {', '.join(missing[0])} ({len(have)} tool(s) offered)"),
    )


def _invalid(prediction: Prediction) -> SampleClass | None:
    """Output that was read but cannot run as a program."""
    parsed = prediction.parsed
    ex = prediction.execution
    if ex is not None and ex.crashed and ex.reason == FORMAT_REASON:
        return SampleClass(ErrorClass.INVALID, _short(ex.error or "the environment refused it"))
    calls = prediction.calls
    if parsed is not None and parsed.decision is Decision.CALL and not calls:
        return SampleClass(ErrorClass.INVALID, "decided to call but wrote no call")
    produced: set[str] = set()
    for i, call in enumerate(calls):
        if not call.name.strip():
            return SampleClass(ErrorClass.INVALID, f"call {i + 1} has no tool name")
        for ref in call.refs:
            linked = ref.call is not None and 0 <= ref.call < i
            if not linked and ref.label not in produced:
                return SampleClass(
                    ErrorClass.INVALID,
                    _short(f"call {i + 1} ({call.name}) uses {ref.label!r}, which no earlier "
                           "call produces"),
                )  # fmt: skip
        produced.update(call.outputs)
    return None


def _hallucinated(prediction: Prediction, instance: Instance) -> SampleClass | None:
    names = (
        prediction.offered_tools if prediction.offered_tools is not None else instance.tool_names
    )
    if not names and prediction.offered_tools is None:
        return None  # the instance lists no tools: nothing says what was offered
    # a tool of the answer key is never a hallucination (a dataset may leave it out of the
    # offered list: 5 Seal-Tools and 27 DEER instances do)
    offered = set(names) | {c.name for ref in _references(instance) for c in ref}
    written = [
        *prediction.calls,
        *(c for s in prediction.steps if s.parsed for c in s.parsed.calls),
    ]
    unknown = sorted({c.name for c in written} - offered)
    if not unknown:
        return None
    return SampleClass(
        ErrorClass.HALLUCINATED_TOOL, _short(f"called {', '.join(unknown)}, not offered")
    )


def _outcome(ex: ExecutionRecord | None, instance: Instance, judge: Judge) -> bool | None:
    """Whether an executed program's final state is a label's, as the ``environment`` scorer
    judges it; ``None`` when nothing was executed or there is nothing to judge it by."""
    if ex is None or ex.crashed:
        return None
    try:
        env = judge.environment(instance)
    except Exception:  # an environment that is not installed: the stored verdict, if any
        env = None
    if env is not None and ex.state is not None:
        return judge.verdict(ex, instance).success
    return ex.success


def _execution_class(ex: ExecutionRecord | None, success: bool | None) -> SampleClass:
    if ex is None:
        return CORRECT
    if ex.crashed:
        where = f"call {ex.failed_call + 1}: " if ex.failed_call is not None else ""
        return SampleClass(
            ErrorClass.CRASH, _short(where + (ex.error or "the program crashed")), ex.reason
        )
    if success is False:
        f1 = f" (dict-F1 {ex.f1:.2f})" if ex.f1 is not None else ""
        return SampleClass(ErrorClass.WRONG_OUTCOME, f"the final state is not a label's{f1}")
    return CORRECT


def classify(instance: Instance, prediction: Prediction, judge: Judge | None = None) -> SampleClass:
    """The sample's class (see the module docs for the order of the checks); ``judge`` judges
    executed final states (one per scoring pass: it caches the labels' states).  Never raises
    on model output."""
    judge = judge if judge is not None else Judge()
    success = None if prediction.error else _outcome(prediction.execution, instance, judge)
    if success is True:
        return CORRECT  # the outcome was checked and is a label's
    miss = _retriever_miss(prediction, instance)
    if miss is not None:
        return miss
    if prediction.error:
        return SampleClass(ErrorClass.MODEL_FAILURE, _short(prediction.error))
    parsed = prediction.parsed
    if parsed is None or parsed.status is ParseStatus.ERROR:
        why = parsed.error if parsed is not None and parsed.error else "no parse result"
        return SampleClass(ErrorClass.UNPARSED, _short(why))
    invalid = _invalid(prediction)
    if invalid is not None:
        return invalid
    due = instance.label() is Decision.CALL
    ex = prediction.execution
    if due and ex is not None and ex.ended_by in GIVE_UP_ENDINGS:
        return SampleClass(
            ErrorClass.GIVE_UP, _short(f"gave up after {len(prediction.calls)} call(s)")
        )
    called = made_call(prediction)
    if due and not called:
        return SampleClass(
            ErrorClass.MISSED_CALL,
            _short(f"answered without a call; expected {_names(instance.gold)}"),
        )
    if not due and called:
        return SampleClass(
            ErrorClass.UNEXPECTED_CALL,
            _short(
                f"called {_names(prediction.calls)}; the answer needs no call ({instance.label().value})"
            ),
        )
    if not due:
        return CORRECT
    hallucinated = _hallucinated(prediction, instance)
    if hallucinated is not None:
        return hallucinated
    found = _call_class(prediction, instance)
    return found if found.failed else _execution_class(ex, success)


def classify_all(
    predictions: Sequence[Prediction], instances: Mapping[str, Instance]
) -> dict[str, SampleClass]:
    """The class of every prediction whose instance is known and has an answer key
    (:func:`has_answer_key`), keyed ``id`` (``id@repeat`` for repeats > 0, the key of the
    per-sample scores)."""
    judge = Judge()
    out: dict[str, SampleClass] = {}
    for pred in predictions:
        inst = instances.get(pred.id)
        if inst is None or not has_answer_key(inst):
            continue
        out[instance_key(pred)] = classify(inst, pred, judge)
    return out


__all__ = [
    "CLASSES",
    "CORRECT",
    "STAGES",
    "ClassDef",
    "ErrorClass",
    "SampleClass",
    "classify",
    "classify_all",
    "has_answer_key",
    "made_call",
]
