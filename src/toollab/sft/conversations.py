"""``toollab data sft --conversations``: whole conversations as training examples.

Each record is one conversation of :mod:`toollab.sft.episodes` (calls, their real results, the
answers, follow-up user turns, no-call answers), rendered through the model's chat template
exactly as ``toollab chat`` renders it (:mod:`toollab.agents.conversation`), with one loss span
per assistant step.  Nothing is written unchecked:

* every user turn passes the leakage guard (a conversation with one leaking turn is dropped);
* every step's target validates against the decoding schema of the conversation policy, and
  :func:`~toollab.models.policy.parse_constrained` reads back exactly the step's call (its
  references resolved to the observed values) or its no-call answer;
* the conversation has one span per assistant step, each exactly that step's text followed by
  the end-of-turn marker.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toollab.agents.conversation import CONVERSATION_POLICY
from toollab.data.atomic import atomic_write
from toollab.errors import UsageError
from toollab.models.policy import parse_constrained
from toollab.parsing import ParseStatus
from toollab.sft.card import CardStats, check_export_paths, render_card, write_card
from toollab.sft.chat import ChatFormat, load_chat_format
from toollab.sft.episodes import CALL, FOLLOW_UP, Conversation, EpisodeConfig, build_conversations
from toollab.sft.result import ExportResult, Laps, build_guard, template_for
from toollab.sft.sources import ENV_KIND
from toollab.sft.targets import Rejected, SchemaCache, same_calls, schema_error
from toollab.sft.tokens import TokenCounter
from toollab.templates.base import Template

if TYPE_CHECKING:
    from toollab.sft.export import SFTConfig

Progress = Callable[[str, int, int], None]
Message = dict[str, Any]


def check_steps(conv: Conversation, schemas: SchemaCache) -> None:
    """Every step's target is admitted by the decoding schema and reads back to the step."""
    validator = schemas.validator(conv.tools, CONVERSATION_POLICY)
    for k, step in enumerate(conv.steps):
        where = f"step {k}"
        try:
            value = json.loads(step.target)
        except json.JSONDecodeError as exc:
            raise Rejected("unparsable target", f"{where}: {exc}") from None
        err = schema_error(validator, value)
        if err is not None:
            raise Rejected(err[0], f"{where}: {err[1]}")
        parsed = parse_constrained(step.target, CONVERSATION_POLICY)
        if parsed.is_error:
            raise Rejected("unparsable target", f"{where}: {parsed.error}")
        if step.call is not None:
            if parsed.status is not ParseStatus.CALLS or not same_calls(parsed.calls, [step.call]):
                raise Rejected("round trip", f"{where} does not read back to its call")
        elif parsed.status is not ParseStatus.NO_CALL or parsed.text != value.get("answer"):
            raise Rejected("round trip", f"{where} does not read back to its answer")


def render_conversation(
    conv: Conversation, template: Template, chat: ChatFormat
) -> tuple[list[Message], str, list[list[int]]]:
    """(messages, text, spans): the conversation as inference renders it, one span per step."""
    msgs = conv.messages(template.system_prompt(conv.tools))
    hf_tools = [t.to_hf() for t in conv.tools] if template.tools_in_chat_template else None
    text, spans = chat.sequence(msgs, hf_tools)
    steps = conv.steps
    if len(spans) != len(steps):
        raise Rejected("span", f"{len(spans)} assistant spans for {len(steps)} steps")
    marker = chat.end_of_turn
    for (start, end), step in zip(spans, steps, strict=True):
        if end <= start or text[start:end] != step.target + marker:
            raise Rejected("span", f"a span holds {text[start:end][:80]!r}, not its step")
    return msgs, text, spans


def _record(
    conv: Conversation, template: Template, chat: ChatFormat, msgs: list[Message], text: str,
    spans: list[list[int]],
) -> dict[str, Any]:  # fmt: skip
    meta: dict[str, Any] = {
        "target": "conversation",
        "chat_template": chat.name,
        "decision": [t.instance.label().value for t in conv.turns],
        "n_calls": [sum(1 for s in t.steps if s.call is not None) for t in conv.turns],
        "category": conv.turns[0].instance.category or "",
        "pack": "conversation",
        "examples": [t.instance.id for t in conv.turns],
        "augmented": [],
        "policy": CONVERSATION_POLICY.model_dump(mode="json"),
    }
    return {
        "id": conv.id,
        "source": f"env:{conv.env}",
        "messages": msgs,
        "tools": [t.to_openai() for t in conv.tools],
        "template": template.name,
        "text": text,
        "spans": spans,
        "meta": meta,
    }


