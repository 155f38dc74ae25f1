"""Every model output is data: lone surrogates, NUL bytes and absurd structures are stored,
scored and reported, and runs resume; the run store refuses what cannot belong to a run."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.data import load_dataset
from toollab.data.samples import sample_path
from toollab.eval.store import PREDICTIONS, RESULTS, read_predictions
from toollab.parsing import get_parser

runner = CliRunner()

#: half an emoji, a NUL byte, and the 27 characters that once cost 70 s and 3.9 GB
HOSTILE = [
    '[get_weather(city="Paris \ud83d")]',
    "abc\x00def \ud83d",
    "[f(a=[[1]*100000]*100000)]",
]


def _bfcl_args(out: Path, n: int = 3) -> list[str]:
    bfcl, _ = sample_path("bfcl")
    return ["-d", str(bfcl), "-f", "bfcl", "-n", str(n), "--out", str(out)]


def _check_run(out: Path, expected: list[str]) -> None:
    data = (out / PREDICTIONS).read_bytes()
    data.decode("utf-8")  # the file is valid UTF-8: surrogates are escaped
    preds = read_predictions(out / PREDICTIONS)
    assert sorted(p.raw for p in preds) == sorted(expected)
    results = json.loads((out / RESULTS).read_text(encoding="utf-8"))
    assert results["counts"]["predictions"] == len(expected)
    assert results["counts"]["errors"] == 0


def test_surrogates_nul_and_huge_values_from_a_scripted_model(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(HOSTILE), encoding="utf-8")  # \ud83d as a JSON escape
    out = tmp_path / "run"
    t0 = time.perf_counter()
    r = runner.invoke(app, ["eval", "-m", f"fake:{script}", *_bfcl_args(out)])
    assert r.exit_code == 0, r.output
    assert time.perf_counter() - t0 < 30  # the huge repetition is refused, not computed
    _check_run(out, HOSTILE)
    preds = {p.raw: p for p in read_predictions(out / PREDICTIONS)}
    huge = preds[HOSTILE[2]].parsed
    assert huge is not None and "too large in total" in (huge.error or "")
    # scored again, reported, resumed: nothing fails on the stored text
    r = runner.invoke(app, ["score", str(out / PREDICTIONS), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["counts"]["predictions"] == 3
    r = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "report.html")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["eval", "-m", f"fake:{script}", *_bfcl_args(out), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["counts"]["predictions"] == 3


@pytest.fixture(scope="module")
def hostile_server() -> Iterator[str]:
    """A real OpenAI-compatible HTTP server on 127.0.0.1 that answers with half an emoji and a
    NUL byte, as servers that cut a multi-byte character at a token boundary do."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return None

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            body = {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "It is sunny \ud83d\x00"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            }
            payload = json.dumps(body).encode("ascii")  # "\ud83d" travels as a JSON escape
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_half_an_emoji_from_an_openai_compatible_server(
    hostile_server: str, tmp_path: Path
) -> None:
    pytest.importorskip("openai")
    out = tmp_path / "run"
    model = f"openai:m@{hostile_server}"
    r = runner.invoke(app, ["eval", "-m", model, *_bfcl_args(out, 2)])
    assert r.exit_code == 0, r.output
    _check_run(out, ["It is sunny \ud83d\x00"] * 2)
    r = runner.invoke(app, ["score", str(out / PREDICTIONS), "--json"])
    assert r.exit_code == 0, r.output
    json.loads(r.stdout)  # one valid JSON object
    r = runner.invoke(app, ["eval", "-m", model, *_bfcl_args(out, 2)])  # a rerun works
    assert r.exit_code == 0, r.output


