"""SFT export on real files: every written example reads back to its gold answer through the
template's parser or the constrained decoding reader, its loss spans cover exactly the assistant
outputs, its prompt is what inference renders, packing masks docs and goals, writes are atomic,
and malformed sources fail with file, line and problem."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from toollab.cli.main import app
from toollab.errors import InputError, UsageError
from toollab.models.policy import parse_constrained
from toollab.parsing import ParseStatus
from toollab.schema import Instance, Tool
from toollab.sft import SFTConfig, export_sft, parse_source
from toollab.sft.chat import load_chat_format
from toollab.sft.sources import load_source
from toollab.sft.targets import call_view, policy_for
from toollab.templates import get_template

MARKER = "<|im_end|>"
TEMPLATES = ["json", "hermes", "python", "seal", "react", "deer", "chat"]


def sources(shared: Path) -> list[str]:
    return [
        f"seal-tools:{shared / 'seal-tools' / 'dev.jsonl'},n=60",
        "env:weather,n=30",
        f"deer-examples:{shared / 'deer' / 'tool.json'},n=60",
    ]


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def gold(shared_data: Path) -> dict[str, Instance]:
    """Every source instance by the id the export gives it."""
    out: dict[str, Instance] = {}
    for text in sources(shared_data):
        spec = parse_source(text)
        for inst in load_source(spec):
            out[f"{spec.label}#{inst.id}"] = inst
    return out


def export(tmp: Path, shared: Path, **kw: Any) -> tuple[Path, dict[str, Any]]:
    cfg = SFTConfig(
        sources=[parse_source(s) for s in kw.pop("sources", sources(shared))],
        out=tmp / "train.jsonl",
        unguarded=["bfcl", "seal-tools", "deer"],
        **kw,
    )
    result = export_sft(cfg)
    return result.path, result.figures


def check_spans(rec: dict[str, Any]) -> None:
    """Spans non-empty, one per assistant message, each exactly its content + the marker."""
    text, spans = rec["text"], rec["spans"]
    assistants = [m["content"] for m in rec["messages"] if m["role"] == "assistant"]
    if rec.get("spans_apart"):  # a raw-prompt template (DEER): one chain, cut where rounds meet
        assert len(assistants) == 1 and len(spans) in (1, 3)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
        assert spans[-1][1] == len(text)
        assert "".join(text[s:e] for s, e in spans) == " " + assistants[0] + MARKER
        assert text[: spans[0][0]].endswith(" Assistant:")
        return
    assert len(spans) == len(assistants) >= 1
    for (start, end), content in zip(spans, assistants, strict=True):
        assert 0 <= start < end <= len(text)
        assert text[start:end] == content + MARKER
        assert text[:start].endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize("template", TEMPLATES)
def test_template_targets_read_back(
    tmp_path: Path, shared_data: Path, gold: dict[str, Instance], template: str
) -> None:
    path, fig = export(tmp_path, shared_data, template=template, target="template")
    recs = read(path)
    tpl = get_template(template) if template != "chat" else None
    assert fig["examples"] == len(recs) > 80
    # nothing lost silently: written + rejected == loaded (no guard here)
    assert fig["examples"] + sum(fig["rejected"].values()) == fig["loaded"] == 150
    for rec in recs:
        check_spans(rec)
        assert rec["template"] == template
        inst = gold[rec["id"]]
        content = rec["messages"][-1]["content"]
        if tpl is None:  # the bundled template documents no tools: the hermes fallback reads it
            tpl = get_template("hermes")
        parsed = tpl.parse(content)
        if inst.gold:
            assert parsed.status is ParseStatus.CALLS, content
            assert call_view(parsed.calls) == call_view(list(inst.gold))
        else:
            assert parsed.status is ParseStatus.NO_CALL


def test_constrained_targets_are_what_decoding_admits(
    tmp_path: Path, shared_data: Path, gold: dict[str, Instance]
) -> None:
    import jsonschema

    from toollab.models.constrain import build_schema

    path, fig = export(tmp_path, shared_data)
    recs = read(path)
    assert len(recs) > 100
    kinds: set[str] = set()
    for rec in recs:
        check_spans(rec)
        inst = gold[rec["id"]]
        content = rec["messages"][-1]["content"]
        value = json.loads(content)
        policy = policy_for(inst)
        tools = [Tool.from_openai(t) for t in rec["tools"]]
        jsonschema.validate(value, build_schema(tools, policy))
        parsed = parse_constrained(content, policy)
        if inst.gold:
            assert call_view(parsed.calls) == call_view(list(inst.gold))
        else:
            assert parsed.status is ParseStatus.NO_CALL
        # the shape is the one the policy decodes: decision first where a no-call is legal,
        # a single object where one call is expected, an array where several may be
        if policy.allow_no_call:
            assert isinstance(value, dict) and "decision" in value
            kinds.add("decision")
        elif policy.max_calls == 1:
            assert isinstance(value, dict) and set(value) == {"name", "arguments"}
            kinds.add("object")
        else:
            assert isinstance(value, list) and value
            kinds.add("array")
    assert "decision" in kinds  # environments and DEER admit a no-call
    # the rejections say why (Seal-Tools dev writes some numbers as strings)
    assert all(k.startswith("not admitted by the decoding schema: ") for k in fig["rejected"])
    assert "not admitted by the decoding schema: a value of another type or form" in fig["rejected"]


def test_prompt_is_what_inference_renders(tmp_path: Path, shared_data: Path) -> None:
    """The text before each span is exactly the llama.cpp backend's rendering of the prompt."""
    from toollab.models.base import ChatRequest
    from toollab.models.llamacpp import LlamaCppModel

    path, _ = export(tmp_path, shared_data, sources=["env:weather,n=10"])
    model = LlamaCppModel(n_ctx=512)
    try:
        for rec in read(path):
            prompt = model.render(ChatRequest(messages=rec["messages"][:-1]))
            assert rec["text"][: rec["spans"][0][0]] == prompt
    finally:
        model.close()


