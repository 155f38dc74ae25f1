"""OpenAI-compatible backend (vLLM, SGLang, Ollama, llama.cpp server, OpenAI) via the official client.

``openai:<model>@<base_url>``, e.g. ``openai:qwen2.5:0.5b@http://127.0.0.1:11434/v1``; an empty
model name takes the first model the server lists.  The API key comes from ``OPENAI_API_KEY``
(``sk-no-key`` when unset, which local servers accept).

* Native ``tools`` / ``tool_calls`` when ``options.native_tools`` is set; a server that refuses
  ``tools`` (HTTP 400/422 naming them) is remembered and asked again without them (the prompt
  carries the tool docs).
* ``json_schema`` → ``response_format={"type": "json_schema", ...}``, falling back to llama.cpp's
  ``{"type": "json_object", "schema": ...}`` and then vLLM's ``guided_json``; ``grammar`` → the
  llama.cpp server's ``grammar`` field.
* At most ``max_concurrency`` requests in flight; retries with exponential backoff and jitter on
  429, 5xx, timeouts and connection errors.  Each attempt has a **deadline** of ``timeout``
  seconds for the whole answer (not a per-read timeout: a server that drips its answer byte by
  byte is cut off too), and all attempts and fallbacks of one request share ``total_timeout``
  (default twice ``timeout``), so a stalled, dripping or absent server fails with
  :class:`BackendError` instead of hanging.
* One ``AsyncOpenAI`` client per model, reused by every request: it lives on a private event
  loop in a daemon thread, so synchronous ``generate()`` calls (each with its own short-lived
  loop) and async batches share its connection pool; :meth:`OpenAIModel.close` closes it, and
  requests still in flight then fail with :class:`BackendError` (``model closed``).
* The base URL is checked when the model is built: a malformed one is a :class:`UsageError`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import random
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from itertools import count
from typing import Any
from urllib.parse import urlsplit

from toollab.errors import BackendError, ToolLabError, UsageError
from toollab.models.base import ChatRequest, Model, ModelOutput, Timings, Usage
from toollab.models.registry import ModelSpec, merge_options, register_provider
from toollab.schema import ToolCall

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: structured-output request styles, tried in this order until the server takes one
SCHEMA_MODES = ("json_schema", "json_object", "guided_json")
_MODEL_SERIALS = count(1)


def check_base_url(url: str) -> str:
    """``url`` when it is a usable ``http(s)://host[:port]/...`` base URL, else a
    :class:`UsageError` naming it (checked when the model is built, not at the first request)."""
    problem = ""
    try:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            problem = "it must start with http:// or https://"
        elif not parts.hostname or any(ch.isspace() for ch in parts.netloc):
            problem = "it names no valid host"
        else:
            _ = parts.port  # ValueError for a port that is not a number 0-65535
    except ValueError as exc:
        problem = str(exc)
    if problem:
        raise UsageError(f"invalid base URL {url!r}: {problem}")
    return url


class _ClientLoop:
    """A private event loop in a daemon thread that owns one ``AsyncOpenAI`` client.

    Coroutines submitted with :meth:`run` execute on that loop whatever loop (or thread) the
    caller runs in; cancelling the caller's await cancels the work on the private loop.  The
    thread itself closes the client and the loop once the loop stops, so :meth:`close` works
    from any thread, the loop's own included (a garbage-collected model can be finalized there).
    """

    #: seconds the client gets to close, and :meth:`close` waits for the thread to end
    CLOSE_TIMEOUT = 5.0

    def __init__(
        self,
        make_client: Callable[[], Any],
        max_concurrency: int,
        *,
        name: str = "toollab-openai-client",
        label: str = "",
    ) -> None:
        self.label = label
        self.closed = False
        self.client: Any = None
        self._lock = threading.RLock()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

        async def setup() -> tuple[Any, asyncio.Semaphore]:
            return make_client(), asyncio.Semaphore(max_concurrency)

        try:
            self.client, self.sem = asyncio.run_coroutine_threadsafe(setup(), self.loop).result()
        except BaseException:
            self.close()  # no thread, loop or half-made client is left behind
            raise

    def _serve(self) -> None:
        """The thread: run the loop until :meth:`close` stops it, then clean up."""
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            try:
                self._shut_down()
            finally:
                asyncio.set_event_loop(None)
                self.loop.close()

    def _shut_down(self) -> None:
        """On the stopped loop: cancel what is still in flight (its callers get a
        :class:`BackendError`), then close the client."""
        loop = self.loop
        deadline = time.monotonic() + self.CLOSE_TIMEOUT
        while (pending := asyncio.all_tasks(loop)) and time.monotonic() < deadline:
            for task in pending:
                task.cancel()
            wait = asyncio.wait(pending, timeout=max(0.0, deadline - time.monotonic()))
            loop.run_until_complete(wait)
        if self.client is not None:
            # a client that cannot close cleanly must not block shutdown
            with contextlib.suppress(Exception):
                loop.run_until_complete(asyncio.wait_for(self.client.close(), self.CLOSE_TIMEOUT))
        with contextlib.suppress(Exception):
            loop.run_until_complete(loop.shutdown_asyncgens())

    async def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """``await coro`` on the private loop; :class:`BackendError` when the runner is closed
        before or while it runs."""
        with self._lock:  # close() cannot stop the loop between the check and the submission
            if self.closed:
                coro.close()
                raise BackendError(f"{self.label}: model closed")
            future: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(
                coro, self.loop
            )
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if self.closed and (task is None or not task.cancelling()):
                # cancelled by close(), not by the caller
                raise BackendError(
                    f"{self.label}: model closed while the request was in flight"
                ) from None
            raise

    def close(self) -> None:
        """Stop the loop; its thread cancels pending requests, closes the client and the loop.

        Idempotent.  From another thread it waits (a bounded time) for that; from the loop's
        own thread (e.g. a finalizer run there) it only stops the loop."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        if threading.current_thread() is self.thread:
            self.loop.stop()  # _serve finishes the job once the current callback returns
            return
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            self.loop.call_soon_threadsafe(self.loop.stop)
        if self.thread.is_alive():
            self.thread.join(2 * self.CLOSE_TIMEOUT)


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise BackendError(
            "the openai client is not installed: pip install 'toollab[openai]'"
        ) from exc
    return openai


