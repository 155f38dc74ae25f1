"""The per-sample drill-down of failures: for each failed sample, what the model saw (the
instance's query and messages), what it wrote (the raw output, every step of a multi-turn
agent), what was executed (the calls and their observations, the crash), what was expected and
why it failed.  Plain HTML ``<details>`` elements: it works offline from the written page with no
script.  Bounded: the first :data:`MAX_SHOWN` failures of each run, then a count of the rest.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import Any

from toollab.report.failures import Failure, RunFailures
from toollab.schema import ToolCall
from toollab.schema.record import Prediction

#: failed samples shown per run (the rest are counted)
MAX_SHOWN = 8
#: characters of one text block shown (raw output, an observation, a message)
MAX_TEXT = 2000

CSS = """
details.run { margin:6px 0; background:#fff; border:1px solid var(--line); }
details.run > summary { padding:6px 10px; cursor:pointer; font-weight:600; }
details.sample { margin:4px 10px; border-left:3px solid #D55E00; padding:2px 8px; }
details.sample > summary { cursor:pointer; }
details.sample .cls { font-weight:600; }
dl.sample { display:grid; grid-template-columns:150px minmax(0, 1fr); gap:4px 12px; margin:8px 0; }
dl.sample dt { color:var(--muted); }
dl.sample dd { margin:0; min-width:0; }
pre.text { margin:0; white-space:pre-wrap; overflow-wrap:anywhere; background:#f6f8fa;
           padding:4px 6px; font-size:12.5px; max-height:320px; overflow:auto; }
ol.calls { margin:0; padding-left:20px; }
dl.sample code, details.sample summary code { font-size:12.5px; overflow-wrap:anywhere; }
.crash { color:#B2182B; }
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"… ({len(text) - MAX_TEXT} more characters)"


def _pre(text: Any) -> str:
    return f"<pre class='text'>{_e(_clip(str(text)))}</pre>"


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _call(call: ToolCall) -> str:
    return f"{call.name}({_json(call.model_dump(mode='json').get('arguments'))})"


def _messages(f: Failure) -> str:
    msgs = f.instance.messages if f.instance is not None else []
    if not msgs:
        return ""
    items = "".join(
        f"<li><b>{_e(m.get('role', '?'))}</b>: {_e(_clip(str(m.get('content') or '')))}</li>"
        for m in msgs
        if isinstance(m, dict)
    )
    return f"<dt>conversation</dt><dd><ol class='calls'>{items}</ol></dd>"


def _output(pred: Prediction) -> str:
    if pred.steps:
        items = "".join(
            f"<li><b>{_e(s.role)}</b>{_pre(s.text) if s.text else ''}"
            + (f"<div>observation: {_pre(_json(s.observation))}</div>" if s.observation else "")
            + (f"<div class='crash'>{_e(s.error)}</div>" if s.error else "")
            + "</li>"
            for s in pred.steps
        )
        return f"<dt>model turns</dt><dd><ol class='calls'>{items}</ol></dd>"
    return f"<dt>raw output</dt><dd>{_pre(pred.raw) if pred.raw else '<i>(empty)</i>'}</dd>"


def _executed(pred: Prediction) -> str:
    calls = pred.calls
    ex = pred.execution
    if not calls:
        return "<dt>calls</dt><dd><i>none</i></dd>"
    items = []
    for i, call in enumerate(calls):
        text = f"<code>{_e(_clip(_call(call)))}</code>"
        if ex is not None:
            if i < len(ex.observations):
                text += f" → {_pre(_json(ex.observations[i]))}"
            elif ex.crashed and ex.failed_call == i:
                why = f" ({ex.reason})" if ex.reason else ""
                text += f"<div class='crash'>crashed{_e(why)}: {_e(ex.error or '')}</div>"
            elif ex.crashed:
                text += " <i>(not run: an earlier call crashed)</i>"
        items.append(f"<li>{text}</li>")
    head = "calls executed" if ex is not None else "calls (not executed)"
    return f"<dt>{head}</dt><dd><ol class='calls'>{''.join(items)}</ol></dd>"


def _expected(f: Failure) -> str:
    inst = f.instance
    if inst is None:
        return "<dt>expected</dt><dd><i>(the run's dataset cannot be read)</i></dd>"
    label = inst.label().value
    if not inst.gold:
        return f"<dt>expected</dt><dd>{_e(label)} (no call)</dd>"
    calls = "".join(f"<li><code>{_e(_clip(_call(c)))}</code></li>" for c in inst.gold)
    alts = (
        f"<div class='note'>or one of {len(inst.alternatives)} equally correct program(s)</div>"
        if inst.alternatives
        else ""
    )
    return f"<dt>expected</dt><dd><ol class='calls'>{calls}</ol>{alts}</dd>"


def _outcome(pred: Prediction) -> str:
    ex = pred.execution
    if ex is None:
        return ""
    parts = []
    if ex.success is not None:
        parts.append("success" if ex.success else "final state differs from every label's")
    if ex.f1 is not None:
        parts.append(f"dict-F1 {100 * ex.f1:.1f}")
    if ex.ended_by:
        parts.append(f"ended by {ex.ended_by}")
    return f"<dt>outcome</dt><dd>{_e(', '.join(parts))}</dd>" if parts else ""


def sample_html(f: Failure) -> str:
    """One failed sample as a collapsible block."""
    pred = f.sample.prediction
    rep = f" (repeat {f.sample.repeat})" if f.sample.repeat else ""
    summary = (
        f"<summary><code>{_e(f.sample.id)}</code>{_e(rep)} · "
        f"<span class='cls'>{_e(f.error.label)}</span> · {_e(f.error.detail)}</summary>"
    )
    query = _pre(f.instance.query) if f.instance is not None else "<i>(not available)</i>"
    body = (
        f"<dl class='sample'><dt>query</dt><dd>{query}</dd>{_messages(f)}"
        f"{_output(pred)}{_executed(pred)}{_outcome(pred)}{_expected(f)}"
        f"<dt>why it failed</dt><dd><b>{_e(f.error.label)}</b>: {_e(f.error.detail)}</dd></dl>"
    )
    return f"<details class='sample'>{summary}{body}</details>"


def run_html(rf: RunFailures, title: str) -> str:
    """One run's failed samples (the first :data:`MAX_SHOWN`)."""
    n = len(rf.failures)
    if rf.problem and not rf.classified:
        return f"<p class='note'><b>{_e(title)}</b>: samples not classified: {_e(rf.problem)}</p>"
    head = f"{_e(title)} — {n} of {rf.classified} sample(s) failed"
    shown = "".join(sample_html(f) for f in rf.failures[:MAX_SHOWN])
    rest = (
        f"<p class='note'>… and {n - MAX_SHOWN} more failed sample(s): every sample is in "
        f"{_e(rf.run.path / 'predictions.jsonl')} (or export the run for inspect view: "
        "<code>toollab report --inspect DIR</code>)</p>"
        if n > MAX_SHOWN
        else ""
    )
    return f"<details class='run'><summary>{head}</summary>{shown}{rest}</details>"


def drilldown_html(items: Sequence[RunFailures], titles: Sequence[str]) -> str:
    """Every run with failures (runs without any are listed in one line)."""
    parts = [
        run_html(rf, t) for rf, t in zip(items, titles, strict=True) if rf.failures or rf.problem
    ]
    clean = [t for rf, t in zip(items, titles, strict=True) if not rf.failures and not rf.problem]
    if clean:
        parts.append(f"<p class='note'>No failed sample in: {_e(', '.join(clean))}.</p>")
    return "".join(parts)
