"""The evaluation API: ``Task`` + ``evaluate()``, the ``replay:`` model, the default
constrained decoding, and one bench run read the same way by every view (terminal table,
``--json``, each ``results.json``, ``report.html`` and ``toollab score``)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toollab.cli.bench_cmd import columns
from toollab.cli.main import app
from toollab.envs.generate import generate
from toollab.errors import InputError
from toollab.eval.bench import FIGURES
from toollab.report import fmt_figure
from toollab.schema import Decision, ToolCall
from toollab.templates.base import get_template

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()
ENVS = ("home_search", "weather", "household")
LIMIT = 5
FIGURE_KEYS = [f.name for f in FIGURES if f.name != "lcs"]


def _python_example(doc: Path) -> str:
    """The Python block under the ``<!-- library example -->`` marker of a docs page."""
    text = doc.read_text(encoding="utf-8")
    m = re.search(r"<!-- library example -->\s*```python\n(.*?)```", text, re.S)
    assert m, f"{doc.name} has no library example"
    return m.group(1)


@pytest.mark.parametrize("doc", ["README.md", "docs/evaluation.md"])
def test_the_python_example_runs(
    doc: str, tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = _python_example(REPO / doc)
    assert "from toollab import Task, evaluate" in code
    code = code.replace('"../shared/data', f'"{shared_data}').replace(
        '"runs/', f'"{tmp_path}/runs/'
    )
    monkeypatch.chdir(tmp_path)
    scope: dict[str, Any] = {}
    exec(compile(code, doc, "exec"), scope)
    log = scope["log"]
    assert log.task("bfcl").results["bfcl"]["simple_python"] == 1.0  # the oracle
    weather = log.task("weather")
    assert weather.results["environment"]["success"] == 1.0
    assert weather.definitions["environment"]["success"].label == "success"
    assert all("environment" in s.scores for s in weather.samples)
    assert weather.spec.constrained is False and weather.spec.constrained_by == "default"


# -- replay ---------------------------------------------------------------------------------------


def _replay_lines() -> list[dict[str, Any]]:
    """Outputs for the bench's test splits: the gold program, junk, or a wrong call, in turn."""
    tpl = get_template("json")
    lines: list[dict[str, Any]] = []
    for env in ENVS:
        for i, inst in enumerate(generate(env, "test", LIMIT, 0)):
            if i % 3 == 0:
                gold = [ToolCall(name=c.name, arguments=c.arguments) for c in inst.gold]
                out = tpl.render_calls(gold) if gold else tpl.render_answer("No tool is needed.")
            elif i % 3 == 1:
                out = "I would call something {"
            else:
                out = tpl.render_calls([ToolCall(name=inst.tools[0].name, arguments={})])
            lines.append({"id": inst.id, "output": out})
    return lines


def test_replay_answers_by_instance_id_and_fails_cleanly(tmp_path: Path) -> None:
    from toollab.models.registry import load_model

    path = tmp_path / "outputs.jsonl"
    path.write_text(
        '{"id": "a", "output": "x"}\n{"id": "b", "raw": "1"}\n{"id": "b", "raw": "2"}\n'
    )
    model = load_model(f"replay:{path}")
    from toollab.models.base import ChatRequest, run_sync

    def ask(tag: str) -> Any:
        return run_sync(model.safe_request(ChatRequest(prompt="?", tag=tag)))

    assert [ask("a").text, ask("a").text] == ["x", "x"]  # one output answers every repeat
    assert [ask("b").text, ask("b").text] == ["1", "2"]  # several: the turns, in order
    assert "asks for more" in (ask("b").error or "")
    assert "no recorded output for instance 'zzz'" in (ask("zzz").error or "")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "output": "x"}\n{"output": "y"}\n')
    with pytest.raises(InputError, match="'id'") as err:
        load_model(f"replay:{bad}")
    assert err.value.line == 2


