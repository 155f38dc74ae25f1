"""The teacher: cache, retries, timeouts, a teacher that goes down, a killed run resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from toollab.errors import BackendError, InputError
from toollab.models.base import run_sync
from toollab.models.fake import FakeModel
from toollab.synth import Reject, Teacher, TeacherConfig, TeacherDown
from toollab.synth.teacher import AnswerCache

SRC = Path(__file__).resolve().parents[1] / "src"


def number(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise Reject("not a number") from None


def ask_all(teacher: Teacher, prompts: list[str], stage: str = "stage") -> list[Any]:
    async def one(p: str) -> Any:
        answer = await teacher.ask(stage, lambda a: teacher.request_for(p, attempt=a), number)
        return answer.value

    return run_sync(teacher.map(stage, prompts, one))


def test_garbage_is_rejected_by_reason_and_asked_again(tmp_path: Path) -> None:
    model = FakeModel(outputs=["garbage", "", "7"])
    teacher = Teacher(model, TeacherConfig(model="fake:", attempts=3), cache=tmp_path / "c.jsonl")
    assert ask_all(teacher, ["seven?"]) == [7]
    rates = teacher.stats.pass_rates()["stage"]
    assert rates["rejected"] == {"not a number": 1, "empty answer": 1}
    assert rates["accepted"] == 1 and rates["pass_rate"] == pytest.approx(1 / 3, abs=1e-4)
    # each attempt used its own seed (so a sampling teacher can answer differently)
    assert [r.options.seed for r in model.requests] == [0, 1, 2]


def test_gives_up_after_attempts(tmp_path: Path) -> None:
    teacher = Teacher(
        FakeModel(outputs=["x"], repeat=True), TeacherConfig(model="fake:", attempts=2), cache=None
    )
    assert ask_all(teacher, ["a", "b"]) == [None, None]
    assert teacher.stats.pass_rates()["stage"]["gave_up"] == 2


def test_backend_errors_are_retried_with_backoff(tmp_path: Path) -> None:
    model = FakeModel(outputs=[BackendError("503 overloaded"), BackendError("503"), "4"])
    cfg = TeacherConfig(model="fake:", retries=3, backoff_s=0.01)
    teacher = Teacher(model, cfg, cache=tmp_path / "c.jsonl")
    assert ask_all(teacher, ["four?"]) == [4]
    assert teacher.stats.retries == 2
    assert teacher.stats.failures == {"BackendError": 2}


def test_timeouts_are_counted_and_a_dead_teacher_ends_the_run(tmp_path: Path) -> None:
    model = FakeModel(outputs=["1"], repeat=True, latency=0.5)
    cfg = TeacherConfig(
        model="fake:", timeout_s=0.02, retries=1, backoff_s=0.0, max_consecutive_failures=4
    )
    teacher = Teacher(model, cfg, cache=tmp_path / "c.jsonl")
    t0 = time.perf_counter()
    assert ask_all(teacher, [f"q{i}" for i in range(50)]) == [None] * 50
    assert time.perf_counter() - t0 < 5  # the rest failed at once, once the teacher was down
    assert teacher.stats.failures["timeout"] >= 4
    assert teacher.stats.failures["teacher down"] > 0
    with pytest.raises(TeacherDown, match="run the same command again"):
        teacher.check_alive("a test")


def test_cache_hits_ask_nothing_again(tmp_path: Path) -> None:
    cache = tmp_path / "c.jsonl"
    first = FakeModel(fn=lambda m, t: str(len(str(m[-1]["content"]))))
    t1 = Teacher(first, TeacherConfig(model="fake:"), cache=cache)
    prompts = [f"question {'x' * i}" for i in range(10)]
    answers = ask_all(t1, prompts)
    assert first.calls == 10 and t1.stats.cache_hits == 0
    second = FakeModel(fn=lambda m, t: "wrong")
    t2 = Teacher(second, TeacherConfig(model="fake:"), cache=cache)
    assert ask_all(t2, prompts) == answers
    assert second.calls == 0 and t2.stats.cache_hit_rate == 1.0
    assert t2.stats.cached_tokens > 0
    # another teacher name or other decoding options are other keys
    t3 = Teacher(
        FakeModel(fn=lambda m, t: "1"), TeacherConfig(model="fake:", temperature=0.5), cache=cache
    )
    ask_all(t3, prompts[:2])
    assert t3.stats.cache_hits == 0


def test_torn_last_line_is_cut_off(tmp_path: Path) -> None:
    cache = tmp_path / "c.jsonl"
    t1 = Teacher(FakeModel(outputs=["1", "2"]), TeacherConfig(model="fake:"), cache=cache)
    ask_all(t1, ["a", "b"])
    good = cache.read_bytes()
    cache.write_bytes(good + b'{"key": "abc", "text": "par')
    loaded = AnswerCache(cache)
    assert loaded.repaired and len(loaded) == 2
    assert cache.read_bytes() == good
    # a complete last line that only lost its newline is kept
    cache.write_bytes(good.rstrip(b"\n"))
    assert len(AnswerCache(cache)) == 2 and cache.read_bytes() == good


def test_damaged_cache_line_is_a_clear_error(tmp_path: Path) -> None:
    cache = tmp_path / "c.jsonl"
    cache.write_text('{"key": "a", "text": "1"}\nnot json\n{"key": "b", "text": "2"}\n')
    with pytest.raises(InputError) as err:
        AnswerCache(cache)
    assert err.value.line == 2 and err.value.path == str(cache)


KILLED_RUN = textwrap.dedent(
    """
    import sys
    from toollab.models.base import run_sync
    from toollab.models.fake import FakeModel
    from toollab.synth import Teacher, TeacherConfig

    model = FakeModel(fn=lambda m, t: str(len(str(m[-1]["content"]))), latency=0.05,
                      max_concurrency=2)
    teacher = Teacher(model, TeacherConfig(model="fake:"), cache=sys.argv[1])

    async def one(p):
        return (await teacher.ask("s", lambda a: teacher.request_for(p, attempt=a), int)).value

    run_sync(teacher.map("s", [f"q{'x' * i}" for i in range(200)], one))
    """
)


def test_killed_run_resumes_from_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "c.jsonl"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(cache)], env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if cache.exists() and cache.read_bytes().count(b"\n") >= 20:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    cached = AnswerCache(cache)
    assert 20 <= len(cached) < 200
    model = FakeModel(fn=lambda m, t: str(len(str(m[-1]["content"]))))
    teacher = Teacher(model, TeacherConfig(model="fake:"), cache=cache)
    prompts = [f"q{'x' * i}" for i in range(200)]
    assert ask_all(teacher, prompts, "s") == [len(p) for p in prompts]
    assert model.calls == 200 - len(cached)
    assert teacher.stats.cache_hits == len(cached)
    lines = cache.read_text().splitlines()
    assert len(lines) == 200 and all(json.loads(line)["key"] for line in lines)
