"""The environment suite behind ``toollab bench``: one :class:`~toollab.eval.task.Task` per
environment, evaluated with :func:`~toollab.eval.task.evaluate`.

For each environment: generate its test split (API combinations unseen in training), hand the
instances straight to a task whose environment executes them (model -> agent -> template ->
parse -> execute in the environment), and take the per-environment figures from the
``environment`` scorer (:mod:`toollab.eval.metrics.environment`, where each figure is defined):
success, crash rate and dict-F1 over Call instances, Tool / Param F1 and decision accuracy over
every instance, and plan LCS where the environment scores plans (household).  The run directory
keeps each environment's instances (``data/NAME.jsonl``) and run (``runs/NAME``), so
``toollab score`` and ``toollab report`` read the same figures back.

Everything runs offline on the bundled model by default.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field, JsonValue

from toollab.agents.base import Agent
from toollab.data import Dataset
from toollab.data.atomic import MARK, check_replaceable, write_text_atomic
from toollab.envs.base import env_class, task_env_names
from toollab.envs.generate import generate, split_complexity
from toollab.eval.log import Results, RunSpec, TaskLog, Taxonomy, task_log_of
from toollab.eval.metrics.environment import FIGURES, best_call_counts, call_counts
from toollab.eval.progress import Progress
from toollab.eval.results import score_predictions
from toollab.eval.task import Task, evaluate
from toollab.models.base import Model
from toollab.models.registry import ModelSource
from toollab.schema import Instance
from toollab.schema.record import Prediction

__all__ = [
    "FIGURES",
    "BenchResult",
    "EnvSummary",
    "best_call_counts",
    "call_counts",
    "run_bench",
    "summarise",
    "summary_of",
]

DEFAULT_MODEL = "bundled:smollm2-135m"
#: what ``toollab bench`` runs when no model is named: the bundled model beside its tool-tuned
#: version, so the main job shows what training does
DEFAULT_BENCH_MODELS = ("bundled:smollm2-135m", "bundled:smollm2-135m-tools")
#: test instances per environment in a default run (sized to finish in ~10 min on 2 CPU cores)
DEFAULT_LIMIT = 6
#: size of the training set the test split's API complexity is measured against
REFERENCE_TRAIN = 100
#: the retriever that chooses the tools offered where an environment asks for it
#: (:attr:`~toollab.envs.base.Environment.retrieved_tools`)
RETRIEVER = "bm25"
#: the scorer whose figures the bench reports
SCORER = "environment"
#: the figures in the order every view shows them
FIGURE_KEYS = tuple(f.name for f in FIGURES)


class EnvSummary(BaseModel):
    """One environment's bench figures (fractions; ``None`` where undefined)."""

    env: str
    n: int
    n_call: int
    success: float | None
    crash_rate: float | None
    dict_f1: float | None
    tool_f1: float | None
    param_f1: float | None
    decision_acc: float | None
    lcs: float | None = None
    seconds: float = 0.0
    run_dir: str = ""
    api_complexity: float | None = None
    #: the run's error taxonomy (counts and shares per class)
    taxonomy: Taxonomy | None = None


def summary_of(log: TaskLog) -> EnvSummary:
    """An environment's summary from its run's typed log (the ``environment`` scorer's
    figures, as the run wrote them)."""
    figs = log.scores.metrics.get(SCORER, {})
    rows = log.scores.per_sample.get(SCORER, {})
    counts = log.scores.scorer_counts.get(SCORER, {})

    def fig(name: str) -> float | None:
        value = figs.get(name)
        return None if value is None else float(value)

    return EnvSummary(
        env=log.name,
        n=int(counts.get("n", len(rows))),
        n_call=sum(1 for r in rows.values() if r.get("call")),
        run_dir=log.run_dir,
        success=fig("success"),
        crash_rate=fig("crash_rate"),
        dict_f1=fig("dict_f1"),
        tool_f1=fig("tool_f1"),
        param_f1=fig("param_f1"),
        decision_acc=fig("decision_acc"),
        lcs=fig("lcs"),
        seconds=round(log.session.wall_s, 2) if log.session is not None else 0.0,
        taxonomy=log.scores.taxonomy,
    )


def summarise(env: str, instances: Sequence[Instance], preds: Sequence[Prediction]) -> EnvSummary:
    """The per-environment figures of predictions (the first repeat) over ``instances``,
    through the ``environment`` scorer."""
    first = [p for p in preds if p.repeat == 0]
    scores = score_predictions(first, {i.id: i for i in instances}, [SCORER])
    results = Results(run=RunSpec(model=""), **dict(scores))
    return summary_of(task_log_of(env, "", results, first, instances))


