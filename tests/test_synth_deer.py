"""DEER's pipeline: the released data rebuilt from tool.json, the teacher stage with a scripted
teacher, bad source files, and the CLI."""

from __future__ import annotations

import ast
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from toollab.data import load_dataset
from toollab.errors import InputError
from toollab.models.base import run_sync
from toollab.models.fake import FakeModel
from toollab.retrieval.sampling import ToolClusters
from toollab.schema import Tool
from toollab.synth import Teacher, TeacherConfig, deer

CALL_RE = re.compile(
    r"^#Begin# Need to look up the API Pool\. #SearchAPI# The API Pool including: (\[.*?\]), and "
    r"the introduction and usage of each API is as follows: \n(.*) #CallAPI# (.+) #APIResponse#  "
    r"#End#$",
    re.S,
)
NOCALL_RE = re.compile(
    r"^#Begin# Need to look up the API Pool\. #SearchAPI# The API Pool including: (\[.*?\]), and "
    r"the introduction and usage of each API is as follows: \n(.*) #NoCallAPI# There is no proper "
    r"API and I need to answer this question with my own knowledge\. #End#$",
    re.S,
)


def kind(record: dict[str, Any]) -> str:
    target = record["conversations"][1]["value"]
    if target == deer.NOSEARCH_TARGET:
        return "NoSearch"
    if CALL_RE.match(target):
        return "Call"
    if NOCALL_RE.match(target):
        return "NoCall"
    raise AssertionError(f"not a DEER target: {target[:200]!r}")


@pytest.fixture(scope="module")
def deer_dir(shared_data: Path) -> Path:
    return shared_data / "deer"


@pytest.fixture(scope="module")
def tools(deer_dir: Path) -> list[deer.DeerTool]:
    return deer.read_tools(deer_dir / "tool.json")


@pytest.fixture(scope="module")
def built(tools: list[deer.DeerTool]) -> deer.DeerBuild:
    # the random mode draws exactly what the mix draws in its random slices (same seeds)
    return deer.build(
        tools,
        deer.DeerConfig(mode="random"),
        nosearch=[f"general question {i}" for i in range(2000)],
    )


def test_reads_published_tools(tools: list[deer.DeerTool]) -> None:
    assert len(tools) == 977
    assert sum(len(t.example) for t in tools) == 9393


def test_rebuilds_the_released_test_split_exactly(built: deer.DeerBuild, deer_dir: Path) -> None:
    released = json.loads((deer_dir / "test.json").read_text())
    assert len(built.test) == len(released) == 743
    assert built.test == released  # every record, candidates and rendering included
    assert len(built.unseen) == 77 and len(built.seen) == 900


def test_valid_split_proportions_and_rendering(built: deer.DeerBuild, deer_dir: Path) -> None:
    released = json.loads((deer_dir / "valid.json").read_text())
    ours = Counter(kind(r) for r in built.valid)
    theirs = Counter(kind(r) for r in released)
    assert theirs == {"Call": 526, "NoCall": 346, "NoSearch": 193}
    assert len(built.valid) == len(released) == 1065
    for name in ("Call", "NoCall", "NoSearch"):
        assert abs(ours[name] - theirs[name]) <= 0.05 * len(released), (ours, theirs)
    # the seen pool's Call share is the call ratio, by sample
    seen = built.counts["seen_samples"]
    assert seen["Call/random"] == int(0.6 * (seen["Call/random"] + seen["NoCall/random"]))
    # every released sample is one of ours, with the same decision; those of upstream's random
    # slices (40% of each decision) have the very same candidates and rendering
    mine: dict[str, list[str]] = {}
    for r in [*built.train, *built.valid]:
        mine.setdefault(r["conversations"][0]["value"], []).append(r["conversations"][1]["value"])
    identical = Counter[str]()
    for r in released:
        k = kind(r)
        if k == "NoSearch":
            continue
        targets = mine[r["conversations"][0]["value"]]
        assert k in {kind({"conversations": [{}, {"value": t}]}) for t in targets}
        identical[k] += r["conversations"][1]["value"] in targets
    assert (
        identical["Call"] >= 0.3 * theirs["Call"] and identical["NoCall"] >= 0.3 * theirs["NoCall"]
    )


def test_rendering_format(built: deer.DeerBuild, tools: list[deer.DeerTool]) -> None:
    info = {t.api_name: t.info() for t in tools}
    owner: dict[str, set[str]] = {}
    for t in tools:
        for ex in t.example:
            owner.setdefault(ex["call"], set()).add(t.api_name)
    for r in built.valid[:300]:
        target = r["conversations"][1]["value"]
        m = CALL_RE.match(target) or NOCALL_RE.match(target)
        if m is None:
            assert target == deer.NOSEARCH_TARGET
            continue
        names = ast.literal_eval(m.group(1))
        assert len(names) == len(set(names)) == 5
        assert m.group(2).split("\n") == [str(info[n]) for n in names]
        if CALL_RE.match(target):  # the gold tool (whose example gave the call) is offered
            call = CALL_RE.match(target).group(3)  # type: ignore[union-attr]
            assert owner[call] & set(names)


