"""transformers backend, in process on CPU.

``hf:/path/to/model_dir`` loads a model folder; ``hf:/path/model.gguf`` (or a folder plus
``gguf_file=NAME``) loads a GGUF through transformers' ``gguf_file=`` (dequantized to float32);
``hf:bundled`` is the bundled GGUF that way.  Messages are rendered with the tokenizer's chat
template (``tools=`` handed to it only when ``template_tools`` is set: the ``chat`` template
route), so prompts and parsing are the same as with llama.cpp.  Greedy by default, seed via
``torch.manual_seed``, stop strings, usage and timings (prompt time = time to the first new
token).

``json_schema`` requests are constrained by a logits processor from outlines
(:mod:`toollab.models.hf_constrain`, the ``hf`` extra installs it); ``supports_constraints`` is
true when outlines is installed.  Raw GBNF ``grammar`` is llama.cpp's and is refused with a
:class:`BackendError`, as is ``json_schema`` without outlines — never silently ignored.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from toollab.errors import BackendError
from toollab.models import hf_constrain
from toollab.models.base import (
    ChatRequest,
    ChatTemplateSource,
    Model,
    ModelOutput,
    Timings,
    Usage,
    cut_at_stop,
)
from toollab.models.bundled import bundled_gguf_path
from toollab.models.constrain import RepeatGuard
from toollab.models.llamacpp import _chatml, physical_cores
from toollab.models.registry import ModelSpec, merge_options, register_provider


class _FirstTokenTimer:
    """A generation streamer that notes when the first new token arrives."""

    def __init__(self) -> None:
        self.puts = 0
        self.first_token_at: float | None = None

    def put(self, value: Any) -> None:
        self.puts += 1
        if self.puts == 2 and self.first_token_at is None:  # 1st put is the prompt
            self.first_token_at = time.perf_counter()

    def end(self) -> None:
        return None


class _RepeatStop:
    """A transformers stopping criterion asking a :class:`RepeatGuard` about the new text."""

    def __init__(self, guard: RepeatGuard, tokenizer: Any, n_prompt: int) -> None:
        self.guard, self.tokenizer, self.n_prompt = guard, tokenizer, n_prompt

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        text = self.tokenizer.decode(input_ids[0, self.n_prompt :], skip_special_tokens=True)
        stop = self.guard(str(text))
        return torch.full((input_ids.shape[0],), stop, dtype=torch.bool, device=input_ids.device)


class HFModel(Model):
    """A causal LM through transformers on CPU."""

    max_concurrency = 1

    def __init__(
        self,
        path: str | Path,
        *,
        gguf_file: str | None = None,
        n_threads: int | None = None,
        name: str | None = None,
    ) -> None:
        p = Path(path)
        if gguf_file is None and p.suffix.lower() == ".gguf":
            p, gguf_file = p.parent, p.name
        if not p.is_dir():
            raise BackendError(f"model folder not found: {p}")
        if gguf_file is not None and not (p / gguf_file).is_file():
            raise BackendError(f"GGUF model file not found: {p / gguf_file}")
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:
            raise BackendError(
                "transformers/torch are not installed: pip install 'toollab[hf]'"
            ) from exc
        self.path = p
        self.gguf_file = gguf_file
        self.name = name or f"hf:{p / gguf_file if gguf_file else p}"
        self.n_threads = int(n_threads or physical_cores())
        torch.set_num_threads(self.n_threads)
        kw: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(p), **kw)
            self.model = AutoModelForCausalLM.from_pretrained(str(p), dtype=torch.float32, **kw)
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            raise BackendError(f"transformers could not load {self.name[3:]}: {exc}") from exc
        self.model.eval()
        self._lock = threading.Lock()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="toollab-hf")
        #: JSON-Schema constraints need outlines (the ``hf`` extra)
        self.supports_constraints = hf_constrain.available()
        self._constrainer: hf_constrain.OutlinesConstrainer | None = None

    # -- prompts -----------------------------------------------------------------------------------
    def render(self, req: ChatRequest) -> str:
        if req.prompt is not None:
            return req.prompt
        tok = self.tokenizer
        if not getattr(tok, "chat_template", None):
            return _chatml(req.messages)
        tools: list[Any] | None = (
            [t.to_hf() for t in req.tools] if (req.tools and req.options.template_tools) else None
        )
        try:
            text = tok.apply_chat_template(
                req.messages, tools=tools, add_generation_prompt=True, tokenize=False
            )
        except Exception as exc:
            raise BackendError(
                f"the chat template of {self.name} refused the messages: {exc}"
            ) from exc
        return str(text)

    def own_chat_template(self) -> ChatTemplateSource | None:
        source = getattr(self.tokenizer, "chat_template", None)
        if not isinstance(source, str) or not source:
            return None
        tokens = {
            key: tok
            for key in ("bos_token", "eos_token")
            if isinstance(tok := getattr(self.tokenizer, key, None), str)
        }
        return ChatTemplateSource(source, tokens)

    # -- constraints -------------------------------------------------------------------------------
    def _logits_processors(self, req: ChatRequest) -> list[Any]:
        opts = req.options
        if opts.grammar is not None:
            raise BackendError(
                "raw GBNF grammars are llama.cpp's: use json_schema with the transformers "
                "backend, or the llama.cpp backend (bundled: or llamacpp:) for grammar"
            )
        if opts.json_schema is None:
            return []
        if not self.supports_constraints:
            raise BackendError(
                "json_schema with the transformers backend needs outlines: pip install "
                "'toollab[hf]' (or use the llama.cpp backend)"
            )
        if self._constrainer is None:
            self._constrainer = hf_constrain.OutlinesConstrainer(self.model, self.tokenizer)
        return [self._constrainer.processor(opts.json_schema)]

    # -- generation --------------------------------------------------------------------------------
    def _run(self, req: ChatRequest) -> ModelOutput:
        import torch

        opts = req.options
        with self._lock:
            t0 = time.perf_counter()
            processors = self._logits_processors(req)
            text = self.render(req)
            enc = self.tokenizer(
                text, return_tensors="pt", add_special_tokens=req.prompt is not None
            )
            n_prompt = int(enc["input_ids"].shape[1])
            timer = _FirstTokenTimer()
            sample = opts.temperature > 0
            gen: dict[str, Any] = {
                "max_new_tokens": opts.max_tokens,
                "do_sample": sample,
                "streamer": timer,
                "pad_token_id": self.tokenizer.pad_token_id or self.tokenizer.eos_token_id,
                "eos_token_id": self.tokenizer.eos_token_id,
            }
            if sample:
                gen.update(temperature=opts.temperature, top_p=opts.top_p)
            else:
                gen.update(temperature=None, top_p=None, top_k=None)
            if opts.stop:
                gen.update(stop_strings=list(opts.stop), tokenizer=self.tokenizer)
            if processors:
                from transformers import LogitsProcessorList

                gen["logits_processor"] = LogitsProcessorList(processors)
            guard = RepeatGuard() if opts.stop_on_repeat else None
            if guard is not None:
                from transformers import StoppingCriteriaList

                gen["stopping_criteria"] = StoppingCriteriaList(
                    [_RepeatStop(guard, self.tokenizer, n_prompt)]
                )
            torch.manual_seed(opts.seed)
            try:
                with torch.inference_mode():
                    out = self.model.generate(**enc, **gen)  # type: ignore[misc]
            except RuntimeError as exc:
                raise BackendError(f"transformers generation failed: {exc}") from exc
            total = time.perf_counter() - t0
        new = out[0, n_prompt:]
        completion = str(self.tokenizer.decode(new, skip_special_tokens=True))
        finish = "length" if len(new) >= opts.max_tokens else "stop"
        if guard is not None and guard.stopped:
            finish = "repeat"
        completion, stop = cut_at_stop(completion, opts.stop)
        if stop is not None:
            finish = "stop"
        prompt_s = (timer.first_token_at - t0) if timer.first_token_at else total
        return ModelOutput(
            text=completion,
            usage=Usage(prompt_tokens=n_prompt, completion_tokens=len(new)),
            timings=Timings(
                total_s=total, prompt_s=prompt_s, generation_s=max(0.0, total - prompt_s)
            ),
            finish_reason=finish,
            stop=stop,
            tag=req.tag,
        )

    async def request(self, req: ChatRequest) -> ModelOutput:
        # one long-lived worker thread: torch's OpenMP intra-op team belongs to the calling thread
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, self._run, req)

    def close(self) -> None:
        worker = getattr(self, "_worker", None)
        if worker is not None:
            worker.shutdown(wait=True, cancel_futures=True)


@register_provider("hf")
def _hf_provider(spec: ModelSpec, **options: Any) -> Model:
    opts = merge_options(spec, options, ["gguf_file", "n_threads"], {"threads": "n_threads"})
    if spec.model in ("bundled", "", "smollm2-135m"):
        gguf = bundled_gguf_path()
        return HFModel(gguf.parent, gguf_file=opts.pop("gguf_file", gguf.name), **opts)
    return HFModel(spec.model, **opts)