class BenchResult(BaseModel):
    """One model's bench: its per-environment summaries and where the runs are."""

    model: str
    agent: str | None
    constrained: bool
    limit: int
    seed: int
    envs: list[EnvSummary] = Field(default_factory=list)
    wall_s: float = 0.0
    report: str | None = None
    out: str = ""

    def overall(self) -> dict[str, float | None]:
        """The mean over environments of each figure (of those where it is defined)."""
        out: dict[str, float | None] = {}
        for k in FIGURE_KEYS:
            vals = [getattr(e, k) for e in self.envs if getattr(e, k) is not None]
            out[k] = sum(vals) / len(vals) if vals else None
        return out

    def taxonomy(self) -> Taxonomy | None:
        """The error taxonomy over every environment (``None`` when no run has one)."""
        items = [e.taxonomy for e in self.envs if e.taxonomy is not None]
        return Taxonomy.pooled(items) if items else None

    def to_json(self) -> dict[str, JsonValue]:
        """``bench.json``'s content: the run, each figure's definition, the means, the error
        taxonomy over every environment, every environment."""
        pooled = self.taxonomy()
        return {
            "written_by": MARK,
            "model": self.model,
            "agent": self.agent,
            "constrained": self.constrained,
            "limit": self.limit,
            "seed": self.seed,
            "wall_s": round(self.wall_s, 2),
            "out": self.out,
            "report": self.report,
            "definitions": {f.name: f.describe() for f in FIGURES},
            "overall": dict(self.overall()),
            "taxonomy": pooled.model_dump(mode="json") if pooled is not None else None,
            "envs": {e.env: e.model_dump(mode="json") for e in self.envs},
        }


#: the files ``toollab bench`` writes into its folder beside the runs; each carries toollab's mark
BENCH_FILES = ("bench.json", "report.html", "report.md")


def check_bench_out(out: str | Path, *, force: bool = False) -> None:
    """Refuse (an :class:`InputError`, before any work) a file of :data:`BENCH_FILES` in ``out``
    that toollab did not write, unless ``force``."""
    for name in BENCH_FILES:
        check_replaceable(Path(out) / name, force=force)


# -- the suite ----------------------------------------------------------------------------------------
def bench_tasks(
    names: Sequence[str],
    *,
    limit: int = DEFAULT_LIMIT,
    seed: int = 0,
    agent: str | Agent | None = None,
    template: str | None = None,
    max_tokens: int | None = None,
    split: str = "test",
) -> list[Task]:
    """One task per environment: its generated test split (``split``: ``validation`` to choose
    between settings), executed in that environment (an environment with
    :attr:`~toollab.envs.base.Environment.retrieved_tools` offers each request the top-k tools
    BM25 retrieves for it)."""
    tasks = []
    for name in names:
        insts = generate(name, split, limit, seed)
        k = env_class(name).retrieved_tools
        tasks.append(
            Task(
                dataset=Dataset(name=name, format="toollab", instances=insts),
                agent=agent,
                environment=name,
                template=template,
                name=name,
                max_tokens=max_tokens or env_class(name).max_tokens,
                retriever=RETRIEVER if k is not None else None,
                k=k,
            )
        )
    return tasks


def run_bench(
    *,
    model: str | Model = DEFAULT_MODEL,
    agent: str | Agent | None = None,
    template: str | None = None,
    envs: Sequence[str] | None = None,
    limit: int = DEFAULT_LIMIT,
    out: str | Path = "runs/bench",
    seed: int = 0,
    constrained: bool = True,
    max_tokens: int | None = None,
    progress: Progress | None = None,
    reporter: Callable[[list[Path], Path], str | None] | None = None,
    force: bool = False,
) -> BenchResult:
    """Run the environment suite and write ``bench.json`` into ``out``; ``reporter`` (the run
    directories, ``out``) writes the report and returns its path (``toollab bench`` passes
    :func:`toollab.report.write_bench_report`).  ``constrained`` constrains decoding wherever
    the backend can (``False``: never).  A file of :data:`BENCH_FILES` in ``out`` that toollab
    did not write is refused before the model loads unless ``force``."""
    t0 = time.perf_counter()
    names = list(envs) if envs else task_env_names()
    for name in names:
        env_class(name)  # unknown name -> did-you-mean before any work
    out = Path(out)
    check_bench_out(out, force=force)
    tasks = bench_tasks(
        names, limit=limit, seed=seed, agent=agent, template=template, max_tokens=max_tokens
    )
    with ModelSource(model) as source:
        source.get()  # a model that does not load fails here, before anything is written
        log = evaluate(
            tasks,
            source.get(),
            log_dir=out,
            seed=seed,
            constrained=None if constrained else False,
            progress=progress,
        )
    result = BenchResult(
        model=source.name,
        agent=agent if agent is None or isinstance(agent, str) else agent.name,
        constrained=all(bool(t.spec.constrained) for t in log.tasks),
        limit=limit,
        seed=seed,
        out=str(out),
        envs=[summary_of(t) for t in log.tasks],
    )
    for task, summary in zip(tasks, result.envs, strict=True):
        train = generate(summary.env, "train", REFERENCE_TRAIN, seed, (1, 0, 0))
        summary.api_complexity = split_complexity(summary.env, list(_instances(task)), train)
    result.wall_s = time.perf_counter() - t0
    if reporter is not None and result.envs:
        result.report = reporter([Path(e.run_dir) for e in result.envs], out)
    write_text_atomic(
        out / "bench.json", json.dumps(result.to_json(), indent=2), keep_foreign=not force
    )
    return result


def _instances(task: Task) -> Sequence[Instance]:
    return task.dataset.instances if isinstance(task.dataset, Dataset) else ()