def _figures(written: list[Conversation]) -> dict[str, Any]:
    turns = Counter(t.kind for c in written for t in c.turns)
    per_conv = Counter(len(c.turns) for c in written)
    steps = [len(c.steps) for c in written]
    calls = sum(1 for c in written for s in c.steps if s.call is not None)
    answers_after = sum(
        1
        for c in written
        for t in c.turns
        if t.kind in (CALL, FOLLOW_UP) and t.steps[-1].call is None
    )
    return {
        "conversations": len(written),
        "user_turns": dict(sorted(turns.items())),
        "user_turns_per_conversation": {str(k): v for k, v in sorted(per_conv.items())},
        "assistant_steps": sum(steps),
        "steps_per_conversation": {
            "mean": round(statistics.fmean(steps), 2) if steps else 0,
            "max": max(steps, default=0),
        },
        "calls_with_real_results": calls,
        "answers_after_results": answers_after,
    }


def export_conversations(
    cfg: SFTConfig, progress: Progress, *, force: bool = False
) -> ExportResult:
    """The ``--conversations`` export: every ``env:NAME,n=N`` source gives N conversations."""
    lap = Laps()

    bad = [s.label for s in cfg.sources if s.kind != ENV_KIND]
    if bad:
        raise UsageError(f"--conversations takes environment sources only, not {', '.join(bad)}")
    if cfg.augment.active or cfg.pack != "none" or cfg.total is not None:
        raise UsageError("--conversations takes no augmentation, packing or --total")
    if cfg.target != "constrained":
        raise UsageError("--conversations writes the conversation protocol's constrained steps")
    out = cfg.out
    check_export_paths(out, force=force)
    stats = CardStats()
    chat = load_chat_format(cfg.chat_template)
    counter = None
    if cfg.count_tokens:
        counter = TokenCounter(
            Path(cfg.chat_template) if cfg.chat_template.endswith(".gguf") else None
        )
    template = template_for(cfg.template, chat)
    lap("setup")
    guard = build_guard(cfg, stats)
    lap("guard")
    convs: list[Conversation] = []
    for spec in cfg.sources:
        if spec.split != "train":
            raise UsageError(f"source {spec.label}: conversations come from the train split only")
        if spec.n is None:
            raise UsageError(f"source {spec.label}: give n=N (conversations)")
        made = build_conversations(
            EpisodeConfig(spec.target, spec.n, seed=cfg.seed + spec.seed, followups=cfg.followups)
        )
        stats.sources[f"{spec.label} (conversations)"] = len(made)
        convs.extend(made)
        progress("build", len(convs), sum(s.n or 0 for s in cfg.sources))
    stats.loaded = sum(len(c.turns) for c in convs)
    lap("load")
    kept: list[Conversation] = []
    for conv in convs:
        for turn in conv.turns:
            why = guard.reason(turn.instance)
            if why is not None:
                stats.drop(why[0], why[1] + " (a turn of a conversation)", turn.instance)
                break
        else:
            kept.append(conv)
    lap("screen")
    schemas = SchemaCache()
    written: list[Conversation] = []
    trimmed = 0  # user turns left out for the token budget
    with atomic_write(out) as fh:
        for n, conv in enumerate(kept):
            try:
                check_steps(conv, schemas)
                msgs, text, spans = render_conversation(conv, template, chat)
                n_tok = counter.count(text) if counter is not None else 0
                # over the budget: the last user turns go (left truncation would cut the docs)
                while n_tok > cfg.max_tokens and len(conv.turns) > 1 and counter is not None:
                    conv.turns.pop()
                    trimmed += 1
                    msgs, text, spans = render_conversation(conv, template, chat)
                    n_tok = counter.count(text)
                if n_tok > cfg.max_tokens:
                    raise Rejected("over the token budget", f"{n_tok} > {cfg.max_tokens} tokens")
            except Rejected as exc:
                stats.reject(exc.kind, exc.detail, conv.id)
                continue
            fh.write(
                json.dumps(_record(conv, template, chat, msgs, text, spans), ensure_ascii=False)
                + "\n"
            )
            written.append(conv)
            stats.records += 1
            stats.examples.extend(t.instance for t in conv.turns)
            if counter is not None:
                stats.tokens.append(n_tok)
                stats.loss_tokens.append(sum(counter.count(text[s:e]) for s, e in spans))
            progress("write", n + 1, len(kept))
    lap("write")
    stats.conversation = {**_figures(written), "user_turns_left_out_for_the_budget": trimmed}
    summary = cfg.summary()
    summary["target"] = "conversation (every assistant step a target)"
    summary["followups"] = cfg.followups
    summary["tokenizer"] = counter.name if counter is not None else "-"
    card = write_card(out, render_card(stats, summary, out.name), force=force)
    lap("card")
    return lap.result(out, card, stats)
