"""The typed run record: what a run writes and what every view reads back.

One task's run directory holds ``run.json`` (the resolved :class:`RunSpec`), ``predictions.jsonl``
(one :class:`~toollab.schema.record.Prediction` per line) and ``results.json`` (a
:class:`Results`: the spec again, every scorer's figures with their definitions, breakdowns,
error counts, per-sample scores, counts and timing).  :func:`read_task_log` reads a directory
into a :class:`TaskLog`; ``toollab score``, ``toollab report``, ``toollab bench`` and the CLI
tables all read that, and nothing re-derives a figure from another file.

The JSON layout on disk is the models' own (``model_dump``), so a ``results.json`` written by an
earlier version reads back unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from toollab.errors import InputError, UsageError
from toollab.eval.store import PREDICTIONS, RESULTS, RUN_JSON, read_json, read_predictions
from toollab.schema import Instance
from toollab.schema.record import Prediction, Step

#: a figure's value: a fraction, a count or a time; ``None`` when it is undefined
Value = float | int | None

#: one sample's scores from one scorer (a JSON object: the scorer decides its keys)
SampleRow = dict[str, JsonValue]


class RunSpec(BaseModel):
    """The resolved specification of one task's run (``run.json``): every default filled in."""

    model_config = ConfigDict(extra="ignore")

    model: str
    data: str = ""
    format: str = ""
    data_options: dict[str, JsonValue] = Field(default_factory=dict)
    agent: str = ""
    template: str = ""
    metrics: list[str] = Field(default_factory=list)
    limit: int | None = None
    repeats: int = 1
    seed: int = 0
    #: decoding was constrained to the call schema (``None`` only before the model said whether
    #: it can constrain)
    constrained: bool | None = None
    #: ``default`` (wherever the backend can) or ``option`` (asked for)
    constrained_by: str = "default"
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    max_turns: int = 9
    timeout: float | None = None
    judge: str | None = None
    judge_cache: str | None = None
    #: the dataset's content fingerprint
    dataset: str | None = None
    dataset_name: str = ""
    instances: int = 0
    toollab_version: str = ""
    #: what the benchmark publishes before answering (:mod:`toollab.eval.integrity`)
    protocol_facts: str | None = None
    #: what read the answer key on purpose (oracle, teacher-forced agents), when anything did
    answer_key_read_by: str | None = None
    #: the environment that executes the calls, when the task named one
    environment: str | None = None
    #: retrieval in the loop: the retriever that chose each instance's offered tools
    retriever: str | None = None
    #: how many tools it offered per instance
    retrieval_k: int | None = None
    #: the pool file it searched (``None``: the dataset's tools)
    tool_pool: str | None = None
    #: how many tools the pool held
    pool_size: int | None = None
    #: what answered the calls: ``sim`` (the simulated tool server), a model string (a model
    #: played the API), ``none`` or ``None`` (no simulated server)
    tool_server: str | None = None
    #: the folder of the simulated server's answers
    tool_cache: str | None = None
    #: who answered ``ask_to_user``: ``scripted``, a model string, ``none``
    user: str | None = None


class FigureDef(BaseModel):
    """How a figure is shown and what it means."""

    model_config = ConfigDict(extra="ignore")

    label: str
    definition: str
    #: a fraction in [0, 1], shown as a percentage
    percent: bool = True


class Estimate(BaseModel):
    """A figure over repeats: mean, 95 % half-width, standard deviation, the values."""

    mean: float | None = None
    ci95: float | None = None
    std: float | None = None
    n: int = 0
    values: list[float | None] = Field(default_factory=list)


class Counts(BaseModel):
    """How many predictions, failures, format errors, no-calls and calls a run has."""

    model_config = ConfigDict(extra="ignore")

    instances: int = 0
    repeats: int = 1
    predictions: int = 0
    errors: int = 0
    timeouts: int = 0
    crashes: int = 0
    parse_errors: int = 0
    no_call: int = 0
    with_calls: int = 0
    calls: int = 0


class Timing(BaseModel):
    """Per-instance latency and token totals."""

    model_config = ConfigDict(extra="ignore")

    instance_s_mean: float | None = None
    instance_s_p50: float | None = None
    instance_s_p95: float | None = None
    instance_s_total: float = 0.0
    model_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    completion_tokens_per_s: float | None = None


class Session(BaseModel):
    """What the last invocation on a run directory did."""

    model_config = ConfigDict(extra="ignore")

    resumed: bool = False
    previous_predictions: int = 0
    new_predictions: int = 0
    wall_s: float = 0.0
    repaired_bytes: int = 0


