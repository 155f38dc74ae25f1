"""Tool clustering and DEER's candidate-toolset sampling (Algorithm 1).

:class:`ToolClusters` runs K-means (``m`` clusters, default 30, ``random_state=42`` as DEER)
over description embeddings.  :class:`CandidateSampler` builds candidate toolsets of ``k`` tools
(default 5) for a query whose gold tool is known:

* ``random`` — k distinct tools from the whole pool;
* ``intra`` — k distinct tools from the gold tool's cluster (similar tools: hard negatives);
* ``inter`` — k clusters that do *not* hold the gold tool, one tool from each (diverse tools).

With ``with_gold=True`` (a Call sample) a toolset missing the gold tool gets it in a random slot;
with ``with_gold=False`` (a NoCall sample) the toolset is drawn again, same mode, until the gold
tool is absent.  :meth:`CandidateSampler.sample_many` applies a mixture by contiguous slices
(DEER's ``mix``: Random:Intra:Inter = 2:1:2).  Every draw is seeded: sample ``i`` of a run uses
``numpy.random.RandomState(seed + i)``, so the same seed gives the same toolsets.

A cluster smaller than ``k`` cannot feed ``intra`` sampling: ``small_cluster="error"`` (the
default, as upstream) raises a clear error; ``"fill"`` tops the set up with the tools nearest to
the cluster centre.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from toollab.errors import InputError, UsageError
from toollab.retrieval.base import check_pool
from toollab.retrieval.embeddings import Embedder
from toollab.schema import Tool

Mode = Literal["random", "intra", "inter"]
MODES: tuple[Mode, ...] = ("random", "intra", "inter")
DEER_MIX: dict[Mode, float] = {"random": 2.0, "intra": 1.0, "inter": 2.0}


@dataclass
class ToolClusters:
    tools: list[Tool]
    labels: np.ndarray
    embeddings: np.ndarray
    centres: np.ndarray

    @classmethod
    def fit(
        cls,
        tools: Sequence[Tool],
        m: int = 30,
        seed: int = 42,
        embedder: Embedder | None = None,
        texts: Sequence[str] | None = None,
    ) -> ToolClusters:
        """K-means over embeddings of each tool's description (or ``texts``)."""
        from sklearn.cluster import KMeans

        pool = check_pool(tools)
        if m < 1 or m > len(pool):
            raise UsageError(f"cannot make {m} clusters from {len(pool)} tools")
        docs = list(texts) if texts is not None else [t.description or t.name for t in pool]
        emb = (embedder or Embedder()).encode(docs)
        km = KMeans(n_clusters=m, random_state=seed, n_init=10)
        labels = km.fit_predict(emb)
        return cls(pool, np.asarray(labels), emb, np.asarray(km.cluster_centers_))

    def __post_init__(self) -> None:
        # tool indices per cluster, looked up on every draw
        self._members = [[int(i) for i in np.flatnonzero(self.labels == c)] for c in range(self.m)]

    @property
    def m(self) -> int:
        return int(self.centres.shape[0])

    def members(self, cluster: int) -> list[int]:
        return list(self._members[cluster])

    def sizes(self) -> list[int]:
        return [len(ms) for ms in self._members]


