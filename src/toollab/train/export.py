"""Export for serving with llama.cpp: a LoRA adapter GGUF and a merged model GGUF; and the
way back, a llama.cpp LoRA adapter GGUF as a PEFT adapter folder to train further.

Both files are written with the ``gguf`` package.  The model's metadata — architecture
hyper-parameters, the tokenizer (vocabulary, merges, special tokens) and the chat template — is
copied from the GGUF the base came from, so llama.cpp tokenizes and renders exactly as it does
for the base; only the tensors are new.  Tensor names follow llama.cpp's map for the
architecture, and the query/key rows are permuted the way llama.cpp's own converter does for
the ``llama`` architecture (SmolLM2 and the other Llama-style models).

* ``adapter.gguf``: ``general.type = adapter``, ``adapter.type = lora``, ``adapter.lora.alpha``
  and ``<name>.lora_a`` / ``<name>.lora_b`` per adapted matrix.  Served as
  ``llamacpp:base.gguf+lora=adapter.gguf``.
* ``model-f16.gguf`` / ``model-q8_0.gguf`` / ``model-f32.gguf``: the base with the adapter
  merged in (or a fully fine-tuned model); 1-D tensors (norms) stay float32.
* :func:`import_adapter_gguf`: an adapter GGUF (a shipped one, ``bundled:smollm2-135m-tools``'s,
  or any llama.cpp LoRA adapter of a supported architecture) as a float32 PEFT adapter folder
  for the base's transformers folder: ``init_adapter`` goes on training it.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, TypeGuard

from toollab.data.atomic import write_dir_atomic
from toollab.errors import BackendError, InputError
from toollab.train.base import file_sha256

OutType = Literal["f32", "f16", "q8_0"]
SUPPORTED_ARCHS = ("llama",)


def _gguf() -> Any:
    try:
        import gguf
    except ImportError as exc:  # pragma: no cover - the [train] extra installs it
        raise BackendError(
            "GGUF export needs the gguf package: pip install 'toollab[train]'"
        ) from exc
    return gguf


# -- the input files, checked before anything is written ------------------------------------------
#: the largest JSON header a safetensors file may declare (the format's own limit)
MAX_SAFETENSORS_HEADER = 100_000_000
_DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2,
    "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """The JSON object in ``path`` (``what`` names it in the error): a missing, unreadable,
    non-UTF-8, truncated or non-object file is an :class:`InputError` naming it."""
    if not path.exists():
        raise InputError(f"{what} is missing", path=path)
    if not path.is_file():
        raise InputError(f"{what} is not a file", path=path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not UTF-8 text (byte {exc.start})", path=path) from None
    except OSError as exc:
        raise InputError(f"{what} cannot be read: {exc.strerror or exc}", path=path) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{what} is not valid JSON: {exc.msg}", path=path, line=exc.lineno
        ) from None
    except RecursionError:
        raise InputError(f"{what} is nested too deeply", path=path) from None
    if not isinstance(value, dict):
        raise InputError(f"{what} must be a JSON object, not {type(value).__name__}", path=path)
    return value


def check_safetensors(path: Path) -> dict[str, tuple[str, list[int]]]:
    """``{tensor name: (dtype, shape)}`` of a safetensors file, read from its header alone: a
    missing, truncated or malformed file (a header that is not JSON, tensors whose byte ranges
    do not fit the file or their dtype and shape) is an :class:`InputError` naming it."""
    if not path.exists():
        raise InputError("the weights file is missing", path=path)
    if not path.is_file():
        raise InputError("the weights file is not a file", path=path)
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else -1
            if n < 2 or n > MAX_SAFETENSORS_HEADER or 8 + n > size:
                raise InputError(f"not a safetensors file, or truncated ({size} bytes)", path=path)
            raw = fh.read(n)
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=path) from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise InputError("the safetensors header is not valid JSON", path=path) from None
    if not isinstance(header, dict):
        raise InputError("the safetensors header is not a JSON object", path=path)
    data = size - 8 - n
    out: dict[str, tuple[str, list[int]]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        entry: dict[str, Any] = info if isinstance(info, dict) else {}
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if not (
            isinstance(dtype, str)
            and dtype in _DTYPE_BYTES
            and _naturals(shape)
            and _naturals(offsets)
            and len(offsets) == 2
        ):
            raise InputError(f"tensor {name!r}: malformed entry in the header", path=path)
        count = 1
        for d in shape:
            count *= d
        start, end = offsets
        if not 0 <= start <= end <= data or end - start != count * _DTYPE_BYTES[dtype]:
            raise InputError(
                f"tensor {name!r}: its bytes do not fit the file (truncated or damaged)",
                path=path,
            )
        out[name] = (dtype, shape)
    return out


def _naturals(value: Any) -> TypeGuard[list[int]]:
    return isinstance(value, list) and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value
    )


@functools.lru_cache(maxsize=2)
def _read_gguf(path: str, _mtime_ns: int, _size: int) -> Any:
    """The GGUF's reader, read once per file version (a check, then the export)."""
    return _gguf().GGUFReader(path)


