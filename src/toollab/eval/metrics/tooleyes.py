"""ToolEyes capability scores on a ReAct trace (``Code/Evaluation/util/utils.py``).

The trace is ``Prediction.steps``: model turns have ``role="assistant"`` and their full text
(``Thought: … Action: … Action Input: …``), user turns after the query ``role="user"``, tool
results any other role (``"observation"``).  Without steps, ``raw`` is one assistant turn.  When
the run recorded how the loop ended (``execution["ended_by"]``), the trace ends as upstream's
inference ends it: after ``max_turns`` with the forced "I cannot solve this task due to trying
too many times" turn, after a backend error with the "During execution, an error occurs." turn
in place of the failed one.

Rule-based (always reported):

* ``IF`` (format alignment) = format-correct assistant turns / assistant turns.  A turn is
  correct when Thought/Action/Action Input are found with a non-empty action and the Action Input
  is a Python literal; the final turn (any turn equal to the last message) counts as correct when
  it passes the ReAct check alone, and as wrong when it is a forced stop.
* ``tool_reality`` = 1 − (hallucinated-tool turns + parameter-error turns) / format-correct
  non-final turns.  A parameter error is a missing required parameter or a parameter the doc
  does not declare.  Upstream quirks kept: once a hallucinated tool was seen, later turns are no
  longer checked for parameters; and ``required_param_check`` removes the parameters a call
  supplies from the tool doc's ``required`` list *in place*, once per conversation, so a later
  call to the same tool that lacks a required parameter an earlier call supplied is not flagged.
  ``tooleyes_strict`` checks every call against the full ``required`` list.

``turns`` = model turns per query (mean; upstream's Figure 5: GPT-4 2.8, LLaMA-2-chat-7B 7.0):
the assistant turns the model wrote, the forced stop turn left out.

Judged by an LLM (``judge=`` a :class:`toollab.models.base.Model` or
:class:`~toollab.eval.metrics.judge.Judge`; 1–10 scores divided by 10), ``None`` without a judge:
``IU`` = thought focus, ``BP`` = validity × quality, ``TS`` = tool_reality × mean tool-thought
match over the turns upstream keeps, ``AO`` = relevance of the final answer, ``overall`` = mean
of IF, TS, BP, IU, AO.  The prompts are upstream's (:mod:`.tooleyes_prompts`).  Action Inputs
are read with ``ast.literal_eval`` where upstream uses ``eval``.  Without a judge they are not
measured: ``None`` (shown ``n/a``), never 0, and a note says so.  A prediction whose system
prompt holds ToolEyes' demonstrations (the ``react-5shot`` template) is judged with upstream's
``use_demon`` document cut.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.eval.metrics.judge import Judge, as_judge
from toollab.eval.metrics.registry import MetricResult, Scorer, instance_key, mean, scorer
from toollab.eval.metrics.tooleyes_prompts import EXAMPLES_MARKER, judge_prompts
from toollab.parsing._text import load_literal
from toollab.parsing.react import tooleyes_segments
from toollab.schema import Instance, Tool
from toollab.schema.record import Prediction

FAILED_ANSWER = "I cannot handle the task."
FORCED_STOPS = ("trying too many times", "During execution, an error occurs.")
#: the turns upstream's inference loop appends when it stops a conversation
MAX_TURNS_STOP = (
    "Thought: I cannot solve this task due to trying too many times.\nAction: finish\n"
    'Action Input: {"answer": "I cannot handle the task."}'
)
ERROR_STOP = (
    "Thought: During execution, an error occurs.\nAction: finish\n"
    'Action Input: {"answer": "I cannot handle the task."}'
)
ASSISTANT_ROLES = ("assistant", "model")
BUILTIN_TOOLS = ("finish", "ask_to_user")


def reasoning_format_ok(text: str) -> bool:
    """Upstream ``reasoning_format_check``: the three segments found, the action non-empty."""
    seg = tooleyes_segments(text)
    return seg is not None and len(seg[1]) > 0


def json_format_ok(text: str) -> bool:
    """Upstream ``json_format_check``: the Action Input is a Python literal."""
    seg = tooleyes_segments(text)
    return seg is not None and load_literal(seg[2])[0]


@dataclass
class TraceScore:
    assistant_turns: int = 0
    format_correct: int = 0
    ans_pass: int = 1
    tool_checked: int = 0
    tool_hallu: int = 0
    param_err: int = 0
    #: indices (in assistant-turn order) whose tool-thought match counts for TS
    match_turns: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def IF(self) -> float:
        return self.format_correct / self.assistant_turns if self.assistant_turns else 0.0

    @property
    def tool_reality(self) -> float:
        if not self.tool_checked:
            return 0.0
        return 1 - (self.tool_hallu + self.param_err) / self.tool_checked


class RequiredCheck:
    """The required-parameter check of one conversation.

    Faithful (``consume=True``): upstream ``required_param_check`` removes each supplied
    parameter from the tool's ``required`` list and fails while the list is not empty, so the
    list shrinks over the conversation.  Corrected (``consume=False``): every call is checked
    against the full list.
    """

    def __init__(self, consume: bool) -> None:
        self.consume = consume
        self.remaining: dict[str, list[str]] = {}

    def missing(self, tool: Tool, args: dict[str, Any]) -> bool:
        if not self.consume:
            return any(r not in args for r in tool.required)
        left = self.remaining.setdefault(tool.name, list(tool.required))
        for k in args:
            if k in left:
                left.remove(k)
        return len(left) > 0


def _param_error(tool: Tool | None, args: Any, required: RequiredCheck) -> bool:
    if tool is None:
        return False
    if not isinstance(args, dict):
        return True  # upstream fails on ``.keys()`` of a non-dict
    missing = required.missing(tool, args)
    unknown = any(k not in tool.properties for k in args)
    return missing or unknown


def _is_forced_stop(text: str) -> bool:
    return FAILED_ANSWER in text and any(m in text for m in FORCED_STOPS)


def score_trace(
    turns: list[str],
    last_message: str,
    tools: dict[str, Tool | None],
    *,
    consume_required: bool = True,
) -> TraceScore:
    """The rule-based part of one trace (IF and tool reality), and the turns whose
    tool-thought match enters TS (upstream ``origin_TS_score`` without its ``-1`` entries)."""
    s = TraceScore()
    hallu_seen = 0
    required = RequiredCheck(consume_required)
    dropped: set[int] = set()
    conv_cnt = 0  # upstream's index into the match scores: not advanced by final turns
    for text in turns:
        s.assistant_turns += 1
        is_last = text == last_message
        if is_last and _is_forced_stop(text):
            s.ans_pass = 0
            s.errors.append("force_terminated")
            continue
        react_ok = reasoning_format_ok(text)
        if is_last and react_ok:
            s.ans_pass = 1
            s.format_correct += 1
            continue
        json_ok = json_format_ok(text)
        if not react_ok:
            s.errors.append("react_format_error")
        elif not json_ok:
            s.errors.append("action_input_error")
        if not (react_ok and json_ok):
            dropped.add(conv_cnt)
            conv_cnt += 1
            continue
        conv_cnt += 1
        s.format_correct += 1
        s.tool_checked += 1
        seg = tooleyes_segments(text)
        assert seg is not None  # checked by reasoning_format_ok above
        action = seg[1]
        if action not in tools:
            s.tool_hallu += 1
            hallu_seen += 1
            s.errors.append("hallucinated_tool")
            continue
        if hallu_seen:
            continue  # upstream: no parameter check after a hallucinated tool
        if _param_error(tools[action], load_literal(seg[2])[1], required):
            s.param_err += 1
            s.errors.append("param_error")
    s.match_turns = [i for i in range(len(turns)) if i not in dropped]
    return s


def trace_of(pred: Prediction) -> tuple[list[str], list[tuple[int, str]], str]:
    """(assistant turns, later user turns as (position, text), last message)."""
    if not pred.steps:
        return ([pred.raw] if pred.raw else []), [], pred.raw
    turns: list[str] = []
    users: list[tuple[int, str]] = []
    last = ""
    ended_by = pred.execution.ended_by if pred.execution is not None else None
    for i, s in enumerate(pred.steps):
        if s.role in ASSISTANT_ROLES:
            if ended_by == "error" and i == len(pred.steps) - 1 and s.error:
                break  # upstream keeps no turn for a failed model call
            turns.append(s.text)
        elif s.role == "user":
            users.append((len(turns), s.text))
        last = s.text
    if ended_by == "error":
        turns.append(ERROR_STOP)
        last = ERROR_STOP
    elif ended_by == "max_turns" and not (turns and _is_forced_stop(turns[-1])):
        turns.append(MAX_TURNS_STOP)
        last = MAX_TURNS_STOP
    return turns, users, last


def model_turns(pred: Prediction) -> int:
    """The turns the model wrote (assistant steps; the raw text alone counts as one)."""
    if not pred.steps:
        return 1 if pred.raw else 0
    return sum(1 for s in pred.steps if s.role in ASSISTANT_ROLES)


def shows_demonstrations(pred: Prediction) -> bool:
    """Whether the run prompted with ToolEyes' five-shot system prompt."""
    if isinstance(pred.prompt, str):
        return EXAMPLES_MARKER in pred.prompt
    return any(
        m.get("role") == "system" and EXAMPLES_MARKER in str(m.get("content") or "")
        for m in pred.prompt or []
    )


