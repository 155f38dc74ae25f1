"""ToolEyes capability scores on a ReAct trace (``Code/Evaluation/util/utils.py``).

The trace is ``Prediction.steps``: model turns have ``role="assistant"`` and their full text
(``Thought: … Action: … Action Input: …``), user turns after the query ``role="user"``, tool
results any other role (``"observation"``).  Without steps, ``raw`` is one assistant turn.

Rule-based (always reported):

* ``IF`` (format alignment) = format-correct assistant turns / assistant turns.  A turn is
  correct when Thought/Action/Action Input are found with a non-empty action and the Action Input
  is a Python literal; the final turn (the one equal to the last message) counts as correct when
  it passes the ReAct check alone, and as wrong when it is the forced "I cannot handle the task"
  stop.
* ``tool_reality`` = 1 − (hallucinated-tool turns + parameter-error turns) / format-correct
  non-final turns.  A parameter error is a missing required parameter or a parameter the doc
  does not declare.  Upstream quirk kept: once a hallucinated tool was seen, later turns are no
  longer checked for parameter errors.

Judged by an LLM (``judge=`` a :class:`toollab.models.base.Model` or
:class:`~toollab.eval.metrics.judge.Judge`; 1–10 scores divided by 10), ``None`` without a judge:
``IU`` = thought focus, ``BP`` = validity × quality, ``TS`` = tool_reality × mean tool-thought
match, ``AO`` = relevance of the final answer, ``overall`` = mean of IF, IU, BP, TS, AO.
Action Inputs are read with ``ast.literal_eval`` where upstream uses ``eval``.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.eval.metrics.judge import (
    Judge,
    as_judge,
    focus_prompt,
    match_prompt,
    quality_prompt,
    relevance_prompt,
    validity_prompt,
)
from toollab.eval.metrics.registry import MetricResult, Scorer, instance_key, mean, scorer
from toollab.eval.record import Prediction
from toollab.parsing._text import load_literal
from toollab.parsing.react import tooleyes_segments
from toollab.schema import Instance, Tool

FAILED_ANSWER = "I cannot handle the task."
FORCED_STOPS = ("trying too many times", "During execution, an error occurs.")
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


def _judge_thought(text: str) -> str:
    head = text.split("Action:", 1)[0]
    return re.sub(r"Thought\s*:", "", head).strip()


def _judge_tool(text: str) -> str:
    m = re.search(r"Action:(.*?)Input", text, re.DOTALL)
    if not m:
        return ""
    return re.sub(r"Action Input", "", m.group(1)).strip()


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


def _param_error(tool: Tool | None, args: Any) -> bool:
    if tool is None:
        return False
    if not isinstance(args, dict):
        return True
    props = tool.properties
    missing = any(r not in args for r in tool.required)
    unknown = any(k not in props for k in args)
    return missing or unknown


def score_trace(turns: list[str], last_message: str, tools: dict[str, Tool | None]) -> TraceScore:
    """The rule-based part of one trace (IF and tool reality)."""
    s = TraceScore()
    hallu_seen = 0
    for idx, text in enumerate(turns):
        s.assistant_turns += 1
        is_last = text == last_message
        if is_last and FAILED_ANSWER in text and any(m in text for m in FORCED_STOPS):
            s.ans_pass = 0
            s.errors.append("force_terminated")
            s.match_turns.append(idx)
            continue
        react_ok = reasoning_format_ok(text)
        if is_last and react_ok:
            s.format_correct += 1
            s.match_turns.append(idx)
            continue
        json_ok = json_format_ok(text)
        if not react_ok:
            s.errors.append("react_format_error")
        elif not json_ok:
            s.errors.append("action_input_error")
        if not (react_ok and json_ok):
            continue
        s.format_correct += 1
        s.tool_checked += 1
        s.match_turns.append(idx)
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
        if _param_error(tools[action], load_literal(seg[2])[1]):
            s.param_err += 1
            s.errors.append("param_error")
    return s


def trace_of(pred: Prediction) -> tuple[list[str], list[tuple[int, str]], str]:
    """(assistant turns, later user turns as (position, text), last message)."""
    if not pred.steps:
        return ([pred.raw] if pred.raw else []), [], pred.raw
    turns: list[str] = []
    users: list[tuple[int, str]] = []
    for s in pred.steps:
        if s.role in ASSISTANT_ROLES:
            turns.append(s.text)
        elif s.role == "user":
            users.append((len(turns), s.text))
    return turns, users, pred.steps[-1].text


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


def _final_answer(text: str) -> str:
    seg = tooleyes_segments(text.replace("\\\\", "\\").replace("{\n", "{").replace("\n}", "}"))
    if seg is None:
        return ""
    ok, value, _ = load_literal(seg[2])
    if ok and isinstance(value, dict) and "answer" in value:
        return str(value["answer"])
    return seg[2]


def judge_prompts(
    inst: Instance, turns: list[str], users: list[tuple[int, str]], last: str
) -> dict[str, Any]:
    """The five judge prompts of one trace (``match`` is one prompt per assistant turn)."""
    doc = tool_document(inst)
    plain = "\n\n".join(f"Turn {i + 1}:\n{_judge_thought(t)}" for i, t in enumerate(turns)).strip()
    parts: list[str] = []
    user_at = defaultdict(list)
    for pos, text in users:
        user_at[pos].append(text)
    for i, t in enumerate(turns):
        parts.extend(f"User request:\n{u.strip()}" for u in user_at.get(i, []))
        parts.append(f"Turn {i + 1}:\n{_judge_thought(t)}")
    with_users = "\n\n".join(parts).strip()
    return {
        "focus": focus_prompt(doc, inst.query, with_users),
        "validity": validity_prompt(doc, inst.query, plain),
        "quality": quality_prompt(doc, inst.query, plain),
        "relevance": relevance_prompt(doc, inst.query, _final_answer(last)),
        "match": [match_prompt(doc, _judge_thought(t), _judge_tool(t)) for t in turns],
    }


@scorer(
    "tooleyes",
    formats=("tooleyes",),
    needs=("steps", "judge"),
    description="ToolEyes IF and tool reality by rule; IU, BP, TS, AO and overall with a judge",
)
class ToolEyesScorer(Scorer):
    """ToolEyes' five capability scores."""

    def __init__(self, judge: Any = None, judge_cache: str | Path | None = None) -> None:
        self.judge: Judge | None = as_judge(judge, judge_cache)

    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        res = self.new_result()
        rows: list[tuple[str, Instance, TraceScore, dict[str, Any] | None]] = []
        for pred, inst in self.pairs(predictions, instances, res):
            turns, users, last = trace_of(pred)
            ts = score_trace(turns, last, tool_table(inst))
            if pred.error and not turns:
                ts.errors.append("prediction_error")
            for e in ts.errors:
                res.add_error(e)
            prompts = judge_prompts(inst, turns, users, last) if self.judge and turns else None
            rows.append((instance_key(pred), inst, ts, prompts))

        judged = self._ask(rows, res) if self.judge else {}
        per_scenario: dict[str, list[dict[str, float | None]]] = defaultdict(list)
        all_rows: list[dict[str, float | None]] = []
        for key, inst, ts, _ in rows:
            figs: dict[str, float | None] = {
                "IF": ts.IF,
                "tool_reality": ts.tool_reality,
                "ans_pass": float(ts.ans_pass),
            }
            figs.update(self._judged_figures(ts, judged.get(key)))
            all_rows.append(figs)
            per_scenario[inst.category or "all"].append(figs)
            res.per_instance[key] = {**figs, "turns": ts.assistant_turns}
        res.metrics = _means(all_rows)
        res.breakdown = {sc: _means(v) for sc, v in sorted(per_scenario.items())}
        res.counts = {"n": len(rows), **res.counts}
        if self.judge is None:
            res.notes.append(
                "No judge given: only IF and tool_reality are computed; IU, BP, TS, AO and "
                "overall need an LLM judge (--judge) and are reported as None."
            )
        else:
            res.notes.append(f"judge: {self.judge.name}")
        return res

    def _ask(
        self, rows: list[tuple[str, Instance, TraceScore, dict[str, Any] | None]], res: MetricResult
    ) -> dict[str, dict[str, Any]]:
        assert self.judge is not None
        flat: list[list[dict[str, str]]] = []
        index: list[tuple[str, str, int]] = []
        for key, _, ts, prompts in rows:
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
                score: float | None = None
            elif v.score is None:
                res.add_error("judge_unparseable")
                score = 0.0  # upstream scores an unreadable answer 0
            else:
                score = v.score / 10
            if name == "match":
                out[key]["match"][i] = score
            else:
                out[key][name] = score
        return out

    @staticmethod
    def _judged_figures(ts: TraceScore, j: dict[str, Any] | None) -> dict[str, float | None]:
        if j is None:
            if ts.assistant_turns == 0:  # nothing to judge: every capability scores 0
                return {"IU": 0.0, "BP": 0.0, "TS": 0.0, "AO": 0.0, "overall": 0.0}
            return {"IU": None, "BP": None, "TS": None, "AO": None, "overall": None}
        iu = j.get("focus")
        val, qual = j.get("validity"), j.get("quality")
        bp = val * qual if val is not None and qual is not None else None
        raw_matches = [j["match"].get(i) for i in ts.match_turns]
        matches = [float(m) for m in raw_matches if m is not None]
        tsc: float | None
        if len(matches) < len(raw_matches):
            tsc = None  # a judge request failed
        else:
            tsc = ts.tool_reality * (sum(matches) / len(matches)) if matches else 0.0
        ao = j.get("relevance")
        parts = [ts.IF, iu, bp, tsc, ao]
        known = [float(p) for p in parts if p is not None]
        overall = sum(known) / 5 if len(known) == 5 else None
        return {
            "IU": iu,
            "BP": bp,
            "BP_validity": val,
            "BP_quality": qual,
            "TS": tsc,
            "AO": ao,
            "overall": overall,
        }


def _means(rows: list[dict[str, float | None]]) -> dict[str, float | None]:
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    out: dict[str, float | None] = {}
    for k in keys:
        vals = [r.get(k) for r in rows]
        out[k] = None if any(v is None for v in vals) else mean(v for v in vals if v is not None)
    return out
