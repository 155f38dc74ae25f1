"""``toollab train export`` on a run folder whose files are damaged: every missing, truncated,
non-UTF-8, malformed or wrong-typed ``run.json``, ``adapter/adapter_config.json``,
``adapter/adapter_model.safetensors``, ``model/config.json`` or ``model/model.safetensors`` is one
clear error naming the file (exit 2, no traceback), and nothing is written.

The run folder is tiny and real: a LoRA adapter on one attention matrix of the bundled base (the
shapes it has), a model folder holding one norm vector, and the ``run.json`` naming the base
GGUF.  No torch is loaded: the undamaged folder exports its adapter GGUF with numpy alone."""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app

HIDDEN, RANK = 576, 2
ADAPTER_CFG = {"peft_type": "LORA", "r": RANK, "lora_alpha": 4, "target_modules": ["q_proj"]}
MODEL_CFG = {"architectures": ["LlamaForCausalLM"], "tie_word_embeddings": True}


@pytest.fixture(scope="module")
def base_gguf() -> Path:
    pytest.importorskip("gguf")
    pytest.importorskip("safetensors")
    from toollab.errors import BackendError
    from toollab.models.bundled import bundled_gguf_path

    try:
        return bundled_gguf_path()
    except BackendError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def good_run(base_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import numpy as np
    from safetensors.numpy import save_file

    run = tmp_path_factory.mktemp("good") / "run"
    (run / "adapter").mkdir(parents=True)
    (run / "model").mkdir()
    rng = np.random.default_rng(0)
    prefix = "base_model.model.model.layers.0.self_attn.q_proj"
    save_file(
        {
            f"{prefix}.lora_A.weight": rng.standard_normal((RANK, HIDDEN)).astype(np.float32),
            f"{prefix}.lora_B.weight": rng.standard_normal((HIDDEN, RANK)).astype(np.float32),
        },
        str(run / "adapter" / "adapter_model.safetensors"),
    )
    (run / "adapter" / "adapter_config.json").write_text(json.dumps(ADAPTER_CFG))
    save_file(
        {"model.norm.weight": np.ones(HIDDEN, dtype=np.float32)},
        str(run / "model" / "model.safetensors"),
    )
    (run / "model" / "config.json").write_text(json.dumps(MODEL_CFG))
    base = {"gguf": str(base_gguf), "folder": str(run / "no-base-folder")}
    (run / "run.json").write_text(json.dumps({"base": base, "steps": 8}))
    return run


def export(run: Path, out: Path, *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(
        app, ["train", "export", str(run), "--out", str(out), "--what", "adapter", *extra]
    )
    return res.exit_code, res.output


def test_the_undamaged_run_exports(good_run: Path, tmp_path: Path) -> None:
    import gguf

    code, output = export(good_run, tmp_path / "out")
    assert code == 0, output
    reader = gguf.GGUFReader(str(tmp_path / "out" / "adapter.gguf"))
    assert {t.name for t in reader.tensors} == {
        "blk.0.attn_q.weight.lora_a",
        "blk.0.attn_q.weight.lora_b",
    }
    assert reader.fields["adapter.lora.alpha"].contents() == 4.0


# -- the damage ---------------------------------------------------------------------------------------
Damage = Callable[[Path], None]


def _truncate(fraction: float) -> Damage:
    def damage(p: Path) -> None:
        data = p.read_bytes()
        p.write_bytes(data[: int(len(data) * fraction)])

    return damage


def _write(data: bytes) -> Damage:
    return lambda p: p.write_bytes(data)


def _json(value: object) -> Damage:
    return lambda p: p.write_text(json.dumps(value))


def _edit(**changes: object) -> Damage:
    def damage(p: Path) -> None:
        p.write_text(json.dumps({**json.loads(p.read_text()), **changes}))

    return damage


def _directory(p: Path) -> None:
    p.unlink()
    p.mkdir()


def _header(header: object, pad: int = 0) -> Damage:
    def damage(p: Path) -> None:
        raw = json.dumps(header).encode()
        p.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * pad)

    return damage


def _retype_first_tensor(**changes: object) -> Damage:
    """Rewrite the first tensor's header entry (the data stays as it is)."""

    def damage(p: Path) -> None:
        data = p.read_bytes()
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + n])
        first = next(k for k in header if k != "__metadata__")
        header[first] = {**header[first], **changes}
        raw = json.dumps(header).encode()
        raw += b" " * (-len(raw) % 8)
        p.write_bytes(struct.pack("<Q", len(raw)) + raw + data[8 + n :])

    return damage


