"""The leakage guard on the real evaluation sets: planted exact and near copies of BFCL,
Seal-Tools test and DEER test queries are dropped, DEER's 77 unseen tools are held out (within
DEER only), environment test combinations and reserved queries never reach training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toollab.data import Dataset, load_dataset
from toollab.envs.generate import generate
from toollab.envs.splits import api_combo, is_test_combo
from toollab.schema import Instance
from toollab.sft import SFTConfig, export_sft, parse_source
from toollab.sft.guard import LeakageGuard, load_eval_set, resolve_guards


@pytest.fixture(scope="module")
def guard(shared_data: Path) -> LeakageGuard:
    sets = [load_eval_set(n, shared_data / n) for n in ("bfcl", "seal-tools", "deer")]
    return LeakageGuard(sets)


@pytest.fixture(scope="module")
def bfcl(shared_data: Path) -> list[Instance]:
    return load_dataset(shared_data / "bfcl", "bfcl", categories="simple_python").instances


def planted(inst: Instance, query: str, iid: str = "planted") -> Instance:
    return inst.model_copy(update={"id": iid, "query": query, "messages": [], "source": "custom"})


def test_exact_and_near_copies_of_bfcl_are_dropped(
    guard: LeakageGuard, bfcl: list[Instance]
) -> None:
    inst = bfcl[0]  # "Find the area of a triangle with a base of 10 units and height of 5 units."
    assert guard.reason(planted(inst, inst.query.upper() + "  ")) == ("bfcl", "same query")
    near = inst.query.replace("Find", "Please find").replace("5 units", "5 units!")
    found = guard.reason(planted(inst, near))
    assert found is not None and found[0] == "bfcl" and found[1].startswith("near query")
    other = planted(inst, "Book a table for two at an Italian restaurant tonight.")
    assert guard.reason(other) is None


def test_near_query_with_the_same_tools(guard: LeakageGuard, bfcl: list[Instance]) -> None:
    inst = bfcl[0]
    reworded = "Compute the area of the triangle that has a base of 10 units and height of 5 units."
    found = guard.reason(planted(inst, reworded))
    assert found is not None and "same tools" in found[1]
    # the same words with other tools are kept: only near-identical queries drop on text alone
    assert guard.reason(planted(inst, reworded).model_copy(update={"gold": []})) is None


def test_seal_and_deer_test_queries_are_dropped(guard: LeakageGuard, shared_data: Path) -> None:
    seal = load_dataset(shared_data / "seal-tools", "seal-tools", splits="test_out_domain")
    deer = load_dataset(shared_data / "deer", "deer", splits="test")
    s = seal.instances[3]
    assert guard.reason(planted(s, s.query + " Thanks.")) is not None
    d = deer.instances[5]
    found = guard.reason(planted(d, d.query).model_copy(update={"tools": [], "gold": []}))
    assert found == ("deer", "same query")


def test_deer_unseen_tools_are_held_out_within_deer(guard: LeakageGuard, shared_data: Path) -> None:
    deer = load_dataset(shared_data / "deer", "deer", splits="test")
    unseen = {t.name for i in deer.instances for t in i.tools}
    assert len(unseen) == 77  # METHODS.md §1.2: the test pools are the unseen tools
    assert {n for (src, n) in guard.held_out if src == "deer"} == unseen
    inst = deer.instances[0].model_copy(update={"query": "something unrelated entirely", "id": "x"})
    found = guard.reason(inst)
    assert found is not None and found[1].startswith("uses a held-out tool")
    # an environment's own "search" tool is not DEER's unseen "search"
    env_inst = generate("home_search", "train", 5, 0)[0]
    assert "search" in unseen and guard.reason(env_inst) is None


def test_env_test_combinations_and_reserved_queries(guard: LeakageGuard) -> None:
    tests = [i for i in generate("weather", "test", 40, 0) if i.gold]
    leaked = [i for i in tests if is_test_combo("weather", api_combo(list(i.gold)), 0)]
    assert leaked
    found = guard.reason(leaked[0])
    assert found is not None and found[1].startswith("test API combination")
    nocalls = [i for i in generate("weather", "test", 60, 0) if not i.gold]
    assert nocalls and all(guard.reason(i) is not None for i in nocalls)
    assert all(guard.reason(i) is None for i in generate("weather", "train", 40, 0))


def test_export_drops_a_planted_bfcl_query_and_reports_it(
    tmp_path: Path, shared_data: Path, bfcl: list[Instance]
) -> None:
    keep = planted(bfcl[1], "Tell me the weather in a city I have not named yet.", "keep")
    leak = planted(bfcl[7], bfcl[7].query.rstrip(".?") + ", please?", "leak")
    src = Dataset(name="planted", format="toollab", instances=[keep, leak]).write_jsonl(
        tmp_path / "planted.jsonl"
    )
    cfg = SFTConfig(
        sources=[parse_source(f"toollab:{src}")],
        out=tmp_path / "out" / "train.jsonl",
        guards=[("bfcl", shared_data / "bfcl")],
        unguarded=["seal-tools", "deer"],
        count_tokens=False,
    )
    result = export_sft(cfg)
    ids = [json.loads(line)["id"] for line in result.path.read_text().splitlines()]
    assert [i.split("#")[-1] for i in ids] == ["keep"]
    assert sum(result.figures["dropped"].values()) == 1
    card = result.card.read_text()
    assert "bfcl: near query" in card or "bfcl: same query" in card
    assert "leak" in card


def test_resolve_guards_never_unguarded_by_accident(tmp_path: Path, shared_data: Path) -> None:
    from toollab.errors import UsageError

    with pytest.raises(UsageError, match="--guard deer=PATH"):
        resolve_guards(["bfcl=x", "seal-tools=y"], None, [])
    got = dict(resolve_guards([], shared_data, ["deer"]))
    assert got == {"bfcl": shared_data / "bfcl", "seal-tools": shared_data / "seal-tools"}
    with pytest.raises(UsageError, match="unknown set"):
        resolve_guards(["nope=x"], None, [])