def test_deer_trains_on_the_prompts_its_agent_sends(tmp_path: Path, shared_data: Path) -> None:
    """DEER's chains are written on DEER's raw prompt, not a chat template: the text before the
    first span is round one's prompt, the text before a search chain's last span is round two's
    teacher-forced prompt, and with ``loss="written"`` the spans are exactly what the model
    writes in the two rounds (not the API pool the agent supplies)."""
    deer = get_template("deer")
    valid = shared_data / "deer" / "valid.json"
    by_id = {f"deer:{valid}#{i.id}": i for i in load_source(parse_source(f"deer:{valid}"))}
    runs = {}
    for loss in ("target", "written"):
        (tmp_path / loss).mkdir()
        path, fig = export(
            tmp_path / loss,
            shared_data,
            sources=[f"deer:{valid},n=60"],
            template="deer",
            target="template",
            loss=loss,
        )
        runs[loss] = read(path)
        assert fig["examples"] == len(runs[loss]) == 60
    branches = set()
    for rec, part in zip(runs["target"], runs["written"], strict=True):
        inst = by_id[rec["id"]]
        text, spans = rec["text"], rec["spans"]
        check_spans(rec)
        assert part["text"] == text and rec["spans_apart"] is True
        assert MARKER not in text[: spans[0][0]]
        assert text[: spans[0][0]] == deer.prompt(inst)
        chain = text[spans[0][0] + 1 : len(text) - len(MARKER)]
        assert chain == inst.metadata["gold_chain"]
        if len(spans) == 3:
            assert text[: spans[2][0]] == deer.teacher_forced_prompt(inst)
            first, second = (text[s:e] for s, e in part["spans"])
            assert part["spans"] == [spans[0], spans[2]]
            assert first == " #Begin# Need to look up the API Pool. #SearchAPI#"
            assert second.split(" ", 1)[0] in ("CallAPI#", "NoCallAPI#")
            assert second.endswith("#End#" + MARKER)
            branches.add(second.split(" ", 1)[0])
        else:
            assert part["spans"] == spans
            assert chain.endswith("knowledge. #End#") and "#SearchAPI#" not in chain
            branches.add("NoSearch")
    assert branches == {"CallAPI#", "NoCallAPI#", "NoSearch"}
    with pytest.raises(UsageError, match="cannot share a sequence"):
        export(
            tmp_path,
            shared_data,
            sources=[f"deer:{valid},n=8"],
            template="deer",
            target="template",
            pack="all-shot",
        )


