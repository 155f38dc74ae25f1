"""``toollab eval``, ``toollab score``, ``toollab report``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, TaskID
from rich.table import Table

from toollab.agents.base import Agent
from toollab.cli.alpha_umi_cmd import RoleOpt, close_agent, role_agent
from toollab.cli.common import STDOUT, JsonOpt, console, emit_json, handle_errors, progress
from toollab.cli.data_cmd import parse_options
from toollab.cli.generate_cmd import resolve_envs
from toollab.data import get_adapter
from toollab.data.atomic import check_target
from toollab.errors import UsageError
from toollab.eval.conversations import (
    AGENT,
    DEFAULT_EPISODES,
    DEFAULT_FOLLOWUPS,
    DEFAULT_SPLIT,
    DEFAULT_STEPS,
    conversation_task,
)
from toollab.eval.log import Results, Scores, Taxonomy
from toollab.eval.metrics.retrieval import GOLD_OFFERED
from toollab.eval.progress import NoProgress
from toollab.eval.rescore import Coverage, rescore
from toollab.eval.runner import results_json
from toollab.eval.store import write_json_atomic
from toollab.eval.task import Task, evaluate
from toollab.eval.toolserver import check_server_spec, check_user_spec
from toollab.report import export_inspect, write_report
from toollab.report.runs import fmt_value
from toollab.retrieval.offer import check_retrieval
from toollab.schema.record import Prediction

OptionOpt = typer.Option(
    [],
    "--option",
    "-o",
    help="Dataset adapter option KEY=VALUE, repeatable (e.g. splits=test_in_domain).",
)
JudgeOpt = typer.Option(
    None,
    "--judge",
    help="Model string of an LLM judge for the figures that need one (ToolEyes IU, BP, TS, AO).",
)
JudgeCacheOpt = typer.Option(
    None,
    "--judge-cache",
    help="JSONL file keeping the judge's answers, so scoring again asks nothing "
    "(default: judge_cache.jsonl in the run directory / beside the predictions file).",
)
MetricsOpt = typer.Option(
    [],
    "--metrics",
    help="Scorers to run (repeatable or comma-separated; globs like 'seal*' allowed). "
    "Default: every upstream-faithful scorer that applies to the dataset; corrected variants "
    "(seal_tools_strict, deer_strict, tooleyes_strict) run only when named.",
)

RetrieverOpt = typer.Option(
    None,
    "--retriever",
    help="Retrieval in the loop: bm25, dense or hybrid. Each instance is offered the top --k "
    "tools this retriever finds for its query in the pool (the dataset's tools, or --pool) "
    "instead of the tools the dataset offers; the gold tools are never added. Retrieval "
    "(recall@k, gold offered) and calling are scored apart.",
)
RetrievalKOpt = typer.Option(
    None, "--k", help="With --retriever: tools offered per instance (default 5)."
)
PoolOpt = typer.Option(
    None,
    "--pool",
    help="With --retriever: a tool pool file to retrieve from (JSONL/JSON/YAML; Seal-Tools "
    "tool.jsonl works). Default: the dataset's tools.",
)
ToolServerOpt = typer.Option(
    None,
    "--tool-server",
    help="What answers the calls: sim (the simulated tool server: answers drawn from each "
    "tool's schema, deterministic), none (no executor), or a model string (the model plays the "
    "API, e.g. openai:NAME@URL). Default: the format's own (sim for tooleyes, else none). Calls "
    "that do not fit the schema get an API error.",
)
ToolCacheOpt = typer.Option(
    None,
    "--tool-cache",
    help="Folder of the simulated server's answers, so reruns get the same ones "
    "(default: OUT/tool_cache).",
)
UserOpt = typer.Option(
    None,
    "--user",
    help="Who answers ask_to_user with a tool server: scripted (default: fixed replies, at "
    "most 2 per query), none (asking ends the episode), or a model string.",
)
ScorerOptionOpt = typer.Option(
    [],
    "--scorer-option",
    "-s",
    help="Scorer option SCORER.KEY=VALUE, repeatable (e.g. environment.success_f1=0.8: a final "
    "state with dict-F1 >= 0.8 counts as a success).",
)


def parse_scorer_options(items: list[str]) -> dict[str, dict[str, str]]:
    """``["environment.success_f1=0.8"]`` → ``{"environment": {"success_f1": "0.8"}}``."""
    out: dict[str, dict[str, str]] = {}
    for item in items:
        target, sep, value = item.partition("=")
        scorer, dot, key = target.strip().partition(".")
        if not sep or not dot or not scorer or not key:
            raise UsageError(f"--scorer-option takes SCORER.KEY=VALUE, got {item!r}")
        out.setdefault(scorer, {})[key.replace("-", "_")] = value.strip()
    return out


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_cmd)
    app.command("score")(score_cmd)
    app.command("report")(report_cmd)


class _Bar(NoProgress):
    """The evaluation's progress: a rich bar with count, elapsed time and ETA on stderr."""

    def __init__(self, description: str) -> None:
        self.description = description
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.errors = 0

    def task_started(self, name: str, total: int, completed: int) -> None:
        self.bar = progress()
        self.bar.start()
        self.task = self.bar.add_task(self.description, total=total, completed=completed)

    def sample_done(self, name: str, prediction: Prediction) -> None:
        if prediction.error:
            self.errors += 1
        if self.bar is not None and self.task is not None:
            self.bar.advance(self.task)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def print_results(scores: Scores, title: str, coverage: Coverage | None = None) -> None:
    """Every scorer's figures as one table on stderr."""

    table = Table(title=title, title_justify="left")
    table.add_column("scorer")
    table.add_column("figure")
    table.add_column("value", justify="right")
    ci = scores.ci95 or {}
    for scorer, figs in scores.metrics.items():
        for i, (name, value) in enumerate(figs.items()):
            definition = scores.definition(scorer, name)
            label = definition.label if definition is not None else name
            table.add_row(
                scorer if i == 0 else "", label, fmt_value(value, ci.get(scorer, {}).get(name))
            )
    console.print(table)
    if coverage is not None and not coverage.complete:
        console.print(
            f"coverage: {coverage.expected_predictions - coverage.missing_predictions} of "
            f"{coverage.expected_predictions} expected predictions, "
            f"{coverage.missing_instances} instance(s) with none",
            highlight=False,
        )
    for scorer, notes in scores.notes.items():
        for note in notes:
            console.print(f"{scorer}: {escape(note)}", highlight=False)
    _print_retrieval(scores)
    if scores.taxonomy is not None:
        print_taxonomy(scores.taxonomy)
    c = scores.counts
    console.print(
        f"{c.predictions} predictions over {c.instances} instances"
        f" × {c.repeats} repeat(s): {c.errors} failed "
        f"({c.timeouts} timed out), {c.parse_errors} unparsable, "
        f"{c.no_call} no-call",
        highlight=False,
    )


