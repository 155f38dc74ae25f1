"""The OpenAI-compatible backend against misbehaving local HTTP servers (fast, no model)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("openai")

from toollab.errors import BackendError, UsageError
from toollab.models import ChatRequest, GenerateOptions, Model, load_model
from toollab.models.openai_compat import OpenAIModel, _ClientLoop
from toollab.schema import Tool

DRIP_S = 0.3


def _completion(
    text: str = "hello", tool_calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
    }


class Behaviour:
    """What each scenario (the first path segment) answers; shared with the handler threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.bodies: dict[str, list[dict[str, Any]]] = {}
        self.in_flight = 0
        self.max_in_flight = 0

    def answer(
        self, scenario: str, body: dict[str, Any]
    ) -> tuple[int, dict[str, str], bytes, float]:
        with self.lock:
            n = self.counts.get(scenario, 0)
            self.counts[scenario] = n + 1
            self.bodies.setdefault(scenario, []).append(body)
        ok = json.dumps(_completion()).encode()
        js = {"Content-Type": "application/json"}
        if scenario == "flaky429":
            if n == 0:
                return 429, {**js, "Retry-After": "0"}, b'{"error": {"message": "slow down"}}', 0
            return 200, js, ok, 0
        if scenario == "err500":
            return 500, js, b'{"error": {"message": "internal"}}', 0
        if scenario == "err503once":
            return (503, js, b"{}", 0) if n == 0 else (200, js, ok, 0)
        if scenario == "badjson":
            return 200, js, b'{"choices": [ {not json', 0
        if scenario == "wrongshape":
            return 200, js, b'{"foo": 1}', 0
        if scenario == "html":
            return 200, {"Content-Type": "text/html"}, b"<html>proxy error</html>", 0
        if scenario == "stall":
            return 200, js, ok, 3.0
        if scenario == "slow":
            return 200, js, ok, 0.25
        if scenario == "stopreason":  # vLLM names the stop string generation ended at
            said = _completion("#Begin# Need to look up the API Pool. ")
            said["choices"][0]["stop_reason"] = "#SearchAPI#"
            return 200, js, json.dumps(said).encode(), 0
        if scenario == "drip":  # a valid answer, one byte every DRIP_S seconds
            return 200, js, ok, -DRIP_S
        if scenario == "notools":
            if "tools" in body:
                return (
                    400,
                    js,
                    b'{"error": {"message": "tools are not supported by this model"}}',
                    0,
                )
            return 200, js, ok, 0
        if scenario == "toolcalls":
            calls = [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_time", "arguments": "{}"},
                },
            ]
            return 200, js, json.dumps(_completion("", calls)).encode(), 0
        if scenario == "badargs":
            calls = [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"city": '},
                }
            ]
            return 200, js, json.dumps(_completion("", calls)).encode(), 0
        if scenario == "schema422":
            fmt = body.get("response_format") or {}
            if fmt.get("type") == "json_schema":
                detail = {
                    "detail": [
                        {
                            "loc": ["body", "response_format", "type"],
                            "msg": "Input should be 'text' or 'json_object'",
                        }
                    ]
                }
                return 422, js, json.dumps(detail).encode(), 0
            return 200, js, json.dumps(_completion('{"a": 1}')).encode(), 0
        if scenario == "auth":
            return 401, js, b'{"error": {"message": "bad key"}}', 0
        return 404, js, b'{"error": {"message": "no such scenario"}}', 0


@pytest.fixture(scope="module")
def fake_server() -> Iterator[tuple[str, Behaviour]]:
    behaviour = Behaviour()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            scenario = self.path.strip("/").split("/")[0]
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            status, headers, payload, delay = behaviour.answer(scenario, body)
            counted = scenario == "slow"  # in flight while the answer is pending
            if counted:
                with behaviour.lock:
                    behaviour.in_flight += 1
                    behaviour.max_in_flight = max(behaviour.max_in_flight, behaviour.in_flight)
            if delay > 0:
                time.sleep(delay)
            if counted:
                with behaviour.lock:
                    behaviour.in_flight -= 1
            try:
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if delay >= 0:
                    self.wfile.write(payload)
                    return
                # drip: headers at once, then the body byte by byte (never a read timeout)
                for i in range(len(payload)):
                    self.wfile.write(payload[i : i + 1])
                    self.wfile.flush()
                    time.sleep(-delay)
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", behaviour
    server.shutdown()
    server.server_close()


