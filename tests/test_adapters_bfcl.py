"""BFCL adapter: questions + possible answers, BFCL types → JSON Schema."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from toollab.data import Dataset, load_dataset
from toollab.data.adapters.bfcl import canonical_value, convert_schema
from toollab.data.types import unknown_type_names
from toollab.errors import InputError
from toollab.schema import Decision


@pytest.fixture(scope="module")
def bfcl(shared_data: Path) -> Dataset:
    return load_dataset(shared_data / "bfcl", "bfcl")


def test_counts_match_upstream(bfcl: Dataset) -> None:
    stats = bfcl.stats()
    assert stats["by_category"] == {
        "simple_python": 400,
        "multiple": 200,
        "parallel": 200,
        "parallel_multiple": 200,
        "irrelevance": 240,
    }
    assert stats["instances"] == 1240
    assert stats["by_decision"] == {"Call": 1000, "NoCall": 240}
    irrelevance = [i for i in bfcl if i.category == "irrelevance"]
    assert all(not i.gold and i.decision is Decision.NO_CALL for i in irrelevance)
    assert all(len(i.gold) == 1 for i in bfcl if i.category in ("simple_python", "multiple"))
    assert all(len(i.gold) >= 2 for i in bfcl if i.category == "parallel")


def test_gold_keeps_acceptable_values_verbatim(bfcl: Dataset, shared_data: Path) -> None:
    answers = {}
    for line in (shared_data / "bfcl/possible_answer/BFCL_v4_simple_python.json").open():
        rec = json.loads(line)
        answers[rec["id"]] = rec["ground_truth"]
    for inst in bfcl:
        if inst.category != "simple_python":
            continue
        ((fn, params),) = answers[inst.id][0].items()
        call = inst.gold[0]
        assert call.name == fn
        assert call.acceptable == params
        for k, values in params.items():
            options = [v for v in values if v != ""]
            if options:
                assert call.arguments[k] == canonical_value(options[0])
            else:
                assert k not in call.arguments
        assert inst.metadata["ground_truth"] == answers[inst.id]
    first = bfcl.by_id("simple_python_0").gold[0]
    # dict-valued answers are {key: [acceptable]} and unwrap to plain values
    assert canonical_value({"math": [90], "art": ["", 5], "pe": [""]}) == {"math": 90, "art": 5}
    assert canonical_value([{"a": [1]}, {"a": [2, 3]}]) == [{"a": 1}, {"a": 2}]
    assert canonical_value([3, 5]) == [3, 5]
    assert first.arguments == {"base": 10, "height": 5, "unit": "units"}
    assert first.acceptable["unit"] == ["units", ""]


def test_query_messages_and_raw_docs(bfcl: Dataset) -> None:
    inst = bfcl.by_id("parallel_0")
    assert inst.query.startswith("Play songs from the artists Taylor Swift")
    assert inst.messages == [{"role": "user", "content": inst.query}]
    assert inst.tools[0].metadata["raw"] == inst.metadata["function"][0]
    assert inst.tools[0].parameters["type"] == "object"
    assert inst.metadata["language"] == "python"


def test_type_conversion() -> None:
    raw = {
        "type": "dict",
        "properties": {
            "a": {"type": "float"},
            "b": {"type": "tuple", "items": {"type": "integer"}},
            "c": {"type": "any", "description": "x"},
            "d": {"type": "dict", "properties": {"e": {"type": "boolean"}}},
            "f": {
                "type": "array",
                "items": {"type": "dict", "properties": {"g": {"type": "string"}}},
            },
        },
        "required": ["a"],
    }
    out = convert_schema(raw)
    assert out["type"] == "object"
    p = out["properties"]
    assert p["a"]["type"] == "number"
    assert p["b"] == {"type": "array", "x-original-type": "tuple", "items": {"type": "integer"}}
    assert "type" not in p["c"] and p["c"]["x-original-type"] == "any"
    assert p["d"]["properties"]["e"] == {"type": "boolean"}
    assert p["f"]["items"]["type"] == "object"
    assert raw["type"] == "dict"  # the input is not changed
    # BFCL's own names are known; only a misspelt one is flagged
    assert unknown_type_names(out) == []
    typo = convert_schema({"type": "dict", "properties": {"n": {"type": "intger"}}})
    assert typo["properties"]["n"] == {"x-original-type": "intger"}
    assert unknown_type_names(typo) == [("parameters.properties.n", "intger")]


def test_misspelt_types_in_a_question_file_are_counted(tmp_path: Path) -> None:
    doc = {
        "name": "f",
        "description": "d",
        "parameters": {"type": "dict", "properties": {"x": {"type": "strin"}}, "required": []},
    }
    rec = {"id": "irrelevance_0", "question": [[{"role": "user", "content": "hi"}]]}
    (tmp_path / "BFCL_v4_irrelevance.json").write_text(json.dumps({**rec, "function": [doc]}))
    stats = load_dataset(tmp_path, "bfcl").stats()
    assert stats["unknown_types"]["names"] == {"strin": 1}
    assert stats["unknown_types"]["places"] == ["tool 'f': parameters.properties.x: 'strin'"]


def test_every_doc_type_is_json_schema(bfcl: Dataset) -> None:
    seen: Counter[str] = Counter()

    def walk(schema: dict) -> None:
        if "type" in schema:
            seen[schema["type"]] += 1
        for sub in (schema.get("properties") or {}).values():
            walk(sub)
        if isinstance(schema.get("items"), dict):
            walk(schema["items"])

    for tool in bfcl.tools:
        walk(tool.parameters)
    assert set(seen) <= {"object", "number", "integer", "string", "array", "boolean"}


def test_categories_option_and_errors(shared_data: Path, tmp_path: Path) -> None:
    ds = load_dataset(shared_data / "bfcl", "bfcl", categories="parallel,irrelevance")
    assert len(ds) == 440
    with pytest.raises(InputError, match="did you mean 'parallel'"):
        load_dataset(shared_data / "bfcl", "bfcl", categories="paralel")
    q = tmp_path / "BFCL_v4_simple_python.json"
    q.write_text((shared_data / "bfcl/BFCL_v4_simple_python.json").read_text().splitlines()[0])
    with pytest.raises(InputError, match="possible-answer"):
        load_dataset(tmp_path, "bfcl")
    single = load_dataset(shared_data / "bfcl/BFCL_v4_multiple.json", "bfcl")
    assert len(single) == 200 and single[0].gold