def test_all_shot_packing(tmp_path: Path, shared_data: Path) -> None:
    path, fig = export(
        tmp_path,
        shared_data,
        sources=["env:weather,n=40"],
        pack="all-shot",
        pack_size=4,
        max_tokens=4096,
    )
    recs = read(path)
    assert fig["examples"] == 40
    assert sum(len(r["spans"]) for r in recs) == 40
    assert any(len(r["spans"]) > 1 for r in recs)
    for rec in recs:
        check_spans(rec)
        assert len(rec["spans"]) <= 4
        msgs = rec["messages"]
        assert [m["role"] for m in msgs] == ["system", *["user", "assistant"] * len(rec["spans"])]
        # docs and goals lie outside every span (masked); every action inside one
        covered = "".join(rec["text"][s:e] for s, e in rec["spans"])
        assert msgs[0]["content"][:200] not in covered
        for m in msgs:
            if m["role"] == "user":
                assert m["content"] not in covered
                assert m["content"] in rec["text"]
        if len(rec["spans"]) > 1:
            assert rec["meta"]["pack"] == "all-shot"
            assert len(rec["meta"]["examples"]) == len(rec["spans"])


def test_pack_respects_the_token_budget(tmp_path: Path, shared_data: Path) -> None:
    from toollab.sft.tokens import TokenCounter

    path, _fig = export(
        tmp_path, shared_data, sources=["env:weather,n=30"], pack="all-shot", pack_size=8,
        max_tokens=1200,
    )  # fmt: skip
    counter = TokenCounter()
    for rec in read(path):
        if len(rec["spans"]) > 1:
            assert counter.count(rec["text"]) <= 1200


def test_card_reports_the_figures(tmp_path: Path, shared_data: Path) -> None:
    path, fig = export(tmp_path, shared_data)
    card = (path.parent / "README.md").read_text(encoding="utf-8")
    for heading in (
        "## Sources and licences",
        "## Decision branches",
        "## Calls per example",
        "## API complexity",
        "## Token lengths",
        "## Leakage guard",
        "## Checks",
        "## Augmentations",
    ):
        assert heading in card
    assert "unknown" not in card  # every source here has a known licence
    assert card.count("Apache-2.0 (") == 3
    assert fig["tokens"]["min"] > 0 and fig["loss_tokens"]["min"] > 0
    assert fig["by_decision"]["Call"] > 0
    assert fig["api_complexity"]["weather"]["test_vs_train"] is not None
    assert "Skipped on purpose: bfcl, seal-tools, deer" in card


def test_writes_are_atomic(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "train.jsonl"
    out.write_text("previous export\n", encoding="utf-8")
    import toollab.sft.export as export_mod

    calls = {"n": 0}
    real = export_mod.record

    def failing(*args: Any, **kw: Any) -> dict[str, Any]:
        calls["n"] += 1
        if calls["n"] > 5:
            raise KeyboardInterrupt  # a kill in the middle of writing
        return real(*args, **kw)

    monkeypatch.setattr(export_mod, "record", failing)
    with pytest.raises(KeyboardInterrupt):
        export(tmp_path, shared_data, sources=["env:weather,n=20"], count_tokens=False)
    assert out.read_text(encoding="utf-8") == "previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.jsonl"]
    monkeypatch.setattr(export_mod, "record", real)
    path, _ = export(tmp_path, shared_data, sources=["env:weather,n=5"], count_tokens=False)
    import os

    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask  # an ordinary file, not mkstemp's 0600
    assert len(read(path)) == 5


def test_malformed_jsonl_source_names_file_and_line(tmp_path: Path, shared_data: Path) -> None:
    lines = (shared_data / "seal-tools" / "dev.jsonl").read_text(encoding="utf-8").splitlines()
    bad = tmp_path / "dev.jsonl"
    bad.write_text("\n".join([*lines[:2], '{"id": "x", "query": ', *lines[3:5]]) + "\n")
    with pytest.raises(InputError) as err:
        tools = shared_data / "seal-tools" / "tool.jsonl"
        export(tmp_path, shared_data, sources=[f"seal-tools:{bad},tools={tools}"])
    assert str(bad) in str(err.value) and ":3" in str(err.value)
    assert not (tmp_path / "train.jsonl").exists()


def test_malformed_deer_example_names_tool_and_example(tmp_path: Path, shared_data: Path) -> None:
    tools = json.loads((shared_data / "deer" / "tool.json").read_text(encoding="utf-8"))[:3]
    tools[1]["example"][2] = {"query": "what?", "call": 42}
    bad = tmp_path / "tool.json"
    bad.write_text(json.dumps(tools), encoding="utf-8")
    with pytest.raises(InputError) as err:
        export(tmp_path, shared_data, sources=[f"deer-examples:{bad}"])
    assert f"tool {tools[1]['api_name']!r} example 2" in str(err.value)
    assert str(bad) in str(err.value)


