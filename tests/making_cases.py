"""The making-half corpus, part one: the case record, and the classes ``configs`` (``data sft``
/ ``train sft`` config files and options, ``data synth`` options) and ``readers`` (training data,
replay files, teacher answers, chat templates).  Run by ``tests/test_making_hostile.py``."""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from test_inputs_hostile import BIG_INT, CONTENTS, EITHER, ERROR, OK, YAML_CONTENTS, _write

from toollab.data.samples import sample_path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOOLLAB_SHARED_DATA", REPO.parent / "shared" / "data"))
#: seconds one case may take before it counts as a hang
CASE_LIMIT_S = 15
UNGUARDED = ["bfcl", "seal-tools", "deer"]
HUGE = 10**30
CLASSES = ("configs", "readers", "writes", "export", "api", "plugins", "small")


@dataclass
class Case:
    group: str
    name: str
    #: CLI arguments (``kind == "cli"``) or a command line (``kind == "proc"``)
    args: list[str] = field(default_factory=list)
    expect: str = ERROR
    kind: str = "cli"
    #: an API case: the call, and the argument its error must name
    call: Callable[[], object] | None = None
    #: words one of which the output (or the error) must hold: the key or argument at fault
    names: tuple[str, ...] = ()
    #: paths that must not exist afterwards when the case fails (nothing half-written)
    absent: list[Path] = field(default_factory=list)
    #: folders that must be absent or empty afterwards, whatever the outcome
    clean: list[Path] = field(default_factory=list)
    #: user files whose bytes must not change
    unchanged: list[Path] = field(default_factory=list)
    #: device nodes that must still be character devices
    devices: list[Path] = field(default_factory=list)
    #: FIFOs to open for reading afterwards (frees a writer blocked in another thread)
    fifos: list[Path] = field(default_factory=list)
    #: folder inside which alone the case may write (besides the paths it names)
    sandbox: Path | None = None
    env: dict[str, str] | None = None
    limit: int = CASE_LIMIT_S


# -- the classes of the corpus -------------------------------------------------------------------


def _yaml(path: Path, data: object) -> Path:
    return _write(path, yaml.safe_dump(data, allow_unicode=True).encode())


def _file_variants(root: Path) -> dict[str, tuple[Path, str]]:
    """Config files that are no config: ``{name: (path, expectation)}``."""
    d = root / "cfgfiles"
    d.mkdir(parents=True)
    (d / "a_directory").mkdir()
    return {
        "empty": (_write(d / "empty.yaml", b""), ERROR),
        "not_utf8": (_write(d / "not_utf8.yaml", b"out: \xff\xfe\x80\n"), ERROR),
        "utf16": (_write(d / "utf16.yaml", "n: 3\n".encode("utf-16")), ERROR),
        "alias_bomb": (_write(d / "bomb.yaml", YAML_CONTENTS["yaml_bomb"]), ERROR),
        "recursive": (_write(d / "rec.yaml", b"a: &a [*a]\n"), ERROR),
        "deep": (_write(d / "deep.yaml", b"a: " + b"[" * 5000 + b"]" * 5000 + b"\n"), ERROR),
        "deep_block": (
            _write(d / "deepb.yaml", "".join(f"{' ' * i}k{i}:\n" for i in range(3000)).encode()),
            ERROR,
        ),
        "list": (_write(d / "list.yaml", b"- 1\n- 2\n"), ERROR),
        "scalar": (_write(d / "scalar.yaml", b"just text\n"), ERROR),
        "python_tag": (_write(d / "tag.yaml", YAML_CONTENTS["yaml_python_tag"]), ERROR),
        "big_int_key": (_write(d / "bigkey.yaml", BIG_INT.encode() + b": 1\n"), ERROR),
        "unknown_key": (_write(d / "unknown.yaml", b"no_such_option: 1\n"), ERROR),
        "directory": (d / "a_directory", ERROR),
        "missing": (d / "missing.yaml", ERROR),
    }


