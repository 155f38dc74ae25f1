"""The ``seal`` output format and Seal-Tools' own reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toollab.parsing import ParseStatus, parse, seal_upstream_parse
from toollab.schema import ToolCall, link_calls


def _records(shared_data: Path, name: str) -> list[dict]:
    with open(shared_data / "seal-tools" / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _format_acc(records: list[dict], render) -> float:
    ok = sum(seal_upstream_parse(render(r["calling"])) != -1 for r in records)
    return ok / len(records)


def test_upstream_fixed_points_on_real_gold(shared_data: Path) -> None:
    """Format ACC of gold outputs under the upstream reader, as measured with Seal-Tools' code."""
    ind = _records(shared_data, "test_in_domain.jsonl")
    outd = _records(shared_data, "test_out_domain.jsonl")
    as_json = json.dumps
    as_literal = str
    assert _format_acc(ind, as_json) == 1.0
    assert round(_format_acc(outd, as_json), 5) == 0.99694
    assert round(_format_acc(ind, as_literal), 5) == 0.99571
    assert round(_format_acc(outd, as_literal), 5) == 0.99541


def test_tolerant_parser_reads_every_real_gold_rendering(shared_data: Path) -> None:
    for name in ("test_in_domain.jsonl", "test_out_domain.jsonl"):
        for rec in _records(shared_data, name):
            gold = [
                ToolCall(name=c["api"], arguments=c["parameters"], outputs=c["responses"])
                for c in rec["calling"]
            ]
            for text in (json.dumps(rec["calling"]), str(rec["calling"])):
                r = parse("Output:\n" + text, "seal")
                assert r.status is ParseStatus.CALLS, (rec["id"], r.error)
                assert r.calls == gold, rec["id"]


def test_nested_reference_strings_are_kept_and_linkable() -> None:
    text = (
        "[{'api': 'getWildlifeSpecies', 'parameters': {'habitat': 'forest', 'location': 'Africa'}, "
        "'responses': ['API_call_0']}, {'api': 'getConservationProjectDetails', "
        "'parameters': {'project_id': 'API_call_0'}, 'responses': ['API_call_1', 'API_call_2']}]"
    )
    r = parse(text, "seal")
    assert r.calls[1].arguments == {"project_id": "API_call_0"}
    assert r.calls[0].outputs == ["API_call_0"]
    linked = link_calls(r.calls)
    assert linked[1].refs[0].call == 0


def test_upstream_apostrophe_in_value_is_a_format_error() -> None:
    text = '[{"api": "getFilmDetails", "parameters": {"title": "Bridget Jones\'s Diary"}, "responses": ["API_call_0"]}]'
    assert seal_upstream_parse(text) == -1
    assert parse(text, "seal").calls[0].arguments == {"title": "Bridget Jones's Diary"}


def test_upstream_missing_responses_key_parses_if_the_word_occurs() -> None:
    no_key = '[{"api": "playSong", "parameters": {"song": "Midnight City"}}]'
    assert seal_upstream_parse(no_key) == -1
    with_word = '[{"api": "playSong", "parameters": {"song": "responses"}}]'
    assert seal_upstream_parse(with_word) == [
        {"api": "playSong", "parameters": {"song": "responses"}}
    ]
    r = parse(no_key, "seal")
    assert r.status is ParseStatus.CALLS and r.calls[0].outputs == []


def test_upstream_quirks() -> None:
    good = "[{'api': 'a', 'parameters': {}, 'responses': []}]"
    assert seal_upstream_parse("prefix\n" + good + " trailing") == [
        {"api": "a", "parameters": {}, "responses": []}
    ]
    # newlines are deleted, even inside values
    assert seal_upstream_parse(
        '[{"api": "a", "parameters": {"x": "l1\nl2"}, "responses": []}]'
    ) == [{"api": "a", "parameters": {"x": "l1l2"}, "responses": []}]
    # the bracket counter ignores strings: a "]" inside a value cuts the list short
    assert seal_upstream_parse('[{"api": "a", "parameters": {"x": "]"}, "responses": []}]') == -1
    # unbalanced → empty text → -1; True is not JSON
    assert seal_upstream_parse('[{"api": "a", "parameters": {}, "responses": []}') == -1
    assert seal_upstream_parse("[{'api': 'a', 'parameters': {'x': True}, 'responses': []}]") == -1
    assert seal_upstream_parse("no calls here") == -1
    assert seal_upstream_parse(None) == -1  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "status", "reason"),
    [
        ("I don't know which API to use.", ParseStatus.NO_CALL, None),
        ("[]", ParseStatus.NO_CALL, None),
        ("[{'api': 'a', 'parameters': {'x': 1}, 'responses': [", ParseStatus.ERROR, "never closed"),
        (
            "[{'api': 'a', 'parameters': 'x=1', 'responses': []}]",
            ParseStatus.ERROR,
            "must be an object",
        ),
        ("[{'api': 'a', 'parameters': {'x': y}}]", ParseStatus.ERROR, "neither JSON"),
        ("[{'api': 3, 'parameters': {}}]", ParseStatus.ERROR, "non-empty string"),
        ("{'api': 'a', 'parameters': {'x': 1}}", ParseStatus.CALLS, None),
    ],
)
def test_tolerant_parser_cases(text: str, status: ParseStatus, reason: str | None) -> None:
    r = parse(text, "seal")
    assert r.status is status, r
    if reason:
        assert r.error is not None and reason in r.error