#: the key of the error taxonomy's per-sample rows in :attr:`Scores.per_sample` (and
#: :attr:`SampleLog.scores`)
TAXONOMY = "taxonomy"


class ClassCount(BaseModel):
    """One class of the error taxonomy in a run: what it is and how many samples it has."""

    model_config = ConfigDict(extra="ignore")

    #: the class (``wrong_tool``, ``correct``, ...)
    key: str
    #: the pipeline stage whose check it fails (empty for ``correct``)
    stage: str = ""
    label: str
    definition: str
    count: int = 0
    #: ``count`` over the classified samples
    share: float | None = None


class Taxonomy(BaseModel):
    """The error taxonomy of a run (:mod:`toollab.eval.metrics.errors`): every sample with an
    answer key in exactly one class, the first check that fails in pipeline order; every class
    in that order, with its definition, count and share (over repeats: all samples pooled)."""

    model_config = ConfigDict(extra="ignore")

    #: samples classified
    classified: int = 0
    #: samples whose instance has no answer key to check against (a Call label with no gold
    #: calls, e.g. BFCL's executable categories; ToolEyes)
    unclassified: int = 0
    classes: list[ClassCount] = Field(default_factory=list)

    def count(self, key: str) -> int:
        return next((c.count for c in self.classes if c.key == key), 0)

    @property
    def failed(self) -> int:
        """Classified samples in a failure class."""
        return sum(c.count for c in self.classes if c.stage)

    @classmethod
    def pooled(cls, items: Sequence[Taxonomy]) -> Taxonomy:
        """Several runs' taxonomies as one (counts summed, shares over all their samples)."""
        n = sum(t.classified for t in items)
        classes: list[ClassCount] = []
        for t in items:
            for c in t.classes:
                have = next((x for x in classes if x.key == c.key), None)
                if have is None:
                    classes.append(c.model_copy(update={"count": c.count}))
                else:
                    have.count += c.count
        for c in classes:
            c.share = c.count / n if n else None
        return cls(classified=n, unclassified=sum(t.unclassified for t in items), classes=classes)


class Scores(BaseModel):
    """Every selected scorer's output over a set of predictions.

    ``metrics[scorer][figure]`` is the headline value; ``definitions`` says what each per-sample
    scorer's figures mean; ``breakdown[scorer][group][figure]`` the same per category;
    ``errors[scorer][kind]`` error counts; ``per_sample[scorer][id]`` each sample's row (``id``,
    ``id@repeat`` for repeats > 0; ``per_sample["taxonomy"]`` holds each sample's error
    class); ``taxonomy`` counts the error classes.  ``ci95`` and ``repeats`` exist for repeated
    runs.
    """

    model_config = ConfigDict(extra="ignore")

    scorers: list[str] = Field(default_factory=list)
    definitions: dict[str, dict[str, FigureDef]] = Field(default_factory=dict)
    metrics: dict[str, dict[str, Value]] = Field(default_factory=dict)
    breakdown: dict[str, dict[str, dict[str, Value]]] = Field(default_factory=dict)
    errors: dict[str, dict[str, int]] = Field(default_factory=dict)
    scorer_counts: dict[str, dict[str, int]] = Field(default_factory=dict)
    notes: dict[str, list[str]] = Field(default_factory=dict)
    ci95: dict[str, dict[str, Value]] | None = None
    repeats: dict[str, dict[str, Estimate]] | None = None
    per_sample: dict[str, dict[str, SampleRow]] = Field(default_factory=dict)
    #: the error taxonomy (``None``: no sample has an answer key, or a run scored before it)
    taxonomy: Taxonomy | None = None
    counts: Counts = Field(default_factory=Counts)
    timing: Timing = Field(default_factory=Timing)

    def definition(self, scorer: str, figure: str) -> FigureDef | None:
        return self.definitions.get(scorer, {}).get(figure)


class Results(Scores):
    """``results.json``: a run's :class:`RunSpec` and its :class:`Scores`."""

    run: RunSpec
    session: Session | None = None

    def json_text(self) -> str:
        return self.model_dump_json(indent=2, exclude_none=False)


class SampleLog(BaseModel):
    """One sample of a task: the prediction, its trace and its per-sample scores."""

    id: str
    repeat: int = 0
    prediction: Prediction
    #: scorer name -> that scorer's per-sample scores
    scores: dict[str, SampleRow] = Field(default_factory=dict)

    @property
    def trace(self) -> list[Step]:
        """The agent's steps (empty for a single-turn agent)."""
        return self.prediction.steps

    @property
    def key(self) -> str:
        """``id`` (``id@repeat`` for repeats > 0): the key of :attr:`Scores.per_sample`."""
        return self.id if not self.repeat else f"{self.id}@{self.repeat}"


