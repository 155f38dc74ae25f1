"""``export_sft``: sources → checked, guarded, optionally augmented and packed SFT examples.

The file format is a contract with the trainer (one JSON object per line)::

    {"id", "source", "messages", "tools", "template", "text", "spans", "meta"}

``text`` is the whole training sequence rendered through the model's chat template; ``spans``
are the character offsets of every assistant output with its end-of-turn marker; the trainer
puts the loss on the tokens inside the spans only.  Nothing reaches the file unchecked: an
example whose target cannot be read back to its gold answer, or whose span is empty or not
exactly the assistant output, is counted with its reason in the card and left out.  The file and
its card are written to temporary files and renamed into place: an interrupted export leaves
nothing half-written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.data.atomic import atomic_write
from toollab.data.jsonl import escape_surrogates, json_text
from toollab.errors import UsageError
from toollab.schema import Instance
from toollab.sft.augment import AugmentConfig, augment
from toollab.sft.card import (
    CardStats,
    check_export_paths,
    env_complexity,
    render_card,
    write_card,
)
from toollab.sft.chat import ChatFormat, load_chat_format
from toollab.sft.conversations import export_conversations
from toollab.sft.guard import LeakageGuard
from toollab.sft.pack import Pair, conversation, pack_pairs
from toollab.sft.result import ExportResult, Laps, build_guard, template_for
from toollab.sft.sources import (
    ENV_KIND,
    SourceSpec,
    load_source,
    shares,
    take,
)
from toollab.sft.targets import TARGET_FORMATS, Rejected, SchemaCache, make_target
from toollab.sft.tokens import TokenCounter
from toollab.templates.base import RawPrompts, Template

PACK_MODES = ("none", "all-shot")
LOSS_MODES = ("target", "written")


@dataclass
class SFTConfig:
    """Everything an export does (the CLI and YAML both fill this)."""

    sources: list[SourceSpec]
    out: Path
    template: str = "json"
    #: ``constrained``: what constrained decoding admits (the default); ``template``: the
    #: template's own unconstrained rendering
    target: str = "constrained"
    #: ``target``: the loss on the whole target; ``written``: only on what the model writes at
    #: inference (a raw-prompt template's agent supplies the rest itself: DEER's API pool)
    loss: str = "target"
    chat_template: str = "bundled"
    #: total examples drawn from the sources by weight (``None``: every instance)
    total: int | None = None
    seed: int = 0
    pack: str = "none"
    pack_size: int = 4
    max_tokens: int = 2048
    augment: AugmentConfig = field(default_factory=AugmentConfig)
    #: (name, path) of every named evaluation set to stay clear of
    guards: list[tuple[str, Path]] = field(default_factory=list)
    unguarded: list[str] = field(default_factory=list)
    #: seeds of the environment test splits guarded against
    env_seeds: list[int] = field(default_factory=lambda: [0])
    near: float = 0.9
    near_same_tools: float = 0.75
    #: leave out gold arguments whose value is ``None`` when the parameter is optional (DEER's
    #: examples write ``location=None`` for "not given"; constrained decoding cannot write
    #: ``null`` for a typed parameter, so such examples are rejected unless this is on)
    drop_null_args: bool = False
    #: count tokens with the bundled tokenizer (the card's token lengths, the packing budget)
    count_tokens: bool = True
    #: export whole conversations of the environment sources (``toollab.sft.conversations``)
    conversations: bool = False
    #: at most this many user turns after the first in a conversation
    followups: int = 2

    def __post_init__(self) -> None:
        if not self.sources:
            raise UsageError("give at least one source (--data/--format, --env or --source)")
        if self.target not in TARGET_FORMATS:
            raise UsageError(f"--target {self.target!r}: one of {', '.join(TARGET_FORMATS)}")
        if self.loss not in LOSS_MODES:
            raise UsageError(f"--loss {self.loss!r}: one of {', '.join(LOSS_MODES)}")
        if self.pack not in PACK_MODES:
            raise UsageError(f"--pack {self.pack!r}: one of {', '.join(PACK_MODES)}")
        if self.pack_size < 1 or self.max_tokens < 1:
            raise UsageError("--pack-size and --max-tokens must be at least 1")
        if self.pack != "none" and not self.count_tokens:
            raise UsageError("all-shot packing needs the tokenizer for its token budget")
        if not 0 < self.near_same_tools <= self.near <= 1:
            raise UsageError("the guard thresholds must satisfy 0 < near-same-tools <= near <= 1")

    def summary(self) -> dict[str, Any]:
        return {
            "sources": ", ".join(s.label for s in self.sources),
            "template": self.template,
            "target": self.target,
            "loss": self.loss,
            "chat_template": self.chat_template,
            "total": self.total,
            "seed": self.seed,
            "pack": self.pack if self.pack == "none" else f"{self.pack} (size {self.pack_size})",
            "max_tokens": self.max_tokens,
            "drop_null_args": self.drop_null_args,
            "env_test_seed": self.env_seeds[0] if self.env_seeds else 0,
        }


Progress = Callable[[str, int, int], None]


def _noop(_what: str, _done: int, _total: int) -> None:
    return None


def gather(cfg: SFTConfig, stats: CardStats) -> tuple[list[Instance], list[Instance]]:
    """(every source's instances with ``n`` and the weighted total applied, every instance
    loaded: the distractor pools come from whole sources, not only the sampled part)."""
    loaded: list[list[Instance]] = []
    everything: list[Instance] = []
    for spec in cfg.sources:
        insts = load_source(spec)
        everything.extend(insts)
        if spec.kind != ENV_KIND:
            insts = take(insts, spec.n, cfg.seed, spec.label)
        stats.sources[spec.label] = len(insts)
        loaded.append(insts)
    if cfg.total is not None:
        counts = shares(cfg.sources, cfg.total)
        loaded = [
            take(insts, n, cfg.seed, spec.label)
            for insts, n, spec in zip(loaded, counts, cfg.sources, strict=True)
        ]
    out: list[Instance] = []
    seen: set[str] = set()
    for spec, insts in zip(cfg.sources, loaded, strict=True):
        for inst in insts:
            uid = f"{spec.label}#{inst.id}"
            k = 1
            while uid in seen:
                k += 1
                uid = f"{spec.label}#{inst.id}~{k}"
            seen.add(uid)
            out.append(inst.model_copy(update={"id": uid}))
    stats.loaded = len(out)
    return out, everything


def _guarded(insts: list[Instance], guard: LeakageGuard, stats: CardStats) -> list[Instance]:
    kept = []
    for inst in insts:
        why = guard.reason(inst)
        if why is None:
            kept.append(inst)
        else:
            stats.drop(why[0], why[1], inst)
    return kept


class Renderer:
    """Instance → checked (messages, text, spans) through one template and chat format."""

    def __init__(self, cfg: SFTConfig, chat: ChatFormat) -> None:
        self.cfg = cfg
        self.chat = chat
        self.template: Template = template_for(cfg.template, chat)
        self.schemas = SchemaCache()

    def pair(self, inst: Instance) -> Pair:
        tools = list(inst.tools)
        target, meta = make_target(inst, tools, self.template, self.cfg.target, self.schemas)
        if not target.strip():
            raise Rejected("empty target", "the target text is empty")
        return Pair(inst, self.template.messages(inst, tools), target, meta)

    @property
    def raw(self) -> RawPrompts | None:
        """The template, when it writes whole completion prompts (DEER): trained on those, not
        on a chat template."""
        return self.template if isinstance(self.template, RawPrompts) else None

    def sequence(self, pairs: list[Pair]) -> tuple[list[dict[str, Any]], str, list[list[int]]]:
        msgs = conversation(pairs)
        raw = self.raw
        if raw is not None:
            if len(pairs) != 1:
                raise Rejected("span", "a raw-prompt template trains one example per sequence")
            eos = self.chat.special_tokens.get("eos_token", "")
            text, pieces = raw.training_sequence(pairs[0].instance, pairs[0].target, eos)
            if "".join(text[s:e] for s, e, _ in pieces) != " " + pairs[0].target + eos:
                raise Rejected("span", "the pieces do not hold the target and the end token")
            written = self.cfg.loss == "written"
            spans = [[s, e] for s, e, w in pieces if w or not written]
            return msgs, text, spans
        hf_tools = (
            [t.to_hf() for t in pairs[0].instance.tools]
            if self.template.tools_in_chat_template
            else None
        )
        text, spans = self.chat.sequence(msgs, hf_tools)
        marker = self.chat.end_of_turn
        if len(spans) != len(pairs):
            raise Rejected("span", f"{len(spans)} assistant spans for {len(pairs)} targets")
        for (start, end), p in zip(spans, pairs, strict=True):
            if end <= start:
                raise Rejected("span", "empty loss span")
            if text[start:end] != p.target + marker:
                raise Rejected(
                    "span",
                    f"the span holds {text[start:end][:80]!r}, not the target and {marker!r}",
                )
        return msgs, text, spans


def _without_nulls(inst: Instance, stats: CardStats) -> Instance:
    """The instance with ``None`` values of optional parameters left out of its gold calls."""
    tools = {t.name: t for t in inst.tools}
    gold = []
    changed = 0
    for c in inst.gold:
        tool = tools.get(c.name)
        required = set(tool.required) if tool is not None else set(c.arguments)
        args = {k: v for k, v in c.arguments.items() if v is not None or k in required}
        changed += len(c.arguments) - len(args)
        gold.append(
            c.model_copy(update={"arguments": args}) if len(args) != len(c.arguments) else c
        )
    if not changed:
        return inst
    stats.augment_applied["null arguments left out"] += changed
    return inst.model_copy(update={"gold": gold})


def record(
    renderer: Renderer,
    pairs: list[Pair],
    msgs: list[dict[str, Any]],
    text: str,
    spans: list[list[int]],
) -> dict[str, Any]:
    first = pairs[0].instance
    # the same keys in every record, so that Arrow / ``datasets`` infer one schema for the file
    meta: dict[str, Any] = {
        "target": renderer.cfg.target,
        "chat_template": renderer.chat.name,
        "decision": [p.instance.label().value for p in pairs],
        "n_calls": [len(p.instance.gold) for p in pairs],
        "category": first.category or "",
        "pack": "all-shot" if len(pairs) > 1 else "",
        "examples": [p.instance.id for p in pairs],
        "augmented": sorted({a for p in pairs for a in p.instance.metadata.get("augmented", [])}),
        "policy": pairs[0].meta.get("policy"),
    }
    return {
        "id": first.id if len(pairs) == 1 else f"pack:{first.id}+{len(pairs) - 1}",
        "source": first.source or "",
        "messages": msgs,
        "tools": [t.to_openai() for t in first.tools],
        "template": renderer.template.name,
        "text": text,
        "spans": spans,
        "meta": meta,
        # a raw-prompt template: the prompt and each span tokenized on their own, as inference
        # reads its prompts (the key only in such files, so one file keeps one schema)
        **({"spans_apart": True} if renderer.raw is not None else {}),
    }


def export_sft(cfg: SFTConfig, progress: Progress = _noop, *, force: bool = False) -> ExportResult:
    """Run an export; returns where the file and card went and every figure of the card.
    ``force`` replaces a ``README.md`` beside ``cfg.out`` that toollab did not write."""
    lap = Laps()

    if cfg.conversations:
        return export_conversations(cfg, progress, force=force)
    out = cfg.out
    check_export_paths(out, force=force)
    stats = CardStats(augmentations=cfg.augment.active)
    chat = load_chat_format(cfg.chat_template)
    counter = None
    if cfg.count_tokens:
        counter = TokenCounter(
            Path(cfg.chat_template) if cfg.chat_template.endswith(".gguf") else None
        )
    lap("setup")
    guard = build_guard(cfg, stats)
    lap("guard")
    loaded, everything = gather(cfg, stats)
    lap("load")
    insts = _guarded(loaded, guard, stats)
    lap("screen")
    insts, rep = augment(insts, cfg.augment, set(guard.held_out), everything)
    stats.augment_applied, stats.augment_skipped = rep.applied, rep.skipped
    fresh = [i for i in insts if i.metadata.get("augmented")]
    if fresh:
        leaked = {i.id for i in fresh if guard.reason(i) is not None}
        for i in fresh:
            if i.id in leaked:
                why = guard.reason(i)
                if why is not None:
                    stats.drop(why[0], why[1] + " (after augmentation)", i)
        insts = [i for i in insts if i.id not in leaked]
    if cfg.drop_null_args:
        insts = [_without_nulls(i, stats) for i in insts]
    lap("augment")
    renderer = Renderer(cfg, chat)
    if cfg.pack == "all-shot" and renderer.raw is not None:
        raise UsageError(
            f"--pack all-shot: template {cfg.template!r} writes one completion prompt per "
            "example, so its examples cannot share a sequence"
        )
    pairs: list[Pair] = []
    for n, inst in enumerate(insts):
        if not _encodable(inst):
            stats.reject(
                "not encodable text",
                "a lone UTF-16 surrogate (half a character) no tokenizer can read",
                escape_surrogates(inst.id),
            )
            progress("check", n + 1, len(insts))
            continue
        try:
            pairs.append(renderer.pair(inst))
        except Rejected as exc:
            stats.reject(exc.kind, exc.detail, inst.id)
        progress("check", n + 1, len(insts))
    lap("check")
    if cfg.pack == "all-shot":
        if counter is None:
            raise UsageError("all-shot packing needs the tokenizer for its token budget")
        tok = counter

        def measure(msgs: list[dict[str, Any]]) -> int:
            return tok.count(chat.render(msgs, add_generation_prompt=False))

        packs = pack_pairs(pairs, cfg.pack_size, cfg.max_tokens, measure)
    else:
        packs = [[p] for p in pairs]
    with atomic_write(out) as fh:
        for n, pack in enumerate(packs):
            try:
                msgs, text, spans = renderer.sequence(pack)
            except Rejected as exc:
                for p in pack:
                    stats.reject(exc.kind, exc.detail, p.instance.id)
                continue
            rec = record(renderer, pack, msgs, text, spans)
            fh.write(json_text(rec) + "\n")
            stats.records += 1
            stats.examples.extend(p.instance for p in pack)
            if counter is not None:
                n_tok = counter.count(text)
                stats.tokens.append(n_tok)
                stats.loss_tokens.append(sum(counter.count(text[s:e]) for s, e in spans))
                if n_tok > cfg.max_tokens:
                    stats.over_budget += 1
            progress("write", n + 1, len(packs))
    lap("write")
    if any((s.source or "").startswith("env:") for s in stats.examples):
        stats.complexity = env_complexity(stats.examples, cfg.env_seeds[0] if cfg.env_seeds else 0)
    summary = cfg.summary()
    summary["tokenizer"] = counter.name if counter is not None else "-"
    card = write_card(out, escape_surrogates(render_card(stats, summary, out.name)), force=force)
    lap("card")
    return lap.result(out, card, stats)


def _encodable(inst: Instance) -> bool:
    """Whether every text of the instance is valid Unicode (no lone UTF-16 surrogate, as a
    JSON escape ``"\\ud83d"`` in a source file gives): a tokenizer cannot read the others."""
    try:
        json.dumps(inst.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
