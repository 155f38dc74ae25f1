"""``toollab data alpha-umi``: α-UMi-format files from the environments' gold programs."""

from __future__ import annotations

from pathlib import Path

import typer

from toollab.agents.alpha_umi import AlphaUmiAgent, parse_roles
from toollab.agents.base import Agent, get_agent
from toollab.cli.common import JsonOpt, console, emit_json, handle_errors
from toollab.cli.data_cmd import data_app
from toollab.cli.generate_cmd import resolve_envs
from toollab.data.atomic import check_target
from toollab.envs.generate import MAX_INSTANCES, SPLITS
from toollab.errors import UsageError
from toollab.sft.alpha_umi import check_split_name, env_traces, write_traces

#: ``--role`` of ``toollab eval`` and ``toollab bench``
RoleOpt: list[str] = typer.Option(
    [],
    "--role",
    help="alpha-umi: the model of one role, ROLE=MODEL (planner, caller, summarizer; "
    "repeatable); a MODEL starting with + is appended to --model (e.g. caller=+lora=/c.gguf). "
    "Roles not given use --model.",
)


def role_agent(agent: str | None, roles: list[str], default: str) -> str | Agent | None:
    """``agent`` unchanged without ``--role``; with it, an ``alpha-umi`` agent whose roles use
    the models given (a :class:`UsageError` for any other agent, before any model loads)."""
    if not roles:
        return agent
    name = agent or default
    if not isinstance(get_agent(name), AlphaUmiAgent):
        raise UsageError(f"--role is for the alpha-umi agent, not {name!r} (add --agent alpha-umi)")
    given = parse_roles(roles)
    return AlphaUmiAgent(
        planner=given.get("planner"), caller=given.get("caller"), summarizer=given.get("summarizer")
    )


def close_agent(agent: object) -> None:
    """Release the role models an agent made by :func:`role_agent` loaded."""
    if isinstance(agent, AlphaUmiAgent):
        agent.close()


@handle_errors
def alpha_umi_cmd(
    env: list[str] = typer.Option(
        ["all"], "--env", "-e", help="Environment(s); repeat or comma-separate; 'all'."
    ),
    split: str = typer.Option(
        ..., "--split", "-s", help="test (step-level evaluation files) or train (GLPFT data)."
    ),
    n: int = typer.Option(
        20, "--n", "-n", min=1, help=f"Instances per environment (at most {MAX_INSTANCES:,})."
    ),
    seed: int = typer.Option(0, "--seed", help="Generation seed (the bench's split seed)."),
    out: Path = typer.Option(
        ..., "--out", "-o", help="Output JSON file; its name must name the split."
    ),
    json_out: bool = JsonOpt,
) -> None:
    """Write α-UMi-format traces: each instance's gold program executed step by step in its
    environment, real observations, template rationales and a conclusion from the observations.

    Read them back with --format alpha-umi (toollab eval: one sample per planner step)."""
    if split not in SPLITS:
        raise UsageError(f"--split must be one of {', '.join(SPLITS)}, got {split!r}")
    check_split_name(out, split)
    check_target(out)
    names = resolve_envs(env)
    traces = [t for name in names for t in env_traces(name, split, n, seed)]
    write_traces(traces, out)
    steps = sum(1 for t in traces for turn in t.conversations if turn.role == "assistant")
    if json_out:
        emit_json(
            {"out": str(out), "split": split, "envs": names, "traces": len(traces), "steps": steps}
        )
        return
    console.print(
        f"wrote {len(traces)} traces ({steps} planner steps) of {len(names)} environment(s), "
        f"split {split}, to {out}",
        highlight=False,
    )


def register(app: typer.Typer) -> None:
    data_app.command("alpha-umi")(alpha_umi_cmd)
