"""ToolEyes adapter: scenario queries with the tools of their library folder."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from toollab.data import Dataset, load_dataset, load_tools
from toollab.errors import InputError


@pytest.fixture(scope="module")
def eyes(shared_data: Path) -> Dataset:
    return load_dataset(shared_data / "tooleyes", "tooleyes")


def test_counts_match_upstream(eyes: Dataset) -> None:
    stats = eyes.stats()
    assert stats["instances"] == 382
    assert stats["by_category"] == {
        "TG": 58,
        "DU": 49,
        "RS": 56,
        "PL": 70,
        "IR": 54,
        "AM": 45,
        "FT": 50,
    }
    assert stats["by_decision"] == {"none": 382}
    assert stats["gold_calls"] == 0
    # the headline is the README's 568 tool schemas; the control actions are listed apart
    assert stats["tools"] == 568
    assert not any(t.metadata.get("control") for t in eyes.tools)
    details = stats["details"]
    assert details["config_files"] == 95
    assert details["real_tools"] == 568
    assert details["control_tools"] == {"ask_to_user": 95, "finish": 95}
    assert details["tool_entries"] == 568 + 2 * 95
    assert details["distinct_tools"] == 567  # classify_grocery_product is listed twice
    assert details["distinct_tool_names"] == 530
    assert stats["unknown_types"]["count"] == 0


def test_tools_and_tool_document(eyes: Dataset, shared_data: Path) -> None:
    inst = eyes.by_id("TG-1")
    assert inst.query.startswith("I'm testing a system that needs multiple UUIDs")
    assert inst.tool_names[-2:] == ["ask_to_user", "finish"]
    assert inst.metadata["control_tools"] == ["ask_to_user", "finish"]
    assert inst.tool("finish").metadata["control"] is True
    assert "control" not in inst.tools[0].metadata
    assert inst.tools[0].category == "Random/Random"
    assert inst.gold == [] and inst.decision is None
    # the tool document is exactly what the upstream processed prompts embed
    processed = json.loads(
        (shared_data / "tooleyes/Test_Data/scenario_data_zero_processed.json").read_text()
    )
    for rec, inst in zip(processed, eyes, strict=True):
        system = rec["conversations"][0]["value"]
        assert inst.metadata["tool_document"] in system
        assert rec["conversations"][1]["value"] == inst.query


def test_options_and_tool_pool(shared_data: Path) -> None:
    raw = shared_data / "tooleyes/Test_Data/scenario_data_raw.json"
    ds = load_dataset(raw, "tooleyes", scenarios="TG,FT")
    assert Counter(i.category for i in ds) == {"TG": 58, "FT": 50}
    with pytest.raises(InputError, match="did you mean 'PL'"):
        load_dataset(raw, "tooleyes", scenarios="PLL")
    tools = load_tools(shared_data / "tooleyes", "tooleyes")
    assert len(tools) == 568 and not any(t.metadata.get("control") for t in tools)
    names = [t.name for t in tools if t.category == "Food/spoonacular_products"]
    assert names.count("classify_grocery_product") == 2  # as the config file lists it


def test_missing_tool_folder(tmp_path: Path) -> None:
    (tmp_path / "Test_Data").mkdir()
    (tmp_path / "Tool_Library").mkdir()
    (tmp_path / "Test_Data/scenario_data_raw.json").write_text(
        json.dumps(
            [{"query": "q", "path": "ToolEyes/Tool_Library/X/Y", "scenario": "TG"}], indent=2
        )
    )
    with pytest.raises(InputError) as err:
        load_dataset(tmp_path, "tooleyes")
    assert err.value.line == 2 and "Tool_Library/X/Y" in err.value.problem


def test_no_answer_key_so_no_error_class(eyes: Dataset) -> None:
    """ToolEyes publishes no gold answers: a call is not "a call where none was due", and no
    query gets an error class (its figures are the rule-based and judged scores)."""
    from toollab.eval.metrics.errors import classify_all, has_answer_key
    from toollab.schema import ToolCall
    from toollab.schema.record import ParseResult, ParseStatus, Prediction

    assert all(not i.reference for i in eyes.instances)
    assert not any(has_answer_key(i) for i in eyes.instances)
    first = eyes.instances[0]
    call = ToolCall(name=first.tools[0].name, arguments={})
    preds = [
        Prediction(
            id=first.id,
            raw="...",
            parsed=ParseResult(status=ParseStatus.CALLS, calls=[call]),
        )
    ]
    assert classify_all(preds, {first.id: first}) == {}
    # a dataset with an answer key is still classified
    keyed = first.model_copy(update={"reference": True})
    assert classify_all(preds, {first.id: keyed})[first.id].kind.value == "unexpected_call"