JSON_DAMAGE: list[tuple[str, Damage]] = [
    ("empty", _write(b"")),
    ("truncated", _truncate(0.5)),
    ("not-utf8", _write(b'{"a": "\xff\xfe"}')),
    ("binary", _write(bytes(range(256)))),
    ("a-list", _json([1, 2])),
    ("a-string", _json("LORA")),
    ("null", _json(None)),
    ("deep", _write(b"[" * 100_000)),
    ("a-directory", _directory),
]
SAFETENSORS_DAMAGE: list[tuple[str, Damage]] = [
    ("empty", _write(b"")),
    ("seven-bytes", _write(b"\1" * 7)),
    ("truncated-header", _truncate(0.01)),
    ("truncated-data", _truncate(0.9)),
    ("huge-header-length", _write(struct.pack("<Q", 2**62) + b"{}")),
    ("header-not-json", _write(struct.pack("<Q", 4) + b"{{{{")),
    ("header-not-utf8", _write(struct.pack("<Q", 4) + b"\xff\xfe\xfd\xfc")),
    ("header-a-list", _header([1, 2])),
    ("unknown-dtype", _retype_first_tensor(dtype="F128")),
    ("shape-not-ints", _retype_first_tensor(shape=["576", 2])),
    ("negative-shape", _retype_first_tensor(shape=[-1, 2])),
    ("offsets-past-the-end", _retype_first_tensor(data_offsets=[0, 10**12])),
    ("offsets-backwards", _retype_first_tensor(data_offsets=[8, 0])),
    ("size-mismatch", _retype_first_tensor(shape=[3, 3])),
    ("entry-not-object", _header({"t": 5}, pad=8)),
    ("a-directory", _directory),
]
#: the file, the kind of damage, the function that does it, the words the error must hold
CASES: list[tuple[str, str, Damage, str]] = []
for rel in ("run.json", "adapter/adapter_config.json", "model/config.json"):
    CASES += [(rel, name, damage, Path(rel).name) for name, damage in JSON_DAMAGE]
for rel in ("adapter/adapter_model.safetensors", "model/model.safetensors"):
    CASES += [(rel, name, damage, Path(rel).name) for name, damage in SAFETENSORS_DAMAGE]
CASES += [
    ("run.json", "base-a-string", _json({"base": "bundled"}), "'base' must be an object"),
    ("run.json", "gguf-a-number", _json({"base": {"gguf": 5}}), "'base.gguf' must be a path"),
    ("run.json", "folder-a-list", _json({"base": {"gguf": "x", "folder": []}}), "base.folder"),
    ("run.json", "gguf-missing-file", _json({"base": {"gguf": "/nonexistent.gguf"}}), "nonexistent.gguf"),
    ("run.json", "gguf-not-a-gguf", _edit(base={"gguf": __file__}), "not a readable GGUF"),
    ("adapter/adapter_config.json", "alpha-a-string", _edit(lora_alpha="32"), "lora_alpha"),
    ("adapter/adapter_config.json", "alpha-missing", _json({"peft_type": "LORA"}), "lora_alpha"),
    ("adapter/adapter_config.json", "not-lora", _edit(peft_type="IA3"), "only LoRA"),
    ("adapter/adapter_config.json", "dora", _edit(use_dora=True), "use_dora"),
    ("adapter/adapter_model.safetensors", "vector", _retype_first_tensor(shape=[1152], dtype="F32"),
     "not a matrix"),
    ("adapter/adapter_model.safetensors", "wrong-rank", _retype_first_tensor(shape=[576, 2]),
     "rank 576"),
    ("model/config.json", "tied-a-string", _edit(tie_word_embeddings="yes"), "tie_word_embeddings"),
    ("adapter/adapter_model.safetensors", "missing", lambda p: p.unlink(), "adapter_model.safetensors"),
    ("model/model.safetensors", "missing", lambda p: p.unlink(), "no model weights"),
    ("model/config.json", "missing", lambda p: p.unlink(), "config.json"),
    ("run.json", "missing", lambda p: p.unlink(), "give --base"),
]  # fmt: skip


@pytest.mark.parametrize(
    "rel,damage,words", [(c[0], c[2], c[3]) for c in CASES], ids=[f"{c[0]}:{c[1]}" for c in CASES]
)
def test_a_damaged_file_is_one_clear_error_and_nothing_is_written(
    good_run: Path, tmp_path: Path, rel: str, damage: Damage, words: str
) -> None:
    run = tmp_path / "run"
    shutil.copytree(good_run, run)
    damage(run / rel)
    out = tmp_path / "out"
    code, output = export(run, out)
    assert code == 2, output
    assert "Traceback" not in output and words in output, output
    assert len(output.strip().splitlines()) <= 3, output  # one message, not a dump
    assert not out.exists()
    assert sorted(p.name for p in (run / "adapter").iterdir()) <= [
        "adapter_config.json",
        "adapter_model.safetensors",
    ]
