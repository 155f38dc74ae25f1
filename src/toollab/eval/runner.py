"""The evaluation runner behind ``toollab eval``.

One run = one model × one dataset × one agent × one template, ``repeats`` times.  The runner

1. loads the dataset (``--limit`` keeps the first N instances) and resolves the template and
   agent (defaults by format: Seal-Tools → ``seal``, BFCL → ``python``, DEER → ``deer`` template
   and agent, ToolEyes → ``react`` template and agent, anything else → ``json`` / ``single``);
2. opens the run directory (:class:`~toollab.eval.store.RunStore`): an existing run must have the
   same configuration and continues after its last complete line; when instances are pending the
   model is loaded and checked, and only then does a new run write ``run.json`` (a model that
   fails to load leaves nothing behind);
3. runs every pending ``(instance, repeat)`` pair through the agent with bounded concurrency, in
   the order that maximises shared prompt prefixes, appending each prediction as it completes;
   ``GenerateOptions.seed`` is ``seed + repeat``; an instance that raises or exceeds ``timeout``
   is recorded with its error and scored as a failure;
4. scores all predictions with every applicable default scorer (or ``--metrics``) into
   ``results.json``; an LLM judge's answers are cached in ``judge_cache.jsonl``.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from toollab import __version__
from toollab.agents.base import (
    Agent,
    AgentOptions,
    HasDefaultMaxTokens,
    NeedsTemplateMethods,
    PlansFirstRequest,
    failed_parse,
    get_agent,
)
from toollab.data import get_adapter, load_dataset
from toollab.data.base import ADAPTERS, offer_tools
from toollab.envs.base import (
    ENV_SOURCE_PREFIX,
    CallExecutor,
    env_class,
    env_names,
    get_env,
    instance_seed,
)
from toollab.errors import InputError, UsageError
from toollab.eval import toolserver
from toollab.eval.integrity import integrity_fields
from toollab.eval.log import Results, RunSpec, Scores, Session, TaskLog, task_log_of
from toollab.eval.metrics.judge import check_cache_path
from toollab.eval.progress import Progress
from toollab.eval.results import CRASH, TIMEOUT, score_predictions, select_scorers
from toollab.eval.store import (
    JUDGE_CACHE,
    MAX_REPEATS,
    RunStore,
    check_predictions,
    done_keys,
    write_json_atomic,
)
from toollab.eval.toolserver import ToolServers
from toollab.models import registry as model_registry
from toollab.models.base import (
    BindsInstances,
    ChatRequest,
    GenerateOptions,
    Model,
    RendersPrompts,
    run_sync,
)
from toollab.models.prefix import order_for_reuse
from toollab.models.registry import ModelSource
from toollab.retrieval.offer import ToolOffer, check_retrieval, offered_names
from toollab.schema import Instance
from toollab.schema.record import Prediction
from toollab.templates.base import Template, get_template

DEFAULT_MAX_TOKENS = 256
#: the simulated tool server's answers in the run directory, when no --tool-cache is given
TOOL_CACHE = "tool_cache"
#: what the run's simulated tool servers did (calls, cache hits, repaired answers, time)
TOOL_SERVER_REPORT = "tool_server.json"
#: tools offered per instance by a retriever when no k is given
DEFAULT_RETRIEVAL_K = 5

#: run.json fields that must match for a run to continue in the same directory
IDENTITY_FIELDS = (
    "model",
    "format",
    "data_options",
    "agent",
    "template",
    "limit",
    "repeats",
    "seed",
    "constrained",
    "max_tokens",
    "temperature",
    "top_p",
    "max_turns",
    "dataset",
    "retriever",
    "retrieval_k",
    "tool_pool",
    "tool_server",
    "user",
)


#: run.json fields that say what the run let the model know (:mod:`toollab.eval.integrity`)
INTEGRITY_FIELDS = ("protocol_facts", "answer_key_read_by")


class EvalConfig(BaseModel):
    """What ``toollab eval`` was asked to do (``None`` = the default for the format)."""

    model_config = ConfigDict(extra="forbid")

    model: str = "bundled:smollm2-135m"
    data: str
    format: str
    data_options: dict[str, Any] = Field(default_factory=dict)
    agent: str | None = None
    template: str | None = None
    metrics: list[str] = Field(default_factory=list)
    limit: int | None = Field(default=None, ge=0)
    repeats: int = Field(default=1, ge=1, le=MAX_REPEATS)
    seed: int = 0
    #: constrain decoding to the call schema; ``None`` = wherever the backend can
    constrained: bool | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=0.0, ge=0.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    max_turns: int = Field(default=9, ge=1)
    #: seconds one instance may take before it is recorded as timed out
    timeout: float | None = Field(default=None, gt=0)
    #: requests in flight at once (default: what the backend says it handles)
    concurrency: int | None = Field(default=None, ge=1)
    #: model string of the LLM judge for scorers that need one (ToolEyes IU/BP/TS/AO)
    judge: str | None = None
    #: the judge's answer cache (JSONL); default ``OUT/judge_cache.jsonl``
    judge_cache: str | None = None
    #: retrieval in the loop: each instance is offered the top ``retrieval_k`` tools this
    #: retriever (``bm25``, ``dense``, ``hybrid``) finds in the pool (:mod:`toollab.retrieval.offer`)
    retriever: str | None = None
    #: tools offered per instance with a retriever (default 5)
    retrieval_k: int | None = None
    #: a pool file to retrieve from (default: the dataset's tools)
    tool_pool: str | None = None
    #: what answers the calls: ``sim``, ``none`` or a model string (default: the format's
    #: own, ``sim`` for ToolEyes; :mod:`toollab.eval.toolserver`)
    tool_server: str | None = None
    #: the folder of the simulated server's answers (default ``OUT/tool_cache``)
    tool_cache: str | None = None
    #: who answers ``ask_to_user``: ``scripted`` (default with a tool server), ``none`` or a
    #: model string
    user: str | None = None


@dataclass
class EvalOutcome:
    """What :func:`run_eval` did."""

    out: Path
    results: Results
    #: every prediction of the run (those already there and the new ones)
    predictions: list[Prediction] = field(default_factory=list)
    instances: list[Instance] = field(default_factory=list)

    @property
    def spec(self) -> RunSpec:
        return self.results.run

    @property
    def session(self) -> Session:
        return self.results.session or Session()

    @property
    def resumed(self) -> bool:
        return self.session.resumed

    @property
    def previous(self) -> int:
        """Predictions already in the directory when the run started."""
        return self.session.previous_predictions

    @property
    def new(self) -> int:
        """Predictions made by this call."""
        return self.session.new_predictions

    def log(self, name: str) -> TaskLog:
        """The run as the typed :class:`TaskLog`."""
        return task_log_of(name, self.out, self.results, self.predictions, self.instances)


def resolve_format(fmt: str) -> str:

    return get_adapter(fmt).name


def load_instances(config: EvalConfig, dataset: Any = None) -> tuple[Any, list[Instance]]:
    """The dataset (read from ``config.data`` unless given) and the instances this run covers
    (the first ``limit``)."""

    if dataset is not None:
        ds = dataset
    else:
        ds = load_dataset(config.data, config.format, **config.data_options)
    instances = list(ds.instances)
    if config.limit is not None:
        instances = instances[: config.limit]
    if not instances:
        raise InputError("the dataset has no instances to evaluate", path=config.data)
    return ds, instances


def resolved_config(
    config: EvalConfig, dataset: Any, n_instances: int, agent: Agent | None = None
) -> RunSpec:
    """The ``run.json`` content: the configuration with every default filled in
    (``constrained`` stays ``None`` until the model says whether it can constrain)."""

    source_adapter = get_adapter(config.format)
    fmt = source_adapter.name
    adapter = source_adapter.defaults_for(dataset.instances)
    name = (agent.name if agent is not None else config.agent) or adapter.default_agent
    template = config.template or adapter.default_template
    chosen = agent if agent is not None else get_agent(name)
    default = chosen.default_max_tokens if isinstance(chosen, HasDefaultMaxTokens) else None
    max_tokens = config.max_tokens or default
    tool_server = config.tool_server or adapter.default_tool_server
    serving = tool_server not in (None, toolserver.NONE)
    return RunSpec(
        model=config.model,
        data=str(Path(config.data).resolve()),
        format=fmt,
        data_options=dict(config.data_options),
        agent=name,
        template=template,
        metrics=list(config.metrics),
        limit=config.limit,
        repeats=config.repeats,
        seed=config.seed,
        constrained=config.constrained,
        constrained_by="default" if config.constrained is None else "option",
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        temperature=config.temperature,
        top_p=config.top_p,
        max_turns=config.max_turns,
        timeout=config.timeout,
        judge=config.judge,
        judge_cache=config.judge_cache,
        retriever=config.retriever,
        retrieval_k=(config.retrieval_k or DEFAULT_RETRIEVAL_K) if config.retriever else None,
        tool_pool=str(Path(config.tool_pool).resolve()) if config.tool_pool else None,
        tool_server=tool_server,
        tool_cache=str(Path(config.tool_cache).resolve())
        if serving and config.tool_cache
        else None,
        user=(config.user or toolserver.SCRIPTED) if serving else None,
        dataset=dataset.fingerprint,
        dataset_name=dataset.name,
        instances=n_instances,
        toollab_version=__version__,
    )


def decide_constrained(requested: bool | None, previous: bool | None, model: Model | None) -> bool:
    """Whether a run constrains decoding -- the one place this is decided.

    ``requested`` ``True`` / ``False`` is what the user asked for (``True`` on a backend that
    cannot constrain is refused when the model is prepared); ``None`` (the default) keeps what a
    resumed run recorded (``previous``), else constrains wherever the backend can."""
    if requested is not None:
        return requested
    if previous is not None:
        return previous
    return bool(model is not None and model.supports_constraints)


def run_eval(
    config: EvalConfig,
    out: str | Path,
    *,
    model: Model | ModelSource | None = None,
    progress: Progress | None = None,
    name: str | None = None,
    environment: Callable[[Instance], CallExecutor | None] | None = None,
    dataset: Any = None,
    agent: Agent | None = None,
) -> EvalOutcome:
    """Run (or continue) an evaluation into ``out`` and write its ``results.json``.

    ``model`` overrides ``config.model`` with a ready model (its ``name`` is recorded) or a
    :class:`ModelSource` (loaded only when instances are pending; its owner closes it);
    ``dataset`` gives the instances in memory (``config.data`` then only names where they are
    kept); ``agent`` gives a ready agent object; ``environment`` returns the environment that
    executes an instance's calls (``None``: the one :func:`environment_of` finds for the
    dataset); ``progress`` hears about the task as ``name`` (default: the directory's name).
    """

    started = time.perf_counter()
    check_retrieval(config.retriever, config.retrieval_k, config.tool_pool)
    dataset, instances = load_instances(config, dataset)
    source = model if isinstance(model, ModelSource) else ModelSource(model or config.model)
    config = config.model_copy(update={"model": source.name})
    spec = resolved_config(config, dataset, len(instances), agent)
    if spec.retriever is not None and spec.retrieval_k is not None:
        offer = ToolOffer.build(
            spec.retriever,
            spec.retrieval_k,
            instances=instances,
            pool=dataset.tools,
            pool_file=config.tool_pool,
        )
        # the retrieved tools replace the offered ones (the adapter says what that does to the
        # answer key: DEER's decision follows what is offered)
        fmt = getattr(dataset, "format", None)
        adapter = get_adapter(fmt) if isinstance(fmt, str) and fmt in ADAPTERS else None
        instances = offer.offer(instances, adapter.offered if adapter else offer_tools)
        spec.pool_size = offer.pool_size
    template = get_template(spec.template)
    if agent is None:
        agent = get_agent(spec.agent)
    servers: ToolServers | None = None
    if spec.tool_server not in (None, toolserver.NONE) and environment is not None:
        if config.tool_server is not None:
            raise UsageError("--tool-server answers the calls itself: name no environment with it")
    elif spec.tool_server not in (None, toolserver.NONE):
        toolserver.check_server_spec(spec.tool_server)  # a bad string fails before any work
        toolserver.check_user_spec(spec.user or toolserver.SCRIPTED)
    if environment is None:
        environment = environment_of(instances)
    _check_agent_template(agent, template)
    by_id = {inst.id: inst for inst in instances}
    select_scorers(by_id, config.metrics or None)  # a bad --metrics fails before any work
    if config.judge:
        model_registry.check_model_string(
            config.judge
        )  # so does a bad judge string (nothing is loaded)
    if config.judge and config.judge_cache:
        check_cache_path(config.judge_cache)  # so does a judge cache that cannot be written
    task_name = name or Path(out).name
    new: list[Prediction] = []
    try:
        with RunStore(out) as store:
            before = store.existing_config() or {}
            previous = before.get("constrained")
            if spec.constrained is None and not isinstance(previous, bool):
                source.get()  # the backend says whether it can constrain
            spec.constrained = decide_constrained(
                spec.constrained,
                previous if isinstance(previous, bool) else None,
                source.get() if source.loaded else None,
            )
            identity = spec_json(spec)
            resumed = store.check(identity, IDENTITY_FIELDS)  # another run here: fail
            existing = store.load()
            check_predictions(  # the checks `toollab score` applies: no foreign or duplicated line
                existing,
                ids={inst.id for inst in instances},
                fingerprint=dataset.fingerprint,
                path=store.predictions_path,
                repeats=config.repeats,
                dataset=f"this run ({len(instances)} instances of {dataset.name!r})",
            )
            done = done_keys(existing)
            pending = [
                (inst, r)
                for inst in instances
                for r in range(config.repeats)
                if (inst.id, r) not in done
            ]
            active: Model | None = None
            if pending and spec.tool_server not in (None, toolserver.NONE):
                servers = ToolServers(
                    spec.tool_server or toolserver.SIM,
                    cache_dir=spec.tool_cache or Path(out) / TOOL_CACHE,
                    user=spec.user or toolserver.SCRIPTED,
                )
                environment = servers
            if pending:
                # load and check the model before run.json is written: a bad --model leaves no
                # run behind, and the corrected command starts afresh
                active = source.get()
                template = template.with_model(active)  # `chat`: the model's own template
                _prepare_model(active, instances, template, agent, bool(spec.constrained))
                facts = integrity_fields(
                    instances, constrained=bool(spec.constrained), model=active, agent=agent
                )
                spec.protocol_facts = facts.get("protocol_facts")
                spec.answer_key_read_by = facts.get("answer_key_read_by")
            else:  # nothing to run: what the run that made the predictions recorded
                for key in INTEGRITY_FIELDS:
                    if isinstance(before.get(key), str):
                        setattr(spec, key, before[key])
            store.prepare(spec_json(spec), IDENTITY_FIELDS)
            if progress is not None:
                progress.task_started(task_name, len(instances) * config.repeats, len(done))
            if pending and active is not None:
                ordered = _order_for_reuse(pending, active, agent, template)
                options = _options_factory(
                    spec, environment, template_tools=template.tools_in_chat_template
                )
                new = _run_sync(
                    _run_pending(
                        ordered,
                        agent,
                        active,
                        template,
                        options,
                        store,
                        fingerprint=dataset.fingerprint,
                        timeout=config.timeout,
                        concurrency=config.concurrency or max(1, active.max_concurrency),
                        record_offered=spec.retriever is not None,
                        on_done=(
                            (lambda pred: progress.sample_done(task_name, pred))
                            if progress is not None
                            else None
                        ),
                    )
                )
            preds = existing + new
            judge_cache = config.judge_cache or str(Path(out) / JUDGE_CACHE)
            scores = score_with_judge(
                preds, by_id, config.metrics or None, config.judge, judge_cache=judge_cache
            )
            results = Results(
                run=spec,
                **dict(scores),
                session=Session(
                    resumed=resumed,
                    previous_predictions=len(existing),
                    new_predictions=len(new),
                    wall_s=time.perf_counter() - started,
                    repaired_bytes=store.repaired_bytes,
                ),
            )
            store.write_results(results_json(results))
            if servers is not None:
                write_json_atomic(Path(out) / TOOL_SERVER_REPORT, servers.report())
    finally:
        if servers is not None:
            servers.close()
        if not isinstance(model, ModelSource):
            source.close()  # a source handed in belongs to the caller
    return EvalOutcome(out=Path(out), results=results, predictions=preds, instances=instances)


def spec_json(spec: RunSpec) -> dict[str, JsonValue]:
    """``run.json``'s content."""
    return spec.model_dump(mode="json")


def results_json(results: Results) -> dict[str, JsonValue]:
    """``results.json``'s content (``ci95`` / ``repeats`` only for repeated runs)."""
    data = results.model_dump(mode="json")
    for key in ("ci95", "repeats"):
        if data.get(key) is None:
            data.pop(key, None)
    return data


def environment_named(name: str) -> Callable[[Instance], CallExecutor | None]:
    """A factory of the registered environment ``name``, reset to each instance's seed."""

    env_class(name)  # an unknown name fails here, with a did-you-mean

    def make(instance: Instance) -> CallExecutor | None:
        env: CallExecutor = get_env(name, seed=instance_seed(instance))
        return env

    return make


def environment_of(instances: Sequence[Instance]) -> Callable[[Instance], CallExecutor | None]:
    """The environments of a dataset read from a file: a registered environment named by the
    instances' ``env:<name>`` source (resolved once, here, so that agents receive their
    environment instead of looking for it); ``None`` for other instances."""

    known = set(env_names())
    factories = {
        src: environment_named(src.removeprefix(ENV_SOURCE_PREFIX))
        for src in {inst.source or "" for inst in instances}
        if src.startswith(ENV_SOURCE_PREFIX) and src.removeprefix(ENV_SOURCE_PREFIX) in known
    }

    def make(instance: Instance) -> CallExecutor | None:
        factory = factories.get(instance.source or "")
        return factory(instance) if factory is not None else None

    return make


def score_with_judge(
    preds: list[Prediction],
    instances: dict[str, Instance],
    metrics: Sequence[str] | None,
    judge: str | None,
    *,
    judge_cache: str | Path | None = None,
    scorer_options: Mapping[str, Mapping[str, str]] | None = None,
) -> Scores:
    """:func:`score_predictions`, with the judge model (a model string) loaded for the scoring;
    its answers are kept in ``judge_cache`` (JSONL), so scoring again asks nothing."""
    if not judge:
        return score_predictions(preds, instances, metrics, scorer_options=scorer_options)
    if judge_cache is not None:
        check_cache_path(judge_cache)  # before the judge model is loaded
    with ModelSource(judge) as source:
        return score_predictions(
            preds,
            instances,
            metrics,
            judge=source.get(),
            judge_cache=judge_cache,
            scorer_options=scorer_options,
        )


def _check_agent_template(agent: Agent, template: Template) -> None:
    """Refuse an agent / template pair that cannot work before any instance runs."""
    needs = agent.needs_template_methods if isinstance(agent, NeedsTemplateMethods) else ()
    missing = [m for m in needs if not callable(getattr(template, m, None))]
    if missing:
        raise UsageError(
            f"agent {agent.name!r} needs a template with {', '.join(missing)} "
            f"(e.g. --template {agent.name}), not {template.name!r}"
        )


def _prepare_model(
    model: Model, instances: list[Instance], template: Template, agent: Agent, constrained: bool
) -> None:
    """Bind the oracle (and any model that wants the instances) and check constraint support."""
    if isinstance(model, BindsInstances):
        model.bind(instances, template, stepwise=bool(agent.stepwise))
    if constrained and not model.supports_constraints:
        raise UsageError(
            f"--constrained: model {model.name!r} cannot constrain its output "
            "(use a llama.cpp or OpenAI-compatible backend, or --no-constrained)"
        )


def _options_factory(
    spec: RunSpec,
    environment: Callable[[Instance], Any] | None,
    *,
    template_tools: bool = False,
) -> Callable[[int], AgentOptions]:
    def make(repeat: int) -> AgentOptions:
        return AgentOptions(
            generate=GenerateOptions(
                max_tokens=spec.max_tokens,
                temperature=spec.temperature,
                top_p=spec.top_p,
                seed=spec.seed + repeat,
                template_tools=template_tools,
            ),
            constrained=bool(spec.constrained),
            max_turns=spec.max_turns,
            repeat=repeat,
            environment=environment,
        )

    return make


def _first_request(agent: Agent, template: Template, inst: Instance) -> ChatRequest:
    """The first request an agent will send for an instance (used only to order the work)."""
    if isinstance(agent, PlansFirstRequest):
        return agent.first_request(inst, template)
    return ChatRequest(messages=template.messages(inst), tools=list(inst.tools), tag=inst.id)


def _order_for_reuse(
    pending: list[tuple[Instance, int]], model: Model, agent: Agent, template: Template
) -> list[tuple[Instance, int]]:
    """Pending work sorted so that prompts sharing a prefix run one after another."""
    if len(pending) < 2:
        return pending
    reqs = [_first_request(agent, template, inst) for inst, _ in pending]
    if not isinstance(model, RendersPrompts):
        return [pending[i] for i in order_for_reuse(reqs, None)]
    renderer = model

    def key(req: ChatRequest) -> str:
        try:
            return str(renderer.render(req))
        except Exception:
            return ""

    order = order_for_reuse(reqs, key)
    return [pending[i] for i in order]


def failure_prediction(inst: Instance, kind: str, error: str, elapsed: float) -> Prediction:
    """The record of an instance the agent could not finish: scored as a failure."""
    return Prediction(
        id=inst.id,
        raw="",
        parsed=failed_parse(error),
        error=error,
        timings={"total_s": elapsed},
        metadata={"failure": kind},
    )


async def run_one(
    inst: Instance,
    repeat: int,
    agent: Agent,
    model: Model,
    template: Template,
    options: AgentOptions,
    *,
    fingerprint: str | None,
    timeout: float | None,
) -> Prediction:
    """One (instance, repeat): the agent's prediction, or a failure record; never raises
    except for a configuration error (:class:`UsageError`)."""
    t0 = time.perf_counter()
    try:
        coro = agent.run(inst, model, template, options)
        pred = await (asyncio.wait_for(coro, timeout) if timeout else coro)
    except UsageError:
        raise
    except TimeoutError:
        pred = failure_prediction(
            inst, TIMEOUT, f"timed out after {timeout:g} s", time.perf_counter() - t0
        )
    except Exception as exc:
        pred = failure_prediction(
            inst, CRASH, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0
        )
    pred.id = inst.id
    pred.repeat = repeat
    pred.dataset = fingerprint
    pred.timings.setdefault("total_s", time.perf_counter() - t0)
    return pred


async def _run_pending(
    pending: Sequence[tuple[Instance, int]],
    agent: Agent,
    model: Model,
    template: Template,
    options: Callable[[int], AgentOptions],
    store: RunStore,
    *,
    fingerprint: str | None,
    timeout: float | None,
    concurrency: int,
    on_done: Callable[[Prediction], None] | None,
    record_offered: bool = False,
) -> list[Prediction]:
    queue = collections.deque(pending)
    done: list[Prediction] = []
    # group commit: lines are written as predictions finish; one fdatasync (in a thread, so the
    # workers keep going) makes a whole batch durable before it counts as done
    unsynced: list[Prediction] = []
    wake = asyncio.Event()
    finished = False

    async def worker() -> None:
        while queue:
            inst, repeat = queue.popleft()
            pred = await run_one(
                inst,
                repeat,
                agent,
                model,
                template,
                options(repeat),
                fingerprint=fingerprint,
                timeout=timeout,
            )
            if record_offered:
                pred.offered_tools = offered_names(inst)
            store.append(pred, sync=False)
            unsynced.append(pred)
            wake.set()
            await asyncio.sleep(0)  # let the committer start a sync while work goes on

    async def committer() -> None:
        while True:
            await wake.wait()
            wake.clear()
            batch = unsynced[:]
            del unsynced[:]
            if batch:
                await asyncio.to_thread(store.sync)
                done.extend(batch)
                if on_done is not None:
                    for pred in batch:
                        on_done(pred)
            if finished and not unsynced:
                return

    commit = asyncio.create_task(committer())
    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(pending)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        finished = True
        wake.set()
        await commit
    return done


def _run_sync(coro: Any) -> Any:

    return run_sync(coro)
