"""DEER through the CLI on recorded generations: ``toollab eval --agent deer --model replay:FILE``
gives, instance by instance, the verdict DEER's own counting rules give the same generations.

The generations are built from the real test and valid chains: the gold answers, recorded as
upstream decodes them (the marker in the text) and as a backend returns them (the marker
reported apart, ``stop``), NoCall answers with and without their leading ``#``, outputs cut off
by the token limit (``finish_reason`` ``"length"``) or ended without a marker, wrong markers,
wrong tools, and calls without ``#APIResponse#``.  The expected verdicts are computed here from
the documented rules (``src/inference.py: main``, /work/shared/METRICS.md §4), not by toollab's
scorer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app

runner = CliRunner()

#: the first records of each split (the valid split holds the NoSearch chains)
TAKE = {"test": 60, "valid": 100}
SEARCH_OPENING = "#Begin# Need to look up the API Pool. #SearchAPI#"
NO_SEARCH_CHAIN = (
    "#Begin# Don't need to look up the API Pool, I can answer this question with my own "
    "knowledge. #End#"
)
FIGURES = ("no_search", "search", "no_call", "call")


@dataclass(frozen=True)
class Gen:
    """One recorded generation: ``text`` as the backend returned it, the stop string it left out
    (``stop``) and why generation ended (``finish_reason``; None: not recorded)."""

    text: str
    finish_reason: str | None = "stop"
    stop: str | None = None

    def written(self) -> str:
        """What the model generated: upstream decodes the whole sequence, stop string included."""
        return self.text + (self.stop or "")

    def line(self, inst_id: str) -> dict[str, Any]:
        out: dict[str, Any] = {"id": inst_id, "output": self.text}
        if self.finish_reason is not None:
            out["finish_reason"] = self.finish_reason
        if self.stop is not None:
            out["stop"] = self.stop
        return out


# -- the documented rules ------------------------------------------------------------------------


def upstream_verdict(gold: str, rounds: list[Gen]) -> dict[str, bool]:
    """DEER's counters for one item (METRICS.md §4), on what the model generated per round."""
    v = dict.fromkeys(FIGURES, False)
    decoded = rounds[0].written()
    for k in range(2):
        if "#Begin#" not in decoded:
            return v
        if "#End#" in decoded:
            v["no_search"] = "#Begin# Don't need" in gold and "#Begin# Don't need" in decoded
            return v
        if "#NoCallAPI#" in decoded:
            v["search"] = "#Begin# Need to" in gold
            v["no_call"] = "#NoCallAPI#" in gold
            return v
        if "#CallAPI#" in decoded:
            v["search"] = "#Begin# Need to" in gold
            if "#CallAPI#" in gold and "#APIResponse#" in decoded:
                call_api = decoded.split("#CallAPI# ")[-1].split(" #APIResponse#")[0]
                gt_call = gold.split("#CallAPI#")[-1].split("#APIResponse#")[0]
                v["call"] = call_api[: call_api.find("(")] in gt_call
            return v
        if "#SearchAPI#" in decoded and "#SearchAPI#" in gold and k == 0:
            # teacher forcing: the gold chain up to its decision marker, then "#"
            marker = "#CallAPI#" if "#CallAPI#" in gold else "#NoCallAPI#"
            decoded = gold.split(marker)[0] + "#" + rounds[1].written()
            continue
        return v
    return v


def needs_second_round(gold: str, first: Gen) -> bool:
    text = first.written()
    if "#Begin#" not in text or any(m in text for m in ("#End#", "#NoCallAPI#", "#CallAPI#")):
        return False
    return "#SearchAPI#" in text and "#SearchAPI#" in gold


# -- recorded generations ------------------------------------------------------------------------


def gold_call(gold: str) -> str:
    return gold.split("#CallAPI# ")[-1].split(" #APIResponse#")[0]


def other_tool(gold: str) -> str:
    """A pool tool that is not the gold call's (the first one whose name the call lacks)."""
    pool = gold.split("The API Pool including: ")[1].split("]")[0]
    names = [n.strip(" '") for n in pool.strip("[").split(",")]
    call = gold_call(gold)
    return next((n for n in names if n not in call), names[0])


Kind = Callable[[str], "list[Gen] | None"]


def _search(gold: str) -> bool:
    return "#SearchAPI#" in gold


def _call(gold: str) -> bool:
    return "#CallAPI#" in gold


def _gold_round2(gold: str) -> str:
    return f"CallAPI# {gold_call(gold)} #APIResponse#" if _call(gold) else "NoCallAPI#"


def k_gold_marker_in_text(gold: str) -> list[Gen]:
    """Upstream's own record: each round ends in its marker (NoCall without its forced '#')."""
    if not _search(gold):
        return [Gen(NO_SEARCH_CHAIN)]
    return [Gen(SEARCH_OPENING), Gen(_gold_round2(gold))]