#: what each figure means (every view shows the label and the definition)
FIGURES: dict[str, dict[str, Any]] = {
    "IF": {"label": "IF", "definition": "format alignment: format-correct assistant turns / "
           "assistant turns (rule)"},
    "tool_reality": {"label": "reality", "definition": "1 - (hallucinated-tool + parameter-"
                     "error turns) / format-correct turns (rule)"},
    "ans_pass": {"label": "ans.pass", "definition": "queries whose trace ends in a final turn "
                 "that is not a forced stop (rule)"},
    "turns": {"label": "turns", "definition": "model turns per query (mean; ToolEyes: GPT-4 "
              "2.8, LLaMA-2-chat-7B 7.0)", "percent": False},
    "IU": {"label": "IU", "definition": "intent comprehension: thought focus (judge; not "
           "measured without --judge)"},
    "BP": {"label": "BP", "definition": "behaviour planning: validity x quality (judge; not "
           "measured without --judge)"},
    "BP_validity": {"label": "BP.val", "definition": "thought validity (judge)"},
    "BP_quality": {"label": "BP.qual", "definition": "thought quality (judge)"},
    "TS": {"label": "TS", "definition": "tool selection: tool reality x tool-thought match "
           "(judge; not measured without --judge)"},
    "AO": {"label": "AO", "definition": "answer organization: relevance of the final answer "
           "(judge; not measured without --judge)"},
    "overall": {"label": "overall", "definition": "mean of IF, IU, BP, TS, AO (needs the "
                "judge; not measured without --judge)"},
}  # fmt: skip


