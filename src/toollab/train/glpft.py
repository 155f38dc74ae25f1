"""α-UMi's GLPFT (global-to-local progressive fine-tuning) as one resumable run of four SFT stages.

**Data.**  α-UMi-format trace files (a user's, or ``toollab data alpha-umi --split train``) are
read and checked (:func:`toollab.data.alpha_umi.parse_trace`), and each trace's role samples
(:func:`toollab.data.alpha_umi.role_samples`, upstream's ``prepro_*`` rules) become SFT examples:
the text ``"system: " + input + target + "</s>"``, the loss on ``target + "</s>"`` only, the
prompt and the target tokenized apart (``spans_apart``) as upstream encodes them and as the
agent's prompt is read.  A file whose name names a held-out split (``test``, ``validation``,
``val``) or that holds a trace whose id does (``weather/test/…``) is refused: those are for the
step-level evaluation.

**Stages** (each one a :func:`toollab.train.sft.train_sft` run in its own folder, with a
:class:`~toollab.train.config.TrainConfig` derived from :class:`GlpftConfig`):

1. ``backbone/`` — the base model on the backbone samples (the whole task in one model);
2. ``planner/``, ``caller/``, ``summarizer/`` — each on its role's samples, started from stage
   1: with LoRA, from stage 1's adapter (``init_adapter``), so each role is one adapter on the
   same base as the backbone; with full fine-tuning, from stage 1's ``model/``.

Run the same command again to go on: finished stages are kept, an unfinished one resumes from
its newest complete checkpoint.  ``run.json`` lists the four outputs and the commands that
export them and run the agent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rich.console import Console

from toollab.data.alpha_umi import EOS, RoleSample, parse_trace, role_samples
from toollab.data.atomic import MARK, mark_folder, write_text_atomic
from toollab.data.jsonl import read_records
from toollab.errors import InputError
from toollab.models.registry import DEFAULT_MODEL
from toollab.train.config import DEFAULT_LORA_TARGETS, ConfigBase, DataSource, TrainConfig, _f
from toollab.train.outputs import check_run_folder

Stage = Literal["backbone", "planner", "caller", "summarizer"]
STAGES: tuple[Stage, ...] = ("backbone", "planner", "caller", "summarizer")
ROLES: tuple[Stage, ...] = ("planner", "caller", "summarizer")
#: words of a file name that mark a held-out split
HELD_OUT = ("test", "validation", "val")


@dataclass
class GlpftConfig(ConfigBase):
    """GLPFT: a backbone on the whole task, then planner, caller and summarizer from it.

    The schedule is upstream's (``scripts/train_toolbench.sh``) scaled to a small model with
    LoRA: see docs/training.md ("GLPFT")."""

    output_dir: str = _f("", "Folder of the run: data/, backbone/, planner/, caller/, summarizer/.")
    traces: list[str] = field(
        default_factory=list,
        metadata={"help": "α-UMi-format trace files (train split; toollab data alpha-umi)."},
    )
    base: str = _f(
        "bundled", "`bundled`, a GGUF file (converted once, cached) or a transformers folder."
    )
    method: Literal["lora", "full"] = _f(
        "lora", "LoRA (stage 2 goes on from stage 1's adapter) or full fine-tuning."
    )
    lora_r: int = _f(16, "LoRA rank.")
    lora_alpha: int = _f(32, "LoRA alpha.")
    lora_dropout: float = _f(0.05, "Dropout on the LoRA input.")
    lora_targets: list[str] = field(
        default_factory=lambda: list(DEFAULT_LORA_TARGETS),
        metadata={"help": "Linear modules that get a LoRA adapter."},
    )
    max_length: int = _f(2048, "Tokens per sequence (upstream 4096); longer ones lose the left.")
    batch_size: int = _f(2, "Sequences per device per step (upstream 6 x 8 GPUs).")
    gradient_accumulation_steps: int = _f(1, "Micro-batches accumulated per optimizer step.")
    validation_fraction: float = _f(0.02, "Share of each stage's samples held out (upstream 2%).")
    backbone_learning_rate: float = _f(2e-4, "Stage 1 peak learning rate (upstream 5e-5, full).")
    backbone_epochs: float = _f(2.0, "Stage 1 epochs.")
    backbone_warmup_ratio: float = _f(0.4, "Stage 1 warm-up share.")
    backbone_weight_decay: float = _f(0.0, "Stage 1 weight decay.")
    planner_learning_rate: float = _f(4e-5, "Planner peak learning rate (upstream 1e-5, full).")
    planner_epochs: float = _f(1.0, "Planner epochs.")
    planner_warmup_ratio: float = _f(0.2, "Planner warm-up share.")
    planner_weight_decay: float = _f(0.01, "Planner weight decay.")
    caller_learning_rate: float = _f(4e-5, "Caller peak learning rate (upstream 1e-5, full).")
    caller_epochs: float = _f(1.0, "Caller epochs.")
    caller_warmup_ratio: float = _f(0.2, "Caller warm-up share.")
    caller_weight_decay: float = _f(0.01, "Caller weight decay.")
    summarizer_learning_rate: float = _f(4e-5, "Summarizer peak learning rate (upstream 1e-5).")
    summarizer_epochs: float = _f(2.0, "Summarizer epochs.")
    summarizer_warmup_ratio: float = _f(0.4, "Summarizer warm-up share.")
    summarizer_weight_decay: float = _f(0.01, "Summarizer weight decay.")
    max_steps: int = _f(0, "Stop each stage after this many steps (0: its epochs).")
    gradient_checkpointing: bool = _f(True, "Recompute activations in the backward pass.")
    packing: bool = _f(True, "Pack samples into sequences of up to max_length tokens.")
    fit_batch_to_device: bool = _f(True, "On a GPU, the step's batch in as few micro-batches.")
    precision: Literal["auto", "fp32", "bf16", "fp16"] = _f("auto", "auto: bf16 on a GPU.")
    seed: int = _f(42, "Seed of the splits, the shuffling and the weights (upstream 42).")
    threads: int = _f(0, "CPU threads (0: the physical cores).")
    logging_steps: int = _f(5, "Log every N steps.")
    eval_steps: int = _f(50, "Validate every N steps (0: at each save).")
    save_steps: int = _f(50, "Checkpoint every N steps.")
    save_total_limit: int = _f(2, "Checkpoints kept per stage.")
    resume: bool = _f(True, "Go on from the newest complete checkpoint of the unfinished stage.")
    overwrite: bool = _f(False, "Train every stage afresh even if the run is finished.")
    force: bool = _f(False, "Write into an output_dir that holds files but no toollab run.")

    def relative_to(self, base: Path, keys: set[str]) -> GlpftConfig:
        def fix(p: str) -> str:
            return p if not p or Path(p).is_absolute() or p == "bundled" else str(base / p)

        out = dataclasses.replace(self)
        if "output_dir" in keys:
            out.output_dir = fix(self.output_dir)
        if "base" in keys:
            out.base = fix(self.base)
        if "traces" in keys:
            out.traces = [fix(t) for t in self.traces]
        return out

    def validate(self, file: str | None = None) -> None:
        if not self.output_dir:
            raise InputError("`output_dir` is required", path=file, where="output_dir")
        if not self.traces:
            raise InputError(
                "`traces` needs at least one α-UMi-format file (toollab data alpha-umi "
                "--split train)",
                path=file,
                where="traces",
            )
        for stage in STAGES:  # every stage's options, checked as its run will check them
            try:
                stage_config(self, stage, Path(self.output_dir)).validate(file)
            except InputError as exc:
                key = exc.where or ""
                if key not in self.schedule(stage):
                    raise
                name = f"{stage}_{key}"
                raise InputError(
                    exc.problem.replace(f"`{key}`", f"`{name}`"), path=file, where=name
                ) from None

    def schedule(self, stage: Stage) -> dict[str, float]:
        """The stage's learning rate, epochs, warm-up and weight decay."""
        keys = ("learning_rate", "epochs", "warmup_ratio", "weight_decay")
        return {k: float(getattr(self, f"{stage}_{k}")) for k in keys}

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def stage_config(cfg: GlpftConfig, stage: Stage, out: Path) -> TrainConfig:
    """The :class:`TrainConfig` of one stage: its folder, its role's data, its start."""
    base, init = cfg.base, ""
    if stage != "backbone" and cfg.method == "lora":
        init = str(out / "backbone" / "adapter")
    elif stage != "backbone":
        base = str(out / "backbone" / "model")
    return TrainConfig(
        output_dir=str(out / stage),
        data=[DataSource(str(out / "data" / f"{stage}.jsonl"))],
        validation_fraction=cfg.validation_fraction,
        base=base,
        method=cfg.method,
        init_adapter=init,
        lora_r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        lora_targets=list(cfg.lora_targets),
        max_length=cfg.max_length,
        truncation="left",
        batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        lr_scheduler="cosine",
        max_steps=cfg.max_steps,
        gradient_checkpointing=cfg.gradient_checkpointing,
        packing=cfg.packing,
        fit_batch_to_device=cfg.fit_batch_to_device,
        precision=cfg.precision,
        seed=cfg.seed,
        threads=cfg.threads,
        logging_steps=cfg.logging_steps,
        eval_steps=cfg.eval_steps,
        save_steps=cfg.save_steps,
        save_total_limit=cfg.save_total_limit,
        resume=cfg.resume,
        overwrite=cfg.overwrite,
        **cfg.schedule(stage),  # type: ignore[arg-type]
    )