#: wrong values for a key of each type: ``{label: value}``
WRONG = {
    "str": {"number": 5, "list": ["a"], "mapping": {"a": 1}, "bool": True, "null": None},
    "list": {"mapping": {"a": 1}, "number": 5, "bool": True, "null": None, "nested": [[1]]},
    "num": {"string": "abc", "list": [1], "mapping": {"a": 1}, "bool": True, "null": None},
    "bool": {"string": "maybe", "number": 5, "list": [True], "mapping": {}, "null": None},
}
NUMBERS: dict[str, object] = {"nan": math.nan, "inf": math.inf, "-1": -1, "0": 0, "huge": HUGE}

#: data sft's config keys by type; numeric keys with (what 0 is, what -1 is, what huge is)
SFT_STR = ["template", "target", "chat_template", "pack", "distractor_mode"]
SFT_LIST = ["data", "format", "option", "env", "source", "guard", "unguarded", "env_test_seed"]
SFT_BOOL = ["no_tokens", "drop_null_args", "conversations"]
SFT_NUM: dict[str, tuple[str, str, str]] = {
    "n": (EITHER, ERROR, ERROR),  # 10**30 instances: refused (or bounded)
    "env_seed": (OK, EITHER, EITHER),
    "total": (EITHER, ERROR, EITHER),
    "pack_size": (ERROR, ERROR, EITHER),
    "max_tokens": (ERROR, ERROR, EITHER),
    "distractors": (OK, ERROR, EITHER),
    "nocall": (OK, ERROR, ERROR),
    "hard_nocall": (OK, ERROR, ERROR),
    "mask": (OK, ERROR, ERROR),
    "vary": (OK, ERROR, ERROR),
    "compose": (OK, ERROR, ERROR),
    "compose_max": (EITHER, ERROR, EITHER),
    "near": (EITHER, ERROR, ERROR),
    "near_same_tools": (EITHER, ERROR, ERROR),
    "seed": (OK, EITHER, EITHER),
    "followups": (OK, ERROR, EITHER),
}
#: train sft's keys; numeric ones with (what 0 is, what -1 is, what huge is); ``OK`` here means
#: "accepted": the run then stops on the finished run its output_dir holds (exit 2, not named)
TRAIN_STR = ["output_dir", "base", "method", "truncation", "lr_scheduler", "precision"]
TRAIN_LIST = ["data", "validation_data", "lora_targets"]
TRAIN_BOOL = ["gradient_checkpointing", "packing", "fit_batch_to_device", "resume", "overwrite"]
TRAIN_NUM: dict[str, tuple[str, str, str]] = {
    "validation_fraction": (OK, ERROR, ERROR),
    "lora_r": (ERROR, ERROR, ERROR),
    "lora_alpha": (EITHER, EITHER, EITHER),
    "lora_dropout": (OK, ERROR, ERROR),
    "max_length": (ERROR, ERROR, EITHER),
    "max_examples": (OK, ERROR, EITHER),
    "batch_size": (ERROR, ERROR, EITHER),
    "gradient_accumulation_steps": (ERROR, ERROR, EITHER),
    "learning_rate": (ERROR, ERROR, EITHER),
    "warmup_ratio": (OK, ERROR, ERROR),
    "weight_decay": (OK, ERROR, EITHER),
    "epochs": (ERROR, ERROR, EITHER),
    "max_steps": (OK, ERROR, EITHER),
    "seed": (OK, ERROR, ERROR),
    "threads": (OK, ERROR, ERROR),
    "logging_steps": (ERROR, ERROR, EITHER),
    "eval_steps": (OK, ERROR, EITHER),
    "save_steps": (ERROR, ERROR, EITHER),
    "save_total_limit": (ERROR, ERROR, EITHER),
    "mask_check_batches": (OK, ERROR, EITHER),
}
ACCEPTED = "finished run"


def _sft_base(out: Path) -> dict[str, object]:
    return {"env": ["weather"], "n": 2, "no_tokens": True, "unguarded": UNGUARDED, "out": str(out)}


