"""Hostile input to the making verbs: ``data sft``, ``data synth deer|seal``, ``train sft``.

Each class of problem is met by many cases, through the real CLI (typer's runner, in process)
and real files: a config value of the wrong type, out of range or not finite, an unknown key, a
config file beyond the YAML limits or not UTF-8; a data file (training examples, a ``replay:``
model file) beyond the JSON-lines limits; a teacher answer or a source holding a lone surrogate;
a chat template that does not end.  Every one must end in a clear error (exit 2, one ``error:``
line naming the file, the key or the flag) before any model loads, or, for model output, be
stored as data.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.errors import InputError

BIG = "9" * 5000
BOMB = (
    'a: &a ["l","l","l","l","l","l","l","l","l"]\n'
    + "".join(
        f"{b}: &{b} [" + ",".join([f"*{a}"] * 9) + "]\n"
        for a, b in zip("abcdefg", "bcdefgh", strict=True)
    )
).encode()
#: a config file's contents that no verb accepts, whatever its keys
BAD_FILES: dict[str, tuple[bytes, str]] = {
    "alias bomb": (BOMB, "YAML beyond a limit"),
    "deep": (b"a: " + b"[" * 200 + b"]" * 200 + b"\n", "nested more than 100 levels"),
    "big integer": (b"seed: " + BIG.encode() + b"\n", "5,000 digits"),
    "not utf-8": (b"seed: \xff\xfe\n", "not UTF-8"),
    "utf-16": ("seed: 1\n".encode("utf-16"), "not UTF-8"),
    "malformed": (b"seed: [1, 2\n", "malformed YAML"),
    "python tag": (b"seed: !!python/object/apply:os.system ['true']\n", "malformed YAML"),
    "a list": (b"- seed\n- 1\n", "mapping"),
    "text": (b"just text\n", "mapping"),
    "long line": (b"seed: '" + b"x" * 1_000_001 + b"'\n", "longer than"),
}


def run(args: list[str], input: str | None = None) -> Any:
    t0 = time.perf_counter()
    res = CliRunner().invoke(app, args, input=input)
    res.seconds = time.perf_counter() - t0
    return res


def refused(res: Any, *names: str) -> str:
    """The one ``error:`` line of a clear refusal (exit 2, no traceback), holding ``names``."""
    out = res.output
    assert res.exit_code == 2, out
    assert "Traceback" not in out and not isinstance(res.exception, (TypeError, AttributeError))
    lines = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, out
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def write(tmp: Path, name: str, data: bytes | str) -> Path:
    p = tmp / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    return p


# -- 1. data sft --config: one typed model for the file and the flags ---------------------------
SFT_BAD_VALUES = [
    ("out: 5\n", "out", "valid string"),
    ("out: [a, b]\n", "out", "valid string"),
    ("template: 5\n", "template", "valid string"),
    ("template: {a: 1}\n", "template", "valid string"),
    ("chat_template: [x]\n", "chat_template", "valid string"),
    ("source: {a: 1}\n", "source", "valid list"),
    ("source: [5]\n", "source[0]", "valid string"),
    ("source: [[a]]\n", "source[0]", "valid string"),
    ("data: 7\n", "data", "valid list"),
    ("guard: {bfcl: x}\n", "guard", "valid list"),
    ("unguarded: 3\n", "unguarded", "valid list"),
    ("pack_size: four\n", "pack_size", "valid integer"),
    ("pack_size: 0\n", "pack_size", "greater than or equal to 1"),
    ("pack_size: 2.5\n", "pack_size", "valid integer"),
    ("pack_size: true\n", "pack_size", "valid integer"),
    ("max_tokens: -3\n", "max_tokens", "greater than or equal to 1"),
    (f"max_tokens: {'9' * 40}\n", "max_tokens", "less than or equal to"),
    ("total: 0\n", "total", "greater than or equal to 1"),
    ("n: -1\n", "n", "greater than or equal to 1"),
    ("nocall: .nan\n", "nocall", "finite number"),
    ("hard_nocall: .inf\n", "hard_nocall", "finite number"),
    ("mask: -.inf\n", "mask", "finite number"),
    ("vary: 1.5\n", "vary", "less than or equal to 1"),
    ("compose: -0.1\n", "compose", "greater than or equal to 0"),
    ("compose: yes\n", "compose", "valid number"),
    ("near: 0\n", "near", "greater than 0"),
    ("near: .nan\n", "near", "finite number"),
    ("near_same_tools: 2\n", "near_same_tools", "less than or equal to 1"),
    ("distractors: -1\n", "distractors", "greater than or equal to 0"),
    ("distractor_mode: cluster\n", "distractor_mode", "'random'"),
    ("pack: all\n", "pack", "'none' or 'all-shot'"),
    ("target: gold\n", "target", "'constrained' or 'template'"),
    ("compose_max: 1\n", "compose_max", "greater than or equal to 2"),
    ("followups: -2\n", "followups", "greater than or equal to 0"),
    ("seed: -1\n", "seed", "greater than or equal to 0"),
    ("seed: 1.0\n", "seed", "valid integer"),
    ("env_seed: '3'\n", "env_seed", "valid integer"),
    ("env_test_seed: [0, -1]\n", "env_test_seed[1]", "greater than or equal to 0"),
    ("env_test_seed: {a: 1}\n", "env_test_seed", "valid list"),
    ("no_tokens: 1\n", "no_tokens", "valid boolean"),
    ("conversations: 'yes'\n", "conversations", "valid boolean"),
    ("drop_null_args: [true]\n", "drop_null_args", "valid boolean"),
]


@pytest.mark.parametrize(("text", "key", "expected"), SFT_BAD_VALUES)
def test_data_sft_config_values_are_typed(
    tmp_path: Path, text: str, key: str, expected: str
) -> None:
    cfg = write(tmp_path, "sft.yaml", f"out: {tmp_path / 'o.jsonl'}\n" + text)
    res = run(["data", "sft", "--config", str(cfg)])
    refused(res, str(cfg), f"({key})", expected)
    assert not (tmp_path / "o.jsonl").exists()
    assert res.seconds < 5  # refused before any model or tokenizer is loaded


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("pack_sise: 3\n", ["pack_sise", "pack_size"]),
        ("sources: [env:weather]\n", ["sources", "'source'"]),
        ("nocal: 0.1\n", ["nocal", "nocall"]),
        ("fmt: [bfcl]\n", ["fmt"]),
        ("json_out: true\n", ["json_out"]),
        ("config: other.yaml\n", ["config"]),
        ("1: x\n", ["option names are text"]),
        ("? [a, b]\n: x\n", ["malformed YAML", ":1:"]),
        ("null: x\n", ["option names are text"]),
        ("true: 1\n", ["option names are text"]),
    ],
)
def test_data_sft_config_unknown_keys_are_named(
    tmp_path: Path, text: str, names: list[str]
) -> None:
    cfg = write(tmp_path, "sft.yaml", text)
    refused(run(["data", "sft", "--config", str(cfg)]), str(cfg), *names)


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_data_sft_config_file_goes_through_the_yaml_limits(tmp_path: Path, case: str) -> None:
    data, problem = BAD_FILES[case]
    cfg = write(tmp_path, "sft.yaml", data)
    refused(run(["data", "sft", "--config", str(cfg)]), str(cfg), problem)


@pytest.mark.parametrize(
    ("path", "problem"), [("missing.yaml", "no such file"), (".", "is a directory")]
)
def test_data_sft_config_path_problems(tmp_path: Path, path: str, problem: str) -> None:
    refused(run(["data", "sft", "--config", str(tmp_path / path)]), problem)


@pytest.mark.parametrize(
    ("flags", "names"),
    [
        (["--nocall", "nan"], ["--nocall", "finite number"]),
        (["--mask", "inf"], ["--mask", "finite number"]),
        (["--vary", "2"], ["--vary", "less than or equal to 1"]),
        (["--near", "-inf"], ["--near", "finite number"]),
        (["--pack-size", "0"], ["--pack-size", "greater than or equal to 1"]),
        (["--pack", "some"], ["--pack", "'none' or 'all-shot'"]),
        (["--target", "x"], ["--target"]),
        (["--distractor-mode", "x"], ["--distractor-mode"]),
        (["--total", "0"], ["--total"]),
        (["--seed", "-5"], ["--seed"]),
        (["--env-test-seed", "-1"], ["--env-test-seed[0]"]),
        (["--compose-max", "1"], ["--compose-max"]),
        (["--source", "env:weather,n=nan"], ["is not a number"]),
        (["--source", "env:weather,weight=inf"], ["not a finite number"]),
        (["--source", "env:weather,weight=nan"], ["not a finite number"]),
        (["--source", f"env:weather,n={'9' * 30}"], ["at most 100,000,000"]),
        (["--source", f"env:weather,n={BIG}"], ["is not a number"]),
    ],
)
def test_data_sft_flags_go_through_the_same_model(
    tmp_path: Path, flags: list[str], names: list[str]
) -> None:
    out = tmp_path / "o.jsonl"
    res = run(["data", "sft", "--out", str(out), "--source", "env:weather,n=2", *flags])
    refused(res, *names)
    assert not out.exists()


def test_data_sft_flags_win_over_the_file_and_are_checked_as_flags(tmp_path: Path) -> None:
    """A bad value in the file is named by its key; overridden by a good flag it is not read;
    a bad flag over a good file value is named by the flag."""
    cfg = write(tmp_path, "sft.yaml", "nocall: .nan\nvary: 0.5\n")
    refused(run(["data", "sft", "--config", str(cfg)]), str(cfg), "(nocall)")
    res = run(["data", "sft", "--config", str(cfg), "--nocall", "0.1", "--vary", "nan"])
    line = refused(res, "--vary", "finite number")
    assert str(cfg) not in line


def test_data_sft_a_good_config_runs(tmp_path: Path) -> None:
    """A scalar for a list option is a list of one; keys with dashes are accepted."""
    out = tmp_path / "o.jsonl"
    cfg = write(
        tmp_path,
        "sft.yaml",
        f"out: {out}\nsource: env:weather,n=3\nchat-template: chatml\nno_tokens: true\n"
        "unguarded: [bfcl, seal-tools, deer]\nnocall: 0.5\n",
    )
    res = run(["data", "sft", "--config", str(cfg), "--json"])
    assert res.exit_code == 0, res.output
    assert len(out.read_text(encoding="utf-8").splitlines()) >= 3


# -- 2. train sft --config: finite numbers in range, the YAML limits, UTF-8 --------------------
TRAIN_BAD = [
    ("learning_rate: .nan\n", "learning_rate", "finite"),
    ("learning_rate: .inf\n", "learning_rate", "finite"),
    ("learning_rate: 0\n", "learning_rate", "(0, 1]"),
    ("learning_rate: 5\n", "learning_rate", "(0, 1]"),
    ("epochs: .inf\n", "epochs", "finite"),
    ("epochs: .nan\n", "epochs", "finite"),
    ("epochs: -1\n", "epochs", "(0, 10,000]"),
    ("epochs: 1e9\n", "epochs", "(0, 10,000]"),
    (f"epochs: {'9' * 400}\n", "epochs", "finite"),
    ("weight_decay: -.inf\n", "weight_decay", "finite"),
    ("weight_decay: -0.1\n", "weight_decay", "[0, 1]"),
    ("warmup_ratio: .nan\n", "warmup_ratio", "finite"),
    ("lora_dropout: .nan\n", "lora_dropout", "finite"),
    ("validation_fraction: .inf\n", "validation_fraction", "finite"),
    ("lora_alpha: 0\n", "lora_alpha", ">= 1"),
    ("seed: -1\n", "seed", "seed"),
    (f"seed: {2**40}\n", "seed", "seed"),
    (f"batch_size: {'9' * 30}\n", "batch_size", "at most"),
    ("max_length: 100000000\n", "max_length", "<= 1,048,576"),
    ("threads: 100000\n", "threads", "<= 4,096"),
    ("learning_rate: '1e-4'\n", "learning_rate", None),  # a string is parsed: no error
]


@pytest.mark.parametrize(("text", "key", "problem"), TRAIN_BAD)
def test_train_sft_numbers_are_finite_and_in_range(
    tmp_path: Path, text: str, key: str, problem: str | None
) -> None:
    from toollab.train.config import TrainConfig

    f = write(tmp_path, "run.yaml", "output_dir: o\ndata: [a.jsonl]\n" + text)
    if problem is None:
        TrainConfig.load(f)
        return
    with pytest.raises(InputError) as err:
        TrainConfig.load(f)
    msg = str(err.value)
    assert str(f) in msg and key in msg and problem in msg, msg


@pytest.mark.parametrize(
    "data",
    ["[a.jsonl:inf]", "[a.jsonl:nan]", "[a.jsonl:-inf]", "[{path: a.jsonl, weight: .nan}]",
     "[{path: a.jsonl, weight: .inf}]", "[a.jsonl:1e9]", "[{path: a.jsonl, weight: 0}]"],
)  # fmt: skip
def test_train_sft_data_weights_are_finite(tmp_path: Path, data: str) -> None:
    f = write(tmp_path, "run.yaml", f"output_dir: o\ndata: {data}\n")
    refused(run(["train", "sft", "--config", str(f)]), str(f), "data weight")


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--learning-rate", "nan"), ("--epochs", "inf"), ("--warmup-ratio", "-inf"),
     ("--lora-dropout", "NaN"), ("--weight-decay", "1e999"), ("--seed", BIG[:50]),
     ("--data", "a.jsonl:inf")],
)  # fmt: skip
def test_train_sft_flags_are_finite(tmp_path: Path, flag: str, value: str) -> None:
    out = tmp_path / "run"
    res = run(["train", "sft", "--output-dir", str(out), "--data", "a.jsonl", flag, value])
    refused(res, flag, {"--data": "weight", "--seed": "at most"}.get(flag, "finite"))
    assert not out.exists()


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_train_sft_config_goes_through_the_yaml_limits(tmp_path: Path, case: str) -> None:
    data, problem = BAD_FILES[case]
    f = write(tmp_path, "run.yaml", data)
    refused(run(["train", "sft", "--config", str(f)]), str(f), problem)


# -- 5. data files: training examples, replay files ---------------------------------------------
GOOD_ROW = {"id": "a", "text": "hello world", "spans": [[6, 11]]}
BAD_LINES: dict[str, tuple[bytes, str]] = {
    "big integer": (b'{"id": ' + BIG.encode() + b', "text": "x", "spans": [[0, 1]]}', "4,300"),
    "big integer in spans": (b'{"text": "x", "spans": [[0, ' + BIG.encode() + b"]]}", "4,300"),
    "not utf-8": (b'{"id": "\xff\xfe", "text": "x"}', "not UTF-8"),
    "deep": (b'{"id": ' + b"[" * 3000 + b"]" * 3000 + b"}", "nested too deeply"),
    "not json": (b"{broken", "invalid JSON"),
    "nan": (b'{"id": NaN', "invalid JSON"),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_training_data_files_go_through_the_json_lines_limits(tmp_path: Path, case: str) -> None:
    line, problem = BAD_LINES[case]
    data = write(tmp_path, "d.jsonl", json.dumps(GOOD_ROW).encode() + b"\n" + line + b"\n")
    out = tmp_path / "run"
    res = run(["train", "sft", "--output-dir", str(out), "--data", str(data)])
    # "not UTF-8" names the file (the whole file is refused), the others name the line
    refused(res, str(data) if case == "not utf-8" else f"{data}:2", problem)
    assert not out.exists()


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({"text": "a\ud83db", "spans": [[0, 1]]}, "lone UTF-16 surrogate at character 1"),
        ({"text": "abc", "spans": [list(range(5000))]}, "..."),
        ({"text": "abc", "spans": [[0, 2**70]]}, "not inside the text"),
    ],
)
def test_training_data_values_are_refused_with_file_and_line(
    tmp_path: Path, row: dict[str, Any], problem: str
) -> None:
    from toollab.train.data import read_sft_file

    p = write(tmp_path, "d.jsonl", json.dumps(GOOD_ROW) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(InputError) as err:
        read_sft_file(p)
    assert f"{p}:2" in str(err.value) and problem in str(err.value)
    assert len(str(err.value)) < 500


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_replay_files_go_through_the_json_lines_limits(tmp_path: Path, case: str) -> None:
    from toollab.models.replay import load_outputs

    line, problem = BAD_LINES[case]
    good = json.dumps({"id": "a", "output": "x"}).encode()
    p = write(tmp_path, "r.jsonl", good + b"\n" + line + b"\n")
    with pytest.raises(InputError) as err:
        load_outputs(p)
    assert (str(p) if case == "not utf-8" else f"{p}:2") in str(err.value)
    assert problem in str(err.value)


@pytest.mark.parametrize(
    "calls",
    ["x", 5, [1], [{"function": 5}], [{"function": {"name": "f", "arguments": "{bad"}}],
     [{"function": {"name": "f", "arguments": "[" * 3000 + "]" * 3000}}],
     [{"function": {"name": "f", "arguments": BIG}}]],
)  # fmt: skip
def test_replay_tool_calls_are_refused_with_file_and_line(tmp_path: Path, calls: Any) -> None:
    from toollab.models.replay import load_outputs

    p = write(tmp_path, "r.jsonl", json.dumps({"id": "a", "tool_calls": calls}) + "\n")
    with pytest.raises(InputError) as err:
        load_outputs(p)
    assert f"{p}:1" in str(err.value) and "tool_calls" in str(err.value)


def test_a_replay_file_through_the_cli(tmp_path: Path) -> None:
    p = write(tmp_path, "r.jsonl", b'{"id": "a", "output": ' + BIG.encode() + b"}\n")
    res = run(["chat", "--model", f"replay:{p}"], input="hello\n")
    refused(res, f"{p}:1", "4,300")


# -- 3. data synth: every numeric option finite and in range ------------------------------------
@pytest.mark.parametrize(
    ("flags", "names"),
    [
        (["--mix", "nan,1,1"], ["--mix[0]", "finite"]),
        (["--mix", "1,inf,1"], ["--mix[1]", "finite"]),
        (["--mix", "1,1"], ["--mix takes 3 numbers"]),
        (["--mix", "a,b,c"], ["--mix takes 3 numbers"]),
        (["--mix", "0,0,0"], ["--mix", "sum to 0"]),
        (["--mix", "-1,1,1"], ["--mix[0]", "greater than or equal to 0"]),
        (["--call-ratio", "nan"], ["--call-ratio", "finite"]),
        (["--call-ratio", "1.5"], ["--call-ratio", "less than or equal to 1"]),
        (["--valid-ratio", "inf"], ["--valid-ratio", "finite"]),
        (["--valid-ratio", "1"], ["--valid-ratio", "less than 1"]),
        (["--temperature", "inf"], ["--temperature", "finite"]),
        (["--temperature", "1000"], ["--temperature", "less than or equal to 100"]),
        (["--timeout", "inf"], ["--timeout", "finite"]),
        (["--timeout", "1e9"], ["--timeout", "less than or equal to 86400"]),
        (["--mode", "cluster"], ["--mode", "'mix' or 'random'"]),
        (["--seed", "-1"], ["--seed"]),
        (["--k", "100000"], ["--k"]),
        (["--max-tokens", "99999999999"], ["--max-tokens"]),
    ],
)
def test_data_synth_deer_numbers(tmp_path: Path, flags: list[str], names: list[str]) -> None:
    tools = write(tmp_path, "tool.json", b"[]")
    out = tmp_path / "out"
    res = run(["data", "synth", "deer", "--tools", str(tools), "--out", str(out), *flags])
    refused(res, *names)
    assert not out.exists()


@pytest.mark.parametrize(
    ("flags", "names"),
    [
        (["--temperature", "inf"], ["--temperature", "finite"]),
        (["--timeout", "inf"], ["--timeout", "finite"]),
        (["--split", "../x"], ["--split", "pattern"]),
        (["--split", ".hidden"], ["--split"]),
        (["--split", "a/b"], ["--split"]),
        (["--seed", "-3"], ["--seed"]),
        (["--difficult", "1000000000"], ["--difficult"]),
        (["--max-rounds", "10000000"], ["--max-rounds"]),
        (["--retries", "1000"], ["--retries"]),
    ],
)
def test_data_synth_seal_numbers(tmp_path: Path, flags: list[str], names: list[str]) -> None:
    out = tmp_path / "out"
    res = run(["data", "synth", "seal", "--out", str(out), "--teacher", "fake:", *flags])
    refused(res, *names)
    assert not out.exists()


# -- 4. lone surrogates and NULs are data -------------------------------------------------------
@pytest.mark.parametrize("text", ["a\ud83db", "\udfff", "x\x00y", "\ud83d\ude00", "\ud800" * 3])
def test_a_teacher_answer_with_a_surrogate_is_cached_escaped(tmp_path: Path, text: str) -> None:
    from toollab.synth.teacher import AnswerCache, cache_key

    cache = AnswerCache(tmp_path / "c.jsonl")
    cache.put("k", text, {"prompt_tokens": 1})
    raw = (tmp_path / "c.jsonl").read_bytes()
    raw.decode("utf-8")  # valid UTF-8
    again = AnswerCache(tmp_path / "c.jsonl")
    got = again.get("k")
    assert got is not None and got["text"] == text.encode("utf-16", "surrogatepass").decode(
        "utf-16", "surrogatepass"
    )
    from toollab.models.base import ChatRequest

    assert cache_key("fake:", ChatRequest(prompt=text), 0)  # no crash on the key either


def test_data_synth_deer_with_a_teacher_that_answers_surrogates(tmp_path: Path) -> None:
    from toollab.models.base import run_sync
    from toollab.models.fake import FakeModel
    from toollab.synth import Teacher, TeacherConfig, deer

    def answer(messages: list[dict[str, Any]], _tools: Any) -> str:
        prompt = str(messages[-1]["content"])
        if "devise an API function" in prompt:
            name = prompt.split('The name of tool: "', 1)[1].split('"', 1)[0]
            return "\n".join(
                [f"API function: {name}(city: str)"]
                + [
                    json.dumps(
                        {"query": f"weather \ud83d in {c}\x00", "call": f"{name}(city='{c}')"}
                    )
                    for c in ("Paris", "Rome")
                ]
            )
        return "[YES] \udc00"

    tools = [
        deer.DeerTool(api_name=f"tool{i}", description_for_human=f"weather {i} \ud83d", example=[])
        for i in range(12)
    ]
    model = FakeModel(fn=answer)
    teacher = Teacher(model, TeacherConfig(model="fake:"), cache=tmp_path / "c")
    written = run_sync(deer.write_examples(tools, teacher))
    # the second-pass check asks about the answers' queries: every request sent is UTF-8
    # (half a character is sent as U+FFFD; a server could not be sent the surrogate)
    assert any("\ufffd" in json.dumps(r.messages, ensure_ascii=False) for r in model.requests)
    for r in model.requests:
        json.dumps(r.messages, ensure_ascii=False).encode("utf-8")
    out = tmp_path / "out"
    result = deer.build(written, deer.DeerConfig(seen=8, k=3, mode="random", nosearch=0))
    deer.write(out, result, written, {"note": "\ud83d"})
    for name in ("tool.json", "train.json", "report.json"):
        text = (out / name).read_bytes().decode("utf-8")  # valid UTF-8
        json.loads(text)
    back = json.loads((out / "tool.json").read_text(encoding="utf-8"))
    assert back[0]["example"][0]["query"] == "weather \ud83d in Paris\x00"
    (tmp_path / "c").read_bytes().decode("utf-8")


def test_data_sft_rejects_a_source_with_a_surrogate_and_writes_the_rest(
    tmp_path: Path, shared_data: Path
) -> None:
    lines = (shared_data / "seal-tools" / "dev.jsonl").read_text(encoding="utf-8").splitlines()[:4]
    lines[1] = lines[1].replace('"query": "', '"query": "\\ud83d ', 1)
    lines[2] = lines[2].replace('"query": "', '"query": "nul \\u0000 ', 1)
    src = write(tmp_path, "dev.jsonl", "\n".join(lines) + "\n")
    (tmp_path / "tool.jsonl").write_bytes((shared_data / "seal-tools" / "tool.jsonl").read_bytes())
    out = tmp_path / "o.jsonl"
    res = run(
        ["data", "sft", "--source", f"seal-tools:{src}", "--out", str(out), "--no-tokens",
         "--chat-template", "chatml", "--unguarded", "bfcl", "--unguarded", "seal-tools",
         "--unguarded", "deer", "--json"]
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    records = [json.loads(x) for x in out.read_bytes().decode("utf-8").splitlines()]
    assert len(records) == 3
    assert any("\x00" in r["text"] for r in records)  # a NUL is data
    card = (tmp_path / "README.md").read_bytes().decode("utf-8")
    assert "not encodable text" in card


# -- 6. chat templates render within bounds ----------------------------------------------------
LOOPS = {
    "nested ranges": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
    "{% endfor %}",
    "macro twice per level": "{% macro f(n) %}{% if n > 0 %}{{ f(n-1) }}{{ f(n-1) }}{% endif %}"
    "{% endmacro %}{{ f(60) }}",
    "namespace counter": "{% set ns = namespace(x=0) %}{% for i in range(100000) %}"
    "{% for j in range(100000) %}{% set ns.x = ns.x + 1 %}{% endfor %}{% endfor %}",
    "loop over messages": "{% for i in range(100000) %}{% for j in range(100000) %}"
    "{{ messages[0].role[:0] }}{% endfor %}{% endfor %}",
}
BOMBS = {
    "recursion": ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "recursion"),
    "string repeat": ("{{ 'a' * 1000000000 }}", "computed value"),
    "list repeat": ("{{ ([1] * 100000) * 100000 }}", "computed value"),
    "doubling ~": ("{% set a = 'xxxxxxxxxx' %}" + "{% set a = a ~ a %}" * 40 + "{{ a }}", "computed value"),
    "doubling +": ("{% set a = 'xxxxxxxxxx' %}" + "{% set a = a + a %}" * 40 + "{{ a }}", "computed value"),
    "power": ("{{ 2 ** 1000000000 }}", "bits"),
    "center": ("{{ 'x'.center(10000000000) }}", "beyond"),
    "center filter": ("{{ 'x'|center(10000000000) }}", "beyond"),
    "indent filter": ("{{ 'x\ny'|indent(10000000000) }}", "beyond"),
    "percent width": ("{{ '%0999999999d' % 1 }}", "width"),
    "format filter": ("{{ '%.999999999f'|format(1) }}", "width"),
    "str.format": ("{{ '{:>999999999}'.format(1) }}", "width"),
    "long output": ("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "longer than"),
    "syntax": ("{% for %}", "does not compile"),
    "undefined": ("{{ a.b.c }}", "failed to render"),
    "raise": ("{{ raise_exception('no') }}", "no"),
    "unsafe": ("{{ ''.__class__.__mro__ }}", "failed to render"),
}  # fmt: skip


@pytest.fixture
def fast_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toollab.templates.jinja_render.MAX_RENDER_SECONDS", 0.2)


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_a_chat_template_that_loops_is_stopped(fast_budget: None, name: str) -> None:
    from toollab.templates.jinja_render import render_jinja

    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"took more than 0\.2 s"):
        render_jinja(LOOPS[name], messages=[{"role": "user", "content": "hi"}])
    assert time.perf_counter() - t0 < 2


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_a_chat_template_bomb_is_refused(fast_budget: None, name: str) -> None:
    from toollab.templates.jinja_render import render_jinja

    source, problem = BOMBS[name]
    t0 = time.perf_counter()
    with pytest.raises(InputError) as err:
        render_jinja(source, messages=[{"role": "user", "content": "hi"}])
    assert problem in str(err.value)
    assert time.perf_counter() - t0 < 2


def test_ordinary_templates_still_render() -> None:
    from toollab.templates.chat_template import HERMES_TOOLS_CHAT_TEMPLATE
    from toollab.templates.jinja_render import render_jinja

    msgs = [{"role": "user", "content": "hi"}]
    out = render_jinja(
        "{% for m in messages %}{{ m.content ~ '!' }}{% endfor %}{{ range(5)|length }}"
        "{{ range(10)[3] }}{{ '%5d' % 3 }}{{ '{:>4}'.format(1) }}{{ 'ab'|upper }}"
        "{{ messages|map(attribute='role')|join(',') }}{{ [1, 2] * 2 }}{{ 2 ** 10 }}",
        messages=msgs,
    )
    assert out == "hi!53    3   1ABuser[1, 2, 1, 2]1024"
    text = render_jinja(
        HERMES_TOOLS_CHAT_TEMPLATE,
        messages=msgs,
        tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}],
        add_generation_prompt=True,
    )
    assert '"name": "f"' in text and text.endswith("<|im_start|>assistant\n")


def test_data_sft_with_a_looping_chat_template_is_a_clear_error(
    tmp_path: Path, fast_budget: None
) -> None:
    tpl = write(tmp_path, "loop.jinja", LOOPS["nested ranges"])
    out = tmp_path / "o.jsonl"
    res = run(
        ["data", "sft", "--source", "env:weather,n=2", "--out", str(out), "--no-tokens",
         "--chat-template", str(tpl), "--unguarded", "bfcl", "--unguarded", "seal-tools",
         "--unguarded", "deer"]
    )  # fmt: skip
    refused(res, "chat template", "took more than")
    assert not out.exists()


# -- the mix card reads recipes and data files through the same limits -------------------------
@pytest.mark.parametrize(
    ("recipe", "data", "problem"),
    [
        (BOMB, b"", "YAML beyond a limit"),
        (b"data: [d.jsonl:nan]\n", b"", "not a finite number"),
        (b"data: [{path: d.jsonl, weight: .inf}]\n", b"", "not a finite number"),
        (b"data: [d.jsonl]\n", b'{"meta": ' + BIG.encode() + b"}\n", "4,300"),
        (b"data: [d.jsonl]\n", b"\xff\n", "not UTF-8"),
        (b"data: [d.jsonl]\n", b"[1]\n", "expected a JSON object"),
        (b"data: [d.jsonl]\n", b'{"meta": "x"}\n{"meta": {"decision": 5}}\n', None),
    ],
)
def test_the_mix_card_reads_within_the_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recipe: bytes, data: bytes, problem: str | None
) -> None:
    from toollab.sft.mix import mix_card

    monkeypatch.chdir(tmp_path)
    r = write(tmp_path, "recipe.yaml", recipe)
    write(tmp_path, "d.jsonl", data)
    if problem is None:
        assert "no-search" in mix_card(r)
        return
    with pytest.raises(InputError, match=problem):
        mix_card(r)


# -- one mapping of a YAML error to a message: config files and YAML tool files ------------------
@pytest.mark.parametrize("case", ["alias bomb", "malformed", "deep"])
def test_a_yaml_tool_file_and_a_config_file_report_the_same_problem(
    tmp_path: Path, case: str
) -> None:
    from toollab.data.yaml_limits import read_yaml_file
    from toollab.tools.sources import yaml_records

    data, problem = BAD_FILES[case]
    f = write(tmp_path, "tools.yaml", data)
    with pytest.raises(InputError) as err:
        read_yaml_file(f)
    ((line, item, value, found),) = list(yaml_records(data.decode()))
    assert found == err.value.problem and problem in found
    assert (line, item, value) == (err.value.line, None, None)
