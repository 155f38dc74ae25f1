"""The dataset card (``README.md`` beside an export) and the figures it reports.

Every figure is computed here, from the examples actually written: sources and licences,
decision branches (Call / NoCall / NoSearch), calls per example, distinct tool combinations,
SambaNova's API complexity score for environment data, token lengths with the bundled tokenizer,
what the leakage guard dropped, what the checks rejected, the augmentations applied.

The card carries toollab's mark (:data:`toollab.data.atomic.MARK`) on its second line: an
export replaces a card it wrote, and refuses (before any work) to replace a ``README.md`` it did
not write unless forced (:func:`check_export_paths`).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toollab.data.atomic import MARK_COMMENT, check_replaceable, check_target, write_text_atomic
from toollab.envs.generate import generate, loo_complexity, split_complexity
from toollab.errors import UsageError
from toollab.schema import Instance
from toollab.sft.sources import licence_of

#: the card's file name, beside the exported file
CARD = "README.md"


def card_path(out: Path) -> Path:
    return out.parent / CARD


def check_export_paths(out: Path, *, force: bool = False) -> None:
    """Refuse, before any work, an export whose ``out`` cannot be replaced by a file (a folder, a
    device node, a FIFO, a link out of its folder) or whose card would replace a ``README.md``
    toollab did not write (unless ``force``)."""
    if out.is_dir():
        raise UsageError(f"--out {out} is a folder; give the .jsonl file to write")
    check_target(out)
    check_replaceable(card_path(out), force=force)


def write_card(out: Path, text: str, *, force: bool = False) -> Path:
    """The card of the export ``out``, written atomically beside it; returns its path."""
    card = card_path(out)
    write_text_atomic(card, text, keep_foreign=not force)
    return card


@dataclass
class CardStats:
    """Counts gathered while exporting."""

    sources: dict[str, int] = field(default_factory=dict)
    loaded: int = 0
    examples: list[Instance] = field(default_factory=list)
    records: int = 0
    tokens: list[int] = field(default_factory=list)
    loss_tokens: list[int] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    rejected_examples: dict[str, list[str]] = field(default_factory=dict)
    dropped: Counter[tuple[str, str]] = field(default_factory=Counter)
    dropped_examples: dict[str, list[str]] = field(default_factory=dict)
    guards: list[str] = field(default_factory=list)
    unguarded: list[str] = field(default_factory=list)
    augment_applied: Counter[str] = field(default_factory=Counter)
    augment_skipped: Counter[str] = field(default_factory=Counter)
    augmentations: list[str] = field(default_factory=list)
    complexity: dict[str, dict[str, float | None]] = field(default_factory=dict)
    over_budget: int = 0
    #: figures of a conversation export (``toollab.sft.conversations``); empty otherwise
    conversation: dict[str, Any] = field(default_factory=dict)

    def reject(self, kind: str, detail: str, inst_id: str) -> None:
        self.rejected[kind] += 1
        seen = self.rejected_examples.setdefault(kind, [])
        if len(seen) < 3:
            seen.append(f"{inst_id}: {detail}"[:300])

    def drop(self, guard: str, why: str, inst: Instance) -> None:
        kind = why.split(" (", 1)[0]
        self.dropped[(guard, kind)] += 1
        seen = self.dropped_examples.setdefault(f"{guard}: {kind}", [])
        if len(seen) < 3:
            seen.append(f"{inst.id}: {inst.query[:120]!r} — {why}")

    # -- figures ----------------------------------------------------------------------------
    def figures(self) -> dict[str, Any]:
        ex = self.examples
        decisions = Counter(i.label().value for i in ex)
        calls = Counter(len(i.gold) for i in ex)
        combos = Counter(tuple(sorted(c.name for c in i.gold)) for i in ex if i.gold)
        by_source = Counter(i.source or "-" for i in ex)
        return {
            "records": self.records,
            "examples": len(ex),
            "loaded": self.loaded,
            "by_source": dict(sorted(by_source.items())),
            "by_decision": dict(sorted(decisions.items())),
            "calls_per_example": {str(k): v for k, v in sorted(calls.items())},
            "distinct_tool_combinations": len(combos),
            "distinct_tools_called": len({n for c in combos for n in c}),
            "tokens": _summary(self.tokens),
            "loss_tokens": _summary(self.loss_tokens),
            "over_token_budget": self.over_budget,
            "rejected": dict(self.rejected),
            "dropped": {f"{g}: {k}": n for (g, k), n in sorted(self.dropped.items())},
            "augmentations": self.augmentations,
            "augment_applied": dict(self.augment_applied),
            "augment_skipped": dict(self.augment_skipped),
            "api_complexity": self.complexity,
            "conversation": self.conversation,
        }


def _summary(values: Sequence[int]) -> dict[str, float]:
    if not values:
        return {}
    s = sorted(values)
    return {
        "min": s[0],
        "mean": round(statistics.fmean(s), 1),
        "p50": s[len(s) // 2],
        "p95": s[min(len(s) - 1, int(0.95 * len(s)))],
        "max": s[-1],
        "total": sum(s),
    }


def env_complexity(
    examples: Sequence[Instance], seed: int = 0
) -> dict[str, dict[str, float | None]]:
    """Per environment: SambaNova's API complexity score of the environment's test split
    against the exported examples (how far evaluation is from training), and of the exported
    examples against themselves leaving each out."""

    by_env: dict[str, list[Instance]] = defaultdict(list)
    for inst in examples:
        src = inst.source or ""
        if src.startswith("env:") and not inst.metadata.get("name_map"):
            by_env[src.split(":", 1)[1]].append(inst)
    out: dict[str, dict[str, float | None]] = {}
    for env, insts in sorted(by_env.items()):
        tests = generate(env, "test", 100, seed)
        out[env] = {
            "test_vs_train": split_complexity(env, tests, insts),
            "train_leave_one_out": loo_complexity(env, insts),
        }
    return out


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _conversation_section(c: dict[str, Any]) -> list[str]:
    steps = c["steps_per_conversation"]
    return [
        "## Conversations",
        "",
        "Each record is one conversation in one environment world: the first user turn's gold "
        "program executed step by step with its real results, then the answer built from the "
        "observed values; follow-up user turns (a call drawn in the world the earlier turns "
        "left, never an identical call with an identical result; a request no tool fits, "
        "answered in text; a question answered without a tool). Every assistant step is a loss "
        "span. The branch and call counts above are per user turn.",
        "",
        _table(
            ["figure", "value"],
            [
                ("conversations", c["conversations"]),
                ("assistant steps (loss spans)", c["assistant_steps"]),
                ("steps per conversation (mean / max)", f"{steps['mean']} / {steps['max']}"),
                ("calls followed by their real result", c["calls_with_real_results"]),
                ("answers after the results", c["answers_after_results"]),
                (
                    "last user turns left out (over the token budget)",
                    c.get("user_turns_left_out_for_the_budget", 0),
                ),
            ],
        ),
        "",
        _table(["user turn kind", "turns"], list(c["user_turns"].items())),
        "",
        _table(
            ["user turns per conversation", "conversations"],
            list(c["user_turns_per_conversation"].items()),
        ),
        "",
    ]


def render_card(stats: CardStats, config: dict[str, Any], file_name: str) -> str:
    f = stats.figures()
    total = max(1, f["examples"])
    parts = [
        f"# {file_name}",
        MARK_COMMENT,
        "",
        "Supervised fine-tuning data for tool use, exported by `toollab data sft`. One JSON object "
        "per line: `id`, `source`, `messages` (the assistant targets included), `tools` (OpenAI "
        "tool dicts), `template`, `text` (the full training sequence, special tokens as text), "
        "`spans` (character offsets of every loss target: each assistant output with its "
        "end-of-turn marker), `meta`. Load with `datasets.load_dataset('json', data_files=...)`.",
        "",
        "## Export settings",
        "",
        _table(["setting", "value"], [(k, f"`{v}`") for k, v in config.items()]),
        "",
        "## Sources and licences",
        "",
        _table(
            ["source", "instances loaded", "licence"],
            [(k, n, licence_of(k)) for k, n in stats.sources.items()],
        ),
        "",
        f"{f['records']} records hold {f['examples']} examples (a packed record holds several).",
        "",
        "## Decision branches",
        "",
        _table(
            ["branch", "examples", "share"],
            [(k, n, f"{100 * n / total:.1f}%") for k, n in f["by_decision"].items()],
        ),
        "",
        "## Calls per example",
        "",
        _table(["calls", "examples"], list(f["calls_per_example"].items())),
        "",
        f"Distinct tool combinations called: {f['distinct_tool_combinations']}; distinct tools "
        f"called: {f['distinct_tools_called']}.",
        "",
        "## Examples per source",
        "",
        _table(["source", "examples"], list(f["by_source"].items())),
        "",
    ]
    if f["conversation"]:
        parts += _conversation_section(f["conversation"])
    if f["api_complexity"]:
        parts += [
            "## API complexity (SambaNova ToolBench)",
            "",
            "S(T, X, D) of each environment's test split (100 instances, seed "
            f"{config.get('env_test_seed', 0)}) against the exported examples, and of the "
            "exported examples against themselves leaving each out (higher: further from the "
            "training data).",
            "",
            _table(
                ["environment", "test vs export", "export leave-one-out"],
                [
                    (e, v["test_vs_train"], v["train_leave_one_out"])
                    for e, v in f["api_complexity"].items()
                ],
            ),
            "",
        ]
    tok = f["tokens"]
    if tok:
        loss = f["loss_tokens"]
        parts += [
            "## Token lengths",
            "",
            f"Tokenizer: {config.get('tokenizer', '-')} (special tokens read as written, no BOS).",
            "",
            _table(
                ["", "min", "mean", "p50", "p95", "max", "total"],
                [
                    ["sequence", *(tok[k] for k in ("min", "mean", "p50", "p95", "max", "total"))],
                    ["loss", *(loss[k] for k in ("min", "mean", "p50", "p95", "max", "total"))],
                ],
            ),
            "",
        ]
    parts += ["## Leakage guard", ""]
    parts.append(
        "Guarded against: "
        + (", ".join(stats.guards) or "nothing")
        + "."
        + (f" Skipped on purpose: {', '.join(stats.unguarded)}." if stats.unguarded else "")
    )
    parts.append("")
    if f["dropped"]:
        parts += [_table(["evaluation set: reason", "dropped"], list(f["dropped"].items())), ""]
        for key, seen in stats.dropped_examples.items():
            parts.append(f"- {key}: " + "; ".join(seen))
        parts.append("")
    else:
        parts += ["Nothing was dropped.", ""]
    parts += ["## Checks", ""]
    parts.append(
        "Every example was checked before it was written: a non-empty loss span covering exactly "
        "the assistant output, and reading the target back (the constrained decoding reader, or "
        "the template's parser) gives the gold calls or the gold no-call."
    )
    parts.append("")
    if f["rejected"]:
        parts += [_table(["rejected because", "examples"], list(f["rejected"].items())), ""]
        for key, seen in stats.rejected_examples.items():
            parts.append(f"- {key}: " + "; ".join(seen))
        parts.append("")
    else:
        parts += ["No example was rejected.", ""]
    parts += ["## Augmentations", ""]
    if f["augmentations"]:
        parts.append("Active: " + ", ".join(f["augmentations"]) + ".")
        parts.append("")
        rows = [(k, n) for k, n in sorted(f["augment_applied"].items())]
        rows += [(f"skipped: {k}", n) for k, n in sorted(f["augment_skipped"].items())]
        if rows:
            parts += [_table(["augmentation", "count"], rows), ""]
    else:
        parts += ["None.", ""]
    return "\n".join(parts)
