"""llama.cpp backend (llama-cpp-python), in process on CPU.

* ``bundled:smollm2-135m`` — the bundled GGUF (``bundled:smollm2-135m-tools``: with toollab's
  shipped tool-use adapter); ``llamacpp:/path/model.gguf`` — any GGUF;
  ``+lora=/path/adapter.gguf`` — a LoRA adapter; ``?n_ctx=4096&n_threads=2`` — options.
* Chat messages are rendered with the GGUF's own chat template (the same Jinja template
  transformers uses), ``tools=`` handed to it only when ``options.template_tools`` (the ``chat``
  template route); :attr:`ChatRequest.prompt` is completed verbatim.
* Greedy by default (temperature 0 → greedy sampler); the request's seed reaches sampling.
* ``json_schema`` → a GBNF grammar (compiled once per schema), ``grammar`` → raw GBNF. Greedy
  constrained requests check the grammar lazily (only the argmax token, the full vocabulary
  only when it is rejected; ``lazy_grammar=false`` uses llama-cpp-python's sampler chain).
* ``stop_on_repeat``: generation stops as soon as a complete call repeats an earlier one
  (:class:`~toollab.models.constrain.RepeatGuard`, on both paths; ``finish_reason`` "repeat").
* The KV state of the previous prompt is reused for the longest common token prefix
  (``Usage.cached_tokens``); :meth:`LlamaCppModel.batch` orders requests to maximize it and an
  optional :class:`~toollab.models.prefix.PrefixStore` keeps snapshots of several prefixes.
* The ``Llama`` object is not thread-safe: requests are serialized by a lock and run in a worker
  thread, so the event loop stays free.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from toollab.errors import BackendError, InputError, UsageError, did_you_mean
from toollab.models.base import (
    ChatRequest,
    ChatTemplateSource,
    Model,
    ModelOutput,
    Timings,
    Usage,
    cut_at_stop,
)
from toollab.models.bundled import (
    BUNDLED_MODELS,
    BUNDLED_NAME,
    bundled_adapter_path,
    bundled_gguf_path,
)
from toollab.models.constrain import RepeatGuard
from toollab.models.llamacpp_greedy import greedy_grammar_completion
from toollab.models.prefix import PrefixStore, common_prefix_len, order_for_reuse
from toollab.models.registry import ModelSpec, merge_options, register_provider

DEFAULT_N_CTX = 4096

_OPTIONS = [
    "lora_path",
    "lora_scale",
    "n_ctx",
    "n_threads",
    "n_batch",
    "prefix_cache",
    "prefix_reuse",
    "lazy_grammar",
    "chat_template",
    "verbose",
]
_ALIASES = {"threads": "n_threads", "lora": "lora_path", "ctx": "n_ctx"}


def physical_cores() -> int:
    """Physical CPU cores (hyper-threads do not speed up llama.cpp); falls back to cpu_count."""
    try:
        seen: set[tuple[str, str]] = set()
        phys = core = ""
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "physical id":
                    phys = value
                elif key == "core id":
                    core = value
                elif not key and (phys or core):
                    seen.add((phys, core))
                    phys = core = ""
        if phys or core:
            seen.add((phys, core))
        if seen:
            return len(seen)
    except OSError:
        pass
    return max(1, os.cpu_count() or 1)


def _chatml(messages: list[dict[str, Any]]) -> str:
    """ChatML rendering, used only for a GGUF without a chat template."""
    out = [
        f"<|im_start|>{m.get('role', 'user')}\n{m.get('content') or ''}<|im_end|>\n"
        for m in messages
    ]
    return "".join(out) + "<|im_start|>assistant\n"


def _import_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError as exc:
        raise BackendError(
            "llama-cpp-python is not installed: pip install 'toollab[llama]'"
        ) from exc
    return llama_cpp


class LlamaCppModel(Model):
    """A GGUF model through llama-cpp-python."""

    supports_constraints = True
    max_concurrency = 1

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        lora_path: str | Path | None = None,
        lora_scale: float = 1.0,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        n_batch: int = 512,
        prefix_cache: int = 0,
        prefix_reuse: bool = True,
        lazy_grammar: bool = True,
        chat_template: str | None = None,
        verbose: bool = False,
        name: str | None = None,
    ) -> None:
        path = Path(model_path) if model_path is not None else bundled_gguf_path()
        if not path.is_file():
            raise BackendError(f"GGUF model file not found: {path}")
        if lora_path is not None and not Path(lora_path).is_file():
            raise BackendError(f"LoRA adapter file not found: {lora_path}")
        llama_cpp = _import_llama_cpp()
        self.path = path
        self.lora_path = str(lora_path) if lora_path is not None else None
        self.n_threads = int(n_threads or physical_cores())
        self.n_ctx = int(n_ctx)
        self.name = name or f"llamacpp:{path}"
        try:
            self.llm = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                n_batch=int(n_batch),
                lora_path=self.lora_path,
                lora_scale=float(lora_scale),
                verbose=verbose,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            what = f"{path}" + (f" with LoRA {self.lora_path}" if self.lora_path else "")
            raise BackendError(f"llama.cpp could not load {what}: {exc}") from exc
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toollab-llamacpp")
        self._grammars: dict[str, Any] = {}
        #: reuse the KV state of a shared prompt prefix (off: every prompt is evaluated in full)
        self.prefix_reuse = bool(prefix_reuse)
        self.prefix_store = PrefixStore(prefix_cache) if (prefix_cache and prefix_reuse) else None
        #: greedy + grammar: check only the argmax against the grammar (same text, faster)
        self.lazy_grammar = bool(lazy_grammar)
        self._template_source: ChatTemplateSource | None = None
        self._formatter = self._make_formatter(chat_template)

    # -- prompt rendering ------------------------------------------------------------------------
    def _make_formatter(self, template: str | None) -> Any:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = template or self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            self._template_source = None
            return None
        model = self.llm._model
        eos_id, bos_id = self.llm.token_eos(), self.llm.token_bos()
        eos = model.token_get_text(eos_id) if eos_id != -1 else ""
        bos = model.token_get_text(bos_id) if bos_id != -1 else ""
        self._template_source = ChatTemplateSource(
            str(template), {"bos_token": bos, "eos_token": eos}
        )
        return Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)

    def own_chat_template(self) -> ChatTemplateSource | None:
        """The chat template prompts are rendered with (``chat_template=`` or the GGUF's)."""
        return self._template_source

    def render(self, req: ChatRequest) -> str:
        """The exact text the model completes for ``req``."""
        return self._render(req)[0]

    def _render(self, req: ChatRequest) -> tuple[str, bool, list[str]]:
        """(text, add_bos, stop strings from the template)."""
        if req.prompt is not None:
            return req.prompt, True, []
        if self._formatter is None:
            return _chatml(req.messages), True, ["<|im_end|>"]
        tools = (
            [t.to_hf() for t in req.tools] if (req.tools and req.options.template_tools) else None
        )
        try:
            res = self._formatter(messages=req.messages, tools=tools)
        except Exception as exc:  # template errors (e.g. roles must alternate)
            raise BackendError(
                f"the chat template of {self.path.name} refused the messages: {exc}"
            ) from exc
        stops = [s for s in (res.stop if isinstance(res.stop, list) else [res.stop]) if s]
        return res.prompt, not res.added_special, stops

    def tokenize(self, req: ChatRequest) -> list[int]:
        text, add_bos, _ = self._render(req)
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)

    # -- constraints -----------------------------------------------------------------------------
    def _grammar(self, req: ChatRequest) -> Any:
        opts = req.options
        if opts.grammar is None and opts.json_schema is None:
            return None
        from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

        if opts.grammar is not None:
            source, kind = opts.grammar, "gbnf"
        else:
            # keep the key order: it is the order the grammar makes the model write properties
            source = json.dumps(opts.json_schema, ensure_ascii=False)
            kind = "schema"
        key = kind + ":" + hashlib.sha256(source.encode()).hexdigest()
        cached = self._grammars.get(key)
        if cached is not None:
            return cached
        if kind == "schema":
            try:
                gbnf = json_schema_to_gbnf(source)
            except Exception as exc:
                raise InputError(f"cannot turn the JSON Schema into a grammar: {exc}") from exc
        else:
            gbnf = source
        grammar = LlamaGrammar.from_string(gbnf, verbose=False)
        self._check_grammar(grammar)
        self._grammars[key] = grammar
        return grammar

    def _check_grammar(self, grammar: Any) -> None:
        """llama.cpp returns NULL for a grammar it cannot parse; catch that before sampling."""
        import llama_cpp

        sampler = llama_cpp.llama_sampler_init_grammar(
            self.llm._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not sampler:
            first = grammar._grammar.strip().splitlines()[:1]
            raise InputError(
                f"invalid GBNF grammar (starting {first[0][:60]!r})"
                if first
                else "empty GBNF grammar"
            )
        llama_cpp.llama_sampler_free(sampler)

    # -- generation ------------------------------------------------------------------------------
    def _run(self, req: ChatRequest) -> ModelOutput:
        import llama_cpp

        opts = req.options
        with self._lock:
            t0 = time.perf_counter()
            text, add_bos, template_stops = self._render(req)
            tokens = self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)
            if len(tokens) >= self.n_ctx:
                raise BackendError(
                    f"prompt of {len(tokens)} tokens does not fit the context of {self.n_ctx} "
                    f"tokens (raise n_ctx)"
                )
            grammar = self._grammar(req)
            if not self.prefix_reuse:
                self.llm.reset()
            elif self.prefix_store is not None:
                self.prefix_store.prepare(self.llm, tokens)
            cached = self._reusable(tokens)
            greedy = opts.temperature <= 0
            stops = [*opts.stop, *template_stops]
            guard = RepeatGuard() if opts.stop_on_repeat else None
            ctx = self.llm._ctx.ctx
            llama_cpp.llama_perf_context_reset(ctx)
            resp: Any
            try:
                if greedy and grammar is not None and self.lazy_grammar:
                    resp = self._complete_lazy(tokens, grammar, opts.max_tokens, stops, guard)
                else:
                    resp = self.llm.create_completion(
                        prompt=tokens,
                        max_tokens=opts.max_tokens,
                        temperature=0.0 if greedy else opts.temperature,
                        top_p=1.0 if greedy else opts.top_p,
                        top_k=1 if greedy else 40,
                        min_p=0.0 if greedy else 0.05,
                        repeat_penalty=1.0,
                        seed=opts.seed,
                        # stop strings are matched by the criteria below, which knows which
                        # one ended generation (llama-cpp-python's own matching does not say)
                        stop=[],
                        grammar=grammar,
                        stopping_criteria=self._stop_criteria(stops, guard, len(tokens)),
                    )
                    choice = resp["choices"][0]
                    choice["text"], choice["stop"] = cut_at_stop(choice["text"], stops)
                    if choice["stop"] is not None:
                        choice["finish_reason"] = "stop"
                    elif guard is not None and guard.stopped:
                        choice["finish_reason"] = "repeat"
            except (ValueError, RuntimeError) as exc:
                raise BackendError(f"llama.cpp generation failed: {exc}") from exc
            total = time.perf_counter() - t0
            perf = llama_cpp.llama_perf_context(ctx)
        choice = resp["choices"][0]  # type: ignore[index]
        usage = resp.get("usage") or {}  # type: ignore[union-attr]
        prompt_s = float(perf.t_p_eval_ms) / 1000.0
        if perf.n_p_eval == 0 and perf.n_eval > 0:  # a one-token suffix is counted as "eval"
            prompt_s = float(perf.t_eval_ms) / 1000.0 / perf.n_eval
        return ModelOutput(
            text=choice["text"],
            usage=Usage(
                prompt_tokens=int(usage.get("prompt_tokens", len(tokens))),
                completion_tokens=int(usage.get("completion_tokens", 0)),
                cached_tokens=cached,
            ),
            timings=Timings(
                total_s=total, prompt_s=prompt_s, generation_s=max(0.0, total - prompt_s)
            ),
            finish_reason=choice.get("finish_reason"),
            stop=choice.get("stop"),
            tag=req.tag,
        )

    def _stop_criteria(self, stops: list[str], guard: RepeatGuard | None, n_prompt: int) -> Any:
        """llama-cpp-python ``stopping_criteria``: a stop string in the generated text, or
        ``guard`` finding a repeated call.

        llama-cpp-python asks it with the tokens evaluated so far, i.e. one token late: the
        token that completes a stop string is kept, and the caller cuts the text at the stop
        string (the text before it is what llama-cpp-python's own stop matching gives)."""
        wanted = [s for s in stops if s]
        if guard is None and not wanted:
            return None
        from llama_cpp import StoppingCriteriaList  # optional dependency

        llm = self.llm

        def stopped(input_ids: Any, logits: Any) -> bool:
            generated = [int(t) for t in input_ids[n_prompt:]]
            if not generated:
                return False
            text = llm.detokenize(generated).decode("utf-8", errors="ignore")
            if any(s in text for s in wanted):
                return True
            return guard is not None and guard(text)

        return StoppingCriteriaList([stopped])

    def _complete_lazy(
        self,
        tokens: list[int],
        grammar: Any,
        max_tokens: int | None,
        stops: list[str],
        guard: RepeatGuard | None = None,
    ) -> dict[str, Any]:
        """Greedy grammar-constrained completion, shaped like ``create_completion``'s answer."""
        out = greedy_grammar_completion(
            self.llm,
            tokens,
            gbnf=grammar._grammar,
            root=grammar._root,
            max_tokens=max_tokens,
            stop=stops,
            stop_when=guard,
        )
        return {
            "choices": [{"text": out.text, "finish_reason": out.finish_reason, "stop": out.stop}],
            "usage": {
                "prompt_tokens": len(tokens),
                "completion_tokens": out.completion_tokens,
            },
        }

    def _reusable(self, tokens: Sequence[int]) -> int:
        """How many prompt tokens llama.cpp will take from the KV state (as ``generate`` does)."""
        llm = self.llm
        n = common_prefix_len(llm.input_ids[: llm.n_tokens].tolist(), tokens)
        if n == len(tokens):
            if llm.n_tokens == len(tokens) and not llm._requires_eval:
                return n
            return n - 1
        return n

    async def request(self, req: ChatRequest) -> ModelOutput:
        # One long-lived worker thread for every request, whatever event loop asks: llama.cpp's
        # OpenMP thread team belongs to the calling thread, so a new thread per request (as
        # ``asyncio.to_thread`` under a fresh loop gives) rebuilds it each time, ~5 % slower.
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, self._run, req)

    async def batch(
        self, reqs: Sequence[ChatRequest], concurrency: int | None = None
    ) -> list[ModelOutput]:
        """Requests in prefix-sharing order (one at a time); results in the given order."""
        order = order_for_reuse(reqs, self._sort_key)
        results: list[ModelOutput | None] = [None] * len(reqs)
        for i in order:
            results[i] = await self.safe_request(reqs[i])
        return [r for r in results if r is not None]

    def _sort_key(self, req: ChatRequest) -> str:
        try:
            return self._render(req)[0]
        except BackendError:
            return ""

    def close(self) -> None:
        worker = getattr(self, "_worker", None)
        if worker is not None:
            worker.shutdown(wait=True, cancel_futures=True)
        llm = getattr(self, "llm", None)
        if llm is not None:
            llm.close()