def test_python_call_parser_bounds_total_work() -> None:
    parser = get_parser("python")
    for text in (
        "[f(a=[[1]*100000]*100000)]",
        "[f(a=[[[1]*1000]*1000]*1000)]",
        '[f(a="ab"*50000, b=["x"*99999]*99999)]',
        "[f(a=[" + ",".join(["[0]*99999+[1]"] * 30) + "])]",
    ):
        t0 = time.perf_counter()
        result = parser.parse(text)
        assert time.perf_counter() - t0 < 2.0
        assert result.error is not None and "too large" in result.error
    ok = parser.parse('[f(a=[1]*10, b="ab"*3, c=[[1, 2]]*2+[[3]])]')
    assert ok.calls[0].arguments == {"a": [1] * 10, "b": "ababab", "c": [[1, 2], [1, 2], [3]]}


def test_fingerprint_covers_instance_content_and_resume_refuses_to_mix(tmp_path: Path) -> None:
    bfcl, _ = sample_path("bfcl")
    data = tmp_path / "bfcl"
    data.mkdir()
    for f in Path(bfcl).rglob("*.json"):
        target = data / f.relative_to(bfcl)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f.read_bytes())
    before = load_dataset(data, "bfcl").fingerprint
    out = tmp_path / "run"
    args = ["eval", "-m", "fake:", "-d", str(data), "-f", "bfcl", "-n", "2", "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    # edit one instance's question, keeping every id
    path = data / "BFCL_v4_simple_python.json"
    lines = path.read_text().splitlines()
    rec = json.loads(lines[0])
    rec["question"][0][0]["content"] = "Something else entirely."
    path.write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
    after = load_dataset(data, "bfcl")
    assert after.fingerprint != before
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and "different configuration" in r.stderr and "dataset" in r.stderr
    r = runner.invoke(app, ["score", str(out / PREDICTIONS)])
    assert r.exit_code == 2 and "another dataset" in r.stderr


def test_resume_and_score_refuse_the_same_lines(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["eval", "-m", "fake:", *_bfcl_args(out, 2)]
    assert runner.invoke(app, args).exit_code == 0
    original = (out / PREDICTIONS).read_text()
    first = json.loads(original.splitlines()[0])
    for extra, words in (
        (original.splitlines()[0], "more than once"),
        (json.dumps({**first, "id": "stranger"}), "not instances"),
        (json.dumps({**first, "repeat": 10**30}), "impossible repeat"),
        (json.dumps({**first, "repeat": -1}), "impossible repeat"),
        (json.dumps({**first, "repeat": 3}), "impossible repeat"),
    ):
        (out / PREDICTIONS).write_text(original + extra + "\n")
        for verb in (args, ["score", str(out / PREDICTIONS)]):
            t0 = time.perf_counter()
            r = runner.invoke(app, verb)
            assert r.exit_code == 2, (verb[0], extra, r.output)
            assert words in r.stderr and "Traceback" not in r.output
            assert time.perf_counter() - t0 < 20
        assert (out / PREDICTIONS).read_text() == original + extra + "\n"  # nothing repaired away


def test_a_backend_error_is_counted_once(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"error": "server down"}, "[]"]), encoding="utf-8")
    out = tmp_path / "run"
    r = runner.invoke(app, ["eval", "-m", f"fake:{script}", *_bfcl_args(out, 2), "--json"])
    assert r.exit_code == 0, r.output
    counts = json.loads(r.stdout)["counts"]
    assert counts["errors"] == 1 and counts["parse_errors"] == 0  # failed, not also unparsable
    assert counts["predictions"] == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anything: permissions cannot fail")
def test_unwritable_run_files_are_clear_errors(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["eval", "-m", "fake:", *_bfcl_args(out, 2)]
    assert runner.invoke(app, args).exit_code == 0
    (out / PREDICTIONS).chmod(0o444)
    try:
        r = runner.invoke(app, args)
        assert r.exit_code == 2 and "permission" in r.stderr and "Traceback" not in r.output
    finally:
        (out / PREDICTIONS).chmod(0o644)
    out.chmod(0o555)
    try:
        r = runner.invoke(app, ["score", str(out / PREDICTIONS), "--out", str(out / "x.json")])
        assert r.exit_code == 2 and "Traceback" not in r.output
    finally:
        out.chmod(0o755)