class _Meta:
    """Architecture and hyper-parameters of a metadata GGUF, plus its key/values to copy."""

    def __init__(self, path: Path) -> None:
        _gguf()  # the package is there (a clear error if not)
        if not path.exists():
            raise InputError("the base GGUF (model metadata and tokenizer) is not there", path=path)
        try:
            stat = path.stat()
            self.reader = _read_gguf(str(path), stat.st_mtime_ns, stat.st_size)
            self.path = path
            self.arch = str(self.reader.fields["general.architecture"].contents())
            if self.arch not in SUPPORTED_ARCHS:
                raise InputError(
                    f"GGUF export supports the {', '.join(SUPPORTED_ARCHS)} architecture(s); "
                    f"this base is {self.arch!r}",
                    path=path,
                )
            self.n_head = int(self.reader.fields[f"{self.arch}.attention.head_count"].contents())
            kv = self.reader.fields.get(f"{self.arch}.attention.head_count_kv")
            self.n_head_kv = int(kv.contents()) if kv is not None else self.n_head
            self.n_block = int(self.reader.fields[f"{self.arch}.block_count"].contents())
            self.tensor_names = {t.name for t in self.reader.tensors}
        except InputError:
            raise
        except KeyError as exc:
            raise InputError(f"the base GGUF lacks the field {exc}", path=path) from None
        except Exception as exc:  # the gguf reader on a damaged file: anything
            raise InputError(
                f"not a readable GGUF file: {type(exc).__name__}: {exc}", path=path
            ) from None

    def copy_kv(self, writer: Any, skip: set[str], tokenizer: bool = True) -> None:
        gguf = _gguf()
        for key, f in self.reader.fields.items():
            if key.startswith("GGUF.") or key in skip or key == "general.architecture":
                continue
            if not tokenizer and key.startswith("tokenizer."):
                continue
            vtype = f.types[0]
            sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(key, f.contents(), vtype, sub_type=sub)

    def name_map(self) -> Any:
        gguf = _gguf()
        arch = next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == self.arch)
        return gguf.get_tensor_name_map(arch, self.n_block)


def check_base_gguf(path: Path) -> None:
    """The base GGUF is there, readable and of a supported architecture."""
    _Meta(path)


def _permute(w: Any, n_head: int) -> Any:
    """llama.cpp's query/key row order (its converter's ``LlamaModel.permute``)."""
    return (
        w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def _to_gguf_name(meta: _Meta, tmap: Any, hf_name: str) -> str:
    name = tmap.get_name(hf_name, try_suffixes=(".weight", ".bias"))
    if name is None:
        raise InputError(f"no llama.cpp tensor name for {hf_name!r} ({meta.arch})")
    return str(name)


def _prepare(meta: _Meta, hf_name: str, w: Any) -> Any:
    if hf_name.endswith(("q_proj.weight", "q_proj.bias")):
        return _permute(w, meta.n_head)
    if hf_name.endswith(("k_proj.weight", "k_proj.bias")):
        return _permute(w, meta.n_head_kv)
    return w


def _write(path: Path, fill: Any, arch: str) -> Path:
    """Write a GGUF beside ``path`` and rename it into place (never a half-written file)."""
    gguf = _gguf()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        writer = gguf.GGUFWriter(str(tmp), arch)
        fill(writer)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, path)
    except OSError as exc:
        raise BackendError(f"could not write {path}: {exc}") from exc
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


