"""The conversation evaluation: whole conversations over held-out environment episodes.

>>> from toollab import evaluate
>>> from toollab.eval.conversations import conversation_task
>>> log = evaluate(conversation_task(["weather", "finance"], split="test", n=3), "bundled:smollm2-135m")
>>> log.results["conversation"]["answered"]

An episode is one conversation of :mod:`toollab.sft.episodes` built from an environment's
**held-out** split (``validation`` for choosing between recipes, ``test`` for measuring; never
``train``): its first user turn a Call instance of the split, run in that instance's world, then
up to ``followups`` turns — a follow-up call drawn in the world as the earlier turns left it
(of the split's API combinations and reserved queries), a request no tool fits, or a question
answered without a tool.  Each becomes one :class:`~toollab.schema.Instance`:

* ``messages`` — the user turns (the inputs; the model sees nothing else of the episode);
* ``tools`` — the tools the conversation offers; ``metadata["seed"]`` — its world;
* ``gold`` — every call of the reference conversation, in order, with the values earlier results
  gave (so the ``environment`` scorer compares the world the model leaves with the reference's);
* ``metadata["conversation"]`` — per user turn a
  :class:`~toollab.eval.metrics.conversation.ReferenceTurn` (its kind, its calls, the observed
  values its reference answer writes): the answer key of the ``conversation`` scorer.

:func:`conversation_task` is the :class:`~toollab.eval.task.Task` of ``toollab eval
--conversations``: those episodes, played by the ``conversation`` agent
(:mod:`toollab.agents.converse`) with a step limit per user turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from toollab.data import Dataset
from toollab.envs.base import env_class, task_env_names
from toollab.errors import UsageError
from toollab.eval.metrics.conversation import REFERENCE_KEY, ReferenceTurn
from toollab.eval.task import Task
from toollab.schema import Decision, GoldCall, Instance
from toollab.sft.episodes import Conversation, EpisodeConfig, build_conversations

#: the held-out splits an evaluation may play
HELD_OUT = ("validation", "test")
DEFAULT_SPLIT = "test"
#: episodes per environment in a default run
DEFAULT_EPISODES = 3
#: user turns after the first, at most
DEFAULT_FOLLOWUPS = 2
#: the most episodes per environment, and the most follow-up turns (docs/input-limits.md): each
#: episode is built from about three instances of the split, all held in memory
MAX_EPISODES, MAX_FOLLOWUPS = 1000, 8
#: model steps per user turn (``toollab chat``'s default)
DEFAULT_STEPS = 4
#: the agent that plays them
AGENT = "conversation"


def episode_instance(conv: Conversation, split: str) -> Instance:
    """One conversation as the instance the evaluation plays (see the module docs)."""
    first = conv.turns[0].instance
    refs = [
        ReferenceTurn(
            id=t.instance.id,
            kind=t.kind,
            calls=sum(1 for s in t.steps if s.call is not None),
            values=list(t.steps[-1].values),
            answer=t.steps[-1].target,
        )
        for t in conv.turns
    ]
    gold = [
        GoldCall(name=s.call.name, arguments=dict(s.call.arguments))
        for s in conv.steps
        if s.call is not None
    ]
    return Instance(
        id=conv.id,
        query=first.query,
        messages=[{"role": "user", "content": t.instance.query} for t in conv.turns],
        tools=list(conv.tools),
        gold=gold,
        decision=Decision.CALL,
        source=f"env:{conv.env}",
        category=first.category,
        split=split,
        metadata={
            "env": conv.env,
            "seed": conv.seed,
            REFERENCE_KEY: [r.model_dump(mode="json") for r in refs],
        },
    )


def episodes(
    env: str,
    split: str = DEFAULT_SPLIT,
    n: int = DEFAULT_EPISODES,
    seed: int = 0,
    followups: int = DEFAULT_FOLLOWUPS,
) -> list[Instance]:
    """``n`` episodes of one environment's held-out ``split`` (deterministic in the arguments)."""
    if split not in HELD_OUT:
        raise UsageError(
            f"conversation episodes come from a held-out split ({', '.join(HELD_OUT)}), "
            f"not {split!r}"
        )
    env_class(env)  # an unknown name: a did-you-mean
    if not 0 <= n <= MAX_EPISODES or not 0 <= followups <= MAX_FOLLOWUPS:
        raise UsageError(
            f"conversation episodes: 0 to {MAX_EPISODES} per environment with 0 to "
            f"{MAX_FOLLOWUPS} follow-up turns, not {n} with {followups}"
        )
    cfg = EpisodeConfig(env, n, seed=seed, split=split, followups=followups)
    return with_retrieved_tools(env, [episode_instance(c, split) for c in build_conversations(cfg)])


def with_retrieved_tools(env: str, episodes: list[Instance]) -> list[Instance]:
    """An environment that offers retrieved tools in ``toollab bench``
    (:attr:`~toollab.envs.base.Environment.retrieved_tools`, the spreadsheet's 62) offers each
    whole conversation the top k that BM25 ranks for its user messages (what the model reads,
    never the answer key), in the pool's order; the others keep every tool."""
    k = env_class(env).retrieved_tools
    if k is None:
        return episodes
    from toollab.retrieval.offer import top_k_of_own_tools  # numpy: the [retrieval] extra

    return top_k_of_own_tools(
        episodes, k, lambda e: "\n".join(str(m.get("content", "")) for m in e.messages)
    )


def conversation_dataset(
    envs: Sequence[str] | None = None,
    *,
    split: str = DEFAULT_SPLIT,
    n: int = DEFAULT_EPISODES,
    seed: int = 0,
    followups: int = DEFAULT_FOLLOWUPS,
) -> Dataset:
    """The episodes of every environment in ``envs`` (default: every environment with goal
    templates), ``n`` each, as one dataset."""
    names = list(envs) if envs else task_env_names()
    for name in names:
        env_class(name)  # every unknown name fails before any episode is built
    instances = [
        inst for name in names for inst in episodes(name, split, n, seed=seed, followups=followups)
    ]
    if not instances:
        raise UsageError(f"no conversation episodes for {', '.join(names)} ({split} split)")
    return Dataset(name=f"conversations-{split}", format="toollab", instances=instances)


def conversation_task(
    envs: Sequence[str] | None = None,
    *,
    split: str = DEFAULT_SPLIT,
    n: int = DEFAULT_EPISODES,
    seed: int = 0,
    followups: int = DEFAULT_FOLLOWUPS,
    max_steps: int = DEFAULT_STEPS,
    max_tokens: int | None = None,
    template: str | None = None,
    name: str = "conversations",
    run_dir: str | None = None,
) -> Task:
    """The conversation evaluation as a :class:`~toollab.eval.task.Task`: the episodes, the
    ``conversation`` agent, ``max_steps`` model steps per user turn (``Task.max_turns``)."""
    return Task(
        dataset=conversation_dataset(envs, split=split, n=n, seed=seed, followups=followups),
        agent=AGENT,
        template=template,
        name=name,
        max_tokens=max_tokens,
        max_turns=max_steps,
        run_dir=run_dir,
    )