def test_no_unseen_tool_or_test_query_in_training(built: deer.DeerBuild) -> None:
    assert deer.leaks(built) == {"unseen_tool": 0, "test_query": 0}
    assert set(built.seen).isdisjoint(built.unseen)
    # two seen examples repeat a test query word for word: they were dropped
    assert sum(built.counts["dropped_test_queries"].values()) == 2


def test_mix_slices_as_upstream() -> None:
    modes = deer.upstream_slices(10, (0.4, 0.2, 0.4))
    assert modes == ["random"] * 4 + ["intra"] * 2 + ["inter"] * 4
    # 0.4 + 0.2 is 0.6000000000000001 in floats: upstream's bounds, not rounded shares
    n = 5190
    assert Counter(deer.upstream_slices(n, (0.4, 0.2, 0.4))) == {
        "random": int(n * 0.4),
        "intra": int(n * (0.4 + 0.2)) - int(n * 0.4),
        "inter": n - int(n * (0.4 + 0.2)),
    }


def test_mix_mode_with_clusters(tools: list[deer.DeerTool]) -> None:
    """Intra-class Call samples draw every candidate from the gold tool's cluster (clusters given
    here, so no embedding model is needed)."""
    small = tools[:120]
    order = list(small)
    random.Random(42).shuffle(order)
    seen = order[:100]
    rng = np.random.RandomState(0)
    labels = rng.randint(0, 8, size=100)
    emb = rng.normal(size=(100, 4))
    clusters = ToolClusters(
        [Tool.build(name=t.api_name, description=t.description_for_human) for t in seen],
        labels,
        emb,
        np.stack([emb[labels == c].mean(0) for c in range(8)]),
    )
    result = deer.build(small, deer.DeerConfig(seen=100, clusters=8, nosearch=0), clusters=clusters)
    counts = result.counts["seen_samples"]
    n_call = sum(v for k, v in counts.items() if k.startswith("Call/"))
    assert counts["Call/random"] == int(n_call * 0.4)
    assert counts["Call/intra"] == int(n_call * (0.4 + 0.2)) - int(n_call * 0.4)
    label = {t.api_name: int(lab) for t, lab in zip(seen, labels, strict=True)}
    owner = {ex["call"]: t.api_name for t in seen for ex in t.example}
    same_cluster = 0
    for r in [*result.train, *result.valid]:
        m = CALL_RE.match(r["conversations"][1]["value"])
        if m:
            names = ast.literal_eval(m.group(1))
            gold = owner[m.group(3)]
            same_cluster += all(label[n] == label[gold] for n in names)
    assert same_cluster >= counts["Call/intra"]


# -- the teacher stage ---------------------------------------------------------------------------
def scripted_teacher(garbage_every: int = 0, no_for: str = "bad") -> FakeModel:
    """Writes 3 examples per tool (one with ``no_for`` in its query, which the check refuses)."""
    seen: Counter[str] = Counter()

    def answer(messages: list[dict[str, Any]], _tools: Any) -> str:
        prompt = str(messages[-1]["content"])
        if "devise an API function" in prompt:
            name = re.search(r'The name of tool: "(.*?)"', prompt).group(1)  # type: ignore[union-attr]
            seen[name] += 1
            if garbage_every and seen[name] == 1 and hash(name) % garbage_every == 0:
                return "Sure! Here are some ideas."
            lines = [f"API function: {name}(city: str)"]
            for i, q in enumerate((f"weather in Paris {name}", f"rain in Rome {name}", no_for)):
                lines.append(
                    json.dumps({"query": q, "call": f"{name}(city='x{i}')"})
                    if i < 2
                    else f'{i + 1}. {{"query": "{q} {name}", "call": "{name}(city=1)"}}'
                )
            lines.append('4. {"query": "torn, "call": "' + name + "(")
            return "\n".join(lines)
        if no_for in prompt:
            return "[NO]"
        return "[YES]"

    return FakeModel(fn=answer)


