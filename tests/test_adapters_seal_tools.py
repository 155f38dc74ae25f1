"""Seal-Tools adapter: every record of the real data loads, with the upstream counts."""

from __future__ import annotations

import json
import shutil
import warnings
from collections import Counter
from pathlib import Path

import pytest

from toollab.data import DataNote, Dataset, load_dataset, load_tools
from toollab.errors import InputError
from toollab.schema import Decision, Ref


@pytest.fixture(scope="module")
def seal(shared_data: Path) -> Dataset:
    return load_dataset(shared_data / "seal-tools", "seal-tools")


def _split(ds: Dataset, split: str) -> list:
    return [i for i in ds if i.split == split]


def test_counts_match_upstream(seal: Dataset) -> None:
    stats = seal.stats()
    assert stats["instances"] == 1354
    assert stats["tools"] == 4076
    assert stats["by_split"] == {"test_in_domain": 700, "test_out_domain": 654}
    assert stats["nested"] == 30 + 27
    ind, ood = _split(seal, "test_in_domain"), _split(seal, "test_out_domain")
    assert sum(i.category == "nested" for i in ind) == 30
    assert sum(i.category == "nested" for i in ood) == 27
    assert Counter(len(i.gold) for i in ind) == {1: 200, 2: 10, 3: 394, 4: 89, 5: 5, 6: 2}
    assert Counter(i.metadata["difficulty"] for i in ind) == {"easy": 200, "difficult": 500}
    assert Counter(i.metadata["difficulty"] for i in ood) == {"easy": 94, "difficult": 560}
    assert stats["by_decision"] == {"Call": 1354}
    assert all(i.category == "single" for i in seal if len(i.gold) == 1)


def test_gold_round_trips_to_upstream_calling(seal: Dataset) -> None:
    for inst in seal:
        assert [c.to_seal() for c in inst.gold] == inst.metadata["calling"], inst.id


def test_nested_references_are_linked(seal: Dataset) -> None:
    inst = seal.by_id("test_in_domain-difficult-225")
    ref = inst.gold[1].arguments["project_id"]
    assert isinstance(ref, Ref)
    assert (ref.label, ref.call) == ("API_call_0", 0)
    assert inst.nested
    assert inst.gold[1].outputs[0] == "API_call_1"
    # a forward reference stays the upstream string and is reported
    fwd = seal.by_id("test_out_domain-difficult-241")
    assert fwd.category == "nested"
    assert fwd.gold[0].arguments["target"] == "API_call_2"
    assert fwd.metadata["unresolved_refs"] == ["API_call_2"]


def test_tools_become_json_schema(seal: Dataset) -> None:
    tool = seal.tool("analyzeSubstance")
    assert tool is not None
    props = tool.properties
    assert props["substance"]["type"] == "string"
    assert props["priority"]["type"] == "integer"
    assert tool.category == "Chemical Engineering/Forensic engineering"
    assert tool.metadata["raw"]["api_name"] == "analyzeSubstance"
    theory = seal.by_id("test_in_domain-easy-0").tools[0]
    assert theory.returns == {
        "type": "object",
        "properties": {
            "theory": {"type": "string", "description": "The postmodern theory in sociology"}
        },
    }
    types = Counter(p.get("type") for t in seal.tools for p in t.properties.values())
    assert set(types) == {"string", "integer", "number", "boolean"}
    # each instance offers its upstream prompt's 5-tool api_list (dataset_for_finetune/)
    inst = seal.by_id("test_in_domain-difficult-225")
    assert inst.tool_names == [
        "getWildlifeSpecies",
        "getWildlifeInfo",
        "getAvianSpecies",
        "getBirdSpecies",
        "getConservationProjectDetails",
    ]
    assert [g.name for g in inst.gold] == ["getWildlifeSpecies", "getConservationProjectDetails"]
    assert inst.metadata["api_list_available"] is True


