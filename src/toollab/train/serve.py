"""Export a finished run for serving: which files, from where, into where.

``export_run(RUN)`` reads ``RUN/run.json`` for the base (its GGUF gives the metadata and the
tokenizer) and writes ``RUN/gguf/adapter.gguf`` (served as
``llamacpp:BASE.gguf+lora=RUN/gguf/adapter.gguf``) and merged ``model-f16.gguf`` /
``model-q8_0.gguf`` (served as ``llamacpp:RUN/gguf/model-f16.gguf``)."""

from __future__ import annotations

import shutil
from pathlib import Path

from rich.console import Console

from toollab.data.atomic import mark_folder
from toollab.errors import InputError
from toollab.models.bundled import bundled_gguf_path
from toollab.train.base import resolve_base
from toollab.train.export import (
    AdapterType,
    OutType,
    check_adapter,
    check_base_gguf,
    check_model,
    export_adapter_gguf,
    export_model_gguf,
    merge_adapter,
    read_json_object,
)
from toollab.train.outputs import check_export_folder


def _run_info(run: Path) -> tuple[str | None, str | None]:
    """``(base GGUF, base folder)`` that the run's ``run.json`` names (``None`` where it names
    none, or when there is no ``run.json``); a run's ``checkpoint-N/`` folder reads its run's
    record.  A damaged or wrong-typed file is an :class:`InputError` naming it."""
    p = run / "run.json"
    if not p.exists() and run.name.startswith("checkpoint-"):
        p = run.parent / "run.json"
    if not p.exists():
        return None, None
    info = read_json_object(p, "the run record")
    base = info.get("base")
    if base is None:
        return None, None
    if not isinstance(base, dict):
        raise InputError(f"'base' must be an object, got {type(base).__name__}", path=p)
    found: list[str | None] = []
    for key in ("gguf", "folder"):
        value = base.get(key)
        if value is not None and (not isinstance(value, str) or "\0" in value):
            raise InputError(f"'base.{key}' must be a path (a string), got {value!r}", path=p)
        found.append(value or None)
    return found[0], found[1]


def export_run(
    run: str | Path,
    out: str | Path | None = None,
    what: list[str] | tuple[str, ...] = ("adapter", "f16", "q8_0"),
    base_gguf: str | Path | None = None,
    console: Console | None = None,
    adapter_dtype: AdapterType = "f32",
    *,
    force: bool = False,
) -> dict[str, Path]:
    """Write the asked GGUF files; returns ``{kind: path}``.  A GGUF of the same name in the
    output folder that toollab did not write is refused before any work unless ``force``."""
    console = console or Console(stderr=True)
    run = Path(run)
    if not run.is_dir():
        raise InputError("no such run or model folder", path=run)
    info_gguf, info_folder = _run_info(run)
    if (run / "adapter_config.json").exists():
        adapter: Path | None = run
        model_dir: Path | None = None
    elif (run / "config.json").exists():
        adapter, model_dir = None, run
    else:
        # a run's folder that is there is checked whole: a file missing in it is an error
        adapter = run / "adapter" if (run / "adapter").is_dir() else None
        model_dir = run / "model" if (run / "model").is_dir() else None
        if adapter is None and model_dir is None:
            raise InputError(
                "the folder holds no finished run (adapter/ or model/), adapter or model", path=run
            )
    base_folder = Path(info_folder) if info_folder else None
    if str(base_gguf) == "bundled":
        base_gguf = bundled_gguf_path()
    if base_gguf is None:
        if info_gguf:
            base_gguf = info_gguf
        else:
            raise InputError(
                "the base GGUF (metadata and tokenizer for llama.cpp) is unknown: give --base",
                path=run,
            )
    kinds: list[OutType] = [k for k in ("f32", "f16", "q8_0") if k in what]  # type: ignore[misc]
    dest = Path(out) if out else run / "gguf"
    check_export_folder(dest, what, force=force)
    # every input is checked before anything is written (or converted)
    if adapter is not None:
        check_adapter(adapter)
    if model_dir is not None:
        check_model(model_dir)
    check_base_gguf(Path(base_gguf))
    if base_folder is not None and kinds and model_dir is None:
        read_json_object(base_folder / "config.json", "the base model's configuration")
    if base_folder is None and adapter is not None:
        base_folder = resolve_base(str(base_gguf)).folder
    if "adapter" in what and adapter is None:
        raise InputError("an adapter GGUF needs a LoRA run; this is a full model", path=run)
    written: dict[str, Path] = {}
    mark_folder(dest)
    if "adapter" in what and adapter is not None:
        console.print("writing the LoRA adapter GGUF")
        written["adapter"] = export_adapter_gguf(
            adapter, dest / "adapter.gguf", base_gguf, adapter_dtype
        )
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