def k_gold_marker_reported(gold: str) -> list[Gen]:
    """A backend's record: the marker left out of the text and reported as ``stop``."""
    if not _search(gold):
        return [Gen(NO_SEARCH_CHAIN.removesuffix("#End#"), stop="#End#")]
    second = (
        Gen(f"CallAPI# {gold_call(gold)} ", stop="#APIResponse#")
        if _call(gold)
        else Gen("", stop="NoCallAPI#")
    )
    return [Gen(SEARCH_OPENING.removesuffix("#SearchAPI#"), stop="#SearchAPI#"), second]


def k_gold_no_finish_reason(gold: str) -> list[Gen]:
    """Gold text with no finish_reason recorded at all."""
    return [Gen(g.text, None, g.stop) for g in k_gold_marker_in_text(gold)]


def k_no_call_with_hash(gold: str) -> list[Gen] | None:
    """The model writes '#NoCallAPI#' after the forced '#' (in the text, or reported)."""
    if not _search(gold):
        return None
    return [Gen(SEARCH_OPENING), Gen("#NoCallAPI# There is no proper API")]


def k_no_call_with_hash_reported(gold: str) -> list[Gen] | None:
    if not _search(gold):
        return None
    return [Gen(SEARCH_OPENING), Gen("#", stop="#NoCallAPI#")]


def k_truncated_round1(gold: str) -> list[Gen]:
    """Cut off by the token limit before any marker."""
    text = "#Begin# Need to look up the API Pool. The API Pool including: ['"
    if not _search(gold):
        text = "#Begin# Don't need to look up the API Pool, I can answer this question with my"
    return [Gen(text, "length")]


def k_truncated_round2(gold: str) -> list[Gen] | None:
    if not _search(gold):
        return None
    call = gold_call(gold)
    text = f"CallAPI# {call[: max(1, len(call) // 2)]}" if _call(gold) else "There is no proper"
    return [Gen(SEARCH_OPENING), Gen(text, "length")]


def k_truncated_nocall_word(gold: str) -> list[Gen] | None:
    if not _search(gold):
        return None
    return [Gen(SEARCH_OPENING), Gen("NoCallAPI", "length")]


def k_ended_without_marker_round1(gold: str) -> list[Gen]:
    """Generation ended (end of sequence) with no marker written."""
    if not _search(gold):
        return [Gen(NO_SEARCH_CHAIN.removesuffix(" #End#"))]
    return [Gen("#Begin# Need to look up the API Pool.")]


def k_ended_without_marker_round2(gold: str) -> list[Gen] | None:
    if not _search(gold):
        return None
    text = f"CallAPI# {gold_call(gold)}" if _call(gold) else ""
    return [Gen(SEARCH_OPENING), Gen(text)]


def k_wrong_first_marker(gold: str) -> list[Gen]:
    if not _search(gold):
        return [Gen(SEARCH_OPENING), Gen("NoCallAPI#")]
    return [Gen("#Begin# Need to look up the API Pool. #End#")]


def k_claims_no_search(gold: str) -> list[Gen] | None:
    return [Gen(NO_SEARCH_CHAIN)] if _search(gold) else None


def k_swapped_decision(gold: str) -> list[Gen] | None:
    if not _search(gold):
        return None
    if _call(gold):
        return [Gen(SEARCH_OPENING), Gen("NoCallAPI#")]
    return [Gen(SEARCH_OPENING), Gen(f"CallAPI# {other_tool(gold)}(q='x') #APIResponse#")]


def k_wrong_tool(gold: str) -> list[Gen] | None:
    if not _call(gold):
        return None
    return [Gen(SEARCH_OPENING), Gen(f"CallAPI# {other_tool(gold)}(q='x') #APIResponse#")]


def k_name_without_parenthesis(gold: str) -> list[Gen] | None:
    if not _call(gold):
        return None
    name = gold_call(gold).split("(")[0]
    return [Gen(SEARCH_OPENING), Gen(f"CallAPI# {name} #APIResponse#")]


def k_call_ends_at_end(gold: str) -> list[Gen] | None:
    if not _call(gold):
        return None
    return [Gen(SEARCH_OPENING), Gen(f"CallAPI# {gold_call(gold)} #End#")]


def k_no_begin(gold: str) -> list[Gen]:
    return [Gen("Need to look up the API Pool. #SearchAPI#"), Gen(_gold_round2(gold))]


def k_call_in_round1(gold: str) -> list[Gen] | None:
    if not _call(gold):
        return None
    return [Gen(f"{SEARCH_OPENING[:-12]} #CallAPI# {gold_call(gold)} #APIResponse#")]


def k_text_after_marker(gold: str) -> list[Gen]:
    """The last token ran past the marker ('#SearchAPI# The')."""
    return [Gen(SEARCH_OPENING + " The"), Gen(_gold_round2(gold) + " ")]