def test_return_fields_order_picks_the_field(tmp_path: Path) -> None:
    tools = [
        {
            "api_name": "a",
            "api_description": "",
            "parameters": {},
            "required": [],
            "responses": {"x": {"type": "str"}, "y": {"type": "int"}},
        },
        {
            "api_name": "b",
            "api_description": "",
            "parameters": {"v": {"type": "int"}},
            "required": ["v"],
            "responses": {"z": {"type": "weird"}},
        },
    ]
    (tmp_path / "tool.jsonl").write_text("\n".join(json.dumps(t) for t in tools) + "\n")
    rec = {
        "id": "t-easy-0",
        "query": "q",
        "calling": [
            {"api": "a", "parameters": {}, "responses": ["API_call_0", "API_call_1"]},
            {"api": "b", "parameters": {"v": "API_call_1"}, "responses": ["API_call_2"]},
        ],
    }
    (tmp_path / "mine.jsonl").write_text(json.dumps(rec) + "\n")
    ds = load_dataset(tmp_path, "seal-tools")
    ref = ds[0].gold[1].arguments["v"]
    assert (ref.call, ref.field) == (0, "y")
    assert ds[0].split == "mine" and ds[0].decision is Decision.CALL
    b = ds.tool("b")
    assert b is not None and b.returns is not None
    assert b.returns["properties"]["z"] == {"x-original-type": "weird"}


def test_single_file_and_tool_option(shared_data: Path, tmp_path: Path) -> None:
    src = shared_data / "seal-tools"
    ds = load_dataset(src / "test_out_domain.jsonl", "seal-tools")
    assert len(ds) == 654
    copy = tmp_path / "only.jsonl"
    copy.write_text((src / "test_in_domain.jsonl").read_text().splitlines()[0] + "\n")
    with pytest.raises(InputError, match=r"tool\.jsonl"):
        load_dataset(copy, "seal-tools")
    ds = load_dataset(copy, "seal-tools", tools=str(src / "tool.jsonl"))
    assert len(ds) == 1
    assert len(load_tools(src, "seal-tools")) == 4076


