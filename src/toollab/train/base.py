"""The base model of a run: a transformers folder, made once from a GGUF when needed.

transformers reads a GGUF (``gguf_file=``, dequantized to float32) but will not train it, so a
GGUF base (``bundled`` or a path) is converted once into a transformers folder under
``$TOOLLAB_CACHE/models/<name>-<sha256[:16]>`` (default ``~/.cache/toollab``), keyed by the
GGUF's content.  The folder is written beside its final place and renamed into it, so a killed
conversion leaves nothing that looks finished; a lock file keeps two runs from converting at once.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from toollab.errors import BackendError, InputError
from toollab.models.bundled import bundled_gguf_path

MARKER = "toollab-converted.json"


def cache_root() -> Path:
    return Path(os.environ.get("TOOLLAB_CACHE", Path.home() / ".cache" / "toollab"))


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class BaseModel:
    """A trainable base: its transformers folder and, when it came from one, the GGUF."""

    folder: Path
    gguf: Path | None = None
    gguf_sha256: str | None = None


def resolve_base(base: str) -> BaseModel:
    """``bundled``, a GGUF file or a transformers folder; a clear error when none is there."""
    if base == "bundled":
        return gguf_to_transformers(bundled_gguf_path())
    p = Path(base).expanduser()
    if p.is_file() and p.suffix.lower() == ".gguf":
        return gguf_to_transformers(p)
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise InputError(
                "not a transformers model folder (no config.json)", path=p, where="base"
            )
        meta = p / MARKER
        if meta.is_file():
            info = json.loads(meta.read_text(encoding="utf-8"))
            gguf = Path(info["gguf"]) if info.get("gguf") else None
            return BaseModel(p, gguf if gguf and gguf.is_file() else None, info.get("sha256"))
        return BaseModel(p)
    raise InputError(
        "base model not found (give `bundled`, a .gguf file or a transformers folder)",
        path=p,
        where="base",
    )


def gguf_to_transformers(gguf: Path, cache: Path | None = None) -> BaseModel:
    """The cached transformers folder of ``gguf``, converting it the first time."""
    gguf = gguf.resolve()
    sha = file_sha256(gguf)
    root = (cache or cache_root()) / "models"
    folder = root / f"{gguf.stem}-{sha[:16]}"
    done = BaseModel(folder, gguf, sha)
    if (folder / MARKER).is_file():
        return done
    root.mkdir(parents=True, exist_ok=True)
    with (root / f".{folder.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / MARKER).is_file():
            return done
        tmp = root / f".{folder.name}.partial-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            _convert(gguf, tmp)
            (tmp / MARKER).write_text(
                json.dumps({"gguf": str(gguf), "sha256": sha}, indent=1), encoding="utf-8"
            )
            shutil.rmtree(folder, ignore_errors=True)  # an unfinished one, without the marker
            os.replace(tmp, folder)
        except OSError as exc:
            raise BackendError(f"could not write the converted model to {root}: {exc}") from exc
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return done


def _convert(gguf: Path, out: Path) -> None:
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:  # pragma: no cover - the [train] extra installs them
        raise BackendError(
            "training needs the [train] extra: pip install 'toollab[train]'"
        ) from exc
    try:
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise BackendError(f"transformers could not read {gguf}: {exc}") from exc
    # the weights are float32 now: drop what marks the model as GGUF-quantized
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    setattr(model, "hf_quantizer", None)  # noqa: B010 - torch's Module types its attributes
    setattr(model, "is_quantized", False)  # noqa: B010
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