class OpenAIModel(Model):
    """A model behind an OpenAI-compatible HTTP API."""

    supports_constraints = True

    def __init__(
        self,
        model: str = "",
        base_url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 5.0,
        total_timeout: float | None = None,
        max_retries: int = 3,
        max_concurrency: int = 8,
        backoff: float = 0.5,
        backoff_max: float = 8.0,
        name: str | None = None,
    ) -> None:
        _import_openai()
        self.model = model
        self.base_url = check_base_url(
            (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        )
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "sk-no-key"
        if (
            timeout <= 0
            or connect_timeout <= 0
            or (total_timeout is not None and total_timeout <= 0)
        ):
            raise UsageError("timeout, connect_timeout and total_timeout must be positive")
        if max_concurrency < 1:
            raise UsageError("max_concurrency must be at least 1")
        #: seconds for one attempt's complete answer
        self.timeout = float(timeout)
        self.connect_timeout = min(float(connect_timeout), self.timeout)
        #: seconds for one request across all its attempts, backoffs and fallbacks
        self.total_timeout = float(total_timeout) if total_timeout else 2.0 * self.timeout
        self.max_retries = max(0, int(max_retries))
        self.max_concurrency = int(max_concurrency)
        self.backoff = float(backoff)
        self.backoff_max = float(backoff_max)
        self.name = name or f"openai:{model}@{self.base_url}"
        #: None = not tried yet, True/False = the server does / does not take ``tools``
        self.native_tools_ok: bool | None = None
        self.schema_mode = 0
        self.retries = 0  # how many retries were made (for tests and reports)
        self._runner: _ClientLoop | None = None
        #: the name of this model's client thread (one per model; tests count it)
        self.thread_name = f"toollab-openai-client-{next(_MODEL_SERIALS)}"
        self._runner_lock = threading.Lock()
        self._model_lock: asyncio.Lock | None = None

    # -- the client, on its own loop ---------------------------------------------------------------
    def _make_client(self) -> Any:
        openai = _import_openai()
        return openai.AsyncOpenAI(
            api_key=self.api_key,
            base_url=self.base_url,
            timeout=openai.Timeout(self.timeout, connect=self.connect_timeout),
            max_retries=0,
        )

    def _client_loop(self) -> _ClientLoop:
        with self._runner_lock:
            if self._runner is None or self._runner.closed:
                try:
                    runner = _ClientLoop(
                        self._make_client,
                        self.max_concurrency,
                        name=self.thread_name,
                        label=self.base_url,
                    )
                except ToolLabError:
                    raise
                except Exception as exc:
                    raise BackendError(
                        f"{self.base_url}: cannot create the OpenAI client: "
                        f"{type(exc).__name__}: {exc}"
                    ) from exc
                # a model dropped without close() still releases its connections and thread
                weakref.finalize(self, runner.close)
                self._runner = runner
                self._model_lock = None
            return self._runner

    @property
    def client(self) -> Any:
        """The ``AsyncOpenAI`` client every request of this model uses."""
        return self._client_loop().client

    # -- retries -----------------------------------------------------------------------------------
    async def _with_retries(self, call: Callable[[], Awaitable[Any]], deadline: float) -> Any:
        """``call()`` with a deadline per attempt and retries, all before ``deadline``
        (a ``time.monotonic()`` value)."""
        openai = _import_openai()
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BackendError(self._out_of_time(attempt))
            budget = min(self.timeout, remaining)
            error: Exception
            try:
                return await asyncio.wait_for(call(), budget)
            except TimeoutError as exc:  # the whole answer did not arrive within the budget
                error = exc
            except (
                openai.RateLimitError,
                openai.InternalServerError,
                openai.APIConnectionError,
            ) as exc:
                if _is_refusal(exc):  # a request the server cannot take: retrying will not help
                    raise
                error = exc
            except openai.APIStatusError as exc:
                if exc.status_code < 500 or _is_refusal(exc):
                    raise
                error = exc  # a 5xx not mapped above
            if attempt >= self.max_retries:
                raise BackendError(self._describe(error, attempt + 1, budget)) from error
            delay = self._delay(attempt, error)
            if time.monotonic() + delay >= deadline:
                raise BackendError(
                    self._describe(error, attempt + 1, budget)
                    + f"; the {self.total_timeout:g} s limit of the request leaves no time to retry"
                ) from error
            await asyncio.sleep(delay)
            attempt += 1
            self.retries += 1

    def _out_of_time(self, attempts: int) -> str:
        plural = "s" if attempts != 1 else ""
        return (
            f"{self.base_url}: no answer within {self.total_timeout:g} s in all "
            f"(after {attempts} attempt{plural})"
        )

    def _delay(self, attempt: int, exc: Exception) -> float:
        retry_after = None
        response = getattr(exc, "response", None)
        if response is not None:
            try:
                retry_after = float(response.headers.get("retry-after", ""))
            except (TypeError, ValueError):
                retry_after = None
        base = min(self.backoff_max, self.backoff * (2**attempt))
        if retry_after is not None and 0 <= retry_after <= self.backoff_max:
            base = max(base, retry_after)
        return base * (0.5 + random.random() / 2)

    def _describe(self, exc: Exception, attempts: int, budget: float | None = None) -> str:
        openai = _import_openai()
        tries = f" (after {attempts} attempt{'s' if attempts != 1 else ''})"
        if isinstance(exc, TimeoutError | openai.APITimeoutError):
            if budget is not None and budget < self.timeout:
                return (
                    f"{self.base_url}: no answer within {budget:.3g} s (what was left of the "
                    f"request's {self.total_timeout:g} s){tries}"
                )
            return f"{self.base_url}: no answer within {self.timeout:g} s{tries}"
        if isinstance(exc, openai.APIConnectionError):
            return f"cannot reach {self.base_url}: {exc}{tries}"
        if isinstance(exc, openai.APIStatusError):
            return f"{self.base_url} answered HTTP {exc.status_code}: {_short(exc)}{tries}"
        return f"{self.base_url}: {exc}{tries}"

    # -- the request -------------------------------------------------------------------------------
    async def _model_name(self, client: Any, deadline: float) -> str:
        if self.model:
            return self.model
        if self._model_lock is None:
            self._model_lock = asyncio.Lock()
        async with self._model_lock:
            if not self.model:
                page = await self._with_retries(lambda: client.models.list(), deadline)
                data = getattr(page, "data", None)
                if not data:
                    raise BackendError(
                        f"{self.base_url} lists no models; name one: openai:<model>@<url>"
                    )
                self.model = str(data[0].id)
        return self.model

    def _kwargs(self, req: ChatRequest, model: str, native: bool) -> dict[str, Any]:
        opts = req.options
        kw: dict[str, Any] = {
            "model": model,
            "max_tokens": opts.max_tokens,
            "temperature": opts.temperature,
            "top_p": opts.top_p,
            "seed": opts.seed,
        }
        if opts.stop:
            kw["stop"] = list(opts.stop)
        extra: dict[str, Any] = {}
        if opts.grammar is not None:
            extra["grammar"] = opts.grammar
        elif opts.json_schema is not None:
            mode = SCHEMA_MODES[self.schema_mode]
            if mode == "json_schema":
                kw["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "output", "schema": opts.json_schema, "strict": True},
                }
            elif mode == "json_object":
                if req.prompt is None:
                    kw["response_format"] = {"type": "json_object", "schema": opts.json_schema}
                else:  # completions endpoints of llama.cpp servers: a grammar or json_schema
                    extra.update(_completion_schema(opts.json_schema))
            else:
                extra["guided_json"] = opts.json_schema
        if extra:
            kw["extra_body"] = extra
        if req.prompt is not None:
            kw["prompt"] = req.prompt
            kw.pop("response_format", None)
        else:
            kw["messages"] = req.messages
            if native:
                kw["tools"] = [t.to_openai() for t in req.tools]
        return kw

    async def request(self, req: ChatRequest) -> ModelOutput:
        runner = self._client_loop()
        out: ModelOutput = await runner.run(self._request(req, runner))
        return out

    async def _request(self, req: ChatRequest, runner: _ClientLoop) -> ModelOutput:
        """The request, on the client's loop."""
        openai = _import_openai()
        client = runner.client
        async with runner.sem:
            t0 = time.perf_counter()
            # the request's own clock starts when it is served, not while it waits its turn
            deadline = time.monotonic() + self.total_timeout
            model = await self._model_name(client, deadline)
            for _ in range(len(SCHEMA_MODES) + 2):  # each refusal changes a mode; bounded
                native = bool(
                    req.prompt is None
                    and req.tools
                    and req.options.native_tools
                    and self.native_tools_ok is not False
                )
                kw = self._kwargs(req, model, native)
                if req.prompt is not None:
                    call = lambda kw=kw: client.completions.create(**kw)  # noqa: E731
                else:
                    call = lambda kw=kw: client.chat.completions.create(**kw)  # noqa: E731
                try:
                    resp = await self._with_retries(call, deadline)
                except openai.APIStatusError as exc:
                    if _is_refusal(exc) and self._fall_back(exc, native, req):
                        continue
                    raise BackendError(self._describe(exc, 1)) from exc
                except BackendError:
                    raise
                except Exception as exc:  # invalid JSON bodies and other malformed answers
                    raise BackendError(
                        f"{self.base_url}: malformed response: {type(exc).__name__}: {exc}"
                    ) from exc
                if native:
                    self.native_tools_ok = True
                out = self._output(resp, req.prompt is not None)
                out.timings = Timings(total_s=time.perf_counter() - t0)
                out.tag = req.tag
                return out
        raise BackendError(f"{self.base_url} refused every form of the request")

    def _fall_back(self, exc: Exception, native: bool, req: ChatRequest) -> bool:
        """Switch off what the server refused; True when the request should be tried again."""
        msg = _short(exc).lower()
        if native and "tool" in msg:
            self.native_tools_ok = False
            return True
        if (
            req.options.json_schema is not None
            and req.options.grammar is None
            and self.schema_mode < len(SCHEMA_MODES) - 1
            and any(w in msg for w in ("response_format", "json_schema", "schema", "json"))
        ):
            self.schema_mode += 1
            return True
        return False

    def _output(self, resp: Any, completion: bool) -> ModelOutput:
        choices = getattr(resp, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise BackendError(
                f"{self.base_url}: malformed response (no choices): {str(resp)[:200]!r}"
            )
        choice = choices[0]
        tool_calls: list[ToolCall] | None = None
        if completion:
            text = getattr(choice, "text", None)
            if not isinstance(text, str):
                raise BackendError(f"{self.base_url}: malformed completion (no text)")
        else:
            message = getattr(choice, "message", None)
            if message is None:
                raise BackendError(f"{self.base_url}: malformed response (choice without message)")
            text = message.content or ""
            raw_calls = getattr(message, "tool_calls", None) or []
            if raw_calls:
                tool_calls, text = _read_tool_calls(raw_calls, text)
        usage = getattr(resp, "usage", None)
        cached = 0
        details = getattr(usage, "prompt_tokens_details", None)
        if details is not None:
            cached = int(getattr(details, "cached_tokens", 0) or 0)
        return ModelOutput(
            text=text,
            tool_calls=tool_calls,
            usage=Usage(
                prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                cached_tokens=cached,
            ),
            finish_reason=getattr(choice, "finish_reason", None),
            stop=_matched_stop(choice),
        )

    def close(self) -> None:
        """Close the client's connections and stop its loop thread (a later request reopens)."""
        with self._runner_lock:
            runner, self._runner = self._runner, None
        if runner is not None:
            runner.close()


def _read_tool_calls(raw_calls: list[Any], text: str) -> tuple[list[ToolCall] | None, str]:
    """Native calls → ToolCalls.  Calls whose arguments are not JSON are model output to score:
    they are handed back as text (a JSON list of ``{name, arguments}``) for the parser to judge."""
    calls: list[ToolCall] = []
    raw: list[dict[str, Any]] = []
    bad = False
    for tc in raw_calls:
        fn = getattr(tc, "function", None)
        name = getattr(fn, "name", None) or ""
        args = getattr(fn, "arguments", None) or ""
        raw.append({"name": name, "arguments": args})
        try:
            parsed = json.loads(args) if args.strip() else {}
            if not isinstance(parsed, dict) or not name:
                raise ValueError("arguments are not an object")
            calls.append(ToolCall(name=name, arguments=parsed, id=getattr(tc, "id", None) or None))
        except (ValueError, TypeError):
            bad = True
    if bad:
        return None, (text + "\n" if text else "") + json.dumps(raw, ensure_ascii=False)
    return calls, text


def _completion_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """llama-cpp-python's server takes ``grammar`` on /completions; llama.cpp's ``json_schema``."""
    try:
        from llama_cpp.llama_grammar import json_schema_to_gbnf
    except ImportError:
        return {"json_schema": schema}
    return {"grammar": json_schema_to_gbnf(json.dumps(schema))}


def _is_refusal(exc: Exception) -> bool:
    """The server refused the request's form: 400/422, or a 5xx that is a request validation
    error (llama-cpp-python's server answers those with 500)."""
    status = getattr(exc, "status_code", None)
    if status in (400, 422):
        return True
    return isinstance(status, int) and status >= 500 and "validation error" in _short(exc).lower()


def _short(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, dict) else err
        if msg:
            return str(msg)[:500]
        return json.dumps(body)[:500]
    return str(getattr(exc, "message", None) or exc)[:500]


@register_provider("openai")  # no model part: the first model the server lists
def _openai_provider(spec: ModelSpec, **options: Any) -> Model:
    opts = merge_options(
        spec,
        options,
        [
            "api_key",
            "timeout",
            "connect_timeout",
            "total_timeout",
            "max_retries",
            "max_concurrency",
            "backoff",
            "backoff_max",
        ],
        {"concurrency": "max_concurrency", "retries": "max_retries"},
    )
    return OpenAIModel(spec.model, spec.base_url, **opts)


def _matched_stop(choice: Any) -> str | None:
    """The stop string the server says generation ended at: vLLM's ``stop_reason``, SGLang's
    ``matched_stop`` (either may be a token id instead, or absent: then None)."""
    for attr in ("stop_reason", "matched_stop"):
        value = getattr(choice, attr, None)
        if isinstance(value, str) and value:
            return value
    return None
