"""Every schema built for a real tool set (BFCL all categories + irrelevance, Seal-Tools) compiles
to a llama.cpp grammar that llama.cpp itself accepts."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from toollab.data import load_dataset
from toollab.models.constrain import build_schema, call_schema, check_grammar, gbnf_grammar
from toollab.models.policy import CallPolicy
from toollab.schema import Instance, Tool

# the richest shape: a decision first, a stated count, arrays of calls; every other shape is
# made of the same parts
POLICY = CallPolicy(allow_no_call=True, max_calls=4, declare_count=True)


@pytest.fixture(scope="module")
def instances(shared_data: Path) -> dict[str, list[Instance]]:
    return {fmt: load_dataset(shared_data / fmt, fmt).instances for fmt in ("bfcl", "seal-tools")}


def tool_sets(instances: dict[str, list[Instance]]) -> dict[str, list[list[Tool]]]:
    out: dict[str, list[list[Tool]]] = {}
    for fmt, items in instances.items():
        seen: set[str] = set()
        sets: list[list[Tool]] = []
        for inst in items:
            key = json.dumps([t.to_openai() for t in inst.tools], sort_keys=True)
            if inst.tools and key not in seen:
                seen.add(key)
                sets.append(inst.tools)
        out[fmt] = sets
    return out


def test_gold_calls_fit_their_call_schema(instances: dict[str, list[Instance]]) -> None:
    """Normalisation keeps what the tools allow: nearly every gold call validates.  The rest
    are the datasets' own type slips (Seal-Tools "40.7" for a number, BFCL answer lists)."""
    for fmt, floor in (("bfcl", 0.98), ("seal-tools", 0.95)):
        ok = total = 0
        for inst in instances[fmt]:
            if not inst.gold:
                continue
            validator = jsonschema.Draft202012Validator(call_schema(inst.tools))
            for gold in inst.gold:
                total += 1
                call = {"name": gold.name, "arguments": gold.model_dump(mode="json")["arguments"]}
                ok += validator.is_valid(call)
        assert total > 1500 and ok / total >= floor, (fmt, ok, total)


@pytest.fixture(scope="module")
def vocab(bundled_gguf: Path):  # type: ignore[no-untyped-def]
    import llama_cpp

    return llama_cpp.Llama(model_path=str(bundled_gguf), vocab_only=True, verbose=False)


def test_every_tool_set_compiles(instances: dict[str, list[Instance]], vocab) -> None:  # type: ignore[no-untyped-def]
    sets = tool_sets(instances)
    assert len(sets["bfcl"]) > 1000 and len(sets["seal-tools"]) > 1000
    failures = []
    compiled = 0
    for source, items in sets.items():
        for tools in items:
            try:
                check_grammar(build_schema(tools, POLICY), vocab)
                compiled += 1
            except Exception as exc:
                failures.append(f"{source} {[t.name for t in tools]}: {exc}")
    assert not failures, f"{len(failures)} failed, first: {failures[:3]}"
    assert compiled == len(sets["bfcl"]) + len(sets["seal-tools"])


def test_grammar_pins_tool_names_and_caps_strings(vocab) -> None:  # type: ignore[no-untyped-def]
    tools = [
        Tool(name="alpha_tool"),
        Tool(
            name="beta.tool", parameters={"type": "object", "properties": {"q": {"type": "string"}}}
        ),
    ]
    gbnf = gbnf_grammar(build_schema(tools, CallPolicy.single()))
    assert '"\\"alpha_tool\\""' in gbnf and '"\\"beta.tool\\""' in gbnf
    capped = check_grammar(
        build_schema(tools, CallPolicy(max_calls=2, max_string_length=20)), vocab
    )
    assert "char" in capped and len(capped) > len(gbnf)


def test_environment_tools_compile_with_their_patterns(vocab) -> None:  # type: ignore[no-untyped-def]
    """The built-in environments' schemas (some with string patterns) compile, and a pattern
    llama.cpp can express is kept in the grammar."""
    from toollab.envs import env_names, get_env

    for name in env_names():
        tools = get_env(name).tools
        check_grammar(build_schema(tools, POLICY), vocab)
    timed = Tool(
        name="remind",
        parameters={
            "type": "object",
            "properties": {"time": {"type": "string", "pattern": r"^([01]\d|2[0-3]):[0-5]\d$"}},
            "required": ["time"],
        },
    )
    plain = Tool(
        name="remind",
        parameters={
            "type": "object",
            "properties": {"time": {"type": "string"}},
            "required": ["time"],
        },
    )
    assert gbnf_grammar(build_schema([timed], CallPolicy.single())) != gbnf_grammar(
        build_schema([plain], CallPolicy.single())
    )


def test_every_tool_set_builds_an_outlines_regex(instances: dict[str, list[Instance]]) -> None:
    """The transformers route (outlines) takes the same schemas: every tool set's richest
    shape becomes a regex, and what the regex admits is what the schema admits."""
    import re

    pytest.importorskip("outlines_core")
    from toollab.models.hf_constrain import schema_regex

    sets = tool_sets(instances)
    failures = []
    for source, items in sets.items():
        for tools in items:
            try:
                schema_regex(build_schema(tools, POLICY))
            except Exception as exc:
                failures.append(f"{source} {[t.name for t in tools]}: {exc}")
    assert not failures, f"{len(failures)} failed, first: {failures[:3]}"
    tool = Tool(
        name="f",
        parameters={
            "type": "object",
            "properties": {"x": {"type": "integer"}, "s": {"type": "string", "maxLength": 3}},
            "required": ["x"],
        },
    )
    rx = re.compile(schema_regex(build_schema([tool], CallPolicy.decision_first())))
    good = [
        '{"decision": "call", "call": {"name": "f", "arguments": {"x": 1}}}',
        '{"decision": "call", "call": {"name": "f", "arguments": {"x": -2, "s": "abc"}}}',
        '{"decision": "no_call", "answer": "no"}',
    ]
    bad = [
        '{"decision": "call", "call": {"name": "g", "arguments": {"x": 1}}}',  # not offered
        '{"decision": "call", "call": {"name": "f", "arguments": {}}}',  # x is required
        '{"decision": "call", "call": {"name": "f", "arguments": {"x": 1, "s": "abcd"}}}',
        '{"call": {"name": "f", "arguments": {"x": 1}}, "decision": "call"}',  # order
    ]
    assert all(rx.fullmatch(t) for t in good)
    assert not any(rx.fullmatch(t) for t in bad)


@pytest.mark.parametrize(
    ("pattern", "inside", "outside"),
    [
        ("^.*[0-9]+.*$", ["ab12", "7"], ['a"1', "1\\", "x"]),
        ("^[^a-z]+$", ["ABC", "12"], ['"', "\\", "abc"]),
        ("^[^]a]+$", ["bc"], ["]", "a", '"']),
        ("^\\d{4}-\\d{2}$", ["2024-05"], ["2024-5"]),
    ],
)
def test_patterns_cannot_break_the_json_string(
    pattern: str, inside: list[str], outside: list[str]
) -> None:
    import re

    from toollab.models.hf_constrain import json_safe_pattern

    safe = re.compile(json_safe_pattern(pattern))
    assert all(safe.fullmatch(s) for s in inside), json_safe_pattern(pattern)
    assert not any(safe.fullmatch(s) for s in outside), json_safe_pattern(pattern)
