"""Fuzz: loaders, output parsers and the run store meet generated hostile input.

Seeded (``derandomize``), few examples and a deadline per example, so the suite is quick and the
same on every machine.  Each property asserts that the only failure is a clear
:class:`~toollab.errors.InputError` (loaders, the store) or a well-formed parse (parsers): no
other exception, no hang, and what the store writes reads back unchanged.
"""

from __future__ import annotations

import json
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toollab.data.jsonl import read_json, read_records
from toollab.data.yaml_limits import load_yaml
from toollab.errors import InputError
from toollab.eval.record import Prediction
from toollab.eval.store import (
    PREDICTIONS,
    RunStore,
    check_predictions,
    parse_prediction_line,
    prediction_line,
    read_predictions,
)
from toollab.parsing import ParseResult, get_parser, parser_names
from toollab.tools.pool import read_pool_file

FUZZ = settings(
    derandomize=True,
    max_examples=60,
    deadline=timedelta(seconds=5),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)

#: any text, lone surrogates and NUL included
ANY_TEXT = st.text(alphabet=st.characters(codec=None), max_size=200)
JSONISH = st.sampled_from(list('{}[]",:0123456789.eE+-truefalsnl \n\\u\t'))
YAMLISH = st.sampled_from([*list("&*ab-:[]{}, \n'\"!#|>?%@`"), "  ", "\n- ", "tools:", "!!str "])


