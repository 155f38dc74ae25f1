"""Real training runs on the bundled SmolLM2-135M (converted once to a transformers folder):
a few LoRA steps on a handful of tool-use examples, the loss on them goes down, the files are
right, a run killed with SIGKILL resumes to the same weights, and the GGUF exports give the same
greedy outputs through llama.cpp as through transformers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from toollab.errors import InputError
from toollab.train.config import DataSource, TrainConfig
from toollab.train.data import IGNORE_INDEX, encode, read_sft_file

sys.path.insert(0, str(Path(__file__).parent))
import train_data

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
STEPS, SAVE = 8, 4


@pytest.fixture(scope="module")
def base(train_base: Any) -> Any:
    return train_base


@pytest.fixture(scope="module")
def tokenizer(base: Any) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(base.folder))


@pytest.fixture(scope="module")
def sft_file(tmp_path_factory: pytest.TempPathFactory, tokenizer: Any) -> Path:
    return train_data.write_examples(tmp_path_factory.mktemp("data") / "train.jsonl", tokenizer)


def _config(out: Path, data: Path, **kw: Any) -> TrainConfig:
    base: dict[str, Any] = {
        "output_dir": str(out),
        "data": [DataSource(str(data))],
        "validation_data": [str(data)],  # the loss on the training examples, at each save
        "max_steps": STEPS,
        "save_steps": SAVE,
        "eval_steps": SAVE,
        "logging_steps": 1,
        "batch_size": 2,
        "max_length": 256,
        "learning_rate": 2e-3,
        "warmup_ratio": 0.0,
        "threads": 2,
        "seed": 7,
    }
    return TrainConfig(**{**base, **kw})


def _target_loss(model: Any, tokenizer: Any, data: Path) -> float:
    """Mean loss per target token of the examples (the loss the training minimizes)."""
    import torch

    total = n = 0.0
    model.eval()
    with torch.no_grad():
        for ex in read_sft_file(data):
            e = encode(ex, tokenizer, 256, "left")
            ids = torch.tensor([e.input_ids])
            labels = torch.tensor([e.labels])
            k = int((labels[:, 1:] != IGNORE_INDEX).sum())
            total += float(model(input_ids=ids, labels=labels).loss) * k
            n += k
    return total / n


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, sft_file: Path) -> Any:
    from toollab.train.sft import train_sft

    out = tmp_path_factory.mktemp("run") / "lora"
    return train_sft(_config(out, sft_file), quiet=True)


def test_lora_run_lowers_the_loss_and_writes_the_right_files(
    run: Any, base: Any, tokenizer: Any, sft_file: Path
) -> None:
    import torch
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    out = run.output_dir
    assert run.global_step == STEPS and run.resumed_from is None
    before_model = AutoModelForCausalLM.from_pretrained(str(base.folder), dtype=torch.float32)
    before = _target_loss(before_model, tokenizer, sft_file)
    after_model = PeftModel.from_pretrained(before_model, str(out / "adapter"))
    after = _target_loss(after_model, tokenizer, sft_file)
    assert after < 0.7 * before, (before, after)
    # files: the adapter, complete checkpoints, the best one, run.json
    cfg = json.loads((out / "adapter" / "adapter_config.json").read_text())
    assert cfg["r"] == 16 and cfg["lora_alpha"] == 32 and cfg["peft_type"] == "LORA"
    assert set(cfg["target_modules"]) == {
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    }
    weights = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    assert len(weights) == 30 * 7 * 2  # lora_A and lora_B of 7 matrices in 30 blocks
    for step in (SAVE, STEPS):
        ck = out / f"checkpoint-{step}"
        assert (ck / "toollab-complete").is_file()
        for name in (
            "adapter_model.safetensors",
            "optimizer.pt",
            "scheduler.pt",
            "trainer_state.json",
            "rng_state.pth",
        ):
            assert (ck / name).is_file(), name
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "finished" and info["result"]["global_step"] == STEPS
    assert info["label_mask_check"]["target_tokens"] > 0
    assert run.best_checkpoint in (f"checkpoint-{SAVE}", f"checkpoint-{STEPS}")
    assert run.best_eval_loss is not None and run.tokens_per_s > 0
    assert not list(out.glob(".*partial*"))
    # a finished run is not started again by accident
    from toollab.train.sft import train_sft

    with pytest.raises(InputError, match="finished run"):
        train_sft(_config(out, sft_file), quiet=True)


def test_run_writes_its_own_model_card(run: Any, sft_file: Path) -> None:
    """TRL's and PEFT's placeholder cards are replaced by one that says what was trained."""
    out = run.output_dir
    card = (out / "README.md").read_text()
    assert (out / "adapter" / "README.md").read_text() == card
    assert "huggingface.co/None" not in card and "Model Card for Model ID" not in card
    assert card.startswith(f"# {out.name}\n") and "A LoRA adapter (r 16, alpha 32" in card
    assert f"| `{sft_file}` |" in card  # the data file, with its counts
    assert f"| {STEPS} | {run.train_tokens:,} |" in card  # the run's own figures
    assert f"{run.best_eval_loss:.4f} ({run.best_checkpoint})" in card
    spec = f"bundled:smollm2-135m+lora={out / 'gguf' / 'adapter.gguf'}"
    assert f'toollab chat -m "{spec}"' in card


def test_a_checkpoint_exports_with_its_runs_base(run: Any, tmp_path: Path) -> None:
    """A run's ``checkpoint-N/`` reads the run's record for its base; ``bundled`` names it too."""
    import gguf

    from toollab.train.serve import export_run

    ck = run.output_dir / f"checkpoint-{SAVE}"
    a = export_run(ck, tmp_path / "a", what=["adapter"], adapter_dtype="f16")["adapter"]
    b = export_run(ck, tmp_path / "b", what=["adapter"], base_gguf="bundled")["adapter"]
    assert len(gguf.GGUFReader(a).tensors) == len(gguf.GGUFReader(b).tensors) == 30 * 7 * 2
    loose = tmp_path / "loose"  # the same adapter outside its run: the base must be given
    loose.mkdir()
    for f in ("adapter_config.json", "adapter_model.safetensors"):
        (loose / f).write_bytes((ck / f).read_bytes())
    with pytest.raises(InputError, match="give --base"):
        export_run(loose, tmp_path / "c", what=["adapter"])


def test_killed_run_resumes_to_the_same_weights(run: Any, sft_file: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    out = tmp_path / "killed"
    cfg = _config(out, sft_file)
    args = [sys.executable, "-m", "toollab.cli.main", "train", "sft", "--json", "--quiet"]
    for key, value in cfg.to_dict().items():
        flag = "--" + key.replace("_", "-")
        if key == "data":
            for d in value:
                args += [flag, d["path"]]
        elif isinstance(value, list):
            if value:
                args += [flag, ",".join(value)]
        elif isinstance(value, bool):
            args += [flag if value else "--no-" + key.replace("_", "-")]
        else:
            args += [flag, str(value)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    marker = out / f"checkpoint-{SAVE}" / "toollab-complete"
    deadline = time.monotonic() + 600
    while not marker.is_file():
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (out / "adapter").exists()  # it did not finish
    partial = out / "checkpoint-6"  # what a kill in the middle of a save leaves
    partial.mkdir()
    (partial / "adapter_model.safetensors").write_bytes(b"half")
    res = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(res.stdout)
    assert summary["global_step"] == STEPS
    assert summary["resumed_from"] in (f"checkpoint-{SAVE}", f"checkpoint-{STEPS}")
    assert "removed the unfinished checkpoint checkpoint-6" in res.stderr or not partial.exists()
    a = load_file(str(out / f"checkpoint-{STEPS}" / "adapter_model.safetensors"))
    b = load_file(str(run.output_dir / f"checkpoint-{STEPS}" / "adapter_model.safetensors"))
    assert a.keys() == b.keys()
    worst = max(float((a[k] - b[k]).abs().max()) for k in a)
    assert worst < 1e-5, worst


def test_all_shot_example_puts_loss_on_every_action_and_nothing_else(
    tokenizer: Any, tmp_path: Path
) -> None:
    row = train_data.all_shot(tokenizer, train_data.GOALS[:4])
    p = tmp_path / "packed.jsonl"
    p.write_text(json.dumps(row) + "\n")
    (ex,) = read_sft_file(p)
    assert len(ex.spans) == 4
    enc = encode(ex, tokenizer, 4096, "left")
    targets = [i for i, t in enumerate(enc.labels) if t != IGNORE_INDEX]
    # the target tokens, run by run, are exactly the four actions with their end-of-turn marker
    runs: list[list[int]] = []
    for i in targets:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    texts = [tokenizer.decode([enc.input_ids[i] for i in r]) for r in runs]
    actions = [m["content"] + "<|im_end|>" for m in row["messages"] if m["role"] == "assistant"]
    assert texts == actions
    # goals, the system prompt and the role headers carry no loss
    rest = tokenizer.decode(
        [t for t, lab in zip(enc.input_ids, enc.labels, strict=True) if lab == IGNORE_INDEX]
    )
    for goal, *_ in train_data.GOALS[:4]:
        assert goal in rest
    assert "get_weather" in rest and "assistant" in rest


def test_refuses_to_train_when_no_batch_carries_loss(sft_file: Path, tmp_path: Path) -> None:
    from datasets import Dataset
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    from toollab.train.sft import check_label_mask, train_sft

    ds = Dataset.from_dict({"input_ids": [[1, 2, 3]] * 4, "labels": [[IGNORE_INDEX] * 3] * 4})
    with pytest.raises(InputError, match="no loss token"):
        check_label_mask(DataCollatorForLanguageModeling(pad_token_id=2), ds, 2, 4, seed=0)
    # spans cut away by truncation: refused before the model is even loaded
    out = tmp_path / "cut"
    with pytest.raises(InputError, match="no training example keeps a target token"):
        train_sft(_config(out, sft_file, max_length=32, truncation="right"), quiet=True)
    assert not out.exists()


def test_base_model_not_found_and_full_disk_fail_before_any_step(
    sft_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil
    from collections import namedtuple

    from toollab.errors import BackendError
    from toollab.train.sft import train_sft

    with pytest.raises(InputError, match="base model not found"):
        train_sft(_config(tmp_path / "a", sft_file, base=str(tmp_path / "nope")), quiet=True)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**9, 10**9, 1 << 20))
    out = tmp_path / "b"
    with pytest.raises(BackendError, match="not enough disk space"):
        train_sft(_config(out, sft_file), quiet=True)
    assert not out.exists()


def _prompts(tokenizer: Any) -> list[str]:
    goals = [g[0] for g in train_data.GOALS[:4]] + [
        "What is the weather in Berlin?",  # not trained on
        "Convert 5 USD to GBP.",
    ]
    return [
        tokenizer.apply_chat_template(
            [
                {"role": "system", "content": train_data.system_prompt()},
                {"role": "user", "content": g},
            ],
            tokenize=False,
            add_generation_prompt=True,
        )
        for g in goals
    ]


N_NEW = 24


def _hf_greedy(model: Any, tokenizer: Any, prompts: list[str]) -> list[list[int]]:
    import torch

    out = []
    with torch.no_grad():
        for p in prompts:
            ids = tokenizer(p, add_special_tokens=False, return_tensors="pt").input_ids
            gen = model.generate(
                ids, max_new_tokens=N_NEW, do_sample=False, pad_token_id=tokenizer.eos_token_id
            )
            out.append(gen[0, ids.shape[1] :].tolist())
    return out


def _llama_greedy(path: Path, prompts: list[str], lora: Path | None = None) -> list[list[int]]:
    from llama_cpp import Llama

    llm = Llama(
        model_path=str(path),
        lora_path=str(lora) if lora else None,
        n_ctx=1024,
        n_threads=2,
        verbose=False,
    )
    eos = llm.token_eos()
    out = []
    for p in prompts:
        llm.reset()
        toks = llm.tokenize(p.encode(), add_bos=False, special=True)
        got: list[int] = []
        for t in llm.generate(toks, top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0, reset=True):
            got.append(t)
            if t == eos or len(got) == N_NEW:
                break
        out.append(got)
    return out


def _agree(a: list[list[int]], b: list[list[int]]) -> float:
    """Share of the prompts whose greedy continuations are token-for-token the same
    (up to the shorter one when one stops at end-of-sequence)."""
    same = 0
    for x, y in zip(a, b, strict=True):
        n = min(len(x), len(y))
        same += x[:n] == y[:n]
    return same / len(a)


def test_gguf_exports_agree_with_transformers_under_greedy_decoding(
    run: Any, base: Any, tokenizer: Any
) -> None:
    pytest.importorskip("llama_cpp")
    import gguf
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from toollab.train.serve import export_run

    written = export_run(run.output_dir)
    assert set(written) == {"adapter", "f16", "q8_0"}
    reader = gguf.GGUFReader(str(written["adapter"]))
    assert reader.fields["general.type"].contents() == "adapter"
    assert reader.fields["adapter.type"].contents() == "lora"
    assert reader.fields["adapter.lora.alpha"].contents() == 32.0
    assert len(reader.tensors) == 30 * 7 * 2
    assert not any(k.startswith("tokenizer.") for k in reader.fields)
    model_reader = gguf.GGUFReader(str(written["f16"]))
    assert model_reader.fields["tokenizer.chat_template"].contents()  # the base's, copied
    prompts = _prompts(tokenizer)
    hf = PeftModel.from_pretrained(
        AutoModelForCausalLM.from_pretrained(str(base.folder), dtype=torch.float32),
        str(run.output_dir / "adapter"),
    )
    want = _hf_greedy(hf, tokenizer, prompts)
    assert want[0][: len(want[0])]  # the tuned model says something
    # the model registry's form of the adapter: the bundled GGUF + lora=adapter.gguf
    from toollab.models.registry import parse_model_spec

    spec = parse_model_spec(f"llamacpp:{base.gguf}+lora={written['adapter']}")
    assert spec.lora == str(written["adapter"])
    from toollab.train.export import export_model_gguf

    base_f16 = export_model_gguf(base.folder, run.output_dir / "base-f16.gguf", base.gguf, "f16")
    from toollab.train.export import export_adapter_gguf

    adapter_f16 = export_adapter_gguf(
        run.output_dir / "adapter", run.output_dir / "adapter-f16.gguf", base.gguf, "f16"
    )
    half = gguf.GGUFReader(str(adapter_f16))
    assert {t.tensor_type for t in half.tensors} == {gguf.GGMLQuantizationType.F16}
    assert adapter_f16.stat().st_size < 0.6 * written["adapter"].stat().st_size
    plain = AutoModelForCausalLM.from_pretrained(str(base.folder), dtype=torch.float32)
    figures = {
        # transformers and llama.cpp on the same float weights (f16 storage): exact
        "adapter on the f16 base": _agree(
            want, _llama_greedy(base_f16, prompts, written["adapter"])
        ),
        "merged f16": _agree(want, _llama_greedy(written["f16"], prompts)),
        # the shipped form: the adapter's matrices in float16 (half the file)
        "f16 adapter on the f16 base": _agree(want, _llama_greedy(base_f16, prompts, adapter_f16)),
        # llama.cpp quantizes the activations of quantized matrix products (to 8 bits)
        "merged q8_0": _agree(want, _llama_greedy(written["q8_0"], prompts)),
        "adapter on the Q4_1 base": _agree(
            want, _llama_greedy(base.gguf, prompts, written["adapter"])
        ),
        "Q4_1 base alone (reference)": _agree(
            _hf_greedy(plain, tokenizer, prompts), _llama_greedy(base.gguf, prompts)
        ),
    }
    print(figures)
    # the same weights give the same greedy tokens: the adapter file and the merged f16 model
    # are exact (this is what checks the tensor names, the q/k permutation and alpha)
    assert figures["adapter on the f16 base"] == 1.0, figures
    assert figures["merged f16"] == 1.0, figures
    # float16 rounding of the adapter may flip a near-tie on one prompt of six
    assert figures["f16 adapter on the f16 base"] >= 5 / 6, figures
    # quantized: a near-tie may flip; q8_0 may differ on one prompt of six, and the adapter on
    # the Q4_1 base on at most one prompt more than the Q4_1 base alone does
    assert figures["merged q8_0"] >= 5 / 6, figures
    assert figures["adapter on the Q4_1 base"] >= figures["Q4_1 base alone (reference)"] - 1 / 6, (
        figures
    )


def test_training_goes_on_from_an_adapter_gguf(
    run: Any, base: Any, sft_file: Path, tmp_path: Path
) -> None:
    """``init_adapter`` given the run's adapter as a llama.cpp GGUF: the run starts from exactly
    those weights (one step at a vanishing learning rate leaves them as they were)."""
    import torch
    from safetensors.torch import load_file

    from toollab.train.export import export_adapter_gguf
    from toollab.train.sft import train_sft

    gguf_file = export_adapter_gguf(run.output_dir / "adapter", tmp_path / "a.gguf", base.gguf)
    cfg = _config(
        tmp_path / "cont",
        sft_file,
        init_adapter=str(gguf_file),
        max_steps=1,
        save_steps=1,
        eval_steps=1,
        learning_rate=1e-9,
    )
    cont = train_sft(cfg, quiet=True)
    assert (cont.output_dir / "init-adapter" / "toollab-source.json").is_file()
    want = load_file(str(run.output_dir / "adapter" / "adapter_model.safetensors"))
    got = load_file(str(cont.output_dir / "adapter" / "adapter_model.safetensors"))
    assert want.keys() == got.keys()
    for name, w in want.items():
        assert torch.allclose(w.float(), got[name].float(), atol=1e-6), name
    # and a fresh adapter is not that: its lora_B starts at zero
    assert any(float(w.abs().max()) > 1e-3 for n, w in want.items() if "lora_B" in n)