def test_teacher_writes_checked_examples(tools: list[deer.DeerTool], tmp_path: Path) -> None:
    src = tmp_path / "plugins.json"
    src.write_text(
        json.dumps(
            {
                "items": [
                    {
                        "manifest": {
                            "name_for_model": t.api_name,
                            "description_for_human": t.description_for_human,
                            "description_for_model": t.description_for_model,
                        }
                    }
                    for t in tools[:12]
                ]
            }
        )
    )
    teacher = Teacher(scripted_teacher(), TeacherConfig(model="fake:"), cache=tmp_path / "c.jsonl")
    report = deer.run(
        src, tmp_path / "out", deer.DeerConfig(seen=8, k=3, mode="random", nosearch=0), teacher
    )
    written = json.loads((tmp_path / "out" / "tool.json").read_text())
    assert len(written) == 12
    assert all(len(t["example"]) == 2 for t in written)  # the refused one is dropped
    checks = report["teacher_stats"]["checks"]
    assert checks["deer.check"]["accepted"] == 24
    assert checks["deer.check"]["rejected"] == {"the check said no": 12}
    assert checks["deer.examples.lines"]["rejected"] == {"example line not JSON": 12}
    data = load_dataset(tmp_path / "out", "deer", splits="train,valid,test")
    assert len(data.instances) == 24


def test_garbage_answers_are_counted_and_asked_again(
    tools: list[deer.DeerTool], tmp_path: Path
) -> None:
    model = scripted_teacher(garbage_every=1)  # every tool's first answer is garbage
    teacher = Teacher(model, TeacherConfig(model="fake:"), cache=tmp_path / "c.jsonl")
    result = run_sync(deer.write_examples(tools[:5], teacher))
    assert [len(t.example) for t in result] == [2] * 5
    checks = teacher.stats.pass_rates()
    assert checks["deer.examples"]["rejected"] == {"no 'API function:' first line": 5}
    assert checks["deer.examples"]["accepted"] == 5


# -- bad input -----------------------------------------------------------------------------------
def test_malformed_tool_file_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "tool.json"
    bad.write_text(
        '[\n{"api_name": "a", "description_for_human": "x", "example": []},\n'
        '{"api_name": "b", "description_for_human": 3}\n]\n'
    )
    with pytest.raises(InputError) as err:
        deer.read_tools(bad)
    assert err.value.path == str(bad) and err.value.line == 3
    assert "description_for_human" in err.value.problem
    broken = tmp_path / "broken.json"
    broken.write_text('[\n{"api_name": "a",\n "description_for_human": "x"\n,,]\n')
    with pytest.raises(InputError) as err:
        deer.read_tools(broken)
    assert err.value.line == 4


def test_malformed_nosearch_file(tmp_path: Path) -> None:
    bad = tmp_path / "conv.jsonl"
    bad.write_text('{"conversations": [{"from": "human", "value": "hi"}]}\n{"foo": 1}\n')
    with pytest.raises(InputError) as err:
        deer.read_conversations(bad)
    assert err.value.line == 2 and "not a conversation" in err.value.problem


def test_cli_writes_the_released_test_file_byte_for_byte(deer_dir: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from toollab.cli.main import app

    out = tmp_path / "out"
    res = CliRunner().invoke(
        app,
        [
            "data",
            "synth",
            "deer",
            "--tools",
            str(deer_dir / "tool.json"),
            "--out",
            str(out),
            "--mode",
            "random",
            "--nosearch-size",
            "0",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["complete"] and report["leaks"] == {"unseen_tool": 0, "test_query": 0}
    assert (out / "test.json").read_bytes() == (deer_dir / "test.json").read_bytes()
    assert (out / "tool.json").read_bytes() == (deer_dir / "tool.json").read_bytes()
    assert sorted(p.name for p in out.iterdir()) == [
        ".toollab-generated",  # the folder's mark: the next run replaces these files
        "report.json",
        "split.json",
        "test.json",
        "tool.json",
        "train.json",
        "valid.json",
    ]
    data = load_dataset(out, "deer", splits="train,test")
    assert Counter(i.category for i in data.instances)["test/Call"] == 445


def test_cli_bad_source_exits_2(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from toollab.cli.main import app

    bad = tmp_path / "tool.json"
    bad.write_text('[{"api_name": "a", "description_for_human": "x", "example": [{"query": 1}]}]')
    res = CliRunner().invoke(
        app, ["data", "synth", "deer", "--tools", str(bad), "--out", str(tmp_path / "o")]
    )
    assert res.exit_code == 2
    assert f"{bad}:1" in res.output and "example 0" in res.output
    assert not (tmp_path / "o").exists()


def test_excluded_queries_never_enter_training(tools: list[deer.DeerTool]) -> None:
    small = tools[:40]
    config = deer.DeerConfig(seen=30, mode="random", nosearch=0)
    plain = deer.build(small, config)
    banned = [r["conversations"][0]["value"] for r in plain.train[:5]]
    guarded = deer.build(small, config, exclude_queries=[f"  {q.upper()} " for q in banned])
    queries = {r["conversations"][0]["value"] for r in [*guarded.train, *guarded.valid]}
    assert queries.isdisjoint(banned)
    assert len(guarded.train) == len(plain.train) - 5
    assert guarded.counts["dropped_test_queries"] == {"train": 5}