def config_cases(root: Path) -> Iterator[Case]:
    d = root / "configs"
    d.mkdir()
    i = 0

    def sft(name: str, key: str, value: object, expect: str) -> Case:
        nonlocal i
        i += 1
        out = d / f"sft{i}" / "train.jsonl"
        cfg = {**_sft_base(out), key: value}
        path = _yaml(d / f"sft{i}.yaml", cfg)
        names = (key, key.replace("_", "-")) if expect == ERROR else ()
        return Case(
            "configs",
            f"data sft --config {name}",
            ["data", "sft", "--config", str(path)],
            expect,
            names=names,
            absent=[out, out.parent / "README.md"],
        )

    for key in SFT_STR:
        for label, value in WRONG["str"].items():
            yield sft(f"{key}: {label}", key, value, ERROR)
    for key in SFT_LIST:
        for label, value in WRONG["list"].items():
            # null for a list: the option's default (nothing more to read)
            expect = EITHER if label == "null" and key not in ("env", "unguarded") else ERROR
            yield sft(f"{key}: {label}", key, value, expect)
    for key in SFT_BOOL:
        for label, value in WRONG["bool"].items():
            yield sft(f"{key}: {label}", key, value, ERROR)
    for key, (zero, neg, huge) in SFT_NUM.items():
        for label, value in WRONG["num"].items():
            expect = EITHER if label == "null" and key in ("total",) else ERROR
            yield sft(f"{key}: {label}", key, value, expect)
        for label, value in NUMBERS.items():
            expect = {"0": zero, "-1": neg, "huge": huge}.get(label, ERROR)
            yield sft(f"{key}: {label}", key, value, expect)
    yield sft("unknown key", "surprise", 1, ERROR)
    yield sft("misspelt key", "pack_sise", 1, ERROR)
    for name, (path, expect) in _file_variants(root / "sft_files").items():
        yield Case(
            "configs",
            f"data sft --config file {name}",
            ["data", "sft", "--config", str(path)],
            expect,
        )

    # train sft: every value is checked before any model is loaded; an accepted config stops
    # on the finished run its output_dir holds
    finished = d / "finished_run"
    _write(finished / "run.json", json.dumps({"status": "finished"}).encode())
    data = _write(d / "train.jsonl", b'{"text": "x", "spans": [[0, 1]]}\n')
    base = {"output_dir": str(finished), "data": [str(data)], "max_steps": 1}

    def train(name: str, key: str, value: object, expect: str) -> Case:
        nonlocal i
        i += 1
        path = _yaml(d / f"train{i}.yaml", {**base, key: value})
        if expect == OK:
            return Case(
                "configs",
                f"train sft --config {name}",
                ["train", "sft", "--config", str(path)],
                ERROR,
                names=(ACCEPTED,),
            )
        names = (key, key.replace("_", "-")) if expect == ERROR else ()
        return Case(
            "configs",
            f"train sft --config {name}",
            ["train", "sft", "--config", str(path)],
            ERROR,
            names=names,
        )

    for key in TRAIN_STR:
        for label, value in WRONG["str"].items():
            yield train(f"{key}: {label}", key, value, ERROR)
    for key in TRAIN_LIST:
        for label, value in WRONG["list"].items():
            yield train(f"{key}: {label}", key, value, ERROR)
    for key in TRAIN_BOOL:
        for label, value in WRONG["bool"].items():
            yield train(f"{key}: {label}", key, value, ERROR)
    for key, (zero, neg, huge) in TRAIN_NUM.items():
        for label, value in WRONG["num"].items():
            yield train(f"{key}: {label}", key, value, ERROR)
        for label, value in NUMBERS.items():
            expect = {"0": zero, "-1": neg, "huge": huge}.get(label, ERROR)
            yield train(f"{key}: {label}", key, value, expect)
    yield train("unknown key", "surprise", 1, ERROR)
    yield train("data source weight nan", "data", [{"path": str(data), "weight": math.nan}], ERROR)
    yield train("data source weight inf", "data", [{"path": str(data), "weight": math.inf}], ERROR)
    yield train("data source path number", "data", [{"path": 5}], ERROR)
    for name, (path, expect) in _file_variants(root / "train_files").items():
        yield Case(
            "configs",
            f"train sft --config file {name}",
            ["train", "sft", "--config", str(path)],
            expect,
        )
    for flag, value in (
        ("--max-steps", "nan"),
        ("--learning-rate", "nan"),
        ("--epochs", "inf"),
        ("--seed", BIG_INT),
        ("--lora-r", "-1"),
        ("--threads", str(HUGE)),
    ):
        yield Case(
            "configs",
            f"train sft {flag} {value[:8]}",
            ["train", "sft", "--output-dir", str(finished), "--data", str(data), flag, value],
            ERROR,
            names=(flag.lstrip("-"), flag.lstrip("-").replace("-", "_")),
        )

    # data synth: numeric options out of range are refused before any work
    deer_tools = SHARED / "deer" / "tool.json"
    synth_opts = {
        "--mix nan,1,1": ["--mix", "nan,1,1"],
        "--mix inf,1,1": ["--mix", "inf,1,1"],
        "--mix 1,1": ["--mix", "1,1"],
        "--mix -1,1,1": ["--mix", "-1,1,1"],
        "--mix 0,0,0": ["--mix", "0,0,0"],
        "--call-ratio nan": ["--call-ratio", "nan"],
        "--call-ratio -1": ["--call-ratio", "-1"],
        "--call-ratio 2": ["--call-ratio", "2"],
        "--valid-ratio nan": ["--valid-ratio", "nan"],
        "--valid-ratio 1.5": ["--valid-ratio", "1.5"],
        "--timeout nan": ["--timeout", "nan"],
        "--timeout inf": ["--timeout", "inf"],
        "--temperature nan": ["--temperature", "nan"],
        "--temperature inf": ["--temperature", "inf"],
        "--seed huge": ["--seed", str(HUGE)],
        "--mode bogus": ["--mode", "bogus"],
    }
    for name, extra in synth_opts.items():
        i += 1
        out = d / f"deer{i}"
        yield Case(
            "configs",
            f"data synth deer {name}",
            [
                "data",
                "synth",
                "deer",
                "--tools",
                str(deer_tools),
                "--limit",
                "20",
                "--out",
                str(out),
                *extra,
            ],
            ERROR,
            absent=[out],
        )
    for name, extra in {
        "--timeout nan": ["--timeout", "nan"],
        "--temperature nan": ["--temperature", "nan"],
        "--retriever nope": ["--retriever", "nope"],
        "--split ../x": ["--split", "../x"],
        "--split empty": ["--split", ""],
    }.items():
        i += 1
        out = d / f"seal{i}"
        yield Case(
            "configs",
            f"data synth seal {name}",
            [
                "data",
                "synth",
                "seal",
                "--teacher",
                "fake:",
                "--fields",
                str(SHARED / "seal-tools" / "field.jsonl"),
                "--max-fields",
                "1",
                "--out",
                str(out),
                *extra,
            ],
            ERROR,
            absent=[out],
        )