def _print_retrieval(scores: Scores) -> None:
    """With a retriever in the loop: the retriever misses, and each calling scorer's figures
    over the instances whose gold tools were all offered (calling errors only)."""
    counts = scores.scorer_counts.get("retrieval")
    if counts is None:
        return
    console.print(
        f"retrieval: {counts.get('retriever_miss', 0)} retriever miss(es) of "
        f"{counts.get('n', 0)} instances (a gold tool not offered)",
        highlight=False,
    )
    for scorer, groups in scores.breakdown.items():
        figs = groups.get(GOLD_OFFERED)
        if not figs:
            continue
        n = scores.scorer_counts.get(scorer, {}).get(f"n:{GOLD_OFFERED}", 0)
        shown = ", ".join(f"{name} {fmt_value(value, None)}" for name, value in figs.items())
        console.print(f"{scorer} over the {n} gold-offered instances: {shown}", highlight=False)


def print_taxonomy(taxonomy: Taxonomy, out: Console | None = None, title: str = "") -> None:
    """The error taxonomy as a table (the classes that have samples, in precedence order; the
    count and share of each), then the definition of each failure class shown."""
    out = out or console
    head = f"{taxonomy.classified} samples classified"
    if taxonomy.unclassified:
        head += f", {taxonomy.unclassified} without an answer key"
    table = Table(title=f"{title or 'error taxonomy'} ({head})", title_justify="left")
    table.add_column("class")
    table.add_column("stage")
    table.add_column("count", justify="right")
    table.add_column("share", justify="right")
    shown = [c for c in taxonomy.classes if c.count or not c.stage]
    for c in shown:
        share = f"{100 * c.share:.1f} %" if c.share is not None else "n/a"
        table.add_row(c.label, c.stage or "-", str(c.count), share)
    out.print(table)
    for c in shown:
        if c.stage:
            out.print(f"{c.label}: {escape(c.definition)}", soft_wrap=False, highlight=False)


