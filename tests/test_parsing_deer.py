"""The ``deer`` output format on DEER's real decision chains."""

from __future__ import annotations

import json
from pathlib import Path

from toollab.parsing import ParseStatus, parse, repair_quotes
from toollab.schema import Decision

NO_SEARCH = "#Begin# Don't need to look up the API Pool, I can answer this question with my own knowledge. #End#"


def _gold(shared_data: Path) -> list[str]:
    items = json.loads((shared_data / "deer" / "test.json").read_text(encoding="utf-8"))
    items += json.loads((shared_data / "deer" / "valid.json").read_text(encoding="utf-8"))
    return [x["conversations"][1]["value"] for x in items]


def test_every_real_gold_chain_reads_back(shared_data: Path) -> None:
    counts = {Decision.CALL: 0, Decision.NO_CALL: 0, Decision.NO_SEARCH: 0}
    repaired = 0
    for chain in _gold(shared_data):
        r = parse(chain, "deer")
        expected = (
            Decision.CALL
            if "#CallAPI#" in chain
            else Decision.NO_CALL
            if "#NoCallAPI#" in chain
            else Decision.NO_SEARCH
        )
        assert r.decision is expected, chain[-200:]
        counts[expected] += 1
        if expected is Decision.CALL:
            assert r.status is ParseStatus.CALLS, r.error
            call_text = r.details["call_text"]
            assert chain.split("#CallAPI# ")[1].split(" #APIResponse#")[0] == call_text
            assert r.calls[0].name == r.details["call_name"] == call_text[: call_text.find("(")]
            repaired += bool(r.details.get("repaired"))
        else:
            assert r.status is ParseStatus.NO_CALL
    assert counts == {Decision.CALL: 971, Decision.NO_CALL: 644, Decision.NO_SEARCH: 193}
    assert repaired == 16  # values with unescaped apostrophes or raw line breaks


def test_first_round_call_and_arguments() -> None:
    r = parse(
        "#Begin# Need to look up the API Pool. #SearchAPI# pool #CallAPI# CTCP(nctid='NCT03780233') #APIResponse#",
        "deer",
    )
    assert r.decision is Decision.CALL
    assert (r.calls[0].name, r.calls[0].arguments) == ("CTCP", {"nctid": "NCT03780233"})
    assert r.thought == "Need to look up the API Pool."
    assert r.details["upstream_branch"] == "#CallAPI#"


def test_no_search_no_call_and_second_round() -> None:
    r = parse(NO_SEARCH, "deer")
    assert r.status is ParseStatus.NO_CALL and r.decision is Decision.NO_SEARCH
    assert r.details["upstream_no_search"] is True and r.details["upstream_branch"] == "#End#"
    r = parse(
        "#Begin# Need to look up the API Pool. #SearchAPI# x #NoCallAPI# There is no proper API. #End#",
        "deer",
    )
    assert r.decision is Decision.NO_CALL and r.text == "There is no proper API."
    r = parse("#Begin# Need to look up the API Pool. #SearchAPI#", "deer")
    assert r.status is ParseStatus.NO_CALL and r.decision is None
    assert r.details["needs_second_round"] is True


def test_errors_keep_what_was_decided() -> None:
    r = parse("Need to look up the API Pool. #SearchAPI#", "deer")
    assert r.status is ParseStatus.ERROR and "#Begin#" in (r.error or "")
    r = parse("#Begin# hmm", "deer")
    assert r.status is ParseStatus.ERROR and "no decision marker" in (r.error or "")
    r = parse("#Begin# Need. #SearchAPI# p #CallAPI# CTCP nctid #APIResponse#", "deer")
    assert r.status is ParseStatus.ERROR and r.decision is Decision.CALL
    assert r.details["call_text"] == "CTCP nctid" and r.details["call_name"] == "CTCP ncti"
    r = parse("#Begin# Need. #SearchAPI# p #CallAPI#  #APIResponse#", "deer")
    assert r.status is ParseStatus.ERROR and "empty call" in (r.error or "")


def test_call_without_api_response_marker() -> None:
    r = parse("#Begin# Need. #SearchAPI# p #CallAPI# charity(name='American Red Cross')", "deer")
    assert r.calls[0].arguments == {"name": "American Red Cross"}
    assert r.details["has_api_response"] is False


def test_repair_quotes() -> None:
    assert repair_quotes("f(q='What's up', n=1)") == "f(q='What\\'s up', n=1)"
    assert repair_quotes("f(q='a\nb')") == "f(q='a\\nb')"
    assert repair_quotes("f(q='fine')") == "f(q='fine')"
