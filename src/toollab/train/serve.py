"""Export a finished run for serving: which files, from where, into where.

``export_run(RUN)`` reads ``RUN/run.json`` for the base (its GGUF gives the metadata and the
tokenizer) and writes ``RUN/gguf/adapter.gguf`` (served as
``llamacpp:BASE.gguf+lora=RUN/gguf/adapter.gguf``) and merged ``model-f16.gguf`` /
``model-q8_0.gguf`` (served as ``llamacpp:RUN/gguf/model-f16.gguf``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from rich.console import Console

from toollab.errors import InputError
from toollab.train.base import resolve_base
from toollab.train.export import (
    AdapterType,
    OutType,
    export_adapter_gguf,
    export_model_gguf,
    merge_adapter,
)


def _run_info(run: Path) -> dict[str, Any]:
    p = run / "run.json"
    if not p.is_file():
        return {}
    try:
        info = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=p, line=exc.lineno) from exc
    return info if isinstance(info, dict) else {}


def export_run(
    run: str | Path,
    out: str | Path | None = None,
    what: list[str] | tuple[str, ...] = ("adapter", "f16", "q8_0"),
    base_gguf: str | Path | None = None,
    console: Console | None = None,
    adapter_dtype: AdapterType = "f32",
) -> dict[str, Path]:
    """Write the asked GGUF files; returns ``{kind: path}``."""
    console = console or Console(stderr=True)
    run = Path(run)
    if not run.is_dir():
        raise InputError("no such run or model folder", path=run)
    info = _run_info(run)
    if (run / "adapter_config.json").is_file():
        adapter: Path | None = run
        model_dir: Path | None = None
    elif (run / "config.json").is_file():
        adapter, model_dir = None, run
    else:
        adapter = run / "adapter" if (run / "adapter" / "adapter_config.json").is_file() else None
        model_dir = run / "model" if (run / "model" / "config.json").is_file() else None
        if adapter is None and model_dir is None:
            raise InputError(
                "the folder holds no finished run (adapter/ or model/), adapter or model", path=run
            )
    base_info = info.get("base") or {}
    base_folder = Path(base_info["folder"]) if base_info.get("folder") else None
    if base_gguf is None:
        if base_info.get("gguf"):
            base_gguf = base_info["gguf"]
        else:
            raise InputError(
                "the base GGUF (metadata and tokenizer for llama.cpp) is unknown: give --base",
                path=run,
            )
    if base_folder is None and adapter is not None:
        base_folder = resolve_base(str(base_gguf)).folder
    dest = Path(out) if out else run / "gguf"
    written: dict[str, Path] = {}
    if "adapter" in what:
        if adapter is None:
            raise InputError("an adapter GGUF needs a LoRA run; this is a full model", path=run)
        console.print("writing the LoRA adapter GGUF")
        written["adapter"] = export_adapter_gguf(
            adapter, dest / "adapter.gguf", base_gguf, adapter_dtype
        )
    kinds: list[OutType] = [k for k in ("f32", "f16", "q8_0") if k in what]  # type: ignore[misc]
    if kinds:
        merged = model_dir
        tmp: Path | None = None
        if merged is None and adapter is not None and base_folder is not None:
            console.print("merging the adapter into the base")
            tmp = dest / ".merged"
            dest.mkdir(parents=True, exist_ok=True)
            merged = merge_adapter(adapter, base_folder, tmp)
        if merged is None:
            raise InputError("nothing to merge: no adapter and no model folder", path=run)
        try:
            for kind in kinds:
                console.print(f"writing the merged model GGUF ({kind})")
                written[kind] = export_model_gguf(
                    merged, dest / f"model-{kind}.gguf", base_gguf, kind
                )
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
    return written
