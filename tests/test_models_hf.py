"""The transformers backend: the bundled GGUF through ``gguf_file=`` (small generations), with
JSON-Schema constrained decoding through outlines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from toollab.data import load_dataset
from toollab.errors import BackendError
from toollab.models import ChatRequest, GenerateOptions, load_model
from toollab.models.policy import CallPolicy, ConstraintPlan, run_policy
from toollab.parsing import ParseStatus
from toollab.templates import JsonTemplate

pytestmark = pytest.mark.slow

MSGS = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "Name a fruit."},
]


@pytest.fixture(scope="module")
def hf(bundled_gguf: Path) -> Iterator[Any]:
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    model = load_model("hf:bundled")
    yield model
    model.close()


def test_missing_model_folder(tmp_path: Path) -> None:
    with pytest.raises(BackendError, match="model folder not found"):
        load_model(f"hf:{tmp_path / 'nope'}")
    with pytest.raises(BackendError, match="GGUF model file not found"):
        load_model(f"hf:{tmp_path}", gguf_file="missing.gguf")


def test_bundled_gguf_through_transformers(hf: Any, bundled_gguf: Path) -> None:
    from toollab.models.hf import HFModel
    from toollab.models.llamacpp import LlamaCppModel

    assert isinstance(hf, HFModel) and hf.gguf_file == bundled_gguf.name
    out = hf.generate(MSGS, max_tokens=6)
    assert out.text.strip() and 0 < out.usage.completion_tokens <= 6
    assert out.usage.prompt_tokens > 5
    assert out.timings.prompt_s is not None and 0 < out.timings.prompt_s <= out.timings.total_s
    # the same chat template as llama.cpp renders the same prompt
    local = LlamaCppModel(bundled_gguf, n_ctx=512)
    try:
        assert hf.render(ChatRequest(messages=MSGS)) == local.render(ChatRequest(messages=MSGS))
        assert hf.own_chat_template() == local.own_chat_template()
    finally:
        local.close()
    cut = hf.generate(MSGS, max_tokens=6, stop=[out.text.strip()[:2]])
    assert out.text.strip()[:2] not in cut.text
    assert (cut.finish_reason, cut.stop) == ("stop", out.text.strip()[:2])
    with pytest.raises(BackendError, match=r"GBNF grammars are llama\.cpp's"):
        hf.generate(MSGS, max_tokens=2, grammar='root ::= "a"')


def test_seed_reaches_sampling(hf: Any) -> None:
    def sample(seed: int) -> str:
        opts = GenerateOptions(max_tokens=8, temperature=1.2, seed=seed)
        return str(hf.generate(MSGS, options=opts).text)

    assert sample(3) == sample(3)
    texts = [sample(s) for s in (1, 2, 3, 4)]
    assert texts[0] != texts[1] and len(set(texts)) >= 3, texts


@pytest.fixture(scope="module")
def bfcl(shared_data: Path) -> dict[str, list[Any]]:
    by_cat: dict[str, list[Any]] = {}
    for inst in load_dataset(shared_data / "bfcl", "bfcl").instances:
        by_cat.setdefault(inst.category or "", []).append(inst)
    return by_cat


def test_constrained_outputs_follow_the_schema(hf: Any, bfcl: dict[str, list[Any]]) -> None:
    """The schemas built for llama.cpp (one call; decision first; several calls) hold the
    transformers backend too: every complete output validates against its schema."""
    assert hf.supports_constraints
    tpl = JsonTemplate()
    cases = [
        (bfcl["simple_python"][0], CallPolicy.single()),
        (bfcl["multiple"][0], CallPolicy.single()),
        (bfcl["simple_python"][1], CallPolicy.decision_first()),
        (bfcl["irrelevance"][0], CallPolicy.decision_first()),
        (bfcl["parallel"][0], CallPolicy.for_instance(bfcl["parallel"][0])),
    ]
    seen: set[str] = set()
    for inst, policy in cases:
        plan = ConstraintPlan(inst.tools, policy)
        opts = plan.options(GenerateOptions(max_tokens=96))
        out = hf.generate(tpl.messages(inst), tools=inst.tools, options=opts)
        assert out.finish_reason == "stop", (inst.id, out.text)
        value = json.loads(out.text)
        jsonschema.validate(value, plan.schema)
        if policy.allow_no_call:  # property order: the decision first
            assert out.text.lstrip().startswith(('{"decision"', '{ "decision"')), out.text
            seen.add(value["decision"])
        res = plan.parse(out.text)
        assert res.status in (ParseStatus.CALLS, ParseStatus.NO_CALL), res
        for call in res.calls:
            assert inst.tool(call.name) is not None
    assert seen  # the decision-first cases were decided


def test_run_policy_and_patterns(hf: Any) -> None:
    """run_policy works against the transformers backend; a string pattern is enforced."""
    from toollab.schema import Tool

    tool = Tool(
        name="book_room",
        parameters={
            "type": "object",
            "properties": {
                "date": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
                "guests": {"type": "integer"},
            },
            "required": ["date", "guests"],
        },
    )
    msgs = [{"role": "user", "content": "Book a room for two on the fifth of May 2025."}]
    import asyncio

    out = asyncio.run(
        run_policy(hf, msgs, [tool], CallPolicy.single(), GenerateOptions(max_tokens=64))
    )
    assert out.result.status is ParseStatus.CALLS, out.raw
    (call,) = out.result.calls
    assert call.name == "book_room"
    import re

    assert re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", call.arguments["date"])
    assert isinstance(call.arguments["guests"], int)


def test_repeat_guard_stops_decoding(hf: Any, bfcl: dict[str, list[Any]]) -> None:
    """A parallel task the model answers by repeating one call: with ``stop_on_repeat`` (what
    multi-call plans ask for) decoding ends at the first repeat, same calls, fewer tokens."""
    inst = bfcl["parallel"][1]
    plan = ConstraintPlan(inst.tools, CallPolicy.for_instance(inst))
    msgs = JsonTemplate().messages(inst)
    opts = plan.options(GenerateOptions(max_tokens=120))
    assert opts.stop_on_repeat
    guarded = hf.generate(msgs, tools=inst.tools, options=opts)
    free = hf.generate(
        msgs, tools=inst.tools, options=opts.model_copy(update={"stop_on_repeat": False})
    )
    assert free.finish_reason == "length" and guarded.finish_reason == "repeat"
    assert guarded.usage.completion_tokens < free.usage.completion_tokens
    assert free.text.startswith(guarded.text)  # greedy: the same text, cut at the repeat
    assert plan.parse(guarded.text).calls == plan.parse(free.text).calls
