"""DEER's candidate-toolset sampling (Algorithm 1) over K-means clusters."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toollab.errors import InputError, UsageError
from toollab.retrieval import CandidateSampler, ToolClusters
from toollab.schema import Tool

THEMES = {
    "weather": "weather forecast rain temperature wind for a city",
    "finance": "stock market share price currency exchange rate",
    "travel": "book flight hotel reservation trip itinerary",
    "food": "recipe cooking ingredients restaurant menu",
    "music": "song playlist album artist lyrics",
    "health": "doctor appointment symptoms medicine fitness",
}
POOL = [
    Tool(name=f"{theme}_{i}", description=f"{text} (variant {i})")
    for theme, text in THEMES.items()
    for i in range(8)
]


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Embeddings of this module go to a fresh cache folder, for this module only."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TOOLLAB_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def clusters() -> ToolClusters:
    return ToolClusters.fit(POOL, m=6, seed=42)


def _theme(t: Tool) -> str:
    return t.name.split("_")[0]


def test_clusters_follow_topics(clusters: ToolClusters) -> None:
    assert sorted(clusters.sizes()) == [8] * 6
    for c in range(6):
        assert len({_theme(POOL[i]) for i in clusters.members(c)}) == 1


def test_random_call_and_nocall(clusters: ToolClusters) -> None:
    s = CandidateSampler(POOL, clusters, k=5, seed=1)
    for i in range(30):
        call = s.sample(
            "weather_0", "random", with_gold=True, rng=__import__("numpy").random.RandomState(i)
        )
        assert len(call) == 5 and len({t.name for t in call}) == 5
        assert "weather_0" in [t.name for t in call]
        nocall = s.sample("weather_0", "random", with_gold=False)
        assert "weather_0" not in [t.name for t in nocall]


def test_intra_class_stays_in_the_gold_cluster(clusters: ToolClusters) -> None:
    s = CandidateSampler(POOL, clusters, k=5)
    for with_gold in (True, False):
        ts = s.sample("music_3", "intra", with_gold=with_gold)
        assert {_theme(t) for t in ts} == {"music"}
        assert ("music_3" in [t.name for t in ts]) is with_gold


def test_inter_class_takes_one_tool_per_other_cluster(clusters: ToolClusters) -> None:
    s = CandidateSampler(POOL, clusters, k=5)
    ts = s.sample("food_2", "inter", with_gold=False)
    themes = [_theme(t) for t in ts]
    assert len(set(themes)) == 5 and "food" not in themes
    call = s.sample("food_2", "inter", with_gold=True)
    assert "food_2" in [t.name for t in call]


def test_mixture_slices_two_one_two_and_is_reproducible(clusters: ToolClusters) -> None:
    flags = [True] * 50 + [False] * 50
    modes = CandidateSampler.modes_for(flags, "mix")
    assert (
        modes[:20] == ["random"] * 20
        and modes[20:30] == ["intra"] * 10
        and modes[30:50] == ["inter"] * 20
    )
    assert modes[50:70] == ["random"] * 20 and modes[70:80] == ["intra"] * 10
    golds = [POOL[i % len(POOL)].name for i in range(100)]
    a = CandidateSampler(POOL, clusters, k=5, seed=7).sample_many(golds, flags)
    b = CandidateSampler(POOL, clusters, k=5, seed=7).sample_many(golds, flags)
    c = CandidateSampler(POOL, clusters, k=5, seed=8).sample_many(golds, flags)
    assert [[t.name for t in ts] for ts in a] == [[t.name for t in ts] for ts in b]
    assert [[t.name for t in ts] for ts in a] != [[t.name for t in ts] for ts in c]
    for gold, flag, ts in zip(golds, flags, a, strict=True):
        assert (gold in [t.name for t in ts]) is flag


def test_small_clusters_and_bad_arguments(clusters: ToolClusters) -> None:
    with pytest.raises(InputError, match="fewer than k=9"):
        CandidateSampler(POOL, clusters, k=9).sample("music_1", "intra")
    filled = CandidateSampler(POOL, clusters, k=9, small_cluster="fill").sample("music_1", "intra")
    assert len({t.name for t in filled}) == 9
    with pytest.raises(UsageError, match="needs clusters"):
        CandidateSampler(POOL, None, k=5).sample("music_1", "inter")
    with pytest.raises(InputError, match="not in the pool"):
        CandidateSampler(POOL, clusters, k=5).sample("nope", "random")
    with pytest.raises(UsageError):
        CandidateSampler(POOL, clusters, k=500)


def test_deer_tool_pool_clusters(shared_data: Path) -> None:
    from toollab.data import load_tools

    tools = load_tools(shared_data / "deer" / "tool.json", "deer")
    assert len(tools) == 977
    cl = ToolClusters.fit(tools, m=30, seed=42)
    assert sum(cl.sizes()) == 977 and min(cl.sizes()) >= 1
    s = CandidateSampler(tools, cl, k=5, seed=0, small_cluster="fill")
    sets = s.sample_many([t.name for t in tools[:40]], [True] * 24 + [False] * 16)
    assert all(len(ts) == 5 for ts in sets)
