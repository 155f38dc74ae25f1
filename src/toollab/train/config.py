"""One typed configuration for a training run: the YAML file and the CLI flags are both views of it.

:class:`TrainConfig` is a dataclass; every field has a type, a default and a help text.  A YAML
file (``toollab train sft --config run.yaml``) and ``--field value`` flags fill the same fields,
the flags winning.  An unknown key or a value of the wrong type is an :class:`InputError` that
names the key and the file (or the flag) before anything is loaded, so no step is ever spent on a
misspelt option.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from toollab.data.yaml_limits import read_yaml_file
from toollab.errors import InputError

#: largest weight of a data source (a weight repeats the file's examples that many times)
MAX_WEIGHT = 1_000
#: largest value of an integer option (a 64-bit machine integer)
MAX_INT = 2**63 - 1
#: most passes over the training mixture
MAX_EPOCHS = 10_000
#: largest sequence length, batch size, accumulation or LoRA rank
MAX_SIZE = 1_048_576
#: largest seed (the trainer seeds numpy, whose seeds are 32-bit)
MAX_SEED = 2**32 - 1

DEFAULT_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@dataclass(frozen=True)
class DataSource:
    """One SFT example file of a mixture, drawn ``weight`` times as often as its size says.

    A weight of 2 repeats the file's examples twice per epoch, 0.5 keeps a random half (seeded).
    On the command line a source is ``PATH`` or ``PATH:WEIGHT``."""

    path: str
    weight: float = 1.0

    @classmethod
    def parse(cls, value: Any, where: str, file: str | None) -> DataSource:
        if isinstance(value, DataSource):
            return value
        if isinstance(value, str):
            head, sep, tail = value.rpartition(":")
            if sep and head:
                try:
                    return cls._checked(head, float(tail), where, file)
                except ValueError:
                    pass
            return cls._checked(value, 1.0, where, file)
        if isinstance(value, dict):
            unknown = sorted(set(value) - {"path", "weight"})
            if unknown:
                raise InputError(
                    f"unknown key(s) {', '.join(unknown)} in a data source "
                    "(a source has `path` and `weight`)",
                    path=file,
                    where=where,
                )
            if not isinstance(value.get("path"), str):
                raise InputError("a data source needs a `path` (a string)", path=file, where=where)
            weight = value.get("weight", 1.0)
            if isinstance(weight, bool) or not isinstance(weight, int | float):
                raise InputError(
                    f"`weight` must be a number, got {weight!r}", path=file, where=where
                )
            return cls._checked(value["path"], float(weight), where, file)
        raise InputError(
            f"a data source is a path or {{path, weight}}, got {value!r}", path=file, where=where
        )

    @classmethod
    def _checked(cls, path: str, weight: float, where: str, file: str | None) -> DataSource:
        if not (math.isfinite(weight) and 0 < weight <= MAX_WEIGHT):
            raise InputError(
                f"a data weight must be a finite number in (0, {MAX_WEIGHT:,}], got {weight}",
                path=file,
                where=where,
            )
        return cls(path, weight)


def _f(default: Any, help: str) -> Any:
    """A field with a default and a help text (the CLI's and the docs' description)."""
    return field(default=default, metadata={"help": help})


C = TypeVar("C", bound="ConfigBase")


class ConfigBase(ABC):
    """What every typed config dataclass shares: reading a mapping / a YAML file into it, every
    key and type checked (:func:`parse_flags` and :func:`flags_help` read the same fields)."""

    @classmethod
    def fields(cls) -> dict[str, dataclasses.Field[Any]]:
        return {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls: type[C], raw: Mapping[str, object], *, file: str | None = None) -> C:
        """Typed config from a mapping (a parsed YAML file); every key and type checked."""
        if not isinstance(raw, dict):
            raise InputError("a training config is a mapping of option: value", path=file)
        known = cls.fields()
        hints = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        for key, value in raw.items():
            name = str(key).replace("-", "_")
            if name not in known:
                import difflib

                close = difflib.get_close_matches(name, list(known), n=1)
                hint = f" (did you mean `{close[0]}`?)" if close else ""
                raise InputError(f"unknown option `{key}`{hint}", path=file, where=str(key))
            values[name] = _coerce(value, hints[name], str(key), file)
        cfg = cls(**values)
        cfg.validate(file)
        return cfg

    @classmethod
    def load(
        cls: type[C],
        path: str | Path,
        overrides: Mapping[str, object] | None = None,
        paths_from: Path | None = None,
    ) -> C:
        """A YAML config file, then ``overrides`` (already typed or strings from flags).

        Relative paths in the file are taken from ``paths_from`` (default: the file's folder)."""
        p = Path(path)
        # the YAML limits (aliases, depth, integers), UTF-8, a regular file
        raw = read_yaml_file(p)
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise InputError("a training config is a mapping of option: value", path=p)
        base = paths_from or Path(p).resolve().parent
        raw = {**raw, **(overrides or {})}
        cfg = cls.from_dict(raw, file=str(p))
        return cfg.relative_to(base, set(raw) - set(overrides or {}))

    @abstractmethod
    def relative_to(self: C, base: Path, keys: set[str]) -> C:
        """The config with the paths of ``keys`` made relative to ``base``."""

    @abstractmethod
    def validate(self, file: str | None = None) -> None:
        """Every option checked; an error names the option (and ``file``)."""


@dataclass
class TrainConfig(ConfigBase):
    """Supervised fine-tuning (LoRA or full) of a causal LM on toollab's SFT example files."""

    # -- what ---------------------------------------------------------------------------------
    output_dir: str = _f("", "Folder of the run: checkpoints, the final adapter/model, run.json.")
    data: list[DataSource] = field(
        default_factory=list,
        metadata={"help": "SFT example files (JSONL with text and spans), PATH[:WEIGHT]."},
    )
    validation_data: list[str] = field(
        default_factory=list,
        metadata={"help": "Held-out SFT example files; empty: split off training."},
    )
    validation_fraction: float = _f(0.05, "Share of the training examples held out (no files).")
    base: str = _f(
        "bundled", "`bundled`, a GGUF file (converted once, cached) or a transformers folder."
    )
    method: Literal["lora", "full"] = _f("lora", "LoRA adapter or full fine-tuning.")
    init_adapter: str = _f(
        "",
        "LoRA: start from this adapter instead of a fresh one: a PEFT adapter folder (a previous "
        "run's adapter/), a llama.cpp LoRA adapter GGUF, or `bundled:NAME` (a shipped adapter, "
        "e.g. bundled:smollm2-135m-tools); its rank, alpha and targets are kept. Empty: a fresh "
        "adapter.",
    )
    lora_r: int = _f(16, "LoRA rank.")
    lora_alpha: int = _f(32, "LoRA alpha (the update is scaled by alpha / r).")
    lora_dropout: float = _f(0.05, "Dropout on the LoRA input.")
    lora_targets: list[str] = field(
        default_factory=lambda: list(DEFAULT_LORA_TARGETS),
        metadata={"help": "Linear modules that get a LoRA adapter."},
    )
    max_length: int = _f(512, "Tokens per sequence; longer ones are cut (see truncation).")
    truncation: Literal["left", "right"] = _f(
        "left", "Which end an over-long sequence loses (left keeps the final targets)."
    )
    max_examples: int = _f(0, "Use at most this many training examples (0: all).")
    # -- how ----------------------------------------------------------------------------------
    batch_size: int = _f(4, "Sequences per device per step.")
    gradient_accumulation_steps: int = _f(1, "Micro-batches accumulated per optimizer step.")
    learning_rate: float = _f(2e-4, "Peak learning rate.")
    lr_scheduler: Literal["cosine", "linear", "constant", "constant_with_warmup"] = _f(
        "cosine", "Learning-rate schedule."
    )
    warmup_ratio: float = _f(0.03, "Share of the steps spent warming up.")
    weight_decay: float = _f(0.0, "AdamW weight decay.")
    epochs: float = _f(1.0, "Passes over the (weighted) training mixture.")
    max_steps: int = _f(0, "Stop after this many optimizer steps (0: run the epochs).")
    gradient_checkpointing: bool = _f(True, "Recompute activations in the backward pass.")
    packing: bool = _f(
        True,
        "Pack examples into sequences of up to max_length tokens (tokenised and packed once, "
        "cached; attention stays within each example); false: one padded example per row.",
    )
    fit_batch_to_device: bool = _f(
        True,
        "On a GPU, run each step's batch_size x gradient_accumulation_steps sequences in as few "
        "micro-batches as its free memory allows, without gradient checkpointing when they fit "
        "(the global batch, hence the training, is unchanged). CPU: the values as given.",
    )
    liger_kernel: bool = _f(
        False, "Liger's fused kernels (cross-entropy, RMSNorm, RoPE, SwiGLU); needs liger-kernel."
    )
    torch_compile: bool = _f(
        False,
        "torch.compile the model (transformers' switch): faster steps on a GPU once compiled; "
        "the first steps compile, so it pays off on long runs.",
    )
    precision: Literal["auto", "fp32", "bf16", "fp16"] = _f(
        "auto", "auto: bf16 on a GPU that has it, fp32 on CPU."
    )
    seed: int = _f(42, "Seed of the split, the mixture, the shuffling and the weights.")
    threads: int = _f(0, "CPU threads (0: the physical cores).")
    # -- bookkeeping --------------------------------------------------------------------------
    logging_steps: int = _f(5, "Log loss and tokens/s every N steps.")
    eval_steps: int = _f(50, "Evaluate on the validation split every N steps (0: at the end).")
    save_steps: int = _f(50, "Write a checkpoint every N steps.")
    save_total_limit: int = _f(3, "Checkpoints kept (the best one is always kept).")
    resume: bool = _f(True, "Resume from the last complete checkpoint in output_dir.")
    mask_check_batches: int = _f(8, "Batches checked for loss tokens before the first step.")
    overwrite: bool = _f(False, "Start afresh even if output_dir holds a finished run.")
    force: bool = _f(
        False, "Write into an output_dir that holds files but no toollab run (replacing them)."
    )
    save_merged: bool = _f(
        False, "Also write merged/: the base with the adapter merged in (a next stage's base)."
    )

    def relative_to(self, base: Path, keys: set[str]) -> TrainConfig:
        """Paths written in a config file are relative to the file's folder."""

        def fix(p: str) -> str:
            if not p or Path(p).is_absolute() or p == "bundled" or p.startswith("bundled:"):
                return p
            return str(base / p)

        out = dataclasses.replace(self)
        if "output_dir" in keys:
            out.output_dir = fix(self.output_dir)
        if "base" in keys:
            out.base = fix(self.base)
        if "init_adapter" in keys:
            out.init_adapter = fix(self.init_adapter)
        if "data" in keys:
            out.data = [DataSource(fix(s.path), s.weight) for s in self.data]
        if "validation_data" in keys:
            out.validation_data = [fix(s) for s in self.validation_data]
        return out

    def validate(self, file: str | None = None) -> None:
        def bad(key: str, problem: str) -> InputError:
            return InputError(problem, path=file, where=key)

        if not self.output_dir:
            raise bad("output_dir", "`output_dir` is required")
        if not self.data:
            raise bad("data", "`data` needs at least one SFT example file")
        for key in ("lora_r", "max_length", "batch_size", "gradient_accumulation_steps"):
            if getattr(self, key) < 1:
                raise bad(key, f"`{key}` must be >= 1, got {getattr(self, key)}")
        for key in ("max_steps", "max_examples", "eval_steps", "threads", "mask_check_batches"):
            if getattr(self, key) < 0:
                raise bad(key, f"`{key}` must be >= 0, got {getattr(self, key)}")
        if self.save_steps < 1 or self.logging_steps < 1 or self.save_total_limit < 1:
            raise bad(
                "save_steps", "`save_steps`, `logging_steps`, `save_total_limit` must be >= 1"
            )
        if (
            (self.validation_data or self.validation_fraction > 0)
            and self.eval_steps
            and self.save_steps % self.eval_steps
        ):
            raise bad(
                "eval_steps",
                f"`save_steps` ({self.save_steps}) must be a multiple of `eval_steps` "
                f"({self.eval_steps}): the best checkpoint is chosen at the validations",
            )
        if not 0 <= self.validation_fraction < 1:
            raise bad("validation_fraction", "`validation_fraction` must be in [0, 1)")
        if not 0 <= self.lora_dropout < 1:
            raise bad("lora_dropout", "`lora_dropout` must be in [0, 1)")
        if not 0 <= self.warmup_ratio < 1:
            raise bad("warmup_ratio", "`warmup_ratio` must be in [0, 1)")
        if not 0 < self.learning_rate <= 1:
            raise bad(
                "learning_rate", f"`learning_rate` must be in (0, 1], got {self.learning_rate}"
            )
        if not 0 < self.epochs <= MAX_EPOCHS:
            raise bad("epochs", f"`epochs` must be in (0, {MAX_EPOCHS:,}], got {self.epochs}")
        if not 0 <= self.weight_decay <= 1:
            raise bad("weight_decay", f"`weight_decay` must be in [0, 1], got {self.weight_decay}")
        if self.lora_alpha < 1:
            raise bad("lora_alpha", f"`lora_alpha` must be >= 1, got {self.lora_alpha}")
        if not 0 <= self.seed <= MAX_SEED:
            raise bad("seed", f"`seed` must be in [0, {MAX_SEED:,}], got {self.seed}")
        for key in ("max_length", "batch_size", "gradient_accumulation_steps", "lora_r"):
            if getattr(self, key) > MAX_SIZE:
                raise bad(key, f"`{key}` must be <= {MAX_SIZE:,}, got {getattr(self, key)}")
        if self.threads > 4096:
            raise bad("threads", f"`threads` must be <= 4,096, got {self.threads}")
        if self.method == "lora" and not self.lora_targets:
            raise bad("lora_targets", "LoRA needs at least one target module")
        if self.init_adapter and self.method != "lora":
            raise bad("init_adapter", "`init_adapter` is for method: lora")

    def to_dict(self) -> dict[str, object]:
        out = dataclasses.asdict(self)
        out["data"] = [{"path": s.path, "weight": s.weight} for s in self.data]
        return out


# -- typing --------------------------------------------------------------------------------------
def _type_name(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in get_args(tp))
    if origin is list:
        return f"list of {_type_name(get_args(tp)[0])}"
    if tp is DataSource:
        return "PATH[:WEIGHT] or {path, weight}"
    return getattr(tp, "__name__", str(tp))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _coerce(value: Any, tp: Any, key: str, file: str | None) -> Any:
    """``value`` as type ``tp``; strings (from flags) are parsed, other mismatches refused."""

    def bad() -> InputError:
        return InputError(
            f"`{key}` must be {_type_name(tp)}, got {_shown(value)}", path=file, where=key
        )

    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        raise TypeError(f"unsupported config type {tp}")  # pragma: no cover - a developer error
    if origin is Literal:
        if value in get_args(tp):
            return value
        raise bad()
    if origin is list:
        (inner,) = get_args(tp)
        items = value if isinstance(value, list) else None
        if items is None and isinstance(value, str):
            items = [v for v in (s.strip() for s in value.split(",")) if v]
        if items is None:
            raise bad()
        return [_coerce(v, inner, f"{key}[{i}]", file) for i, v in enumerate(items)]
    if tp is DataSource:
        return DataSource.parse(value, key, file)
    if tp is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "yes", "1", "on"):
            return True
        if isinstance(value, str) and value.lower() in ("false", "no", "0", "off"):
            return False
        raise bad()
    if tp is int:
        number: int | float
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str):
            try:
                number = int(value)
            except ValueError:
                raise bad() from None
        else:
            raise bad()
        if abs(number) > MAX_INT:
            raise InputError(
                f"`{key}` must be an integer of at most {MAX_INT:,}, got {_shown(value)}",
                path=file,
                where=key,
            )
        return number
    if tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                raise bad() from None
        else:
            raise bad()
        try:
            number = float(number)
        except OverflowError:  # an integer too large for a float
            number = math.inf
        if not math.isfinite(number):
            raise InputError(
                f"`{key}` must be a finite number, got {_shown(value)}", path=file, where=key
            )
        return number
    if tp is str:
        if isinstance(value, str):
            return value
        raise bad()
    raise TypeError(f"unsupported config type {tp}")  # pragma: no cover