KINDS: list[Kind] = [
    k_gold_marker_in_text,
    k_gold_marker_reported,
    k_gold_no_finish_reason,
    k_no_call_with_hash,
    k_no_call_with_hash_reported,
    k_truncated_round1,
    k_truncated_round2,
    k_truncated_nocall_word,
    k_ended_without_marker_round1,
    k_ended_without_marker_round2,
    k_wrong_first_marker,
    k_claims_no_search,
    k_swapped_decision,
    k_wrong_tool,
    k_name_without_parenthesis,
    k_call_ends_at_end,
    k_no_begin,
    k_call_in_round1,
    k_text_after_marker,
]


@dataclass(frozen=True)
class Case:
    id: str
    gold: str
    kind: str
    rounds: list[Gen]

    def expected(self) -> dict[str, bool]:
        return upstream_verdict(self.gold, self.rounds)


def build_cases(shared_deer: Path, folder: Path) -> list[Case]:
    """A DEER folder of the first records of each split, and one recorded generation per
    instance: gold answers for a third of them, the kinds above in turn for the rest."""
    folder.mkdir(parents=True, exist_ok=True)
    cases: list[Case] = []
    n = 0
    for split, take in TAKE.items():
        records = json.loads((shared_deer / f"{split}.json").read_text())[:take]
        (folder / f"{split}.json").write_text(json.dumps(records))
        for index, rec in enumerate(records):
            gold = rec["conversations"][1]["value"]
            kinds = [KINDS[0]] if n % 3 == 0 else [KINDS[(n + j) % len(KINDS)] for j in range(5)]
            n += 1
            for kind in kinds:
                rounds = kind(gold)
                if rounds is not None:
                    break
            else:
                rounds = k_gold_marker_in_text(gold)
                kind = k_gold_marker_in_text
            if needs_second_round(gold, rounds[0]):
                assert len(rounds) == 2, kind.__name__
            else:
                rounds = rounds[:1]
            cases.append(Case(f"{split}-{index}", gold, kind.__name__, rounds))
    return cases


def write_replay(cases: list[Case], path: Path) -> Path:
    with path.open("w") as fh:
        for case in cases:
            for gen in case.rounds:
                fh.write(json.dumps(gen.line(case.id)) + "\n")
    return path


def disagreements(cases: list[Case], per_sample: dict[str, Any]) -> list[str]:
    out = []
    for case in cases:
        row = per_sample[case.id]
        got = {k: bool(row[k]) for k in FIGURES}
        if got != case.expected():
            out.append(f"{case.id} {case.kind}: expected {case.expected()}, got {got}")
    return out


def test_the_rules_count_the_gold_answers() -> None:
    """The rule function itself: each gold record counts, each broken one does not."""
    call_gold = (
        f"{SEARCH_OPENING} The API Pool including: ['CTCP', 'b'], and ... \n{{}} "
        "#CallAPI# CTCP(nctid='N1') #APIResponse#  #End#"
    )
    no_call_gold = f"{SEARCH_OPENING} The API Pool including: ['a', 'b'] #NoCallAPI# no. #End#"
    assert upstream_verdict(call_gold, k_gold_marker_in_text(call_gold))["call"]
    assert upstream_verdict(call_gold, k_gold_marker_reported(call_gold))["call"]
    assert upstream_verdict(no_call_gold, k_gold_marker_in_text(no_call_gold))["no_call"]
    assert upstream_verdict(NO_SEARCH_CHAIN, k_gold_marker_in_text(NO_SEARCH_CHAIN))["no_search"]
    truncated = upstream_verdict(call_gold, k_truncated_round2(call_gold) or [])
    assert truncated == {"no_search": False, "search": True, "no_call": False, "call": False}
    assert not any(
        upstream_verdict(no_call_gold, k_ended_without_marker_round2(no_call_gold) or []).values()
    )
    assert upstream_verdict(call_gold, k_name_without_parenthesis(call_gold) or [])["call"]


def test_cli_replay_agrees_with_the_documented_rules(shared_data: Path, tmp_path: Path) -> None:
    cases = build_cases(shared_data / "deer", tmp_path / "deer")
    kinds = {c.kind for c in cases}
    assert kinds == {k.__name__ for k in KINDS}, "every kind of generation is replayed"
    expected = [c.expected() for c in cases]
    gold_no_call = [e for c, e in zip(cases, expected, strict=True) if "#NoCallAPI#" in c.gold]
    assert any(e["no_call"] for e in gold_no_call) and any(e["call"] for e in expected)
    replay = write_replay(cases, tmp_path / "outputs.jsonl")
    args = ["eval", "--agent", "deer", "-m", f"replay:{replay}", "-d", str(tmp_path / "deer")]
    args += ["-f", "deer", "--json", "--out", str(tmp_path / "run")]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    per_sample = results["per_sample"]["deer"]
    assert len(per_sample) == len(cases) == sum(TAKE.values())
    assert disagreements(cases, per_sample) == []
    # the run's figures are the rules' figures
    nc = [e["no_call"] for c, e in zip(cases, expected, strict=True) if "#NoCallAPI#" in c.gold]
    assert results["metrics"]["deer"]["P_NoCall"] == pytest.approx(sum(nc) / len(nc))