# -- the adapter ---------------------------------------------------------------------------------
def check_adapter(adapter_dir: Path) -> dict[str, Any]:
    """The adapter's configuration, its config and weights checked (nothing loaded)."""
    cfg_path = adapter_dir / "adapter_config.json"
    cfg = read_json_object(cfg_path, "the adapter configuration (not a PEFT adapter folder?)")
    alpha = cfg.get("lora_alpha")
    if not isinstance(alpha, int | float) or isinstance(alpha, bool):
        raise InputError(f"lora_alpha must be a number, got {alpha!r}", path=cfg_path)
    if cfg.get("peft_type") != "LORA":
        raise InputError(
            f"only LoRA adapters export to GGUF, got {cfg.get('peft_type')}", path=cfg_path
        )
    for key in ("use_dora", "use_rslora"):
        if cfg.get(key):
            raise InputError(f"`{key}` adapters have no llama.cpp form", path=cfg_path)
    if cfg.get("modules_to_save"):
        raise InputError("adapters with modules_to_save have no llama.cpp LoRA form", path=cfg_path)
    st = adapter_dir / "adapter_model.safetensors"
    if not st.exists():
        raise InputError("the adapter folder has no adapter_model.safetensors", path=adapter_dir)
    shapes = {name: shape for name, (_dtype, shape) in check_safetensors(st).items()}
    for name, shape in shapes.items():
        if len(shape) != 2:
            raise InputError(f"tensor {name!r} is not a matrix (shape {shape})", path=st)
        if name.endswith(".lora_A.weight"):
            b = shapes.get(name.removesuffix(".lora_A.weight") + ".lora_B.weight")
            if b is not None and len(b) == 2 and b[1] != shape[0]:
                raise InputError(
                    f"tensor {name!r}: its rank {shape[0]} is not lora_B's {b[1]}", path=st
                )
    return cfg


def _adapter_tensors(adapter_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    cfg = check_adapter(adapter_dir)
    from safetensors.numpy import load_file

    st = adapter_dir / "adapter_model.safetensors"
    try:
        return cfg, load_file(str(st))
    except Exception as exc:  # the header was checked; this is the reader's word on the rest
        raise InputError(f"cannot read the weights: {exc}", path=st) from None


AdapterType = Literal["f32", "f16"]


def export_adapter_gguf(
    adapter_dir: str | Path,
    out: str | Path,
    base_gguf: str | Path,
    dtype: AdapterType = "f32",
) -> Path:
    """The PEFT LoRA adapter in ``adapter_dir`` as a llama.cpp adapter GGUF at ``out``, its
    matrices in float32 or float16 (half the size; what a shipped adapter uses)."""
    import numpy as np

    if dtype not in ("f32", "f16"):
        raise InputError(f"adapter type {dtype!r}: choose f32 or f16", path=adapter_dir)
    np_type = np.float16 if dtype == "f16" else np.float32

    gguf = _gguf()
    meta = _Meta(Path(base_gguf))
    cfg, tensors = _adapter_tensors(Path(adapter_dir))
    tmap = meta.name_map()
    pairs: dict[str, dict[str, Any]] = {}
    for key, w in tensors.items():
        name = key.removeprefix("base_model.model.")
        for part, tag in ((".lora_A.weight", "a"), (".lora_B.weight", "b")):
            if name.endswith(part):
                hf = name[: -len(part)] + ".weight"
                pairs.setdefault(hf, {})[tag] = w
                break
        else:
            raise InputError(f"unexpected tensor {key!r} in the adapter", path=adapter_dir)

    def fill(writer: Any) -> None:
        # the architecture facts; an adapter carries no tokenizer
        meta.copy_kv(writer, skip={"general.file_type", "general.type"}, tokenizer=False)
        writer.add_type(gguf.GGUFType.ADAPTER)
        writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
        writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(cfg["lora_alpha"]))
        for hf, ab in sorted(pairs.items()):
            if set(ab) != {"a", "b"}:
                raise InputError(f"{hf}: the adapter lacks lora_A or lora_B", path=adapter_dir)
            gname = _to_gguf_name(meta, tmap, hf)
            if gname not in meta.tensor_names:
                raise InputError(
                    f"{hf} ({gname}) is not a tensor of the base GGUF", path=adapter_dir
                )
            a = ab["a"].astype(np.float32)
            try:
                b = _prepare(meta, hf, ab["b"].astype(np.float32))
            except ValueError:
                raise InputError(
                    f"{hf}: lora_B of shape {list(ab['b'].shape)} does not fit the base's "
                    f"{meta.n_head} attention heads",
                    path=adapter_dir,
                ) from None
            writer.add_tensor(f"{gname}.lora_a", a.astype(np_type))
            writer.add_tensor(f"{gname}.lora_b", b.astype(np_type))

    return _write(Path(out), fill, meta.arch)