@register_provider("llamacpp", needs_model="a GGUF path: llamacpp:/path/model.gguf")
def _llamacpp_provider(spec: ModelSpec, **options: Any) -> Model:
    opts = merge_options(spec, options, _OPTIONS, _ALIASES)
    if spec.lora and "lora_path" not in opts:
        opts["lora_path"] = spec.lora
    if not spec.model:
        raise UsageError("llamacpp needs a GGUF path: llamacpp:/path/model.gguf")
    return LlamaCppModel(spec.model, **opts)


@register_provider("bundled")
def _bundled_provider(spec: ModelSpec, **options: Any) -> Model:
    name = spec.model or BUNDLED_NAME
    if name not in BUNDLED_MODELS:
        names = list(BUNDLED_MODELS)
        raise UsageError(
            f"unknown bundled model {spec.model!r}{did_you_mean(spec.model, names)}; "
            f"bundled: {', '.join(names)}"
        )
    opts = merge_options(spec, options, _OPTIONS, _ALIASES)
    if spec.lora and "lora_path" not in opts:
        opts["lora_path"] = spec.lora
    shipped = bundled_adapter_path(name)
    if shipped is not None:
        if "lora_path" in opts:
            raise UsageError(
                f"bundled:{name} already carries its adapter; for another one use "
                f"bundled:{BUNDLED_NAME}+lora=ADAPTER.gguf"
            )
        opts["lora_path"] = shipped
    return LlamaCppModel(bundled_gguf_path(), **opts)