# -- data --------------------------------------------------------------------------------------
def held_out_split(name: str) -> str | None:
    """The held-out split a file name or a trace id names (``envs-test.json``,
    ``weather/validation/3``), if any."""
    words = set(re.split(r"[^a-z0-9]+", name.lower()))
    return next((s for s in HELD_OUT if s in words), None)


def sft_example(sample: RoleSample, ident: str, source: str) -> dict[str, object]:
    """One role sample as an SFT example: ``"system: " + input`` then ``target + "</s>"``, the
    loss on the target, prompt and target tokenized apart (as upstream encodes them)."""
    prompt = sample.prompt()
    text = prompt + sample.target + EOS
    return {
        "id": ident,
        "source": source,
        "text": text,
        "spans": [[len(prompt), len(text)]],
        "spans_apart": True,
    }


def role_data(files: list[str]) -> tuple[dict[Stage, list[dict[str, object]]], dict[str, int]]:
    """Every stage's SFT examples from the trace files, and the traces read per file.

    :class:`InputError` for a missing or held-out file, a malformed trace (naming the file, the
    record and the turn), a held-out trace, or a role left without a sample."""
    out: dict[Stage, list[dict[str, object]]] = {s: [] for s in STAGES}
    counts: dict[str, int] = {}
    for name in files:
        path = Path(name)
        split = held_out_split(path.stem)
        if split is not None:
            raise InputError(
                f"the file name names the {split!r} split: held-out traces are for the "
                "step-level evaluation, not for training (export the train split: toollab data "
                "alpha-umi --split train)",
                path=path,
            )
        if not path.is_file():
            found = "is not a file" if path.exists() else "not found"
            raise InputError(f"trace file {found} (give α-UMi JSON files)", path=path)
        n = 0
        for rec in read_records(path):
            where = f"record {rec.index}"
            try:
                trace = parse_trace(rec.data, where)
            except InputError as exc:
                raise InputError(exc.problem, path=path, line=rec.line, where=exc.where) from None
            ident = trace.id or f"{path.name}#{rec.index}"
            split = held_out_split(trace.id or "")
            if split is not None:
                raise InputError(
                    f"trace {trace.id!r} is from the {split!r} split: not for training",
                    path=path,
                    line=rec.line,
                )
            for sample in role_samples(trace):
                out[sample.role].append(
                    sft_example(sample, f"{ident}@{sample.turn}:{sample.role}", str(path))
                )
            n += 1
        if n == 0:
            raise InputError("no α-UMi traces (an empty list or file)", path=path)
        counts[str(path)] = n
    empty = [s for s in STAGES if not out[s]]
    if empty:
        why = {
            "summarizer": "no trace ends with a conclusion other than 'none'",
            "caller": "no trace calls a tool",
        }
        raise InputError(
            f"the traces give no {empty[0]} sample ({why.get(empty[0], 'no planner step')}): "
            "every role needs training data",
            where="traces",
        )
    return out, counts