# -- the adapter, back from llama.cpp ------------------------------------------------------------
def _unpermute(w: Any, n_head: int) -> Any:
    """The inverse of :func:`_permute`: llama.cpp's query/key row order back to transformers'."""
    return (
        w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def _adapter_reader(path: Path) -> tuple[Any, str, float]:
    """The reader of a LoRA adapter GGUF of a supported architecture, its architecture and
    alpha, checked."""
    _gguf()
    if not path.is_file():
        raise InputError("the adapter GGUF is not there", path=path)
    try:
        stat = path.stat()
        reader = _read_gguf(str(path), stat.st_mtime_ns, stat.st_size)
        fields = {
            k: reader.fields[k].contents()
            for k in ("general.type", "adapter.type", "general.architecture", "adapter.lora.alpha")
            if k in reader.fields
        }
    except Exception as exc:  # the gguf reader on a damaged file: anything
        raise InputError(
            f"not a readable GGUF file: {type(exc).__name__}: {exc}", path=path
        ) from None
    if fields.get("general.type") != "adapter" or fields.get("adapter.type") != "lora":
        raise InputError("not a LoRA adapter GGUF (general.type / adapter.type)", path=path)
    arch = fields.get("general.architecture")
    if arch not in SUPPORTED_ARCHS:
        raise InputError(
            f"adapters of the {', '.join(SUPPORTED_ARCHS)} architecture(s) import; this one is "
            f"for {arch!r}",
            path=path,
        )
    alpha = fields.get("adapter.lora.alpha")
    if not isinstance(alpha, int | float) or isinstance(alpha, bool) or alpha <= 0:
        raise InputError(f"adapter.lora.alpha must be a positive number, got {alpha!r}", path=path)
    return reader, str(arch), float(alpha)


def _config_int(config: dict[str, Any], key: str, folder: Path, default: int | None = None) -> int:
    value = config.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputError(
            f"{key} must be a positive integer, got {value!r}", path=folder / "config.json"
        )
    return value


def import_adapter_gguf(adapter_gguf: str | Path, base_folder: str | Path, out: str | Path) -> Path:
    """The llama.cpp LoRA adapter ``adapter_gguf`` as a PEFT adapter folder at ``out`` (float32
    weights; rank, alpha and target modules read from the file) for the transformers model in
    ``base_folder``. Every tensor is checked against the base's matrix it adapts before anything
    is written: a GGUF that is no LoRA adapter, of another architecture or shape, or with a
    ``lora_a`` and no ``lora_b`` is an :class:`InputError` naming the file and the tensor. The
    source file and its SHA-256 are written beside, in ``toollab-source.json``."""
    import numpy as np

    gguf = _gguf()
    path = Path(adapter_gguf)
    reader, arch, alpha = _adapter_reader(path)
    base_folder = Path(base_folder)
    config, files = check_model(base_folder)
    n_head = _config_int(config, "num_attention_heads", base_folder)
    n_head_kv = _config_int(config, "num_key_value_heads", base_folder, n_head)
    n_block = _config_int(config, "num_hidden_layers", base_folder)
    shapes = {name: shape for f in files for name, (_dt, shape) in check_safetensors(f).items()}
    arch_id = next(k for k, v in gguf.MODEL_ARCH_NAMES.items() if v == arch)
    tmap = gguf.get_tensor_name_map(arch_id, n_block)
    to_hf: dict[str, str] = {}
    for hf in shapes:
        gname = tmap.get_name(hf, try_suffixes=(".weight", ".bias"))
        if gname is not None:
            to_hf[str(gname)] = hf
    pairs: dict[str, dict[str, Any]] = {}
    for t in reader.tensors:
        stem, _, part = t.name.rpartition(".")
        if part not in ("lora_a", "lora_b") or stem not in to_hf:
            raise InputError(
                f"tensor {t.name!r} adapts no matrix of the base model in {base_folder}",
                path=path,
            )
        pairs.setdefault(stem, {})[part] = np.asarray(t.data, dtype=np.float32)
    if not pairs:
        raise InputError("the adapter GGUF holds no lora_a / lora_b tensors", path=path)
    tensors: dict[str, Any] = {}
    rank = 0
    for gname, ab in sorted(pairs.items()):
        hf = to_hf[gname]
        if set(ab) != {"lora_a", "lora_b"}:
            raise InputError(f"{gname}: the adapter lacks lora_a or lora_b", path=path)
        a, b = ab["lora_a"], ab["lora_b"]
        out_dim, in_dim = shapes[hf]
        r = a.shape[0] if a.ndim == 2 else -1
        if a.ndim != 2 or b.ndim != 2 or a.shape[1] != in_dim or b.shape != (out_dim, r):
            raise InputError(
                f"{gname}: lora_a {list(a.shape)} and lora_b {list(b.shape)} do not adapt the "
                f"base's {hf} of shape {[out_dim, in_dim]}",
                path=path,
            )
        if rank and r != rank:
            raise InputError(f"{gname}: rank {r}, the others' {rank}", path=path)
        rank = r
        try:
            if hf.endswith("q_proj.weight"):
                b = _unpermute(b, n_head)
            elif hf.endswith("k_proj.weight"):
                b = _unpermute(b, n_head_kv)
        except ValueError:
            raise InputError(
                f"{gname}: lora_b of shape {list(b.shape)} does not fit the base's attention heads",
                path=path,
            ) from None
        key = "base_model.model." + hf.removesuffix(".weight")
        tensors[f"{key}.lora_A.weight"] = np.ascontiguousarray(a)
        tensors[f"{key}.lora_B.weight"] = np.ascontiguousarray(b)
    targets = sorted({to_hf[g].removesuffix(".weight").rsplit(".", 1)[-1] for g in pairs})
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": str(base_folder),
        "r": rank,
        "lora_alpha": int(alpha) if alpha.is_integer() else alpha,
        "lora_dropout": 0.0,
        "target_modules": targets,
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": False,
    }
    source = {"gguf": str(path.resolve()), "sha256": file_sha256(path)}
    from safetensors.numpy import save_file

    def write(tmp: Path) -> None:
        save_file(tensors, str(tmp / "adapter_model.safetensors"))
        (tmp / "adapter_config.json").write_text(json.dumps(config, indent=1), encoding="utf-8")
        (tmp / "toollab-source.json").write_text(json.dumps(source, indent=1), encoding="utf-8")

    try:
        write_dir_atomic(out, write)
    except OSError as exc:
        raise BackendError(f"could not write {out}: {exc}") from exc
    return Path(out)