READER_CONTENTS: dict[str, tuple[bytes, str]] = {
    "big_int": (CONTENTS["big_int"], ERROR),
    "not_utf8": (CONTENTS["not_utf8"], ERROR),
    "deep_line": (CONTENTS["deep_line"], ERROR),
    "not_json": (CONTENTS["not_json"], ERROR),
    "wrong_types": (CONTENTS["wrong_types"], ERROR),
    "empty": (CONTENTS["empty"], ERROR),
    "utf16": (CONTENTS["utf16"], ERROR),
    "huge_line": (b'{"id": "x", "text": "' + b"x" * 30_000_000 + b'"}\n', ERROR),
}


def reader_cases(root: Path, sft_file: Path) -> Iterator[Case]:
    d = root / "readers"
    d.mkdir()
    good = sft_file.read_text(encoding="utf-8").splitlines()[0]
    example = json.loads(good)
    surrogate = json.dumps({**example, "text": example["text"] + "\ud83d"})
    nul = json.dumps({**example, "text": example["text"] + "\x00"})
    train_files = {
        **READER_CONTENTS,
        "text_big_int_span": (
            json.dumps({**example, "spans": [[0, 1]]}).replace("[[0, 1]]", f"[[0, {BIG_INT}]]")
            + "\n"
        ).encode(),
        "lone_surrogate": ((surrogate + "\n").encode(), EITHER),
        "nul": ((nul + "\n").encode(), EITHER),
    }
    for name, content in train_files.items():
        data, expect = content if isinstance(content, tuple) else (content, ERROR)
        path = _write(d / f"train_{name}.jsonl", data)
        out = d / f"run_{name}"
        yield Case(
            "readers",
            f"train sft --data {name}",
            [
                "train",
                "sft",
                "--output-dir",
                str(out),
                "--data",
                str(path),
                "--max-steps",
                "1",
                "--batch-size",
                "1",
                "--max-length",
                "32",
                "--threads",
                "1",
                "--eval-steps",
                "0",
                "--lora-r",
                "2",
                "--lora-targets",
                "q_proj",
                "--quiet",
            ],
            expect,
            absent=[out / "adapter"],
            limit=60,
        )
    bfcl, _ = sample_path("bfcl")
    first_id = "simple_0"
    replays = {
        **READER_CONTENTS,
        "lone_surrogate_output": (
            json.dumps({"id": first_id, "output": "[f(a='\ud83d')]"}).encode() + b"\n",
            EITHER,
        ),
        "nul_output": (json.dumps({"id": first_id, "output": "\x00"}).encode() + b"\n", EITHER),
        "raw_lone_surrogate": (
            b'{"id": "' + first_id.encode() + b'", "output": "\xed\xa0\xbd"}\n',
            ERROR,
        ),
        "id_big_int": (b'{"id": ' + BIG_INT.encode() + b', "output": "x"}\n', ERROR),
        "finish_reason_list": (b'{"id": "simple_0", "output": "x", "finish_reason": [1]}\n', ERROR),
        "tool_calls_deep": (
            b'{"id": "simple_0", "tool_calls": ' + b"[" * 3000 + b"]" * 3000 + b"}\n",
            ERROR,
        ),
    }
    for name, (data, expect) in replays.items():
        path = _write(d / f"replay_{name}.jsonl", data)
        out = d / f"eval_{name}"
        yield Case(
            "readers",
            f"eval -m replay: {name}",
            [
                "eval",
                "-m",
                f"replay:{path}",
                "-d",
                str(bfcl),
                "-f",
                "bfcl",
                "-n",
                "2",
                "--out",
                str(out),
            ],
            expect,
            absent=[out],
        )
    # a teacher whose answers hold lone surrogates and NULs
    for name, answer in (("lone_surrogate", "\ud83d fields \udc00"), ("nul", "a\x00b")):
        script = d / f"teacher_{name}.json"
        script.write_text(json.dumps([answer] * 40))
        out = d / f"seal_{name}"
        yield Case(
            "readers",
            f"data synth seal teacher {name}",
            [
                "data",
                "synth",
                "seal",
                "--teacher",
                f"fake:{script}",
                "--max-fields",
                "1",
                "--max-subfields",
                "1",
                "--max-rounds",
                "1",
                "--difficult",
                "0",
                "--attempts",
                "1",
                "--retries",
                "0",
                "--out",
                str(out),
                "--quiet",
            ],
            EITHER,
            limit=30,
        )
    # chat templates that loop for a long time
    for name, text in {
        "nested_loops": "{% for i in range(100000) %}{% for j in range(100000) %}{{ '' }}"
        "{% endfor %}{% endfor %}",
        "recursive_macro": "{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}",
        "not_jinja": "{% for %}",
        "not_utf8": "\udcff",
    }.items():
        tpl = d / f"tpl_{name}.jinja"
        if name == "not_utf8":
            tpl.write_bytes(b"{{ '\xff' }}")
        else:
            tpl.write_text(text)
        out = d / f"sft_tpl_{name}" / "train.jsonl"
        yield Case(
            "readers",
            f"data sft --chat-template {name}",
            [
                "data",
                "sft",
                "--env",
                "weather",
                "--n",
                "2",
                "--unguarded",
                "bfcl",
                "--unguarded",
                "seal-tools",
                "--unguarded",
                "deer",
                "--chat-template",
                str(tpl),
                "--out",
                str(out),
            ],
            ERROR,
            absent=[out],
            limit=20,
        )


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "absent"
