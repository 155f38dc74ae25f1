"""A sentence-transformers encoder run through ONNX Runtime: the same vectors, faster on a CPU.

One all-MiniLM-L6-v2 forward pass of a 70-token query takes about 20 ms through torch on the
2-core machine and about 12 ms through ONNX Runtime (BENCHMARKS.md, "Tool retrieval"); the
vectors agree to 1e-6.  The model's transformer is exported once with ``torch.onnx.export`` and
kept under ``$TOOLLAB_CACHE/onnx``, keyed by the model folder's files and the torch and ONNX
Runtime versions, so later runs only load it.  Tokenisation, mean pooling and normalisation stay
as sentence-transformers defines them.

Only the plain pipeline is served (a Transformer, mean pooling, optionally Normalize; the
vectors are always normalised, as toollab asks for);
:func:`onnx_encoder` returns ``None`` for anything else, and the caller keeps torch.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def onnx_available() -> bool:
    try:
        import onnx  # noqa: F401  (torch.onnx.export needs it)
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def _transformer(model: Any) -> Any | None:
    """The Transformer module when ``model`` is Transformer -> mean Pooling [-> Normalize]."""
    mods = list(model)
    names = [type(m).__name__ for m in mods]
    if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return None
    cfg = mods[1].get_config_dict()
    mean = cfg.get("pooling_mode") == "mean" or (
        cfg.get("pooling_mode_mean_tokens") is True
        and not any(
            v is True
            for k, v in cfg.items()
            if k.startswith("pooling_mode_") and k != "pooling_mode_mean_tokens"
        )
    )
    return mods[0] if mean else None


def _fingerprint(folder: Path) -> str:
    import onnxruntime
    import torch

    h = hashlib.sha256(f"{torch.__version__}|{onnxruntime.__version__}".encode())
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            h.update(f"{p.relative_to(folder)}|{st.st_size}|{int(st.st_mtime)}".encode())
    return h.hexdigest()[:32]


class OnnxEncoder:
    """``encode(texts)`` -> unit-length float32 rows, as ``SentenceTransformer.encode(texts,
    normalize_embeddings=True)`` gives."""

    def __init__(self, model: Any, onnx_path: Path) -> None:
        import onnxruntime as ort
        import torch

        self.tokenizer = model.tokenizer
        self.max_length = int(model.max_seq_length)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = max(1, torch.get_num_threads())
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(
            str(onnx_path), opts, providers=["CPUExecutionProvider"]
        )
        self.inputs = [i.name for i in self.session.get_inputs()]

    def _batch(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="np"
        )
        feed = {k: np.asarray(enc[k], dtype=np.int64) for k in self.inputs}
        hidden = self.session.run(None, feed)[0]
        mask = np.asarray(enc["attention_mask"], dtype=np.float32)[..., None]
        vec = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        vec = vec / np.clip(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12, None)
        return vec.astype(np.float32)

    def encode(
        self, texts: list[str], batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        # longest first, as sentence-transformers does, so each batch pads little
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        starts: Any = range(0, len(order), batch_size)
        if show_progress:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="Batches")
        rows = [self._batch([texts[i] for i in order[s : s + batch_size]]) for s in starts]
        sorted_rows = np.concatenate(rows)
        out = np.empty_like(sorted_rows)
        out[np.asarray(order)] = sorted_rows
        return out


def _export(transformer: Any, tokenizer: Any, path: Path) -> None:
    import torch

    bert = transformer.auto_model.eval()
    sample = tokenizer(["an example sentence"], return_tensors="pt")
    names = [n for n in _INPUTS if n in sample]

    class _Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, *args: Any) -> Any:
            return self.bert(**dict(zip(names, args, strict=True))).last_hidden_state

    axes = {n: {0: "batch", 1: "tokens"} for n in names}
    axes["hidden"] = {0: "batch", 1: "tokens"}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # exporter notes on BERT's indexing, not for users
            torch.onnx.export(
                _Hidden(),
                tuple(sample[n] for n in names),
                str(tmp),
                input_names=names,
                output_names=["hidden"],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def onnx_encoder(model: Any, folder: Path, cache: Path) -> OnnxEncoder | None:
    """An ONNX Runtime encoder for the sentence-transformers ``model`` loaded from ``folder``,
    exporting it to ``cache`` the first time; None when ONNX Runtime is not installed or the
    pipeline is not a plain mean-pooled transformer."""
    if not onnx_available():
        return None
    transformer = _transformer(model)
    if transformer is None:
        return None
    path = cache / f"{_fingerprint(folder)}.onnx"
    if path.is_file():
        try:
            return OnnxEncoder(model, path)
        except Exception:  # a damaged export (an interrupted disk, say) is made again
            path.unlink(missing_ok=True)
    _export(transformer, model.tokenizer, path)
    return OnnxEncoder(model, path)
