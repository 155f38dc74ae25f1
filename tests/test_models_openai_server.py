"""The OpenAI-compatible backend against a real server: llama-cpp-python's own, on 127.0.0.1,
serving the bundled model; started for this module and stopped after."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

pytest.importorskip("openai")
pytest.importorskip("llama_cpp.server.app")

from toollab.models import ChatRequest, GenerateOptions, load_model
from toollab.models.llamacpp import LlamaCppModel
from toollab.models.openai_compat import OpenAIModel
from toollab.schema import Tool

pytestmark = pytest.mark.slow

SERVER_START_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_llama_server(gguf: Path, port: int, n_ctx: int = 2048) -> subprocess.Popen[bytes]:
    """``python -m llama_cpp.server`` on 127.0.0.1; waits (bounded) for /v1/models to answer."""
    log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server; closed in stop_server
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(gguf),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(n_ctx),
            "--n_threads",
            "2",
            "--model_alias",
            "smollm2",
            "--verbose",
            "False",
        ],
        stdout=log,
        stderr=log,
    )
    proc.log = log  # type: ignore[attr-defined]
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            err = log.read().decode(errors="replace")[-2000:]
            log.close()
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}: {err}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=1) as r:
                if r.status == 200:
                    return proc
        except OSError:
            time.sleep(0.2)
    stop_server(proc)
    raise RuntimeError(f"llama_cpp.server did not answer within {SERVER_START_TIMEOUT:g} s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    log = getattr(proc, "log", None)
    if log is not None:
        log.close()


@pytest.fixture(scope="module")
def server_url(bundled_gguf: Path) -> Iterator[str]:
    port = free_port()
    proc = start_llama_server(bundled_gguf, port)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        stop_server(proc)


def test_chat_and_raw_completion_match_in_process(server_url: str, bundled_gguf: Path) -> None:
    remote = load_model(f"openai:@{server_url}")  # empty name: the server's first model
    local = LlamaCppModel(bundled_gguf, n_ctx=2048)
    try:
        msgs = [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Name a color."},
        ]
        opts = GenerateOptions(max_tokens=12)
        chat = remote.generate(msgs, options=opts)
        assert isinstance(remote, OpenAIModel) and remote.model == "smollm2"
        assert (
            chat.text.strip() and chat.usage.prompt_tokens > 5 and chat.usage.completion_tokens > 0
        )
        # a pre-rendered prompt reaches the server verbatim: the same tokens as in process
        # (the texts may differ: the server applies its default repeat penalty)
        prompt = local.render(ChatRequest(messages=msgs))
        raw = asyncio.run(remote.request(ChatRequest(prompt=prompt, options=opts)))
        again = asyncio.run(remote.request(ChatRequest(prompt=prompt, options=opts)))
        assert raw.text.strip() and raw.text == again.text
        assert raw.usage.prompt_tokens == len(local.tokenize(ChatRequest(prompt=prompt)))
    finally:
        local.close()
        remote.close()


def test_json_schema_on_llama_server(server_url: str, request: pytest.FixtureRequest) -> None:
    model = load_model(f"openai:smollm2@{server_url}")
    request.addfinalizer(model.close)
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "maxLength": 10},
            "days": {"type": "integer", "minimum": 1, "maximum": 9},
        },
        "required": ["city", "days"],
    }
    out = model.generate(
        [{"role": "user", "content": "Weather in Oslo for 3 days, as JSON."}],
        max_tokens=40,
        json_schema=schema,
    )
    jsonschema.validate(json.loads(out.text), schema)
    assert (
        isinstance(model, OpenAIModel) and model.schema_mode == 1
    )  # json_schema refused → json_object


def test_tools_and_concurrent_batch(server_url: str, request: pytest.FixtureRequest) -> None:
    model = load_model(f"openai:smollm2@{server_url}", max_concurrency=8)
    request.addfinalizer(model.close)
    tools = [
        Tool(
            name="get_weather",
            description="Weather of a city",
            parameters={
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        )
    ]
    reqs = [
        ChatRequest(
            messages=[{"role": "user", "content": f"Weather in city number {i}?"}],
            tools=tools,
            options=GenerateOptions(max_tokens=6),
            tag=str(i),
        )
        for i in range(8)
    ]
    outs = asyncio.run(model.batch(reqs))
    assert [o.tag for o in outs] == [str(i) for i in range(8)]
    assert all(o.error is None and o.usage.completion_tokens > 0 for o in outs)