def _nest(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


@st.composite
def hostile_json(draw: st.DrawFn) -> bytes:
    """Bytes that look like JSON: random JSON alphabet, deep nesting, huge numbers, damage."""
    choice = draw(st.integers(0, 4))
    if choice == 0:
        return "".join(draw(st.lists(JSONISH, max_size=120))).encode()
    if choice == 1:
        depth = draw(st.sampled_from([10, 900, 1100, 20_000]))
        return _nest(depth, draw(st.sampled_from(["list", "object"]))).encode()
    if choice == 2:
        digits = draw(st.sampled_from([10, 4300, 4301, 20_000]))
        return ('[{"id": ' + "9" * digits + "}]").encode()
    if choice == 3:
        return draw(st.binary(max_size=200))
    value = draw(st.recursive(st.none() | st.integers() | ANY_TEXT, st.lists, max_leaves=8))
    text = json.dumps(value)
    cut = draw(st.integers(0, len(text)))
    return text[:cut].encode("utf-8", "surrogatepass")


@given(data=hostile_json(), suffix=st.sampled_from([".json", ".jsonl", ".yaml"]))
@FUZZ
def test_loaders_give_input_errors_only(tmp_path: Path, data: bytes, suffix: str) -> None:
    path = tmp_path / f"f{suffix}"
    path.write_bytes(data)
    for load in (lambda: list(read_records(path)), lambda: read_json(path)):
        try:
            load()
        except InputError as exc:
            assert str(path) in str(exc)
    _tools, problems = read_pool_file(path)
    assert all(p.problem for p in problems)


@st.composite
def hostile_yaml(draw: st.DrawFn) -> str:
    choice = draw(st.integers(0, 2))
    if choice == 0:
        return "".join(draw(st.lists(YAMLISH, max_size=80)))
    if choice == 1:  # nested anchors and aliases: a bomb of random width and height
        width, height = draw(st.integers(1, 12)), draw(st.integers(1, 12))
        lines = ["l0: &l0 [x]"]
        for i in range(1, height):
            lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
        return "\n".join([*lines, f"tools: [*l{height - 1}]"]) + "\n"
    depth = draw(st.integers(1, 400))
    return "tools:\n- " + draw(st.sampled_from(["[", "{a: "])) * depth + "\n"


@given(text=hostile_yaml())
@FUZZ
def test_yaml_limits_hold(text: str) -> None:
    t0 = time.perf_counter()
    try:
        load_yaml(text)
    except yaml.YAMLError as exc:
        assert getattr(exc, "problem", None) or str(exc)
    assert time.perf_counter() - t0 < 2.0


@st.composite
def hostile_output(draw: st.DrawFn) -> str:
    """Model outputs: random text, deep structures, huge repetitions, surrogates, NUL bytes."""
    choice = draw(st.integers(0, 4))
    if choice == 0:
        return draw(ANY_TEXT)
    if choice == 1:
        depth = draw(st.integers(1, 3000))
        inner = draw(st.sampled_from(["[", '{"a": ', "(", "f(a="]))
        return '{"name": "f", "arguments": ' + inner * depth
    if choice == 2:
        a, b, c = (draw(st.integers(0, 10**6)) for _ in range(3))
        seq = draw(st.sampled_from(["[1]", "'ab'", "[[0]*9]", "(1,)", "[None]"]))
        op = draw(st.sampled_from(["*", "+", "**"]))
        call = f"f(a=[{seq}*{a}]*{b}, b={a}{op}{c}, c=[{seq}]*{c})"
        return draw(st.sampled_from([f"[{call}]", f"#Begin##CallAPI# {call}#End#"]))
    if choice == 3:
        core = '{"name": "f", "arguments": {"x": "' + draw(ANY_TEXT) + '"}}'
        return draw(st.sampled_from(["", "<tool_call>", "Action: f\nAction Input: "])) + core
    n = draw(st.integers(1, 2000))
    return "[f(a=" + "[" * n + "1" + "]" * n + ")]" + "\x00\ud83d"


@pytest.mark.parametrize("name", parser_names())
def test_every_parser_bounds_its_work(name: str) -> None:
    parser = get_parser(name)

    @given(text=hostile_output())
    @FUZZ
    def check(text: str) -> None:
        t0 = time.perf_counter()
        result = parser.parse(text)
        assert isinstance(result, ParseResult)
        line = prediction_line(Prediction(id="x", raw=text, parsed=result))
        back = parse_prediction_line(line, Path("p"), 1)
        assert back.raw == text
        assert time.perf_counter() - t0 < 3.0

    check()


@given(raw=ANY_TEXT, extra=st.dictionaries(ANY_TEXT, ANY_TEXT, max_size=3))
@FUZZ
def test_store_round_trips_any_text(tmp_path: Path, raw: str, extra: dict[str, str]) -> None:
    pred = Prediction(id=raw or "x", raw=raw, metadata=extra, error=raw or None)
    out = Path(tempfile.mkdtemp(dir=tmp_path)) / "run"
    with RunStore(out) as store:
        store.append(pred)
    (back,) = read_predictions(out / PREDICTIONS)
    assert back == pred


@st.composite
def damaged_predictions(draw: st.DrawFn) -> bytes:
    lines = [
        prediction_line(Prediction(id=f"i{i % 3}", repeat=draw(st.integers(-2, 3)))).encode()
        for i in range(draw(st.integers(0, 5)))
    ]
    blob = b"\n".join(lines) + b"\n"
    for _ in range(draw(st.integers(0, 3))):
        pos = draw(st.integers(0, len(blob)))
        junk = draw(
            st.sampled_from(
                [b"", b"\xff", b"\n", b"{", b"[" * 2000, b'"repeat": 1' + b"0" * 40, b"\x00"]
            )
        )
        blob = blob[:pos] + junk + blob[pos + draw(st.integers(0, 5)) :]
    return blob


@given(blob=damaged_predictions())
@FUZZ
def test_run_store_refuses_damage_clearly(tmp_path: Path, blob: bytes) -> None:
    out = Path(tempfile.mkdtemp(dir=tmp_path))
    (out / PREDICTIONS).write_bytes(blob)
    for read in (lambda: read_predictions(out / PREDICTIONS), lambda: _load(out)):
        try:
            preds = read()
        except InputError as exc:
            assert PREDICTIONS in str(exc)
            continue
        try:
            check_predictions(
                preds, ids={"i0", "i1", "i2"}, fingerprint=None, path=out / PREDICTIONS, repeats=3
            )
        except InputError as exc:
            assert "prediction" in str(exc)
        else:
            assert all(0 <= p.repeat < 3 for p in preds)
            assert len({(p.id, p.repeat) for p in preds}) == len(preds)


def _load(out: Path) -> list[Prediction]:
    with RunStore(out) as store:
        return store.load()


def test_surrogate_in_a_prediction_is_escaped_on_disk(tmp_path: Path) -> None:
    pred = Prediction(id="a", raw="Paris \ud83d and \x00")
    with RunStore(tmp_path / "run") as store:
        store.append(pred)
    data = (tmp_path / "run" / PREDICTIONS).read_bytes()
    data.decode("utf-8")  # valid UTF-8 on disk
    assert b"\\ud83d" in data and b"\\u0000" in data
    assert read_predictions(tmp_path / "run" / PREDICTIONS) == [pred]


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_values_too_deep_to_serialize_are_cut_not_fatal(tmp_path: Path) -> None:
    pred = Prediction(id="a", execution={"state": {"deep": _deep(400)}})
    with RunStore(tmp_path / "run") as store:
        store.append(pred)
    (back,) = read_predictions(tmp_path / "run" / PREDICTIONS)
    assert back.metadata["stored_truncated"] is True
    assert "nested too deeply" in json.dumps(back.model_dump(mode="json")["execution"])
