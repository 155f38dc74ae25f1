"""The training progress display: a bar with loss and tokens/s on a terminal, log lines elsewhere."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from transformers import TrainerCallback


class ProgressCallback(TrainerCallback):  # type: ignore[misc]
    """Steps, loss and training tokens/s (non-padding tokens through the model per second).

    On a terminal it is a rich progress bar; otherwise one line per ``logging_steps`` (and per
    evaluation).  Only the main process of a distributed run prints."""

    def __init__(self, console: Console | None = None, quiet: bool = False) -> None:
        self.console = console or Console(stderr=True)
        self.quiet = quiet
        self.bar: Progress | None = None
        self.task: Any = None
        self.loss: float | None = None
        self.eval_loss: float | None = None
        self.tokens_per_s = 0.0
        self._t0 = 0.0
        self._tokens0 = 0
        self._last_line = 0.0

    def _tokens(self, state: Any) -> int:
        return int(getattr(state, "num_input_tokens_seen", 0) or 0)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self._t0 = time.perf_counter()
        self._tokens0 = self._tokens(state)
        if self.quiet or not state.is_world_process_zero:
            return
        if self.console.is_terminal:
            self.bar = Progress(
                TextColumn("[bold]training"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[info]}"),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=self.console,
            )
            self.bar.start()
            self.task = self.bar.add_task(
                "train", total=state.max_steps, completed=state.global_step, info=""
            )
        elif state.global_step:
            self.console.print(f"resumed at step {state.global_step}/{state.max_steps}")

    def _info(self) -> str:
        parts = []
        if self.loss is not None:
            parts.append(f"loss {self.loss:.4f}")
        if self.eval_loss is not None:
            parts.append(f"val {self.eval_loss:.4f}")
        parts.append(f"{self.tokens_per_s:,.0f} tok/s")
        return "  ".join(parts)

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        elapsed = time.perf_counter() - self._t0
        if elapsed > 0:
            self.tokens_per_s = (self._tokens(state) - self._tokens0) / elapsed
        if self.bar is not None:
            self.bar.update(self.task, completed=state.global_step, info=self._info())

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        logs = logs or {}
        if "loss" in logs:
            self.loss = float(logs["loss"])
        if "eval_loss" in logs:
            self.eval_loss = float(logs["eval_loss"])
        if self.quiet or not state.is_world_process_zero:
            return
        if self.bar is not None:
            self.bar.update(self.task, info=self._info())
        elif "loss" in logs or "eval_loss" in logs:
            self.console.print(f"step {state.global_step}/{state.max_steps}  {self._info()}")

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