def _data_files(data: dict[Stage, list[dict[str, object]]]) -> tuple[dict[Stage, str], str]:
    """Each stage's ``data/<stage>.jsonl`` text, and their hash."""
    h = hashlib.sha256()
    texts: dict[Stage, str] = {}
    for stage in STAGES:
        texts[stage] = "".join(json.dumps(ex, ensure_ascii=False) + "\n" for ex in data[stage])
        h.update(texts[stage].encode("utf-8"))
    return texts, h.hexdigest()


def _write_data(out: Path, texts: dict[Stage, str]) -> None:
    for stage, text in texts.items():
        target = out / "data" / f"{stage}.jsonl"
        if not (target.is_file() and target.read_text(encoding="utf-8") == text):
            target.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(target, text)


# -- the run -----------------------------------------------------------------------------------
@dataclass
class GlpftResult:
    output_dir: Path
    outputs: dict[str, str]
    stages: dict[str, dict[str, Any]]
    commands: list[str] = field(default_factory=list)


def _record(out: Path) -> dict[str, Any] | None:
    try:
        info = json.loads((out / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def _stage_finished(folder: Path) -> dict[str, Any] | None:
    info = _record(folder)
    return info if info is not None and info.get("status") == "finished" else None


def model_string(base: str) -> str:
    """The model string of the base for ``toollab bench`` (llama.cpp needs a GGUF)."""
    if base == "bundled":
        return DEFAULT_MODEL
    if base.lower().endswith(".gguf"):
        return f"llamacpp:{base}"
    return "llamacpp:BASE.gguf"  # a transformers folder: a GGUF of it is the user's to give


def commands(cfg: GlpftConfig, out: Path) -> list[str]:
    """The export commands and the ``toollab bench`` commands of the finished run."""
    model = model_string(cfg.base)
    folder_base = model.endswith("BASE.gguf")
    extra = " --base BASE.gguf" if folder_base else ""
    if cfg.method == "lora":
        lines = [f"toollab train export {out / s} --what adapter{extra}" for s in STAGES]
        roles = " ".join(f"--role {r}=+lora={out / r / 'gguf' / 'adapter.gguf'}" for r in ROLES)
        backbone = f"{model}+lora={out / 'backbone' / 'gguf' / 'adapter.gguf'}"
    else:
        lines = [f"toollab train export {out / s} --what f16{extra}" for s in STAGES]
        roles = " ".join(
            f"--role {r}=llamacpp:{out / r / 'gguf' / 'model-f16.gguf'}" for r in ROLES
        )
        backbone = f"llamacpp:{out / 'backbone' / 'gguf' / 'model-f16.gguf'}"
    lines.append(f"toollab bench --agent alpha-umi --model {model} {roles}")
    lines.append(f"toollab bench --agent alpha-umi-backbone --model {backbone}")
    return lines


def train_glpft(
    cfg: GlpftConfig, *, console: Console | None = None, quiet: bool = False
) -> GlpftResult:
    """Run (or go on with) the four stages; see the module docstring."""
    console = console or Console(stderr=True)
    cfg.validate()
    out = check_run_folder(cfg.output_dir, force=cfg.force)
    before = _record(out)
    if before is not None and before.get("kind") != "glpft":
        raise InputError(
            "output_dir holds another kind of training run (a train sft run), not a GLPFT run: "
            "choose another output_dir",
            path=out,
        )
    if before is not None and before.get("status") == "finished" and not cfg.overwrite:
        raise InputError(
            "output_dir holds a finished GLPFT run (give another output_dir, or overwrite: true)",
            path=out,
        )
    data, traces = role_data(cfg.traces)  # every trace checked before anything is written
    from toollab.train.sft import train_sft  # torch, transformers: once the input is good

    texts, digest = _data_files(data)
    started = any((out / s).exists() for s in STAGES)
    if before is not None and started and not cfg.overwrite and before.get("data_sha256") != digest:
        raise InputError(
            "the traces give other role data than when this run started: go on with the same "
            "traces, or start afresh (overwrite: true)",
            path=out,
        )
    out.mkdir(parents=True, exist_ok=True)
    mark_folder(out)
    _write_data(out, texts)
    record: dict[str, Any] = {
        "written_by": MARK,
        "kind": "glpft",
        "status": "running",
        "config": cfg.to_dict(),
        "traces": traces,
        "data": {
            s: {"file": str(out / "data" / f"{s}.jsonl"), "samples": len(data[s])} for s in STAGES
        },
        "data_sha256": digest,
        "stages": {},
    }
    write_text_atomic(out / "run.json", json.dumps(record, indent=1, ensure_ascii=False))
    stages: dict[str, dict[str, Any]] = {}
    for stage in STAGES:
        scfg = stage_config(cfg, stage, out)
        done = None if cfg.overwrite else _stage_finished(Path(scfg.output_dir))
        if done is not None:
            console.print(f"GLPFT {stage}: finished before, kept ({scfg.output_dir})")
            stages[stage] = {"kept": True, **done.get("result", {})}
        else:
            console.print(f"GLPFT {stage}: {len(data[stage]):,} samples → {scfg.output_dir}")
            res = train_sft(scfg, console=console, quiet=quiet)
            stages[stage] = {
                "kept": False,
                **{k: (str(v) if isinstance(v, Path) else v) for k, v in res.__dict__.items()},
            }
        record["stages"] = stages
        write_text_atomic(out / "run.json", json.dumps(record, indent=1, ensure_ascii=False))
    outputs: dict[str, str] = {s: str(stages[s].get("final", "")) for s in STAGES}
    cmds = commands(cfg, out)
    record.update(status="finished", outputs=outputs, commands=cmds)
    write_text_atomic(out / "run.json", json.dumps(record, indent=1, ensure_ascii=False))
    return GlpftResult(out, outputs, stages, cmds)