def tool_table(inst: Instance) -> dict[str, Tool | None]:
    table: dict[str, Tool | None] = {t.name: t for t in inst.tools}
    for name in BUILTIN_TOOLS:
        table.setdefault(name, None)
    return table


def tool_document(inst: Instance) -> str:
    doc = inst.metadata.get("tool_document")
    if isinstance(doc, str):
        return doc
    return json.dumps(
        [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in inst.tools
        ],
        ensure_ascii=False,
    )


#: (instance key, instance, rule scores, judge prompts, model turns)
Row = tuple[str, Instance, TraceScore, dict[str, Any] | None, int]


@scorer(
    "tooleyes",
    formats=("tooleyes",),
    needs=("steps", "judge"),
    description="ToolEyes IF and tool reality by rule; IU, BP, TS, AO and overall with a judge",
)
class ToolEyesScorer(Scorer):
    """ToolEyes' five capability scores, upstream rules (quirks included).

    ``judge``: a model or :class:`Judge` for IU, BP, TS, AO; ``judge_cache``: its answer file;
    ``demonstrations``: the run used ToolEyes' five-shot prompt (the judge prompts then show the
    tool document alone, as upstream's ``use_demon``).
    """

    consume_required = True

    def __init__(
        self,
        judge: Any = None,
        judge_cache: str | Path | None = None,
        demonstrations: bool = False,
    ) -> None:
        self.judge: Judge | None = as_judge(judge, judge_cache)
        self.demonstrations = demonstrations

    @classmethod
    def definitions(cls) -> dict[str, dict[str, Any]]:
        return {name: dict(d) for name, d in FIGURES.items()}

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = self.new_result()
        rows: list[Row] = []
        for pred, inst in self.pairs(predictions, instances, res):
            turns, users, last = trace_of(pred)
            ts = score_trace(turns, last, tool_table(inst), consume_required=self.consume_required)
            if pred.error and not turns:
                ts.errors.append("prediction_error")
            for e in ts.errors:
                res.add_error(e)
            prompts = None
            if self.judge and turns:
                prompts = judge_prompts(
                    tool_document(inst),
                    inst.query,
                    turns,
                    users,
                    last,
                    demonstrations=self.demonstrations or shows_demonstrations(pred),
                )
            rows.append((instance_key(pred), inst, ts, prompts, model_turns(pred)))

        judged = self._ask(rows, res) if self.judge else {}
        per_scenario: dict[str, list[dict[str, float | None]]] = defaultdict(list)
        all_rows: list[dict[str, float | None]] = []
        for key, inst, ts, _, n_turns in rows:
            figs: dict[str, float | None] = {
                "IF": ts.IF,
                "tool_reality": ts.tool_reality,
                "ans_pass": float(ts.ans_pass),
                "turns": float(n_turns),
            }
            figs.update(self._judged_figures(ts, judged.get(key)))
            all_rows.append(figs)
            per_scenario[inst.category or "all"].append(figs)
            res.per_instance[key] = {**figs, "turns": n_turns}
        res.metrics = _means(all_rows)
        res.breakdown = {sc: _means(v) for sc, v in sorted(per_scenario.items())}
        res.counts = {"n": len(rows), **res.counts}
        if self.judge is None:
            res.notes.append(
                "No judge given: IU, BP, TS, AO and overall are not measured (None, shown n/a; "
                "not 0); they need an LLM judge named with --judge. IF, tool_reality and turns "
                "are computed by rule."
            )
        else:
            res.notes.append(f"judge: {self.judge.name}")
            if self.judge.cache_error:
                res.notes.append(self.judge.cache_error)
        return res

    def _ask(self, rows: list[Row], res: MetricResult) -> dict[str, dict[str, Any]]:
        """Raw 1–10 judge scores per trace (``None`` for a failed request, 0 for an unreadable
        answer, as upstream)."""
        assert self.judge is not None
        flat: list[list[dict[str, str]]] = []
        index: list[tuple[str, str, int]] = []
        for key, _, ts, prompts, _ in rows:
            if prompts is None:
                continue
            for name in ("focus", "validity", "quality", "relevance"):
                flat.append(prompts[name])
                index.append((key, name, -1))
            for i in ts.match_turns:  # only the turns whose match enters TS are asked
                flat.append(prompts["match"][i])
                index.append((key, "match", i))
        verdicts = self.judge.ask_many(flat) if flat else []
        out: dict[str, dict[str, Any]] = defaultdict(lambda: {"match": {}})
        for (key, name, i), v in zip(index, verdicts, strict=True):
            if v.error:
                res.add_error("judge_error")
                score: int | None = None
            elif v.score is None:
                res.add_error("judge_unparseable")
                score = 0  # upstream scores an unreadable answer 0
            else:
                score = v.score
            if name == "match":
                out[key]["match"][i] = score
            else:
                out[key][name] = score
        return out

    @staticmethod
    def _judged_figures(ts: TraceScore, j: dict[str, Any] | None) -> dict[str, float | None]:
        """Upstream's arithmetic (``eval_single_data``), operation for operation."""
        if j is None:
            if ts.assistant_turns == 0:  # nothing to judge: every capability scores 0
                return {"IU": 0.0, "BP": 0.0, "TS": 0.0, "AO": 0.0, "overall": 0.0}
            return {"IU": None, "BP": None, "TS": None, "AO": None, "overall": None}
        focus, val, qual, rel = (j.get(k) for k in ("focus", "validity", "quality", "relevance"))
        iu = focus / 10 if focus is not None else None
        bp = val / 10 * qual / 10 if val is not None and qual is not None else None
        raw_matches = [j["match"].get(i) for i in ts.match_turns]
        tsc: float | None
        if any(m is None for m in raw_matches):
            tsc = None  # a judge request failed
        elif raw_matches:
            tsc = ts.tool_reality * (sum(raw_matches) / len(raw_matches)) / 10
        else:
            tsc = 0.0
        ao = rel / 10 if rel is not None else None
        parts = (ts.IF, tsc, bp, iu, ao)  # upstream's order: IF, TS, BP, IU, AO
        overall: float | None = None
        if all(p is not None for p in parts):
            overall = 0.0
            for p in parts:
                overall += float(p or 0.0) / 5
        return {
            "IU": iu,
            "BP": bp,
            "BP_validity": val / 10 if val is not None else None,
            "BP_quality": qual / 10 if qual is not None else None,
            "TS": tsc,
            "AO": ao,
            "overall": overall,
        }


@scorer(
    "tooleyes_strict",
    formats=("tooleyes",),
    needs=("steps", "judge"),
    description="ToolEyes with every call checked against the tool's full required list",
    default=False,
)
class ToolEyesStrictScorer(ToolEyesScorer):
    """ToolEyes without the in-place ``required`` quirk: a call lacking a required parameter is
    a parameter error however often the tool was called before."""

    consume_required = False


def _means(rows: list[dict[str, float | None]]) -> dict[str, float | None]:
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    out: dict[str, float | None] = {}
    for k in keys:
        vals = [r.get(k) for r in rows]
        out[k] = None if any(v is None for v in vals) else mean(v for v in vals if v is not None)
    return out