class TaskLog(BaseModel):
    """One task's run: its resolved specification, samples and scores."""

    name: str
    run_dir: str
    spec: RunSpec
    samples: list[SampleLog] = Field(default_factory=list)
    scores: Scores = Field(default_factory=Scores)
    session: Session | None = None

    @property
    def results(self) -> dict[str, dict[str, Value]]:
        """scorer -> figure -> value (the headline figures)."""
        return self.scores.metrics

    @property
    def definitions(self) -> dict[str, dict[str, FigureDef]]:
        return self.scores.definitions

    def figure(self, scorer: str, name: str) -> Value:
        return self.scores.metrics.get(scorer, {}).get(name)

    def failed(self) -> Iterator[SampleLog]:
        """Samples with an error or a per-sample ``success`` / ``correct`` score that is false."""
        for s in self.samples:
            if s.prediction.error or any(
                row.get(k) is False for row in s.scores.values() for k in ("success", "correct")
            ):
                yield s


class EvalLog(BaseModel):
    """What :func:`~toollab.eval.task.evaluate` did: one :class:`TaskLog` per task."""

    model: str
    log_dir: str
    tasks: list[TaskLog] = Field(default_factory=list)
    wall_s: float = 0.0

    def task(self, name: str) -> TaskLog:
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(f"no task {name!r}; tasks: {', '.join(t.name for t in self.tasks)}")

    @property
    def results(self) -> dict[str, dict[str, Value]]:
        """The results of the only task (for one task)."""
        return self._only().results

    @property
    def samples(self) -> list[SampleLog]:
        """The samples of the only task (for one task)."""
        return self._only().samples

    def _only(self) -> TaskLog:
        if len(self.tasks) != 1:
            raise UsageError(f"this log has {len(self.tasks)} tasks: use log.task(name)")
        return self.tasks[0]


def parse_results(obj: object, path: str | Path) -> Results:
    """A ``results.json`` object as :class:`Results`; a clear error naming the file otherwise."""
    try:
        return Results.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InputError(f"not a toollab results file: {where}: {first['msg']}", path=path) from exc


def task_log_of(
    name: str,
    run_dir: str | Path,
    results: Results,
    predictions: Sequence[Prediction],
    instances: Sequence[Instance] = (),
) -> TaskLog:
    """The :class:`TaskLog` of a run from its results and predictions (in the order of
    ``instances``)."""
    order = {inst.id: i for i, inst in enumerate(instances)}
    samples = []
    for pred in sorted(predictions, key=lambda p: (p.repeat, order.get(p.id, len(order)), p.id)):
        sample = SampleLog(id=pred.id, repeat=pred.repeat, prediction=pred)
        sample.scores = {
            sc: rows[sample.key] for sc, rows in results.per_sample.items() if sample.key in rows
        }
        samples.append(sample)
    scores = Scores.model_validate(results.model_dump(exclude={"run", "session"}))
    return TaskLog(
        name=name,
        run_dir=str(run_dir),
        spec=results.run,
        samples=samples,
        scores=scores,
        session=results.session,
    )


def read_results(run_dir: str | Path) -> Results:
    """A run directory's ``results.json`` (an error naming the directory when it has none)."""
    path = Path(run_dir) / RESULTS
    if not path.is_file():
        raise InputError(
            f"no {RESULTS} (score the run first: toollab score {run_dir})", path=run_dir
        )
    return parse_results(read_json(path), path)


def read_task_log(run_dir: str | Path, name: str | None = None) -> TaskLog:
    """A run directory as a :class:`TaskLog`: ``results.json`` and ``predictions.jsonl``, with
    the specification ``run.json`` holds (the canonical one; a resumed run updates it)."""
    root = Path(run_dir)
    results = read_results(root)
    spec = read_spec(root)
    if spec is not None:
        results.run = spec
    preds_path = root / PREDICTIONS
    preds = read_predictions(preds_path) if preds_path.is_file() else []
    return task_log_of(name or root.name, root, results, preds)


def read_spec(run_dir: str | Path) -> RunSpec | None:
    """A run directory's ``run.json`` as a :class:`RunSpec` (``None`` when there is none)."""
    path = Path(run_dir) / RUN_JSON
    if not path.is_file():
        return None
    try:
        return RunSpec.model_validate(read_json(path))
    except ValidationError as exc:
        raise InputError(f"not a toollab run.json: {exc.errors()[0]['msg']}", path=path) from exc