def test_unknown_tool_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "tool.jsonl").write_text(json.dumps({"api_name": "a", "parameters": {}}) + "\n")
    lines = [
        {
            "id": "x-easy-0",
            "query": "q",
            "calling": [{"api": "a", "parameters": {}, "responses": []}],
        },
        {
            "id": "x-easy-1",
            "query": "q",
            "calling": [{"api": "nope", "parameters": {}, "responses": []}],
        },
    ]
    (tmp_path / "test_in_domain.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    with pytest.raises(InputError) as err:
        load_dataset(tmp_path, "seal-tools")
    assert err.value.line == 2
    assert "nope" in err.value.problem
    assert err.value.path is not None and err.value.path.endswith("test_in_domain.jsonl")


def test_splits_option(shared_data: Path) -> None:
    ds = load_dataset(shared_data / "seal-tools", "seal-tools", splits="test_in_domain")
    assert len(ds) == 700
    with pytest.raises(InputError, match="did you mean 'test_in_domain'"):
        load_dataset(shared_data / "seal-tools", "seal-tools", splits="test_in_domain_")


def _prompt_records(src: Path) -> list[dict]:
    """Upstream-style prompt records (``dataset_for_finetune``) for the bundled sample: each
    api_list holds 5 tools, the gold ones first (one list misses a gold tool)."""
    tool_recs = [json.loads(x) for x in (src / "tool.jsonl").read_text().splitlines()]
    by_name = {t["api_name"]: t for t in tool_recs}
    prompts = []
    for rec in map(json.loads, (src / "test_sample.jsonl").read_text().splitlines()):
        names = [c["api"] for c in rec["calling"]]
        if rec["id"].endswith("-4"):
            names = names[:2]  # the list misses a gold tool
        fill = [n for n in by_name if n not in names]
        api_list = [by_name[n] for n in (names + fill)[:5]]
        human = (
            "Please chooose the needed apis ...\n\nInput:\n"
            f'api_list = {api_list!r}\ntask_instruction = "{rec["query"]}"\nOutput:\n'
        )
        prompts.append(
            {
                "id": rec["id"],
                "conversations": [
                    {"from": "human", "value": human},
                    {"from": "gpt", "value": repr(rec["calling"])},
                ],
            }
        )
    return prompts


def _check_upstream_lists(ds: Dataset) -> None:
    for inst in ds:
        assert len(inst.tools) == 5 and inst.metadata["api_list_available"] is True
        assert [t.name for t in inst.tools] == [a["api_name"] for a in inst.metadata["api_list"]]
    assert ds.by_id("test_sample-difficult-4").metadata["gold_not_offered"] == ["setReminder"]
    assert ds.by_id("test_sample-easy-0").metadata["gold_not_offered"] == []
    assert ds.details["offered_tools"] == {"upstream api_list": len(ds), "gold tools only": 0}
    assert ds.details["gold_calls_not_offered"] == 1
    assert ds.notes == []


def test_api_lists_from_prompt_files(tmp_path: Path) -> None:
    from toollab.data import sample_path

    src, _ = sample_path("seal-tools")
    pf = tmp_path / "test_sample.json"
    pf.write_text(json.dumps(_prompt_records(src), indent=1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataNote)  # no note: the offered sets are upstream's
        _check_upstream_lists(load_dataset(src, "seal-tools", api_lists=str(pf)))
    pf.write_text(
        json.dumps([{"id": "x", "conversations": [{"from": "human", "value": "no list"}]}])
    )
    with pytest.raises(InputError, match="api_list"):
        load_dataset(src, "seal-tools", api_lists=str(pf))


def test_upstream_prompt_files_beside_the_data_are_read_by_default(tmp_path: Path) -> None:
    """The upstream folder layout: Seal-Tools_Dataset/{tool.jsonl, test_*.jsonl,
    dataset_for_finetune/test_*.json}."""
    from toollab.data import sample_path

    src, _ = sample_path("seal-tools")
    folder = tmp_path / "Seal-Tools_Dataset"
    folder.mkdir()
    for f in ("tool.jsonl", "test_sample.jsonl"):
        shutil.copy(src / f, folder / f)
    (folder / "dataset_for_finetune").mkdir()
    (folder / "dataset_for_finetune" / "test_sample.json").write_text(
        json.dumps(_prompt_records(src))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataNote)
        ds = load_dataset(folder, "seal-tools")
    _check_upstream_lists(ds)
    assert ds.details["prompt_files"] == [str(folder / "dataset_for_finetune" / "test_sample.json")]
    # asked for on purpose: gold tools only, and a note saying so (not that files are missing)
    with pytest.warns(DataNote, match="offer only the tools their gold calls use"):
        gold_only = load_dataset(folder, "seal-tools", api_lists="none")
    assert all(not i.metadata["api_list_available"] for i in gold_only)
    (message,) = gold_only.notes
    n = len(gold_only)
    assert message == (
        f"Seal-Tools: {n} of {n} instances offer only the tools their gold calls use, not the "
        "upstream prompt's 5-tool api_list, as asked with -o api_lists=none; tool selection is "
        "easier than upstream."
    )


def test_prompt_files_that_miss_some_instances_are_named_in_the_note(tmp_path: Path) -> None:
    from toollab.data import sample_path

    src, _ = sample_path("seal-tools")
    records = _prompt_records(src)
    pf = tmp_path / "test_sample.json"
    pf.write_text(json.dumps(records[:-2]))  # the last two instances are not in the file
    with pytest.warns(DataNote) as caught:
        ds = load_dataset(src, "seal-tools", api_lists=str(pf))
    (message,) = [str(w.message) for w in caught if w.category is DataNote]
    assert message.startswith(f"Seal-Tools: 2 of {len(ds)} instances offer only the tools")
    assert f"their ids are not in the prompt file(s) read ({pf})" in message
    assert "is not beside" not in message and ds.notes == [message]
    assert ds.details["offered_tools"] == {"upstream api_list": len(ds) - 2, "gold tools only": 2}


def test_the_default_is_the_test_splits_with_upstream_offered_tools(shared_data: Path) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DataNote)  # no gold-only note: every id has its api_list
        ds = load_dataset(shared_data / "seal-tools", "seal-tools")
    assert len(ds) == 1354 and {i.split for i in ds} == {"test_in_domain", "test_out_domain"}
    assert ds.details["offered_tools"] == {"upstream api_list": 1354, "gold tools only": 0}
    assert not ds.notes
    dev = load_dataset(shared_data / "seal-tools", "seal-tools", splits="dev")
    assert len(dev) == 700 and {i.split for i in dev} == {"dev"}
    assert dev.details["offered_tools"] == {"upstream api_list": 700, "gold tools only": 0}


def test_gold_only_offer_carries_a_note(shared_data: Path) -> None:
    with pytest.warns(DataNote) as caught:
        ds = load_dataset(shared_data / "seal-tools", "seal-tools", api_lists="none")
    (message,) = [str(w.message) for w in caught if w.category is DataNote]
    assert message.startswith("Seal-Tools: 1354 of 1354 instances offer only the tools their gold")
    assert "as asked with -o api_lists=none" in message
    assert ds.notes == [message] and ds.stats()["notes"] == [message]
    assert ds.details["offered_tools"] == {"upstream api_list": 0, "gold tools only": 1354}