# -- the merged model ----------------------------------------------------------------------------
def check_model(model_dir: Path) -> tuple[dict[str, Any], list[Path]]:
    """A model folder's ``config.json`` and weight files, checked (nothing loaded)."""
    config = read_json_object(model_dir / "config.json", "the model configuration")
    tied = config.get("tie_word_embeddings", False)
    if not isinstance(tied, bool):
        raise InputError(
            f"tie_word_embeddings must be true or false, got {tied!r}",
            path=model_dir / "config.json",
        )
    files = sorted(model_dir.glob("*.safetensors"))
    files = [f for f in files if not f.name.startswith("adapter_")]
    if not files:
        raise InputError("no model weights (*.safetensors) in the folder", path=model_dir)
    for f in files:
        check_safetensors(f)
    return config, files


def _state_dict(files: list[Path]) -> Iterator[tuple[str, Any]]:
    from safetensors import safe_open

    for f in files:
        try:
            with safe_open(str(f), framework="pt") as fh:
                for key in fh.keys():  # noqa: SIM118 - safe_open is not a mapping
                    yield key, fh.get_tensor(key)
        except InputError:
            raise
        except Exception as exc:  # the header was checked; this is the reader's word
            raise InputError(f"cannot read the weights: {exc}", path=f) from None


def export_model_gguf(
    model_dir: str | Path, out: str | Path, base_gguf: str | Path, outtype: OutType = "f16"
) -> Path:
    """A transformers model folder (a merged or fully fine-tuned model) as a GGUF at ``out``."""
    import numpy as np

    gguf = _gguf()
    meta = _Meta(Path(base_gguf))
    model_dir = Path(model_dir)
    config, files = check_model(model_dir)
    tied = bool(config.get("tie_word_embeddings", False))
    tmap = meta.name_map()
    qtype = {
        "f32": gguf.GGMLQuantizationType.F32,
        "f16": gguf.GGMLQuantizationType.F16,
        "q8_0": gguf.GGMLQuantizationType.Q8_0,
    }[outtype]
    file_type = {
        "f32": gguf.LlamaFileType.ALL_F32,
        "f16": gguf.LlamaFileType.MOSTLY_F16,
        "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
    }[outtype]

    def fill(writer: Any) -> None:
        meta.copy_kv(
            writer, skip={"general.file_type", "general.type", "general.quantization_version"}
        )
        writer.add_type(gguf.GGUFType.MODEL)
        writer.add_file_type(file_type)
        writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
        for hf, t in _state_dict(files):
            if hf == "lm_head.weight" and tied:
                continue
            gname = _to_gguf_name(meta, tmap, hf)
            w = _prepare(meta, hf, t.float().numpy().astype(np.float32))
            if w.ndim == 1 or qtype == gguf.GGMLQuantizationType.F32:
                writer.add_tensor(gname, w)
            elif qtype == gguf.GGMLQuantizationType.F16:
                writer.add_tensor(gname, w.astype(np.float16))
            else:
                q = gguf.quants.quantize(w, qtype)
                writer.add_tensor(gname, q, raw_shape=q.shape, raw_dtype=qtype)

    return _write(Path(out), fill, meta.arch)


def merge_adapter(adapter_dir: str | Path, base_folder: str | Path, out: str | Path) -> Path:
    """The base transformers folder with the adapter merged in, saved at ``out``."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = Path(out)
    model = AutoModelForCausalLM.from_pretrained(str(base_folder), dtype=torch.float32)
    merged = PeftModel.from_pretrained(model, str(adapter_dir)).merge_and_unload()
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    merged.save_pretrained(str(tmp))
    AutoTokenizer.from_pretrained(str(base_folder)).save_pretrained(str(tmp))
    if out.exists():
        import shutil

        shutil.rmtree(out)
    os.replace(tmp, out)
    return out
