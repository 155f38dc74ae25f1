"""End to end with the bundled model: constrained answers are always valid calls to offered tools."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest

from toollab.data import load_dataset
from toollab.models.base import GenerateOptions
from toollab.models.constrain import arguments_schema
from toollab.models.policy import CallPolicy, ConstraintPlan, run_policy
from toollab.parsing import ParseStatus
from toollab.templates import JsonTemplate


@pytest.mark.slow
def test_bundled_model_constrained_calls_are_valid(shared_data: Path, bundled_gguf: Path) -> None:
    import asyncio

    from toollab.models.llamacpp import LlamaCppModel

    insts = load_dataset(shared_data / "bfcl", "bfcl").instances
    picked = [i for i in insts if i.category == "multiple"][:2]
    picked += [i for i in insts if i.category == "irrelevance"][:1]
    tpl = JsonTemplate()
    valid = 0
    with LlamaCppModel(bundled_gguf, n_ctx=4096) as model:
        for inst in picked:
            for policy in (CallPolicy.single(), CallPolicy.decision_first()):
                plan = ConstraintPlan(inst.tools, policy)
                out = asyncio.run(
                    run_policy(
                        model, tpl.messages(inst), inst.tools, plan, GenerateOptions(max_tokens=96)
                    )
                )
                res = out.result
                text = out.outputs[-1].text
                if policy.allow_no_call:  # the decision is the first thing the model writes
                    assert text.lstrip().startswith(('{"decision"', '{ "decision"')), text
                elif res.status is ParseStatus.CALLS:  # the tool name comes before its arguments
                    assert text.find('"name"') < text.find('"arguments"'), text
                if policy.allow_no_call and res.status is ParseStatus.NO_CALL:
                    continue
                if res.status is ParseStatus.ERROR:
                    # only a cut-off output may fail to read (max_tokens inside a string)
                    assert out.outputs[-1].finish_reason == "length", (out.raw, res.error)
                    continue
                assert res.status is ParseStatus.CALLS and len(res.calls) == 1
                call = res.calls[0]
                tool = inst.tool(call.name)
                assert tool is not None, call.name
                jsonschema.validate(
                    call.model_dump(mode="json")["arguments"], arguments_schema(tool)
                )
                valid += 1
    assert valid >= 2, "the bundled model should make at least two complete constrained calls"


@pytest.mark.slow
@pytest.mark.parametrize("lazy", [True, False], ids=["greedy-fast-path", "sampler-chain"])
def test_repeat_guard_stops_llama_decoding(
    shared_data: Path, bundled_gguf: Path, lazy: bool
) -> None:
    """BFCL parallel: the bundled model repeats one call until max_tokens.  A multi-call plan
    asks to stop at the first repeat, and both llama.cpp paths stop there: the same calls, the
    same text up to the repeat, fewer tokens."""
    from toollab.models.llamacpp import LlamaCppModel

    inst = [
        i for i in load_dataset(shared_data / "bfcl", "bfcl").instances if i.category == "parallel"
    ][1]
    plan = ConstraintPlan(inst.tools, CallPolicy.for_instance(inst))
    opts = plan.options(GenerateOptions(max_tokens=160))
    assert opts.stop_on_repeat
    msgs = JsonTemplate().messages(inst)
    with LlamaCppModel(bundled_gguf, n_ctx=4096, lazy_grammar=lazy) as model:
        guarded = model.generate(msgs, tools=inst.tools, options=opts)
        free = model.generate(
            msgs, tools=inst.tools, options=opts.model_copy(update={"stop_on_repeat": False})
        )
    assert free.finish_reason == "length" and guarded.finish_reason == "repeat"
    assert guarded.usage.completion_tokens < free.usage.completion_tokens
    assert free.text.startswith(guarded.text)
    calls = plan.parse(guarded.text)
    assert calls.status is ParseStatus.CALLS and calls.calls == plan.parse(free.text).calls
    assert calls.details["repeats_dropped"] == 1  # the repeat that stopped decoding
