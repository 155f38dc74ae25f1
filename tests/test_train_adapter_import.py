"""A llama.cpp LoRA adapter GGUF back into a PEFT adapter folder (``import_adapter_gguf``), and
``init_adapter`` taking such a file or ``bundled:NAME``: the shipped adapter round-trips to the
same tensors, every bad input is an error naming the file (and the tensor), and the imported
folder is made once per source file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from toollab.errors import InputError
from toollab.train.config import TrainConfig

pytestmark = pytest.mark.slow  # the bundled base, converted once to a transformers folder


@pytest.fixture(scope="module")
def base(train_base: Any) -> Any:
    return train_base


@pytest.fixture(scope="module")
def shipped() -> Path:
    from toollab.models.bundled import bundled_adapter_path

    path = bundled_adapter_path("smollm2-135m-tools")
    assert path is not None
    return path


def _tensors(path: Path) -> dict[str, Any]:
    import gguf
    import numpy as np

    return {t.name: np.array(t.data) for t in gguf.GGUFReader(str(path)).tensors}


def test_the_shipped_adapter_round_trips_to_the_same_tensors(
    base: Any, shipped: Path, tmp_path: Path
) -> None:
    import numpy as np
    from safetensors.numpy import load_file

    from toollab.train.export import export_adapter_gguf, import_adapter_gguf

    folder = import_adapter_gguf(shipped, base.folder, tmp_path / "imported")
    cfg = json.loads((folder / "adapter_config.json").read_text())
    assert cfg["peft_type"] == "LORA" and cfg["r"] == 16 and cfg["lora_alpha"] == 32
    assert set(cfg["target_modules"]) == {
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"
    }  # fmt: skip
    weights = load_file(str(folder / "adapter_model.safetensors"))
    assert len(weights) == 30 * 7 * 2
    a = weights["base_model.model.model.layers.3.self_attn.q_proj.lora_A.weight"]
    b = weights["base_model.model.model.layers.3.self_attn.q_proj.lora_B.weight"]
    assert a.shape == (16, 576) and b.shape == (576, 16) and a.dtype == np.float32
    source = json.loads((folder / "toollab-source.json").read_text())
    assert source["gguf"] == str(shipped.resolve()) and len(source["sha256"]) == 64
    # llama.cpp's query/key row order is undone: exporting again gives the very same tensors
    again = export_adapter_gguf(folder, tmp_path / "again.gguf", base.gguf, dtype="f16")
    want, got = _tensors(shipped), _tensors(again)
    assert want.keys() == got.keys()
    for name, w in want.items():
        assert np.array_equal(w, got[name]), name
    # and the permutation is not the identity, so the check above can fail
    q = "blk.3.attn_q.weight.lora_b"
    assert not np.array_equal(want[q].astype(np.float32), b)


def test_bad_adapter_files_name_the_file_and_the_tensor(
    base: Any, shipped: Path, tmp_path: Path
) -> None:
    from safetensors.numpy import save_file

    from toollab.train.export import import_adapter_gguf

    with pytest.raises(InputError, match="not a LoRA adapter GGUF") as err:
        import_adapter_gguf(base.gguf, base.folder, tmp_path / "x")
    assert str(base.gguf) in str(err.value)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(shipped.read_bytes()[:5000])
    with pytest.raises(InputError, match="not a readable GGUF") as err:
        import_adapter_gguf(cut, base.folder, tmp_path / "x")
    assert "cut.gguf" in str(err.value)
    with pytest.raises(InputError, match="not there"):
        import_adapter_gguf(tmp_path / "none.gguf", base.folder, tmp_path / "x")
    # a base of another shape: every adapted matrix is there, 8 x 8
    import numpy as np

    other = tmp_path / "other-base"
    other.mkdir()
    config = json.loads((base.folder / "config.json").read_text())
    (other / "config.json").write_text(json.dumps(config))
    names = [
        f"model.layers.{i}.{m}.weight"
        for i in range(30)
        for m in (
            "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
            "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj",
        )
    ]  # fmt: skip
    save_file({n: np.zeros((8, 8), np.float32) for n in names}, str(other / "model.safetensors"))
    with pytest.raises(InputError, match=r"blk\.0\.\w+\.weight: lora_a .* of shape \[8, 8\]"):
        import_adapter_gguf(shipped, other, tmp_path / "x")
    # a base that lacks the adapted matrices
    save_file({"model.norm.weight": np.zeros(8, np.float32)}, str(other / "model.safetensors"))
    with pytest.raises(InputError, match="adapts no matrix of the base model"):
        import_adapter_gguf(shipped, other, tmp_path / "x")
    assert not (tmp_path / "x").exists()  # nothing half-written
    assert not list(tmp_path.glob(".x.partial*"))


def test_init_adapter_takes_a_folder_a_gguf_or_a_shipped_name(
    base: Any, shipped: Path, tmp_path: Path
) -> None:
    from toollab.train.sft import init_adapter_folder

    out = tmp_path / "run"
    folder = init_adapter_folder("bundled:smollm2-135m-tools", base, out)
    assert folder == out / "init-adapter" and (folder / "adapter_config.json").is_file()
    made = (folder / "adapter_model.safetensors").stat().st_mtime_ns
    # made once: a second start (a resumed run) reuses it
    assert init_adapter_folder(str(shipped), base, out) == folder
    assert (folder / "adapter_model.safetensors").stat().st_mtime_ns == made
    # another source file: imported again
    copy = tmp_path / "copy.gguf"
    copy.write_bytes(shipped.read_bytes())
    source = json.loads((folder / "toollab-source.json").read_text())
    (folder / "toollab-source.json").write_text(json.dumps({**source, "sha256": "0" * 64}))
    init_adapter_folder(str(copy), base, out)
    assert json.loads((folder / "toollab-source.json").read_text())["gguf"] == str(copy)
    # a PEFT folder is taken as it is
    assert init_adapter_folder(str(folder), base, tmp_path / "other") == folder
    with pytest.raises(InputError, match="no bundled model with a shipped adapter") as err:
        init_adapter_folder("bundled:smollm2-135m", base, out)
    assert "bundled:smollm2-135m-tools" in str(err.value)
    with pytest.raises(InputError, match="not there"):
        init_adapter_folder(str(tmp_path / "missing"), base, out)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"no adapter_config\.json"):
        init_adapter_folder(str(empty), base, out)


def test_a_config_file_keeps_bundled_names_and_resolves_paths(tmp_path: Path) -> None:
    cfg = TrainConfig(init_adapter="bundled:smollm2-135m-tools", base="bundled")
    fixed = cfg.relative_to(tmp_path, {"init_adapter", "base"})
    assert fixed.init_adapter == "bundled:smollm2-135m-tools" and fixed.base == "bundled"
    rel = TrainConfig(init_adapter="runs/a/adapter.gguf").relative_to(tmp_path, {"init_adapter"})
    assert rel.init_adapter == os.path.join(str(tmp_path), "runs/a/adapter.gguf")
