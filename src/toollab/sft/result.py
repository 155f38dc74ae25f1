"""What an export returns, and the setup the instance and conversation exports share: the
leakage guard and the prompt template."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toollab.sft.card import CardStats
from toollab.sft.chat import ChatFormat
from toollab.sft.guard import EvalSet, LeakageGuard, load_eval_set
from toollab.templates.base import Template, get_template
from toollab.templates.chat_template import ChatTemplate

if TYPE_CHECKING:
    from toollab.sft.export import SFTConfig


@dataclass
class ExportResult:
    path: Path
    card: Path
    stats: CardStats
    seconds: float
    #: seconds per stage: setup (chat format, tokenizer), guard (loading the evaluation sets),
    #: load (sources), screen (guard checks), augment, check (targets), write (render, spans,
    #: tokens, file), card
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def figures(self) -> dict[str, Any]:
        return self.stats.figures()


class Laps:
    """Seconds per stage of an export (call it with a stage's name when the stage ends)."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.timings: dict[str, float] = {}

    def __call__(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings[stage] = round(now - self.last, 3)
        self.last = now

    def result(self, path: Path, card: Path, stats: CardStats) -> ExportResult:
        """The export's result, with its stages' and its whole time."""
        return ExportResult(path, card, stats, time.perf_counter() - self.start, self.timings)


def build_guard(cfg: SFTConfig, stats: CardStats) -> LeakageGuard:
    sets: list[EvalSet] = [load_eval_set(name, path) for name, path in cfg.guards]
    stats.guards = [
        f"{s.name} ({len(s.queries)} queries"
        + (f", {len(s.held_out_tools)} held-out tools)" if s.held_out_tools else ")")
        + f" from {s.path}"
        for s in sets
    ]
    stats.guards.append(
        "environment test splits (test API combinations of seed(s) "
        f"{', '.join(map(str, cfg.env_seeds))}; query texts reserved for evaluation)"
    )
    stats.unguarded = list(cfg.unguarded)
    return LeakageGuard(
        sets, near=cfg.near, near_same_tools=cfg.near_same_tools, env_seeds=cfg.env_seeds
    )


def template_for(name: str, chat: ChatFormat) -> Template:
    if name == "chat":
        return ChatTemplate(chat_template=chat.source, special_tokens=chat.special_tokens)
    return get_template(name)
