"""Running a predicted program and recording what it did.

Executing belongs to the environment, judging to the scorers: :func:`record_program` runs a
program in an executor and returns an :class:`~toollab.schema.record.ExecutionRecord` with the
final state, the observations, the executed actions and how it crashed, if it did, and nothing
about the labels.  The ``environment`` scorer (:mod:`toollab.eval.metrics.environment`) decides
from that record and the instance's answer key whether the outcome is right.
"""

from __future__ import annotations

from typing import Any

from toollab.envs.base import CallExecutor, RendersActions, RunsPrograms, instance_seed
from toollab.schema import Instance, ToolCall
from toollab.schema.record import ExecutionRecord

#: ``ExecutionRecord.reason`` of output that could not be read as calls
FORMAT = "format"


def render_action(env: object, call: ToolCall) -> str:
    """A call as the action string sequence metrics compare, in the environment's own form when
    it has one (e.g. household object names normalised)."""
    return str(env.action_text(call)) if isinstance(env, RendersActions) else call.action_text()


def record_program(env: CallExecutor, instance: Instance, calls: list[ToolCall]) -> ExecutionRecord:
    """Run a whole predicted program in ``env`` from the instance's seed and record it: the final
    ``state`` (``None`` after a crash), ``observations``, ``crashed`` (with ``error`` /
    ``reason`` / ``failed_call``) and the executed ``actions``.  An executor that cannot run a
    program (a tool pool, a sandbox) executes the calls one by one and stops at a failure."""
    if not isinstance(env, RunsPrograms):
        observations: list[Any] = []
        for i, call in enumerate(calls):
            try:
                observations.append(env.execute(call))
            except Exception as exc:
                return ExecutionRecord(
                    observations=observations,
                    crashed=True,
                    error=f"{type(exc).__name__}: {exc}",
                    failed_call=i,
                    n_calls=len(calls),
                    actions=[render_action(env, c) for c in calls[: i + 1]],
                )
        return ExecutionRecord(
            observations=observations,
            n_calls=len(calls),
            actions=[render_action(env, c) for c in calls],
        )
    execution = env.run(calls, instance_seed(instance))
    done = calls if execution.failed_call is None else calls[: execution.failed_call + 1]
    return ExecutionRecord(
        state=None if execution.crashed else dict(execution.state),
        observations=list(execution.observations),
        crashed=bool(execution.crashed),
        error=execution.error,
        reason=execution.reason,
        failed_call=execution.failed_call,
        n_calls=int(execution.n_calls),
        actions=[render_action(env, c) for c in done],
    )


def record_unreadable(error: str | None) -> ExecutionRecord:
    """The record of output that could not be read as calls: nothing ran, a crash of kind
    :data:`FORMAT`."""
    return ExecutionRecord(crashed=True, error=f"unparsable output: {error}", reason=FORMAT)