class CandidateSampler:
    def __init__(
        self,
        tools: Sequence[Tool],
        clusters: ToolClusters | None = None,
        k: int = 5,
        seed: int = 0,
        small_cluster: Literal["error", "fill"] = "error",
    ) -> None:
        self.tools = check_pool(tools)
        if k < 1 or k > len(self.tools):
            raise UsageError(f"k={k} candidates cannot be drawn from a pool of {len(self.tools)}")
        self.k, self.seed, self.small_cluster = k, seed, small_cluster
        self.clusters = clusters
        self._index = {t.name: i for i, t in enumerate(self.tools)}
        if clusters is not None and [t.name for t in clusters.tools] != [
            t.name for t in self.tools
        ]:
            raise InputError("the clusters were fitted on a different tool pool")

    # -- one toolset ----------------------------------------------------------------------
    def sample(
        self,
        gold: str,
        mode: Mode = "random",
        with_gold: bool = True,
        rng: np.random.RandomState | None = None,
    ) -> list[Tool]:
        if gold not in self._index:
            raise InputError(f"gold tool {gold!r} is not in the pool")
        if mode not in MODES:
            raise UsageError(f"unknown sampling mode {mode!r}; known: {', '.join(MODES)}")
        rng = rng or np.random.RandomState(self.seed)
        g = self._index[gold]
        if not with_gold and mode == "intra" and len(self._intra_pool(g)) - 1 < self.k:
            raise InputError(
                f"the cluster of {gold!r} has fewer than {self.k} other tools: a NoCall intra-class "
                "toolset cannot avoid the gold tool"
            )
        for _ in range(1000):
            picked = self._draw(g, mode, rng)
            if with_gold:
                if g not in picked:
                    picked[int(rng.randint(0, self.k))] = g
                break
            if g not in picked:
                break
        else:
            raise InputError(f"could not draw a toolset without {gold!r} in 1000 tries")
        return [self.tools[i] for i in picked]

    def _intra_pool(self, g: int) -> list[int]:
        clusters = self._need_clusters("intra")
        members = clusters.members(int(clusters.labels[g]))
        if len(members) >= self.k:
            return members
        if self.small_cluster == "error":
            raise InputError(
                f"the cluster of {self.tools[g].name!r} has {len(members)} tools, fewer than k={self.k}; "
                "use fewer clusters or small_cluster='fill'"
            )
        centre = clusters.centres[int(clusters.labels[g])]
        order = np.argsort(-(clusters.embeddings @ centre), kind="stable")
        own = set(members)
        extra = [int(i) for i in order if int(i) not in own]
        return members + extra[: self.k - len(members)]

    def _need_clusters(self, mode: str) -> ToolClusters:
        if self.clusters is None:
            raise UsageError(f"{mode}-class sampling needs clusters: pass ToolClusters.fit(tools)")
        return self.clusters

    def _draw(self, g: int, mode: Mode, rng: np.random.RandomState) -> list[int]:
        if mode == "random":
            return [int(i) for i in rng.choice(len(self.tools), self.k, replace=False)]
        if mode == "intra":
            pool = self._intra_pool(g)
            return [int(pool[i]) for i in rng.choice(len(pool), self.k, replace=False)]
        clusters = self._need_clusters("inter")
        own = int(clusters.labels[g])
        others = [c for c in range(clusters.m) if c != own and clusters.members(c)]
        if len(others) < self.k:
            raise InputError(
                f"inter-class sampling needs {self.k} clusters besides the gold tool's; there are {len(others)}"
            )
        chosen = rng.choice(others, self.k, replace=False)
        return [int(rng.choice(clusters.members(int(c)))) for c in chosen]

    # -- a whole dataset --------------------------------------------------------------------
    def sample_many(
        self,
        golds: Sequence[str],
        with_gold: Sequence[bool],
        mode: Mode | Literal["mix"] = "mix",
        ratio: dict[Mode, float] | None = None,
    ) -> list[list[Tool]]:
        """One toolset per (gold, with_gold); ``mix`` slices Call and NoCall samples contiguously
        by ``ratio`` (default DEER's 2:1:2 Random:Intra:Inter)."""
        if len(golds) != len(with_gold):
            raise UsageError("golds and with_gold must have the same length")
        modes = self.modes_for(with_gold, mode, ratio)
        return [
            self.sample(g, m, w, np.random.RandomState(self.seed + i))
            for i, (g, w, m) in enumerate(zip(golds, with_gold, modes, strict=True))
        ]

    @staticmethod
    def modes_for(
        with_gold: Sequence[bool],
        mode: Mode | Literal["mix"] = "mix",
        ratio: dict[Mode, float] | None = None,
    ) -> list[Mode]:
        if mode != "mix":
            if mode not in MODES:
                raise UsageError(
                    f"unknown sampling mode {mode!r}; known: {', '.join((*MODES, 'mix'))}"
                )
            return [mode] * len(with_gold)
        ratio = ratio or DEER_MIX
        total = sum(ratio.values())
        if total <= 0 or any(v < 0 for v in ratio.values()):
            raise UsageError(f"mixture ratio must be non-negative and not all zero: {ratio}")
        out: list[Mode] = ["random"] * len(with_gold)
        for flag in (True, False):
            idx = [i for i, w in enumerate(with_gold) if bool(w) is flag]
            start = 0
            for j, (m, w) in enumerate(ratio.items()):
                n = len(idx) - start if j == len(ratio) - 1 else int(len(idx) * w / total)
                for i in idx[start : start + n]:
                    out[i] = m
                start += n
        return out