#: every model a test makes, closed when the test ends (weakly held: a test may drop one)
_MADE: weakref.WeakSet[OpenAIModel] = weakref.WeakSet()


@pytest.fixture(autouse=True)
def _close_models() -> Iterator[None]:
    yield
    for model in list(_MADE):
        model.close()
    _MADE.clear()


def _track(model: Model) -> OpenAIModel:
    assert isinstance(model, OpenAIModel)
    _MADE.add(model)
    return model


def _model(url: str, scenario: str, **kw: Any) -> OpenAIModel:
    opts: dict[str, Any] = {"timeout": 2.0, "max_retries": 2, "backoff": 0.05, **kw}
    return _track(load_model(f"openai:m@{url}/{scenario}/v1", **opts))


MSG = [{"role": "user", "content": "hi"}]


def test_spec_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = _track(load_model("openai:qwen@http://127.0.0.1:9/v1?max_concurrency=3"))
    assert (model.model, model.base_url, model.api_key, model.max_concurrency) == (
        "qwen",
        "http://127.0.0.1:9/v1",
        "sk-no-key",
        3,
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert _track(load_model("openai:q@http://127.0.0.1:9/v1")).api_key == "sk-test"


def test_429_then_200_is_retried(fake_server: tuple[str, Behaviour]) -> None:
    url, _ = fake_server
    model = _model(url, "flaky429")
    out = model.generate(MSG)
    assert out.text == "hello" and out.usage.prompt_tokens == 5
    assert model.retries == 1


def test_5xx_retries_then_typed_error(fake_server: tuple[str, Behaviour]) -> None:
    url, behaviour = fake_server
    with pytest.raises(BackendError, match=r"HTTP 500.*after 3 attempts"):
        _model(url, "err500").generate(MSG)
    assert behaviour.counts["err500"] == 3
    assert _model(url, "err503once").generate(MSG).text == "hello"


def test_the_stop_string_the_server_names(fake_server: tuple[str, Behaviour]) -> None:
    """vLLM's ``stop_reason`` is the output's ``stop``; a server that names none gives None."""
    url, _ = fake_server
    out = _model(url, "stopreason").generate(MSG, stop=["#SearchAPI#"])
    assert (out.text, out.finish_reason, out.stop) == (
        "#Begin# Need to look up the API Pool. ",
        "stop",
        "#SearchAPI#",
    )
    assert _model(url, "slow").generate(MSG).stop is None


@pytest.mark.parametrize("scenario", ["badjson", "wrongshape", "html"])
def test_malformed_responses(fake_server: tuple[str, Behaviour], scenario: str) -> None:
    url, _ = fake_server
    with pytest.raises(BackendError, match="malformed"):
        _model(url, scenario).generate(MSG)


def test_stalled_server_times_out(fake_server: tuple[str, Behaviour]) -> None:
    url, behaviour = fake_server
    t0 = time.perf_counter()
    with pytest.raises(BackendError, match=r"no answer within 0.\d+ s.*2 attempts"):
        _model(url, "stall", timeout=0.4, max_retries=1).generate(MSG)
    assert time.perf_counter() - t0 < 2.5
    assert behaviour.counts["stall"] == 2


def test_dripping_server_hits_the_deadline(fake_server: tuple[str, Behaviour]) -> None:
    """A server that sends a valid answer one byte every 0.3 s never trips a per-read timeout;
    the per-attempt deadline cuts it off, and the retry too."""
    url, behaviour = fake_server
    assert len(json.dumps(_completion())) * DRIP_S > 60  # the full answer would take > 1 min
    model = _model(url, "drip", timeout=1.0, max_retries=1)
    t0 = time.perf_counter()
    with pytest.raises(
        BackendError, match=r"/drip/v1: no answer within [0-9.]+ s.*after 2 attempts"
    ):
        model.generate(MSG)
    assert time.perf_counter() - t0 < 4.0
    assert behaviour.counts["drip"] == 2
    model.close()


def test_total_timeout_bounds_all_retries(fake_server: tuple[str, Behaviour]) -> None:
    url, behaviour = fake_server
    before = behaviour.counts.get("drip", 0)
    model = _model(url, "drip", timeout=0.6, max_retries=10, total_timeout=1.5)
    t0 = time.perf_counter()
    with pytest.raises(BackendError, match=r"no answer within .*1.5 s"):
        model.generate(MSG)
    assert time.perf_counter() - t0 < 3.0
    assert 2 <= behaviour.counts["drip"] - before <= 3  # not the 11 attempts the retries allow
    with pytest.raises(Exception, match="total_timeout must be positive"):
        _model(url, "drip", total_timeout=-1)
    model.close()


def test_one_client_is_reused_and_closed(fake_server: tuple[str, Behaviour]) -> None:
    url, _ = fake_server
    model = _model(url, "flaky429")
    client = model.client

    def mine() -> list[threading.Thread]:  # this model's client threads (others may be alive)
        return [t for t in threading.enumerate() if t.name == model.thread_name]

    runner = model._client_loop()
    assert mine() == [runner.thread]
    for _ in range(3):  # each synchronous generate() runs in a new event loop
        assert model.generate(MSG).text == "hello"
    outs = asyncio.run(model.batch([ChatRequest(messages=MSG) for _ in range(4)]))
    assert [o.text for o in outs] == ["hello"] * 4
    assert model.client is client and not client.is_closed()
    # one loop thread for the client, whatever the number of calling loops
    assert model._client_loop() is runner and mine() == [runner.thread]
    model.close()
    assert client.is_closed() and not runner.thread.is_alive() and runner.loop.is_closed()
    assert mine() == []
    # a request after close() opens a fresh client, on a new thread of the same name
    assert model.generate(MSG).text == "hello" and model.client is not client
    assert len(mine()) == 1
    model.close()
    assert mine() == []
    other = _model(url, "flaky429")
    assert other.thread_name != model.thread_name


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_close_fails_requests_in_flight(fake_server: tuple[str, Behaviour]) -> None:
    """close() while requests wait on the server: their callers get a typed error at once
    instead of waiting forever on a stopped loop."""
    url, _ = fake_server
    model = _model(url, "stall", timeout=10.0)
    runner = model._client_loop()
    client = runner.client
    got: dict[str, BaseException | str] = {}

    def call_sync() -> None:
        try:
            got["sync"] = model.generate(MSG).text
        except BaseException as exc:  # what the caller sees is what is checked
            got["sync"] = exc

    worker = threading.Thread(target=call_sync, daemon=True)
    worker.start()

    async def batch_then_close() -> list[Any]:
        reqs = [ChatRequest(messages=MSG, tag=str(i)) for i in range(3)]
        task = asyncio.ensure_future(model.batch(reqs))
        await asyncio.sleep(0.4)  # all four requests are waiting on the server now
        t0 = time.perf_counter()
        await asyncio.to_thread(model.close)
        got["close_s"] = f"{time.perf_counter() - t0:.2f}"
        return await asyncio.wait_for(task, 2.0)

    outs = asyncio.run(batch_then_close())
    worker.join(2.0)
    assert not worker.is_alive()
    assert isinstance(got["sync"], BackendError) and "model closed" in str(got["sync"])
    assert all(o.error is not None and "model closed" in o.error for o in outs), outs
    assert float(str(got["close_s"])) < 2.0
    assert client.is_closed() and not runner.thread.is_alive() and runner.loop.is_closed()
    # a request handed to the closed runner fails the same way (not RuntimeError, not a hang)
    with pytest.raises(BackendError, match="model closed"):
        asyncio.run(asyncio.wait_for(runner.run(asyncio.sleep(0)), 2.0))


def test_finalizer_on_the_client_thread_closes_cleanly(
    fake_server: tuple[str, Behaviour], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model whose last reference goes on its own client thread (as when a caller cancels a
    request while the request holds the only reference) is finalized there: its loop must
    then close without blocking on itself (no "cannot join current thread"), and the client
    must be closed."""
    url, _ = fake_server
    unraisable: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(repr(u.exc_value)))
    model = OpenAIModel("m", f"{url}/flaky429/v1", timeout=10.0)
    assert model.generate(MSG).text == "hello"
    runner = model._client_loop()
    client = runner.client
    finalized_on: list[str] = []
    weakref.finalize(model, lambda: finalized_on.append(threading.current_thread().name))
    only_reference = [model]
    del model
    runner.loop.call_soon_threadsafe(only_reference.clear)  # dropped on the client thread
    runner.thread.join(3.0)
    assert not runner.thread.is_alive() and runner.loop.is_closed()
    assert finalized_on == [runner.thread.name]
    assert client.is_closed()
    assert unraisable == []


def test_malformed_base_url_is_refused_when_the_model_is_built() -> None:
    threads, fds = threading.active_count(), _fds()
    for url in ("http://host:notaport/v1", "localhost:8000/v1", "http://h:70000/v1"):
        with pytest.raises(UsageError, match="invalid base URL") as err:
            load_model(f"openai:m@{url}")
        assert url in str(err.value)
    assert (threading.active_count(), _fds()) == (threads, fds)


def test_client_setup_failure_leaves_no_thread_behind() -> None:
    """A client that cannot be made: a typed error, and the loop thread and its file
    descriptors are gone."""

    def no_client() -> Any:
        raise ValueError("no client today")

    class Broken(OpenAIModel):
        def _make_client(self) -> Any:
            return no_client()

    model = _track(Broken("m", "http://127.0.0.1:9/v1"))
    fds = _fds()
    for _ in range(3):
        with pytest.raises(
            BackendError, match=r"cannot create the OpenAI client: ValueError: no client"
        ):
            model.generate(MSG)
    assert [t for t in threading.enumerate() if t.name == model.thread_name] == []
    assert _fds() == fds
    with pytest.raises(ValueError, match="no client today"):
        _ClientLoop(no_client, 1)
    assert [t for t in threading.enumerate() if t.name == "toollab-openai-client"] == []
    assert _fds() == fds


def test_server_down_fails_fast() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    with pytest.raises(BackendError, match=r"cannot reach http://127.0.0.1:\d+/v1.*4 attempts"):
        _track(load_model(f"openai:m@http://127.0.0.1:{port}/v1", backoff=0.05)).generate(MSG)
    assert time.perf_counter() - t0 < 3


def test_client_errors_are_not_retried(fake_server: tuple[str, Behaviour]) -> None:
    url, behaviour = fake_server
    with pytest.raises(BackendError, match="HTTP 401: bad key"):
        _model(url, "auth").generate(MSG)
    assert behaviour.counts["auth"] == 1


def test_native_tools_refused_falls_back_and_remembers(fake_server: tuple[str, Behaviour]) -> None:
    url, behaviour = fake_server
    model = _model(url, "notools")
    tools = [Tool(name="get_weather")]
    assert model.generate(MSG, tools=tools).text == "hello"
    assert model.native_tools_ok is False
    assert model.generate(MSG, tools=tools).text == "hello"
    sent = ["tools" in b for b in behaviour.bodies["notools"]]
    assert sent == [True, False, False]  # refused once, then never offered again


def test_native_tool_calls_are_parsed(fake_server: tuple[str, Behaviour]) -> None:
    url, behaviour = fake_server
    model = _model(url, "toolcalls")
    out = model.generate(MSG, tools=[Tool(name="get_weather"), Tool(name="get_time")])
    assert out.tool_calls is not None
    assert [(c.name, c.arguments, c.id) for c in out.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "c1"),
        ("get_time", {}, "c2"),
    ]
    assert behaviour.bodies["toolcalls"][0]["tools"][0]["function"]["name"] == "get_weather"
    assert model.native_tools_ok is True
    bad = _model(url, "badargs").generate(MSG, tools=[Tool(name="f")])
    assert bad.tool_calls is None and '"arguments": "{\\"city\\": "' in bad.text


def test_constrained_request_sends_no_tools_and_reads_tool_calls(
    fake_server: tuple[str, Behaviour],
) -> None:
    """run_policy over HTTP: no native ``tools`` in the body; a server that answers with
    ``tool_calls`` anyway (vLLM-style) is parsed like a JSON answer."""
    from toollab.models.policy import CallPolicy, run_policy
    from toollab.parsing import ParseStatus

    url, behaviour = fake_server
    tools = [
        Tool(name="get_weather", parameters={"type": "object", "properties": {"city": {}}}),
        Tool(name="get_time", parameters={"type": "object", "properties": {}}),
    ]
    model = _model(url, "toolcalls")
    out = asyncio.run(run_policy(model, MSG, tools, CallPolicy(max_calls=4)))
    body = behaviour.bodies["toolcalls"][-1]
    assert "tools" not in body and body["response_format"]["type"] == "json_schema"
    assert out.result.status is ParseStatus.CALLS
    assert [(c.name, dict(c.arguments)) for c in out.result.calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {}),
    ]
    model.close()


def test_json_schema_falls_back_to_json_object(fake_server: tuple[str, Behaviour]) -> None:
    url, behaviour = fake_server
    model = _model(url, "schema422")
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    out = model.generate(MSG, json_schema=schema)
    assert json.loads(out.text) == {"a": 1}
    formats: list[Any] = [b.get("response_format") for b in behaviour.bodies["schema422"]]
    assert formats[0]["type"] == "json_schema" and formats[0]["json_schema"]["schema"] == schema
    assert formats[1] == {"type": "json_object", "schema": schema}
    model.generate(MSG, json_schema=schema)
    assert len(formats) + 1 == len(behaviour.bodies["schema422"])  # remembered: no new 422


def test_batch_records_failures_and_bounds_concurrency(fake_server: tuple[str, Behaviour]) -> None:
    url, behaviour = fake_server
    slow = _model(url, "slow", max_concurrency=3)
    behaviour.max_in_flight = 0
    reqs = [ChatRequest(messages=MSG, tag=str(i)) for i in range(9)]
    t0 = time.perf_counter()
    outs = asyncio.run(slow.batch(reqs, concurrency=9))
    elapsed = time.perf_counter() - t0
    assert [o.text for o in outs] == ["hello"] * 9
    assert 2 <= behaviour.max_in_flight <= 3
    assert elapsed >= 0.7  # 9 requests of 0.25 s, 3 at a time

    failing = _model(url, "err500", max_retries=0)
    good = _model(url, "flaky429")

    class Mixed(OpenAIModel):
        async def request(self, req: ChatRequest) -> Any:
            target = failing if req.tag == "bad" else good
            return await target.request(req)

    mixed = _track(Mixed("m", url))
    outs = asyncio.run(mixed.batch([ChatRequest(messages=MSG, tag=t) for t in ("a", "bad", "c")]))
    assert outs[1].error is not None and "HTTP 500" in outs[1].error
    assert outs[0].text == outs[2].text == "hello"


def test_options_reach_the_server(fake_server: tuple[str, Behaviour]) -> None:
    url, behaviour = fake_server
    model = _model(url, "err503once")
    model.generate(
        MSG, options=GenerateOptions(max_tokens=7, seed=11, stop=["\n"], grammar='root ::= "a"')
    )
    body = behaviour.bodies["err503once"][-1]
    assert (body["max_tokens"], body["seed"], body["stop"], body["temperature"]) == (
        7,
        11,
        ["\n"],
        0.0,
    )
    assert body["grammar"] == 'root ::= "a"'
