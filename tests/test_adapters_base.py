"""The adapter registry, the JSON readers, Dataset and the bundled samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toollab.data import (
    Dataset,
    available_formats,
    get_adapter,
    load_dataset,
    load_sample,
    sample_path,
)
from toollab.data.jsonl import iter_jsonl, read_records
from toollab.errors import InputError, UsageError
from toollab.schema import Instance


def test_registry_and_did_you_mean() -> None:
    assert {"seal-tools", "bfcl", "deer", "tooleyes", "toollab"} <= set(available_formats())
    assert get_adapter("Seal_Tools").name == "seal-tools"
    assert get_adapter("sealtools").name == "seal-tools"
    with pytest.raises(UsageError, match="did you mean 'tooleyes'"):
        get_adapter("toolyes")
    with pytest.raises(UsageError, match="known formats"):
        get_adapter("zzz")


def test_unknown_option_and_missing_path(tmp_path: Path) -> None:
    path, _ = sample_path("seal-tools")
    with pytest.raises(UsageError, match="did you mean 'splits'"):
        load_dataset(path, "seal-tools", split="x")
    with pytest.raises(InputError) as err:
        load_dataset(tmp_path / "absent", "bfcl")
    assert err.value.path is not None and err.value.path.endswith("absent")


def test_malformed_jsonl_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text('{"a": 1}\n\n{"a": 2}\n{"a": \n')
    with pytest.raises(InputError) as err:
        list(iter_jsonl(f))
    assert (err.value.path, err.value.line) == (str(f), 4)
    assert "invalid JSON" in err.value.problem
    assert err.value.format().startswith(f"{f}:4: ")


def test_read_records_json_array_lines(tmp_path: Path) -> None:
    f = tmp_path / "a.json"
    f.write_text('[\n  {"x": 1},\n  {"x": [2,\n 3]},\n\n  {"x": 4}\n]\n')
    recs = list(read_records(f))
    assert [(r.data["x"], r.line, r.index) for r in recs] == [(1, 2, 0), ([2, 3], 3, 1), (4, 6, 2)]
    f.write_text('[\n  {"x": 1},\n  {"x": }\n]')
    with pytest.raises(InputError) as err:
        list(read_records(f))
    assert err.value.line == 3
    f.write_text('[\n  {"x": 1}\n  {"x": 2}\n]')
    with pytest.raises(InputError, match="expected ',' or ']'") as err:
        list(read_records(f))
    assert err.value.line == 3
    lines = tmp_path / "b.json"
    lines.write_text('{"x": 1}\n{"x": 2}')
    assert [r.line for r in read_records(lines)] == [1, 2]
    pretty = tmp_path / "c.json"
    pretty.write_text('{\n "x": 1\n}\n')
    assert [r.data for r in read_records(pretty)] == [{"x": 1}]


def test_malformed_line_inside_a_dataset(tmp_path: Path) -> None:
    src, _ = sample_path("seal-tools")
    (tmp_path / "tool.jsonl").write_text((src / "tool.jsonl").read_text())
    lines = (src / "test_sample.jsonl").read_text().splitlines()
    lines[2] = lines[2][:-5]
    (tmp_path / "test_in_domain.jsonl").write_text("\n".join(lines))
    with pytest.raises(InputError) as err:
        load_dataset(tmp_path, "seal-tools")
    assert err.value.line == 3 and err.value.path.endswith("test_in_domain.jsonl")


def test_samples_load() -> None:
    seal = load_sample("seal-tools")
    assert len(seal) == 5
    assert seal.stats()["by_category"] == {"multiple": 2, "nested": 1, "single": 2}
    bfcl = load_sample("bfcl")
    assert bfcl.stats()["by_decision"] == {"Call": 3, "NoCall": 1}
    with pytest.raises(UsageError, match="did you mean 'bfcl'"):
        sample_path("bfc")


def test_fingerprint_and_subsets() -> None:
    ds = load_sample("seal-tools")
    again = load_sample("seal-tools")
    assert ds.fingerprint == again.fingerprint
    assert len(ds.fingerprint) == 16
    head = ds.head(2)
    assert len(head) == 2 and head.fingerprint != ds.fingerprint
    assert head.tools is ds.tools
    nested = ds.filter(lambda i: i.nested)
    assert nested.ids == ["test_sample-difficult-3"]
    with pytest.raises(InputError, match="no instance"):
        ds.by_id("missing")
    with pytest.raises(InputError, match="duplicate instance id"):
        Dataset(name="x", format="toollab", instances=[ds[0], ds[0]])


def test_native_round_trip(tmp_path: Path) -> None:
    ds = load_sample("seal-tools")
    out = ds.write_jsonl(tmp_path / "inst.jsonl")
    back = load_dataset(out, "toollab")
    assert back.ids == ds.ids
    assert back.by_id("test_sample-difficult-3") == ds.by_id("test_sample-difficult-3")
    assert back.fingerprint == ds.fingerprint
    first = json.loads(out.read_text().splitlines()[3])
    assert first["gold"][1]["arguments"]["book_id"] == {"$ref": "API_call_0"}
    (tmp_path / "bad.jsonl").write_text(json.dumps({"id": "a"}) + "\n")
    with pytest.raises(InputError) as err:
        load_dataset(tmp_path / "bad.jsonl", "toollab")
    assert err.value.line == 1 and "query" in err.value.problem
    assert isinstance(back[0], Instance)