def parse_flags(args: list[str], cls: type[ConfigBase] = TrainConfig) -> dict[str, object]:
    """``--key value`` / ``--key=value`` / ``--flag`` / ``--no-flag`` into typed overrides.

    A list option may be repeated (``--data a.jsonl --data b.jsonl:2``) or comma-separated."""
    known = cls.fields()
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("--"):
            raise InputError(f"unexpected argument {arg!r} (options are --name value)", where=arg)
        name, eq, inline = arg[2:].partition("=")
        name = name.replace("-", "_")
        negate = False
        if name not in known and name.startswith("no_") and hints.get(name[3:]) is bool:
            name, negate = name[3:], True
        if name not in known:
            import difflib

            close = difflib.get_close_matches(name, list(known), n=1)
            hint = f" (did you mean --{close[0].replace('_', '-')}?)" if close else ""
            raise InputError(f"unknown option {arg.split('=')[0]}{hint}", where=arg)
        tp = hints[name]
        if tp is bool and not eq:
            out[name] = not negate
            i += 1
            continue
        if eq:
            raw: str = inline
            i += 1
        else:
            if i + 1 >= len(args):
                raise InputError(f"option --{name} needs a value", where=arg)
            raw = args[i + 1]
            i += 2
        value = _coerce(raw, tp, f"--{name.replace('_', '-')}", None)
        if get_origin(tp) is list and name in out:
            out[name] = [*out[name], *value]
        else:
            out[name] = value
    return out


def flags_help(cls: type[ConfigBase] = TrainConfig) -> str:
    """One line per option: flag, type, default, help (the CLI's help text)."""
    hints = typing.get_type_hints(cls)
    lines = []
    for f in cls.fields().values():
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if isinstance(default, list):
            default = ",".join(str(getattr(d, "path", d)) for d in default) or "[]"
        lines.append(
            f"--{f.name.replace('_', '-')} ({_type_name(hints[f.name])}, default {default!r}): "
            f"{f.metadata.get('help', '')}"
        )
    return "\n".join(lines)