def test_replay_carries_finish_reason_and_stop(tmp_path: Path) -> None:
    """A recorded output says why it ended only when its file does (no invented "stop")."""
    from toollab.models.base import ChatRequest, run_sync
    from toollab.models.registry import load_model

    path = tmp_path / "outputs.jsonl"
    lines = [
        {"id": "plain", "output": "x"},
        {"id": "cut", "output": "CallAPI# f(a=", "finish_reason": "length"},
        {"id": "said", "output": "#Begin# Need to", "stop": "#SearchAPI#"},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    model = load_model(f"replay:{path}")
    got = {
        tag: run_sync(model.request(ChatRequest(prompt="?", tag=tag)))
        for tag in ("plain", "cut", "said")
    }
    assert (got["plain"].finish_reason, got["plain"].stop) == (None, None)
    assert (got["cut"].finish_reason, got["cut"].stop) == ("length", None)
    assert (got["said"].finish_reason, got["said"].stop) == ("stop", "#SearchAPI#")
    for bad_line, match in [
        ({"id": "a", "output": "x", "finish_reason": "length", "stop": "#End#"}, "finish_reason"),
        ({"id": "a", "output": "x", "stop": 3}, "'stop' must be a non-empty string"),
        ({"id": "a", "output": "x", "finish_reason": ""}, "'finish_reason' must be"),
    ]:
        bad = tmp_path / "bad.jsonl"
        bad.write_text(json.dumps(bad_line) + "\n")
        with pytest.raises(InputError, match=match) as err:
            load_model(f"replay:{bad}")
        assert err.value.line == 1


def test_eval_records_whether_decoding_was_constrained(tmp_path: Path, shared_data: Path) -> None:
    """The default constrains where the backend can; replay cannot, so the run says so."""
    preds = tmp_path / "outputs.jsonl"
    preds.write_text("")
    from toollab.data import load_dataset

    ds = load_dataset(shared_data / "seal-tools", "seal-tools")
    with preds.open("w") as fh:
        for inst in ds.instances[:3]:
            fh.write(json.dumps({"id": inst.id, "output": "[]"}) + "\n")
    args = ["eval", "-m", f"replay:{preds}", "-d", str(shared_data / "seal-tools")]
    args += ["-f", "seal-tools", "-n", "3", "--json"]
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    assert r.exit_code == 0, r.stderr
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run["constrained"] is False and run["constrained_by"] == "default"
    r = runner.invoke(app, [*args, "--constrained", "--out", str(tmp_path / "b")])
    assert r.exit_code == 2 and "cannot constrain" in r.stderr


# -- one bench run, every view ----------------------------------------------------------------------


class _Tables(HTMLParser):
    """Every table of a page as rows of cell texts, keyed by the heading before it."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.heading = ""
        self._in_h = False
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._rows: list[list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "h3":
            self._in_h, self.heading = True, ""
        elif tag == "table":
            self._rows = []
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "h3":
            self._in_h = False
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._rows is not None:
            self._rows.append(self._row)
            self._row = None
        elif tag == "table" and self._rows is not None:
            self.tables.setdefault(self.heading, self._rows)
            self._rows = None

    def handle_data(self, data: str) -> None:
        if self._in_h:
            self.heading += data
        if self._cell is not None:
            self._cell.append(data)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


def test_one_bench_run_gives_the_same_numbers_everywhere(tmp_path: Path) -> None:
    replay = tmp_path / "outputs.jsonl"
    replay.write_text("".join(json.dumps(line) + "\n" for line in _replay_lines()))
    out = tmp_path / "bench"
    args = ["bench", "-m", f"replay:{replay}", "--envs", ",".join(ENVS), "-n", str(LIMIT)]
    args += ["--out", str(out)]
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.stderr
    data = json.loads(r.stdout)
    # the same command again: the runs are complete, so it only reads and prints the figures
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.stderr
    table = {
        line.split()[0]: line.split()[2:]
        for line in r.stderr.splitlines()
        if line.split() and line.split()[0] in ENVS
    }
    headers = [h for h, _ in columns()][2:-1]
    assert headers == [f.label for f in FIGURES if f.name != "lcs"]

    page = (out / "report.html").read_text()
    tables = _Tables()
    tables.feed(page)
    env_table = tables.tables["environment"]
    labels = {f.name: f.label for f in FIGURES}
    n_mixed = 0
    for env in ENVS:
        row = data["envs"][env]
        results = json.loads((out / "runs" / env / "results.json").read_text())
        figures = results["metrics"]["environment"]
        # --json and results.json: the same values
        assert {k: row[k] for k in [*FIGURE_KEYS, "lcs"]} == figures
        # the terminal table: those values as percentages, in the figures' order
        assert table[env][: len(FIGURE_KEYS)] == [_pct(figures[k]) for k in FIGURE_KEYS]
        # toollab score: the same values from the predictions alone
        s = runner.invoke(app, ["score", str(out / "runs" / env), "--json"])
        assert s.exit_code == 0, s.stderr
        assert json.loads(s.stdout)["metrics"]["environment"] == figures
        # the report: the same values under the same labels (figures as rows, runs as columns)
        header = env_table[0]
        col = header.index(env)
        by_label = {cells[0]: cells[col] for cells in env_table[1:]}
        for key, value in figures.items():
            assert by_label[labels[key]] == fmt_figure(value, percent=True), (env, key)
        n_mixed += sum(0 < (v or 0) < 1 for v in figures.values())
        # the figures' definitions: which instances each one is over
        assert results["definitions"]["environment"]["success"]["definition"].startswith(
            "Call instances"
        )
        # per-sample scores are in results.json, one row per instance
        assert len(results["per_sample"]["environment"]) == LIMIT
    assert n_mixed >= 3  # the outputs make figures between 0 and 1, not only 0 / 1
    assert data["envs"]["household"]["lcs"] is not None
    assert data["definitions"]["decision_acc"]["label"] == "dec"


def test_success_is_over_call_instances(tmp_path: Path) -> None:
    """A declined NoCall instance is a right decision, not a success: success counts Call
    instances only, in every view."""
    from toollab import Task, evaluate

    insts = generate("home_search", "test", 6, 0)
    assert any(i.label() is not Decision.CALL for i in insts)
    lines = [{"id": i.id, "output": '{"answer": "no"}'} for i in insts]
    replay = tmp_path / "decline.jsonl"
    replay.write_text("".join(json.dumps(x) + "\n" for x in lines))
    log = evaluate(
        Task(dataset=insts, environment="home_search", name="home_search"),
        f"replay:{replay}",
        log_dir=tmp_path / "log",
    )
    figs = log.results["environment"]
    n_call = sum(i.label() is Decision.CALL for i in insts)
    assert figs["success"] == 0.0
    assert figs["decision_acc"] == pytest.approx((len(insts) - n_call) / len(insts))
    rows = [s.scores["environment"] for s in log.samples]
    assert sum("success" in r for r in rows) == n_call
