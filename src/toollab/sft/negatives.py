"""Hard no-call negatives in the spirit of Hammer's irrelevance data: close tools that cannot
serve the request.

For a share of the single-call Call instances of the environments, a copy that offers the gold
tool's **nearest neighbours among the other environments' tools that cannot serve the request**
instead of the environment's own tools; the right answer is a no-call in text.  "Cannot serve"
is the environments' own capability rule (the one their NoCall instances use,
:mod:`toollab.envs.tasks.common`): an environment whose tools serve none of the capability tags
the request's template needs.  Neighbours are ranked by the cosine similarity of toollab's
sentence embeddings of :func:`~toollab.retrieval.base.tool_text` (name words, description,
parameters) to the gold tool; one at or above ``max_similarity`` (0.8), or with the gold tool's
folded name, is never offered.

Two variants were left out on purpose, and the card says so when a source is skipped:

* the request's own environment with the needed tool removed: what is left can serve the
  request by a detour the data does not list (the weather environment's geocoder and a
  by-coordinates tool answer "the weather in Berlin" without the by-city tool);
* nearest neighbours inside DEER's or Seal-Tools' pools: those pools hold many
  near-substitutes (DEER's seen tools have several QR-code makers and gift finders, down to
  a similarity of 0.35), so the copy would teach declining a request a tool can serve.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from toollab.envs.base import env_class, task_env_names
from toollab.envs.taskset import TaskSet
from toollab.errors import UsageError
from toollab.retrieval.base import tool_text
from toollab.retrieval.embeddings import Embedder
from toollab.schema import Decision, Instance, Tool
from toollab.sft.targets import ALLOW_NO_CALL

#: the answer of a hard no-call copy
HARD_NO_CALL_ANSWER = "None of the available tools can do this."
#: similarity at or above which a neighbour counts as the same function
MAX_SIMILARITY = 0.8
_PREFIX = re.compile(r"^(get|fetch|retrieve|find|search)")


def _folded(name: str) -> str:
    return _PREFIX.sub("", re.sub(r"[\s_\-.]+", "", name.lower()))


def _tasks(env: str) -> TaskSet:
    """An environment's task set (every environment in the pool declares one)."""
    tasks = env_class(env).tasks
    if tasks is None:
        raise UsageError(f"environment {env!r} declares no task set")
    return tasks


@dataclass
class EnvNeighbours:
    """Every environment's tools, embedded once, with who may stand in for whom."""

    tools: list[tuple[str, Tool]]
    sims: Any  # np.ndarray (n, n) of cosine similarities

    @classmethod
    def fit(cls) -> EnvNeighbours:

        pool = [(env, t) for env in task_env_names() for t in env_class(env).declared_tools()]
        emb = Embedder().encode([tool_text(t) for _, t in pool])
        return cls(pool, emb @ emb.T)

    def nearest(
        self, env: str, template: str, gold: str, k: int, max_similarity: float
    ) -> list[Tool]:
        """Up to ``k`` tools of other environments closest to ``gold`` (of ``env``) whose
        environment serves none of the capabilities ``template`` needs."""
        ts = _tasks(env)
        needs = ts.needs.get(template)
        if needs is None:
            return []
        index = {(e, t.name): i for i, (e, t) in enumerate(self.tools)}
        g = index.get((env, gold))
        if g is None:
            return []
        row = self.sims[g]
        order = sorted(range(len(self.tools)), key=lambda i: -float(row[i]))
        out: list[Tool] = []
        names: set[str] = set()
        for i in order:
            other, t = self.tools[i]
            if other == env or _tasks(other).capabilities & needs or t.name in names:
                continue
            if float(row[i]) >= max_similarity or _folded(t.name) == _folded(gold):
                continue
            out.append(t)
            names.add(t.name)
            if len(out) >= k:
                break
        return out


def hard_no_call_copies(
    instances: list[Instance],
    share: float,
    seed: int,
    applied: Counter[str],
    skipped: Counter[str],
    max_similarity: float = MAX_SIMILARITY,
) -> list[Instance]:
    """The instances plus a hard no-call copy of a seeded share of the single-call environment
    instances (other sources are counted as skipped: see the module doc)."""
    import random

    if not share:
        return instances
    rng = random.Random(f"hard-nocall|{seed}")
    fitted: EnvNeighbours | None = None
    out = list(instances)
    counts: dict[str, int] = defaultdict(int)
    for inst in instances:
        if len(inst.gold) != 1 or rng.random() >= share:
            continue
        source = inst.source or ""
        env = source.split(":", 1)[1] if source.startswith("env:") else None
        template = inst.metadata.get("template")
        if env is None or not isinstance(template, str):
            skipped[f"hard nocall: {source or '-'} (environments only)"] += 1
            continue
        fitted = fitted or EnvNeighbours.fit()
        k = min(5, max(3, len(inst.tools)))
        tools = fitted.nearest(env, template, inst.gold[0].name, k, max_similarity)
        if not tools:
            skipped["hard nocall: no tool of another environment fits the rule"] += 1
            continue
        rng.shuffle(tools)
        counts[source] += 1
        meta = {
            **inst.metadata,
            ALLOW_NO_CALL: True,
            "removed_tools": [t.name for t in inst.tools],
            "augmented": [*inst.metadata.get("augmented", []), "hard-nocall"],
        }
        out.append(
            inst.model_copy(
                update={
                    "id": f"{inst.id}~hard-nocall",
                    "tools": tools,
                    "gold": [],
                    "alternatives": [],
                    "decision": Decision.NO_CALL,
                    "answer": HARD_NO_CALL_ANSWER,
                    "metadata": meta,
                }
            )
        )
    for source, n in sorted(counts.items()):
        applied[f"hard nocall: {source}"] += n
    return out
