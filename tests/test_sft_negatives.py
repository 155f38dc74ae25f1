"""Hard no-call negatives: close tools that cannot serve the request, by the environments' own
capability rule; multi-call environment sources."""

from __future__ import annotations

from collections import Counter

import pytest

from toollab.envs import env_class
from toollab.envs.generate import generate
from toollab.errors import UsageError
from toollab.models.policy import parse_constrained
from toollab.parsing import ParseStatus
from toollab.sft import AugmentConfig, SFTConfig, export_sft, parse_source
from toollab.sft.negatives import MAX_SIMILARITY, EnvNeighbours, hard_no_call_copies
from toollab.sft.sources import load_source


def test_hard_copies_offer_close_tools_of_environments_that_cannot_serve() -> None:
    insts = [i for i in generate("weather", "train", 60, 0) if len(i.gold) == 1]
    applied: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    out = hard_no_call_copies(insts, 1.0, 0, applied, skipped)
    copies = [i for i in out if "hard-nocall" in i.metadata.get("augmented", [])]
    assert len(copies) == len(insts) == applied["hard nocall: env:weather"]
    fitted = EnvNeighbours.fit()
    owner = {t.name: e for e, t in fitted.tools}
    weather_tools = {t.name for t in env_class("weather").declared_tools()}
    for copy in copies:
        assert not copy.gold and 3 <= len(copy.tools) <= 5
        needs = env_class("weather").tasks.needs[copy.metadata["template"]]
        for tool in copy.tools:
            assert tool.name not in weather_tools
            assert not env_class(owner[tool.name]).tasks.capabilities & needs  # cannot serve
    # the neighbours are the closest such tools, below the duplicate bound, in order
    index = {(e, t.name): i for i, (e, t) in enumerate(fitted.tools)}
    g = index[("weather", "current_weather_by_city")]
    near = fitted.nearest("weather", "current_city", "current_weather_by_city", 5, MAX_SIMILARITY)
    sims = [float(fitted.sims[g][index[(owner[t.name], t.name)]]) for t in near]
    assert len(near) == 5 and sims == sorted(sims, reverse=True) and sims[0] < MAX_SIMILARITY
    # other sources are skipped and counted, never copied
    deer_like = insts[0].model_copy(update={"source": "deer"})
    skipped.clear()
    assert hard_no_call_copies([deer_like], 1.0, 0, Counter(), skipped) == [deer_like]
    assert skipped["hard nocall: deer (environments only)"] == 1


def test_hard_copies_export_as_no_call_answers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = SFTConfig(
        sources=[parse_source("env:finance,n=60")],
        out=tmp_path / "x.jsonl",
        augment=AugmentConfig(hard_nocall=1.0),
        unguarded=["bfcl", "seal-tools", "deer"],
        count_tokens=False,
    )
    res = export_sft(cfg)
    assert res.figures["augment_applied"]["hard nocall: env:finance"] > 10
    import json

    recs = [json.loads(x) for x in res.path.read_text().splitlines()]
    hard = [r for r in recs if "hard-nocall" in r["meta"]["augmented"]]
    assert hard
    for r in hard:
        parsed = parse_constrained(r["messages"][-1]["content"])
        assert parsed.status is ParseStatus.NO_CALL and parsed.text
    assert "hard nocall (1" in (res.path.parent / "README.md").read_text()


def test_multi_call_environment_sources() -> None:
    spec = parse_source("env:weather,n=200,calls=2-5")
    assert spec.calls == (2, 5) and spec.label == "env:weather/train/calls=2-5"
    insts = load_source(spec)
    assert insts and all(2 <= len(i.gold) <= 5 for i in insts)
    assert parse_source("env:weather,n=5,calls=2").calls == (2, 2)
    for bad in ("env:weather,n=5,calls=3-2", "env:weather,n=5,calls=0", "env:weather,n=5,calls=x"):
        with pytest.raises(UsageError):
            parse_source(bad)
