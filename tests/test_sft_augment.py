"""Each augmentation's invariants on real data, and that augmented examples still pass the
export's read-back checks."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from toollab.schema import Decision, Instance
from toollab.sft import AugmentConfig, SFTConfig, export_sft, parse_source
from toollab.sft.augment import AugmentReport, augment, compose, mask_instance, tool_pools
from toollab.sft.sources import deer_examples, load_source
from toollab.sft.targets import ALLOW_NO_CALL, call_view


@pytest.fixture(scope="module")
def deer(shared_data: Path) -> list[Instance]:
    return deer_examples(shared_data / "deer" / "tool.json")[:400]


@pytest.fixture(scope="module")
def seal(shared_data: Path) -> list[Instance]:
    spec = parse_source(f"seal-tools:{shared_data / 'seal-tools' / 'dev.jsonl'}")
    return load_source(spec)[:200]


def run(insts: list[Instance], **kw: Any) -> tuple[list[Instance], AugmentReport]:
    return augment(insts, AugmentConfig(**kw), set())


def test_distractors_keep_the_gold_and_come_from_the_same_source(deer: list[Instance]) -> None:
    out, rep = run(deer, distractors=5)
    pool = {t.name for t in tool_pools(deer, set())["deer"]}
    assert rep.applied["distractors (random)"] == len(deer)
    for before, after in zip(deer, out, strict=True):
        names = [t.name for t in after.tools]
        assert len(names) == len(set(names)) == 5
        assert before.gold[0].name in names
        assert set(names) <= pool
    again, _ = run(deer, distractors=5)
    assert [[t.name for t in i.tools] for i in again] == [[t.name for t in i.tools] for i in out]
    other, _ = run(deer, distractors=5, seed=1)
    assert [[t.name for t in i.tools] for i in other] != [[t.name for t in i.tools] for i in out]


def test_held_out_tools_are_never_drawn(deer: list[Instance]) -> None:
    banned = {("deer", i.gold[0].name) for i in deer[100:200]}
    out, _ = augment(deer[:100], AugmentConfig(distractors=5), banned)
    drawn = {t.name for i in out for t in i.tools[1:]} - {i.gold[0].name for i in deer[:100]}
    assert not drawn & {n for _, n in banned}


def test_nocall_removes_the_gold_tools(seal: list[Instance]) -> None:
    out, rep = run(seal, nocall=0.5)
    copies = [i for i in out if i.id.endswith("~nocall")]
    assert rep.applied["nocall"] == len(copies) > 50
    assert len(out) == len(seal) + len(copies)
    by_id = {i.id: i for i in seal}
    for c in copies:
        original = by_id[c.id.removesuffix("~nocall")]
        assert not c.gold and c.decision is Decision.NO_CALL and c.metadata[ALLOW_NO_CALL]
        assert not {t.name for t in c.tools} & {g.name for g in original.gold}
        assert c.tools


def test_masking_renames_consistently(seal: list[Instance]) -> None:
    import random

    for inst in seal[:50]:
        masked = mask_instance(inst, random.Random(0))
        tools = {t.name: t for t in masked.tools}
        assert not {t.name for t in inst.tools} & set(tools)
        for before, after in zip(inst.gold, masked.gold, strict=True):
            tool = tools[after.name]
            original = inst.tool(before.name)
            assert original is not None and tool.description == original.description
            assert set(after.arguments) <= set(tool.properties)
            assert list(after.arguments.values()) == list(before.arguments.values())
            assert set(tool.required) <= set(tool.properties)


def test_vary_keeps_the_gold_values(seal: list[Instance], shared_data: Path) -> None:
    out, rep = run(seal, vary=1.0)
    assert rep.applied["vary: parameter order"] == len(seal)
    shuffled = 0
    for before, after in zip(seal, out, strict=True):
        assert call_view(after.gold) == call_view(before.gold)  # dicts compare without order
        for t_before, t_after in zip(before.tools, after.tools, strict=True):
            assert set(t_after.properties) == set(t_before.properties)
            shuffled += list(t_after.properties) != list(t_before.properties)
        for call in after.gold:
            tool = after.tool(call.name)
            if tool is not None:
                order = [p for p in tool.properties if p in call.arguments]
                assert list(call.arguments) == order
    assert shuffled > 100


def test_vary_rewrites_values_written_in_the_query() -> None:
    from toollab.sft.augment import vary_instance

    inst = Instance(
        id="x",
        query="Transfer 2500 dollars on 2024-03-05 please.",
        gold=[{"name": "pay", "arguments": {"amount": 2500, "date": "2024-03-05"}}],
    )
    import random

    varied, n = vary_instance(inst, random.Random(0))
    assert n == 2
    assert varied.query == "Transfer 2,500 dollars on March 5, 2024 please."
    assert call_view(varied.gold) == call_view(inst.gold)


def test_compose_makes_parallel_and_multiple_calls(seal: list[Instance]) -> None:
    singles = [i for i in seal if len(i.gold) == 1]
    rep = AugmentReport()
    out = compose(singles, AugmentConfig(compose=0.5, compose_max=3), rep)
    made = out[len(singles) :]
    assert len(made) > 20
    by_id = {i.id: i for i in singles}
    for c in made:
        parts = [by_id[p] for p in c.metadata["composed_of"]]
        assert call_view(c.gold) == [v for p in parts for v in call_view(p.gold)]
        assert c.category in ("parallel", "multiple")
        for p in parts:
            assert p.query.strip()[1:].rstrip(".?!") in c.query
        names = {t.name for t in c.tools}
        assert {g.name for g in c.gold} <= names


def test_compose_skips_sources_answered_with_one_call(deer: list[Instance]) -> None:
    rep = AugmentReport()
    out = compose(deer, AugmentConfig(compose=0.2), rep)
    # DEER answers with one call; only a same-tool (parallel) request admits several
    assert all(i.category == "parallel" for i in out[len(deer) :])
    assert rep.skipped["compose: deer is answered with one call"] > 0


def test_augmented_export_passes_every_check(tmp_path: Path, shared_data: Path) -> None:
    cfg = SFTConfig(
        sources=[
            parse_source(f"seal-tools:{shared_data / 'seal-tools' / 'dev.jsonl'},n=80"),
            parse_source(f"deer-examples:{shared_data / 'deer' / 'tool.json'},n=80"),
            parse_source("env:weather,n=30"),
        ],
        out=tmp_path / "aug.jsonl",
        unguarded=["bfcl", "seal-tools", "deer"],
        augment=AugmentConfig(distractors=5, nocall=0.3, mask=0.3, vary=0.3, compose=0.3),
        count_tokens=False,
    )
    result = export_sft(cfg)
    recs = [json.loads(line) for line in result.path.read_text().splitlines()]
    tags = Counter(t.split(":")[0] for r in recs for t in r["meta"].get("augmented", []))
    assert {"distractors", "nocall", "mask", "vary", "compose"} <= set(tags)
    for rec in recs:
        (start, end), content = rec["spans"][0], rec["messages"][-1]["content"]
        assert rec["text"][start:end] == content + "<|im_end|>"
    nocalls = [r for r in recs if "nocall" in r["meta"].get("augmented", [])]
    assert nocalls and all(
        json.loads(r["messages"][-1]["content"])["decision"] == "no_call" for r in nocalls
    )
    card = result.card.read_text()
    assert (
        "Active: distractors (k=5, random), nocall (0.3), mask (0.3), vary (0.3), compose" in card
    )


@pytest.fixture(scope="module")
def weather() -> list[Instance]:
    return load_source(parse_source("env:weather,n=60"))


def test_reduce_offers_the_gold_tools_and_a_few_of_the_others(weather: list[Instance]) -> None:
    out, rep = run(weather, reduce=1.0, seed=3)
    assert len(out) == len(weather)
    extras: Counter[int] = Counter()
    for before, after in zip(weather, out, strict=True):
        names = {t.name for t in after.tools}
        gold = {c.name for c in before.gold}
        if before.decision is not Decision.CALL or len(before.tools) == len(gold):
            assert after is before  # NoCall, NoSearch and gold-only offers are left alone
            continue
        if after is before:  # every other tool drawn: nothing to reduce
            continue
        assert "reduce" in after.metadata["augmented"]
        assert gold <= names <= {t.name for t in before.tools}
        extras[len(names - gold)] += 1
        assert all({c.name for c in alt} <= names for alt in after.alternatives)
        assert after.gold == before.gold and after.query == before.query
    assert rep.applied["reduce"] == sum(extras.values()) > 20
    assert set(extras) <= {0, 1, 2, 3, 4} and extras[0] and len(extras) >= 4
    again, _ = run(weather, reduce=1.0, seed=3)
    assert [[t.name for t in i.tools] for i in again] == [[t.name for t in i.tools] for i in out]
    _, rep_half = run(weather, reduce=0.5, seed=3)
    assert 0 < rep_half.applied["reduce"] < rep.applied["reduce"]
    assert run(weather, reduce=0.0)[0] == weather


def test_reduce_rejects_a_share_out_of_range() -> None:
    from toollab.errors import UsageError

    with pytest.raises(UsageError, match="--reduce is a share"):
        AugmentConfig(reduce=1.5)
    with pytest.raises(UsageError, match="--reduce-extra"):
        AugmentConfig(reduce=0.5, reduce_extra=-1)


def test_spreadsheet_examples_offer_the_retrieved_tools_and_their_gold() -> None:
    from toollab.envs.base import env_class

    k = env_class("spreadsheet").retrieved_tools
    assert k is not None
    for inst in load_source(parse_source("env:spreadsheet,n=12")):
        gold = {c.name for c in inst.gold}
        assert gold <= {t.name for t in inst.tools} and len(inst.tools) <= k + len(gold)


def test_a_request_sharing_no_word_with_the_tools_still_offers_k_of_them() -> None:
    from toollab.envs.base import env_class
    from toollab.envs.generate import generate
    from toollab.retrieval.offer import top_k_of_own_tools

    k = env_class("spreadsheet").retrieved_tools
    assert k is not None
    inst = generate("spreadsheet", "train", 1, 0)[0].model_copy(
        update={"query": "What is the plural of 'mouse'?", "gold": []}
    )
    (out,) = top_k_of_own_tools([inst], k, lambda i: i.query)
    assert [t.name for t in out.tools] == [t.name for t in inst.tools][:k]