@handle_errors
def eval_cmd(
    model: str = typer.Option(
        "bundled:smollm2-135m",
        "--model",
        "-m",
        help="Model string (provider:model), e.g. bundled:smollm2-135m, llamacpp:/m.gguf, "
        "openai:NAME@URL, oracle (gold answers), fake:/script.json, "
        "replay:/outputs.jsonl (outputs recorded elsewhere, by instance id).",
    ),
    data: Path | None = typer.Option(
        None, "--data", "-d", help="Dataset folder or file (upstream layout)."
    ),
    fmt: str | None = typer.Option(
        None,
        "--format",
        "-f",
        help="Dataset format: seal-tools, bfcl, deer, tooleyes, alpha-umi, toollab.",
    ),
    option: list[str] = OptionOpt,
    conversations: bool = typer.Option(
        False,
        "--conversations",
        help="Instead of --data: whole conversations over held-out environment episodes "
        "(--split, --envs, --episodes), played turn by turn by the conversation agent and "
        "scored by the conversation scorer (answered after the results, answers carrying the "
        "observed values, no-tool turns, repeated calls, turns).",
    ),
    envs: list[str] = typer.Option(
        [],
        "--envs",
        "-e",
        help="--conversations: environments (repeatable or comma-separated; default: all).",
    ),
    split: str = typer.Option(
        DEFAULT_SPLIT,
        "--split",
        help="--conversations: the held-out split the episodes come from: validation (to choose "
        "between recipes) or test (to measure).",
    ),
    episodes: int = typer.Option(
        DEFAULT_EPISODES,
        "--episodes",
        min=1,
        help="--conversations: episodes per environment.",
    ),
    followups: int = typer.Option(
        DEFAULT_FOLLOWUPS,
        "--followups",
        min=0,
        help="--conversations: user turns after the first, at most.",
    ),
    agent: str | None = typer.Option(
        None,
        "--agent",
        "-a",
        help="Agent: single (default), action (SambaNova's action generator: retrieved API "
        "docs and train-split demonstrations), react (ToolEyes loop; default for tooleyes), "
        "deer (two rounds; default for deer), alpha-umi (planner, caller, summarizer; default "
        "for alpha-umi), alpha-umi-backbone (its single-LLM baseline).",
    ),
    role: list[str] = RoleOpt,
    template: str | None = typer.Option(
        None,
        "--template",
        "-t",
        help="Prompt template (default by format: seal, python, deer, react; else json).",
    ),
    metrics: list[str] = MetricsOpt,
    limit: int | None = typer.Option(
        None, "--limit", "-n", min=0, help="Only the first N instances."
    ),
    repeats: int = typer.Option(
        1, "--repeats", "-k", min=1, help="Run every instance k times; figures get mean ± 95 % CI."
    ),
    seed: int = typer.Option(0, "--seed", help="Sampling seed; repeat r uses seed + r."),
    constrained: bool | None = typer.Option(
        None,
        "--constrained/--no-constrained",
        help="Constrain decoding to the call schema. Default: wherever the backend can "
        "(llama.cpp, OpenAI-compatible); --no-constrained is the papers' unconstrained protocol. "
        "run.json records which was used.",
        show_default=False,
    ),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", min=1, help="Tokens per model turn (default 256; DEER 128)."
    ),
    temperature: float = typer.Option(0.0, "--temperature", min=0.0, help="0 = greedy."),
    top_p: float = typer.Option(1.0, "--top-p", min=0.0, max=1.0),
    max_turns: int | None = typer.Option(
        None,
        "--max-turns",
        min=1,
        help="Turns of multi-step agents (default 9); with --conversations, model steps per "
        f"user turn (default {DEFAULT_STEPS}).",
    ),
    timeout: float | None = typer.Option(
        None,
        "--timeout",
        min=0.001,
        help="Seconds per instance; a slower one is recorded as timed out.",
    ),
    concurrency: int | None = typer.Option(
        None, "--concurrency", min=1, help="Requests in flight (default: what the backend handles)."
    ),
    out: Path = typer.Option(
        ...,
        "--out",
        help="Run directory (created; an existing run with the same options is resumed).",
    ),
    judge: str | None = JudgeOpt,
    judge_cache: Path | None = JudgeCacheOpt,
    retriever: str | None = RetrieverOpt,
    k: int | None = RetrievalKOpt,
    pool: Path | None = PoolOpt,
    tool_server: str | None = ToolServerOpt,
    tool_cache: Path | None = ToolCacheOpt,
    user: str | None = UserOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Run a model over a dataset and score it; with --conversations, over whole conversations of held-out environment episodes.

    Writes OUT/run.json (configuration), OUT/predictions.jsonl (one prediction per line, made durable as it completes) and OUT/results.json (every applicable metric).

    An interrupted run continues where it stopped when the same command is run again.
    """

    log_dir: Path | None = None
    chosen: str | Agent | None = agent
    if conversations:
        if data is not None or fmt is not None or option:
            raise UsageError("--conversations plays generated episodes: give no --data/--format/-o")
        if role:
            raise UsageError("--role goes with the alpha-umi agents, not with --conversations")
        if retriever is not None or k is not None or pool is not None:
            raise UsageError("--retriever, --k and --pool go with --data, not --conversations")
        if tool_server is not None or tool_cache is not None or user is not None:
            raise UsageError("--tool-server, --tool-cache and --user go with --data")
        if agent not in (None, AGENT):
            raise UsageError(f"--conversations is played by the {AGENT} agent, not {agent!r}")
        task = conversation_task(
            resolve_envs(envs),
            split=split,
            n=episodes,
            seed=seed,
            followups=followups,
            max_steps=max_turns or DEFAULT_STEPS,
            max_tokens=max_tokens,
            template=template,
            run_dir=str(out),
        )
        task.scorers = list(metrics)
        task.limit = limit
        log_dir = out  # the episodes are kept in OUT/data/conversations.jsonl
    else:
        if data is None or fmt is None:
            raise UsageError("give --data and --format (or --conversations)")
        if envs or split != DEFAULT_SPLIT or episodes != DEFAULT_EPISODES:
            raise UsageError("--envs, --split and --episodes go with --conversations")
        if tool_server is not None:
            check_server_spec(tool_server)  # named as the option, before the dataset is read
        if user is not None:
            check_user_spec(user)
        chosen = role_agent(agent, role, get_adapter(fmt).default_agent if role else "single")
        task = Task(
            dataset=data,
            format=fmt,
            data_options=parse_options(option),
            agent=chosen,
            template=template,
            scorers=list(metrics),
            limit=limit,
            max_tokens=max_tokens,
            max_turns=max_turns or 9,
            run_dir=out,
            tool_server=tool_server,
            tool_cache=tool_cache,
            user=user,
        )
        check_retrieval(retriever, k, pool)  # before the dataset is read
        task.retriever, task.k, task.tool_pool = retriever, k, pool
    bar = _Bar(f"eval {model}")
    try:
        log = evaluate(
            task,
            model,
            log_dir=log_dir,
            repeats=repeats,
            seed=seed,
            constrained=constrained,
            temperature=temperature,
            top_p=top_p,
            timeout=timeout,
            concurrency=concurrency,
            judge=judge,
            judge_cache=judge_cache,
            progress=bar,
        )
    except KeyboardInterrupt:
        bar.close()
        console.print(
            f"[yellow]interrupted[/]: the predictions so far are saved in {out}; "
            "run the same command again to continue"
        )
        raise typer.Exit(130) from None
    finally:
        bar.close()
        close_agent(chosen)
    (ran,) = log.tasks
    session = ran.session
    if session is not None and session.repaired_bytes:
        console.print(
            f"cut a partial last line ({session.repaired_bytes} bytes) left by an interrupted run",
            highlight=False,
        )
    if session is not None and session.resumed:
        console.print(
            f"resumed: {session.previous_predictions} predictions were already done, "
            f"{session.new_predictions} new",
            highlight=False,
        )
    if json_out:
        results = Results(run=ran.spec, **dict(ran.scores), session=ran.session)
        emit_json({"out": str(out), **results_json(results)})
        return
    print_results(ran.scores, f"{ran.spec.dataset_name} · {model}")
    console.print(f"results: {Path(out) / 'results.json'}", highlight=False)


@handle_errors
def score_cmd(
    predictions: Path = typer.Argument(
        ..., help="A predictions.jsonl file (e.g. RUN_DIR/predictions.jsonl)."
    ),
    data: str | None = typer.Option(
        None, "--data", "-d", help="Dataset path (default: from the run.json beside the file)."
    ),
    fmt: str | None = typer.Option(None, "--format", "-f", help="Dataset format (with --data)."),
    option: list[str] = OptionOpt,
    metrics: list[str] = MetricsOpt,
    scorer_option: list[str] = ScorerOptionOpt,
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Also write the results to this JSON file (- : standard output, the JSON alone).",
    ),
    judge: str | None = JudgeOpt,
    judge_cache: Path | None = JudgeCacheOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Rescore a predictions file with no model: every applicable metric (or --metrics).

    Environment runs are re-judged from their stored execution records (no re-execution), with any --scorer-option. A file that covers only part of the run is scored over the instances it has; a warning on stderr and "coverage" in the results say how much is missing.
    """

    if predictions.is_dir():
        predictions = predictions / "predictions.jsonl"
    to_stdout = out is not None and str(out) == STDOUT
    if to_stdout and json_out:
        raise UsageError("--out - writes the results to standard output; --json cannot share it")
    if out is not None and not to_stdout:
        check_target(out)  # a device, a folder, a link out of its folder: refused before any work
    results = rescore(
        predictions,
        data=data,
        fmt=fmt,
        options=parse_options(option) or None,
        metrics=list(metrics) or None,
        judge=judge,
        judge_cache=judge_cache,
        scorer_options=parse_scorer_options(scorer_option) or None,
    )
    for warning in results.warnings:
        console.print(f"[yellow]warning[/]: {escape(warning)}", highlight=False)
    data_out = results.model_dump(mode="json")
    if to_stdout:
        emit_json(data_out)
    elif out is not None:
        write_json_atomic(out, data_out)
    if json_out:
        emit_json(data_out)
        return
    print_results(results, f"{results.dataset.name} · {predictions}", results.coverage)
    if out is not None and not to_stdout:
        console.print(f"results: {out}", highlight=False)


