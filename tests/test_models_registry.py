"""Model strings, the provider registry and the scripted fake model (no real model needed)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from toollab.errors import BackendError, InputError, UsageError
from toollab.models import (
    DEFAULT_MODEL,
    ChatRequest,
    FakeModel,
    GenerateOptions,
    ModelOutput,
    load_model,
    order_for_reuse,
    parse_model_spec,
    provider_names,
    register_provider,
)
from toollab.models.prefix import common_prefix_len, shared_prefix_stats
from toollab.models.registry import ModelSpec
from toollab.schema import Tool, ToolCall


def test_default_spec_is_bundled() -> None:
    spec = parse_model_spec(None)
    assert (spec.provider, spec.model) == ("bundled", "smollm2-135m")
    assert parse_model_spec("").raw == DEFAULT_MODEL


def test_llamacpp_spec_with_lora_and_params() -> None:
    spec = parse_model_spec(
        "llamacpp:/m/a+b.gguf+lora=/m/ad.gguf?n_ctx=2048&threads=2&verbose=false"
    )
    assert spec.provider == "llamacpp"
    assert spec.model == "/m/a+b.gguf"  # a '+' not followed by key= stays in the path
    assert spec.lora == "/m/ad.gguf"
    assert spec.params == {"n_ctx": 2048, "threads": 2, "verbose": False}


def test_openai_spec_keeps_colons_in_model_name() -> None:
    spec = parse_model_spec("openai:qwen2.5:0.5b@http://127.0.0.1:11434/v1?timeout=2.5")
    assert (spec.model, spec.base_url) == ("qwen2.5:0.5b", "http://127.0.0.1:11434/v1")
    assert spec.params == {"timeout": 2.5}


def test_bare_gguf_path_means_llamacpp() -> None:
    assert parse_model_spec("/models/x.gguf").provider == "llamacpp"


def test_provider_typo_suggests_the_right_one() -> None:
    with pytest.raises(UsageError, match=r"did you mean 'llamacpp'"):
        load_model("lamacpp:/x.gguf")


def test_missing_provider_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no provider") as info:
        parse_model_spec("mistral7b")
    assert "did you mean" not in str(info.value)


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("bundeled", "bundled"),
        ("orcale", "oracle"),
        ("Bundled", None),  # a provider name alone (any case) is accepted
        ("smollm2-135", "bundled:smollm2-135m"),
        ("smollm2", "bundled:smollm2-135m"),
    ],
)
def test_colonless_typo_gets_a_suggestion(typo: str, meant: str | None) -> None:
    if meant is None:
        assert parse_model_spec(typo).provider == "bundled"
        return
    with pytest.raises(UsageError, match=rf"no provider \(did you mean '{meant}'\?\)"):
        load_model(typo)


def test_bad_param_and_unknown_option() -> None:
    with pytest.raises(UsageError, match="not key=value"):
        parse_model_spec("llamacpp:/x.gguf?n_ctx")
    with pytest.raises(UsageError, match=r"unknown option 'latncy'.*did you mean 'latency'"):
        load_model("fake:", latncy=1)


def test_unknown_bundled_model() -> None:
    with pytest.raises(UsageError, match="did you mean 'smollm2-135m'"):
        load_model("bundled:smollm2-136m")


def test_missing_gguf_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(BackendError, match=str(missing)):
        load_model(f"llamacpp:{missing}")


def test_register_provider_plugin() -> None:
    @register_provider("echo-test")
    def _factory(spec: ModelSpec, **options: object) -> FakeModel:
        return FakeModel(outputs=[spec.model.upper()])

    assert "echo-test" in provider_names()
    model = load_model("echo-test:hello")
    assert model.name == "echo-test:hello"
    assert model.generate([{"role": "user", "content": "x"}]).text == "HELLO"


def test_fake_scripted_outputs_record_requests() -> None:
    call = ModelOutput(tool_calls=[ToolCall(name="f", arguments={"x": 1})])
    model = FakeModel(outputs=["a", call])
    tool = Tool(name="f")
    assert model.generate([{"role": "user", "content": "q1"}], tools=[tool]).text == "a"
    out = model.generate([{"role": "user", "content": "q2"}])
    assert out.tool_calls is not None and out.tool_calls[0].name == "f"
    assert [r.messages[0]["content"] for r in model.requests] == ["q1", "q2"]
    assert model.requests[0].tools == [tool]
    with pytest.raises(BackendError, match="ran out of scripted outputs"):
        model.generate([{"role": "user", "content": "q3"}])


def test_fake_function_and_stop_strings() -> None:
    model = FakeModel(
        fn=lambda messages, tools: f"{len(messages)} msgs, {len(tools)} tools END rest"
    )
    out = model.generate([{"role": "user", "content": "x"}], stop=["END"])
    assert out.text == "1 msgs, 0 tools "
    assert out.usage.completion_tokens == 4


def test_fake_raw_prompt_is_echoed() -> None:
    out = load_model("fake:").generate([], options=None, max_tokens=5)
    assert out.text == ""
    req = ChatRequest(prompt="complete me")
    assert asyncio.run(FakeModel().request(req)).text == "complete me"


def test_batch_records_failure_and_goes_on() -> None:
    model = FakeModel(outputs=["ok1", BackendError("server down"), "ok3"], latency=0.01)
    reqs = [
        ChatRequest(messages=[{"role": "user", "content": str(i)}], tag=f"i{i}") for i in range(3)
    ]
    outs = asyncio.run(model.batch(reqs, concurrency=1))
    assert [o.text for o in outs] == ["ok1", "", "ok3"]
    assert outs[1].error is not None and "server down" in outs[1].error
    assert [o.tag for o in outs] == ["i0", "i1", "i2"]


def test_fake_latency_runs_concurrently() -> None:
    model = FakeModel(outputs=["x"] * 8, latency=0.2, max_concurrency=8)
    reqs = [ChatRequest(messages=[{"role": "user", "content": "q"}]) for _ in range(8)]
    t0 = time.perf_counter()
    outs = asyncio.run(model.batch(reqs))
    assert all(o.text == "x" for o in outs)
    assert time.perf_counter() - t0 < 1.0  # 8 × 0.2 s sequentially would be 1.6 s


def test_fake_script_file(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                "plain",
                {"tool_calls": [{"function": {"name": "f", "arguments": '{"a": 2}'}}]},
                {"error": "boom"},
            ]
        )
    )
    model = load_model(f"fake:{script}")
    assert model.generate([{"role": "user", "content": "q"}]).text == "plain"
    out = model.generate([{"role": "user", "content": "q"}])
    assert out.tool_calls == [ToolCall(name="f", arguments={"a": 2})]
    with pytest.raises(BackendError, match="boom"):
        model.generate([{"role": "user", "content": "q"}])


def test_fake_script_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('"a"\n{oops\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2"):
        load_model(f"fake:{bad}")
    with pytest.raises(InputError, match="not found"):
        load_model(f"fake:{tmp_path / 'missing.json'}")


def test_order_for_reuse_groups_shared_prefixes() -> None:
    sys_a = {"role": "system", "content": "tools A " * 20}
    sys_b = {"role": "system", "content": "tools B " * 20}
    reqs = [
        ChatRequest(messages=[sys, {"role": "user", "content": q}])
        for sys, q in [(sys_a, "1"), (sys_b, "2"), (sys_a, "3"), (sys_b, "4"), (sys_a, "5")]
    ]
    order = order_for_reuse(reqs)
    systems = [reqs[i].messages[0]["content"] for i in order]
    assert systems == [sys_a["content"]] * 3 + [sys_b["content"]] * 2
    assert sorted(order) == list(range(5))
    raw = [ChatRequest(prompt=p) for p in ["b1", "a2", "b0", "a1"]]
    assert [raw[i].prompt for i in order_for_reuse(raw)] == ["a1", "a2", "b0", "b1"]


def test_prefix_helpers() -> None:
    assert common_prefix_len([1, 2, 3], [1, 2, 4, 5]) == 2
    stats = shared_prefix_stats([[1, 2, 3], [1, 2, 4], [9]])
    assert stats == {"tokens": 7.0, "shared": 2.0, "ratio": 2 / 7}


def test_generate_options_are_validated() -> None:
    with pytest.raises(ValueError):
        GenerateOptions(max_tokens=5, bogus=1)  # type: ignore[call-arg]