def test_cli_exports_and_reports_bad_input(
    tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLLAB_SHARED_DATA", raising=False)
    runner = CliRunner()
    out = tmp_path / "cli.jsonl"
    res = runner.invoke(
        app,
        ["data", "sft", "--out", str(out), "--env", "weather", "--n", "12",
         "--guard-root", str(shared_data), "--unguarded", "seal-tools", "--json"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["examples"] == len(read(out)) > 0
    res = runner.invoke(app, ["data", "sft", "--out", str(out), "--env", "weather", "--n", "5"])
    assert res.exit_code == 2
    assert "--guard bfcl=PATH" in res.output
    res = runner.invoke(
        app, ["data", "sft", "--out", str(out), "--source", "seal-tools", "--unguarded", "bfcl"]
    )
    assert res.exit_code == 2 and "KIND:TARGET" in res.output


def test_datasets_loads_an_export(tmp_path: Path, shared_data: Path) -> None:
    datasets = pytest.importorskip("datasets")
    path, fig = export(tmp_path, shared_data, count_tokens=False)
    keys = {tuple(sorted(r["meta"])) for r in read(path)}
    assert len(keys) == 1  # one schema for the whole file
    ds = datasets.load_dataset(
        "json", data_files=str(path), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert len(ds) == fig["records"]
    assert ds[0]["spans"] == read(path)[0]["spans"]


def test_chat_format_end_of_turn() -> None:
    fmt = load_chat_format("bundled")
    assert fmt.end_of_turn == MARKER
    assert load_chat_format("chatml").end_of_turn == MARKER


def test_token_counts_equal_llama_cpp_tokenization(tmp_path: Path, shared_data: Path) -> None:
    """Counting by pieces between special tokens (cached) gives llama.cpp's own count."""
    from toollab.sft.tokens import TokenCounter

    path, _ = export(tmp_path, shared_data, count_tokens=False)
    counter = TokenCounter()
    for rec in read(path)[::5]:
        text = rec["text"]
        assert counter.count(text) == len(counter.tokenize(text))
        for start, end in rec["spans"]:
            assert counter.count(text[start:end]) == len(counter.tokenize(text[start:end]))


def test_cli_config_file(tmp_path: Path, shared_data: Path) -> None:
    """A YAML config fills the options the command line does not give; bad keys are named."""
    out = tmp_path / "cfg.jsonl"
    cfg = tmp_path / "sft.yaml"
    cfg.write_text(
        f"out: {out}\nsource: ['env:weather,n=16']\npack: all-shot\npack_size: 2\n"
        f"guard_root: {shared_data}\nunguarded: [seal-tools, deer]\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    res = runner.invoke(app, ["data", "sft", "--config", str(cfg), "--pack-size", "4", "--json"])
    assert res.exit_code == 0, res.output
    recs = read(out)
    assert sum(len(r["spans"]) for r in recs) == 16
    assert max(len(r["spans"]) for r in recs) == 4  # the command line won over the file
    cfg.write_text("out: x.jsonl\npack_sise: 3\n", encoding="utf-8")
    res = runner.invoke(app, ["data", "sft", "--config", str(cfg)])
    assert res.exit_code == 2
    assert "pack_sise" in res.output and "pack_size" in res.output and str(cfg) in res.output


def test_weighted_mixture(tmp_path: Path, shared_data: Path) -> None:
    from toollab.sft.sources import shares

    assert shares([parse_source("env:a,weight=3"), parse_source("env:b")], 10) == [8, 2]
    path, fig = export(
        tmp_path,
        shared_data,
        sources=["env:weather,n=40,weight=3", "env:home_search,n=40,weight=1"],
        total=20,
        count_tokens=False,
    )
    assert fig["loaded"] == 20
    assert fig["by_source"] == {"env:home_search": 5, "env:weather": 15}
    again, _ = export(
        tmp_path / "again",
        shared_data,
        sources=["env:weather,n=40,weight=3", "env:home_search,n=40,weight=1"],
        total=20,
        count_tokens=False,
    )
    assert again.read_text() == path.read_text()  # seeded: the same export twice
