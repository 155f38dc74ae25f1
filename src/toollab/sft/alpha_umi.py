"""α-UMi-format traces from an environment's split: the gold programs executed step by step.

Each generated instance of ``env``'s ``split`` becomes one trace
(:class:`toollab.data.alpha_umi.Trace`): the instance's tools as α-UMi documents, its query as
the instruction and the first user turn, then, for each gold call, a planner turn (a
deterministic rationale from a template, ``Next: caller.``), the caller turn (``Action: <name>
\\nAction Input: <arguments>``, references to earlier outputs resolved to the values the tool
received) and the **real** observation of the environment (cut at 1,024 characters), and at the
end a planner turn routing to the summarizer and a conclusion built from the observations.  A
NoSearch instance (answerable without a tool) concludes at once with its answer; a NoCall
instance (no tool can do it) gives up.  An environment whose bench offers retrieved tools (the
spreadsheet's 62: :attr:`~toollab.envs.base.Environment.retrieved_tools`) offers the top k that
BM25 ranks for the query, as the bench does, plus any gold tool the ranking missed (a trace
calls only tools it offers); 62 tool documents would not fit the roles' prompts.

Gold programs carry no rationale and no final answer, so both are written from fixed
templates (:func:`rationale`, :func:`conclusion`), not by a model: Plan ACC and Rouge-L on
such files are easier than on the paper's GPT-4-written ToolBench steps.

**Splits.**  Test-split files are for the step-level evaluation (``toollab eval --format
alpha-umi``); train-split files are what GLPFT's role data is made from
(:func:`toollab.data.alpha_umi.role_samples`).  Each trace's ``id`` names the environment, the
split and the instance (``weather/test/<id>``), and the file's name must say its split
(:func:`check_split_name`), so a test file cannot pass for training data unnoticed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toollab.data.alpha_umi import (
    Trace,
    Turn,
    call_text,
    observation_text,
    parse_trace,
    umi_tool,
    with_marker,
)
from toollab.data.atomic import atomic_write
from toollab.envs.base import EnvError, get_env, instance_seed
from toollab.envs.generate import SPLITS, generate
from toollab.errors import InputError, ToolExecutionError, UsageError
from toollab.schema import Decision, Instance, ToolCall
from toollab.sft.sources import offered_as_in_bench
from toollab.tools.execution import CallFailure, CallResult, prepare_call

#: how much of each observation the template conclusion quotes
QUOTE_LIMIT = 200


def _args_text(arguments: dict[str, object]) -> str:
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())


def rationale(query: str, index: int, call: ToolCall, total: int) -> str:
    """The planner's thought before gold call ``index`` (0-based) of ``total``."""
    args = _args_text(call.arguments)
    with_args = f" with {args}" if args else ""
    if index == 0:
        head = f"The user asks: {query.strip()} "
        if total > 1:
            head += f"This takes {total} calls. "
        return f"{head}First I call {call.name}{with_args}."
    return f"The previous call succeeded. Next I call {call.name}{with_args} (step {index + 1} of {total})."


def conclusion(calls: Sequence[ToolCall], observations: Sequence[object]) -> str:
    """The final answer of a gold program: what each call returned."""
    parts = []
    for call, obs in zip(calls, observations, strict=True):
        text = observation_text(obs)
        if len(text) > QUOTE_LIMIT:
            text = text[:QUOTE_LIMIT] + "..."
        parts.append(f"{call.name} returned {text}")
    return "Here is what I found: " + "; ".join(parts) + "."


def _execute(env_name: str, inst: Instance) -> tuple[list[dict[str, object]], list[Any]]:
    """Run the gold program step by step: each call's resolved arguments and observation."""
    env = get_env(env_name, instance_seed(inst))
    calls: list[ToolCall] = list(inst.gold)
    done: list[CallResult] = []
    resolved: list[dict[str, object]] = []
    observations: list[Any] = []
    for i, call in enumerate(calls):
        try:
            _entry, args = prepare_call(env.pool, calls, i, done, validate=False)
            obs = env.call_at(calls, i, done)
        except (CallFailure, EnvError, ToolExecutionError) as exc:
            raise UsageError(
                f"{env_name}: the gold program of instance {inst.id!r} fails at call {i} "
                f"({call.name}): {exc}"
            ) from None
        resolved.append(dict(args))
        observations.append(obs)
        done.append(CallResult(index=i, call=call, arguments=dict(args), output=obs))
    return resolved, observations


def trace_of(env_name: str, split: str, inst: Instance) -> Trace:
    """One instance of ``env_name`` as an α-UMi trace (see the module docs)."""
    turns = [Turn.of("user", inst.query)]
    if not inst.gold:
        if inst.label() is Decision.NO_SEARCH:
            turns.append(
                Turn.of(
                    "assistant",
                    with_marker("No tool is needed: I can answer this directly.", "conclusion"),
                )
            )
            turns.append(Turn.of("conclusion", inst.answer or "I can answer without a tool."))
        else:
            turns.append(
                Turn.of(
                    "assistant",
                    with_marker(
                        "None of the available tools can do this, so I give up.", "give up"
                    ),
                )
            )
    else:
        resolved, observations = _execute(env_name, inst)
        calls = [
            ToolCall(name=c.name, arguments=a) for c, a in zip(inst.gold, resolved, strict=True)
        ]
        for i, (call, obs) in enumerate(zip(calls, observations, strict=True)):
            thought = rationale(inst.query, i, call, len(calls))
            turns.append(Turn.of("assistant", with_marker(thought, "caller")))
            args = json.dumps(call.arguments, ensure_ascii=False)
            turns.append(Turn.of("caller", call_text(call.name, args)))
            turns.append(Turn.of("observation", observation_text(obs)))
        turns.append(
            Turn.of(
                "assistant",
                with_marker(
                    "I have every result the request needs, so I can answer.", "conclusion"
                ),
            )
        )
        turns.append(Turn.of("conclusion", conclusion(calls, observations)))
    trace = Trace(
        id=f"{env_name}/{split}/{inst.id}",
        tools=[umi_tool(t) for t in inst.tools],
        instruction=inst.query,
        conversations=turns,
    )
    parse_trace(trace.to_json(), trace.id or "trace")  # what is written reads back
    return trace


def env_traces(env_name: str, split: str, n: int, seed: int = 0) -> list[Trace]:
    """``n`` traces of ``env_name``'s ``split`` (the instances :func:`generate` makes with
    ``seed``: Call, NoCall and NoSearch in the default mix)."""
    if split not in SPLITS:
        raise UsageError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    insts = offered_as_in_bench(env_name, generate(env_name, split, n, seed))
    return [trace_of(env_name, split, inst) for inst in insts]


def check_split_name(out: Path, split: str) -> None:
    """The file's name must say which split it holds (``weather-test.json``), and no other."""
    name = out.name.lower()
    named = [s for s in SPLITS if s in name]
    if split not in named:
        example = out.with_name(f"{out.stem}-{split}{out.suffix or '.json'}").name
        raise UsageError(
            f"{out}: the file name must name its split ({split!r}), e.g. {example}: test files "
            "are for evaluation, train files for training"
        )
    other = [s for s in named if s != split]
    if other:
        raise InputError(f"the file name names another split too ({', '.join(other)})", path=out)


def write_traces(traces: Sequence[Trace], out: Path) -> Path:
    """Write ``traces`` as one α-UMi JSON list (atomically)."""
    with atomic_write(out) as fh:
        fh.write(json.dumps([t.to_json() for t in traces], ensure_ascii=False, indent=1) + "\n")
    return out