@handle_errors
def report_cmd(
    runs: list[Path] = typer.Argument(..., help="Run directories to compare (side by side)."),
    out: Path = typer.Option(
        Path("report.html"), "--out", help="HTML file to write; report.md goes beside it."
    ),
    title: str = typer.Option("toollab evaluation report", "--title", help="Page title."),
    inspect_dir: Path | None = typer.Option(
        None,
        "--inspect",
        help="Also write each run as an inspect_ai log into this folder, for `inspect view` "
        "(needs pip install 'toollab[inspect]').",
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace a .md file beside --out that toollab did not write."
    ),
    json_out: bool = JsonOpt,
) -> None:
    """Write a self-contained HTML report (models side by side with their difference, error
    classes, every failed sample opened in place, per-category bars, runs side by side) and a
    markdown summary next to it (a .md file there that toollab did not write is kept, an error,
    unless --force)."""

    if out.suffix.lower() == ".md":
        raise UsageError("--out names the HTML file (the markdown summary is written beside it)")
    html_path, md_path, views = write_report(list(runs), out, title, force=force)
    logs = export_inspect(views, inspect_dir) if inspect_dir is not None else []
    if json_out:
        emit_json(
            {
                "html": str(html_path),
                "markdown": str(md_path),
                "inspect_logs": [str(p) for p in logs],
                "runs": [
                    {"label": v.label, "path": str(v.path), "metrics": v.metrics} for v in views
                ],
            }
        )
        return
    console.print(f"report: {html_path}\nsummary: {md_path}", highlight=False)
    for p in logs:
        console.print(f"inspect log: {p}", highlight=False)
