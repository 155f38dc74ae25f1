"""toollab runs as inspect_ai evaluation logs, for ``inspect view`` (``toollab report --inspect
DIR``; needs ``pip install 'toollab[inspect]'``).

One log per run (``DIR/<run label>.eval``): the run's task, model and dataset; its figures under
each scorer, exactly as ``results.json`` holds them (fractions, as inspect's metrics are); and one
sample per prediction: the prompt the model saw, its raw output and the calls it made (an
assistant message with tool calls), each executed call's observation or crash (tool messages),
the per-sample scores of every scorer, and the sample's error class
(the taxonomy's, :mod:`toollab.eval.metrics.errors`; ``ok`` when correct) as a score named
``error_class``.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toollab.errors import UsageError
from toollab.eval.log import TAXONOMY
from toollab.eval.metrics.errors import SampleClass, classify, has_answer_key
from toollab.eval.task import SampleLog
from toollab.report.runs import RunView
from toollab.schema import Instance

#: the score that carries the sample's error class
ERROR_SCORE = "error_class"


def available() -> bool:
    """Whether inspect_ai is installed."""
    import importlib.util

    return importlib.util.find_spec("inspect_ai") is not None


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _scalar_row(row: dict[str, Any]) -> dict[str, str | int | float | bool | None]:
    return {k: v for k, v in row.items() if v is None or isinstance(v, str | int | float | bool)}


def _messages(sample: SampleLog, instance: Instance | None) -> tuple[list[Any], list[Any]]:
    """(the input messages, the whole transcript) of one sample."""
    # optional dependency: inspect_ai (the [inspect] extra)
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )
    from inspect_ai.tool import ToolCall, ToolCallError

    pred = sample.prediction
    prompt: list[Any] = []
    if isinstance(pred.prompt, list):
        for m in pred.prompt:
            role, content = str(m.get("role", "user")), str(m.get("content") or "")
            if role == "system":
                prompt.append(ChatMessageSystem(content=content))
            elif role == "assistant":
                prompt.append(ChatMessageAssistant(content=content))
            else:
                prompt.append(ChatMessageUser(content=content))
    elif isinstance(pred.prompt, str):
        prompt.append(ChatMessageUser(content=pred.prompt))
    elif instance is not None:
        prompt.append(ChatMessageUser(content=instance.query))
    calls = [
        ToolCall(id=f"call_{i}", function=c.name, arguments=c.model_dump(mode="json")["arguments"])
        for i, c in enumerate(pred.calls)
    ]
    transcript = [*prompt, ChatMessageAssistant(content=pred.raw, tool_calls=calls or None)]
    ex = pred.execution
    if ex is not None:
        for i, call in enumerate(calls):
            if i < len(ex.observations):
                transcript.append(
                    ChatMessageTool(
                        content=_json(ex.observations[i]),
                        tool_call_id=call.id,
                        function=call.function,
                    )
                )
            elif ex.crashed and ex.failed_call == i:
                transcript.append(
                    ChatMessageTool(
                        content="",
                        tool_call_id=call.id,
                        function=call.function,
                        error=ToolCallError("unknown", f"{ex.reason or 'crash'}: {ex.error or ''}"),
                    )
                )
    return prompt, transcript


def _sample(run: RunView, sample: SampleLog) -> Any:
    # optional dependency: inspect_ai (the [inspect] extra)
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    instance = run.instances.by_id.get(sample.id)
    prompt, transcript = _messages(sample, instance)
    pred = sample.prediction
    scores = {scorer: Score(value=_scalar_row(row)) for scorer, row in sample.scores.items()}
    metadata: dict[str, Any] = {"toollab_id": sample.id}
    target: str | list[str] = ""
    stored = sample.scores.get(TAXONOMY)
    err = SampleClass.from_row(stored) if stored is not None else None
    if err is None and instance is not None and has_answer_key(instance):
        err = classify(instance, pred)
    if err is not None:
        scores[ERROR_SCORE] = Score(
            value=err.key if err.failed else "ok",
            explanation=err.detail if err.failed else None,
        )
    if instance is not None:
        target = [_json(c.model_dump(mode="json")) for c in instance.gold] or instance.label().value
        metadata["decision"] = instance.label().value
    return EvalSample(
        id=sample.id,
        epoch=sample.repeat + 1,
        input=prompt or (instance.query if instance is not None else ""),
        target=target,
        messages=transcript,
        output=ModelOutput.from_content(run.model, pred.raw),
        scores=scores,
        metadata=metadata,
        error=EvalError(message=pred.error, traceback="", traceback_ansi="")
        if pred.error
        else None,
    )


def eval_log_of(run: RunView) -> Any:
    """The ``inspect_ai.log.EvalLog`` of one run."""
    # optional dependency: inspect_ai (the [inspect] extra)
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalScore,
        EvalSpec,
    )

    spec = run.config
    created = _dt.datetime.fromtimestamp(
        (run.path / "results.json").stat().st_mtime, tz=_dt.UTC
    ).isoformat()
    samples = [_sample(run, s) for s in run.log.samples]
    scores = [
        EvalScore(
            name=scorer,
            scorer=scorer,
            scored_samples=len(samples),
            metrics={
                name: EvalMetric(name=name, value=float(value))
                for name, value in figures.items()
                if isinstance(value, int | float) and not isinstance(value, bool)
            },
        )
        for scorer, figures in run.metrics.items()
    ]
    limit = spec.get("limit")
    repeats = spec.get("repeats")
    return EvalLog(
        status="success",
        eval=EvalSpec(
            created=created,
            task=run.task,
            dataset=EvalDataset(
                name=run.task,
                location=str(spec.get("data") or ""),
                samples=len({s.id for s in run.log.samples}),
                sample_ids=list(dict.fromkeys(s.id for s in run.log.samples)),
            ),
            model=run.model,
            config=EvalConfig(
                limit=limit if isinstance(limit, int) else None,
                epochs=repeats if isinstance(repeats, int) else None,
            ),
            metadata={
                "toollab_run": str(run.path),
                **{k: spec.get(k) for k in ("format", "template", "agent", "constrained", "seed")},
            },
        ),
        results=EvalResults(
            total_samples=len(samples), completed_samples=len(samples), scores=scores
        ),
        samples=samples,
    )


def _file_name(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-")[:120] or "run"


def export_inspect(runs: Sequence[RunView], out_dir: str | Path) -> list[Path]:
    """Write one inspect_ai log per run into ``out_dir``; their paths."""
    if not available():
        raise UsageError(
            "exporting to inspect_ai's log format needs inspect_ai: pip install 'toollab[inspect]'"
        )
    # optional dependency: inspect_ai (the [inspect] extra)
    from inspect_ai.log import write_eval_log

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for run in runs:
        path = out / f"{_file_name(run.label)}.eval"
        write_eval_log(eval_log_of(run), str(path))
        paths.append(path)
    return paths
