"""``toollab chat``: try a model with tools interactively.

A person types a message; the model answers in the chosen template's format; its calls are
parsed, run through the tool executor, shown with their results and fed back to the model until it
answers without a call (or ``--max-steps`` is reached).  ``/reset`` clears the conversation,
``/exit`` (or end of input) leaves.  Answers are decoded under the tools' JSON Schema
(``--constrained``, the default) on backends that support it, so even the bundled 135M model
makes well-formed calls.

The tools of a Python ``--tools`` file run confined by default: the file is read in the sandbox
(its module-level code never runs in this process) and each call the model makes runs behind the
sandbox's OS boundary (:class:`~toollab.tools.sandbox.Sandbox`: bubblewrap where
available, a clean environment, no network, resource limits, results capped), in a workspace
directory (``--workspace``, else a temporary one).  ``--trust-tools`` runs them in this process
instead, unconfined, for your own code only.  The first line says which mode is in force.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

from toollab.agents.conversation import (
    FINAL,
    MODEL_ERROR,
    REPEATED,
    STEP_LIMIT,
    UNPARSED,
    RepeatGuard,
    TurnOutcome,
    TurnRunner,
    TurnStep,
    plain,
    turn_policy,
)
from toollab.cli.common import console, handle_errors
from toollab.errors import UsageError
from toollab.models.base import GenerateOptions, Message, Model, run_sync
from toollab.models.policy import CallPolicy
from toollab.models.registry import load_model
from toollab.schema import Tool, ToolCall
from toollab.templates import Template, get_template
from toollab.tools import Executor, Sandbox, ToolPool
from toollab.tools.toolfile import load_confined


def _show_call(call: ToolCall) -> str:
    args = ", ".join(
        f"{k}={json.dumps(plain(v), ensure_ascii=False)}"
        for k, v in call.model_dump()["arguments"].items()
    )
    return f"{call.name}({args})"


class ChatSession:
    """The conversation state and one turn of it; independent of the terminal for testing.

    With ``constrained`` (and a backend that supports it, and tools loaded) every model answer
    is decoded under a JSON Schema (:class:`~toollab.models.policy.CallPolicy`): the first
    answer to a message is exactly one call to a loaded tool with valid arguments when
    ``require_call`` (a small model given the choice nearly always declines), every later one is
    decision-first — one call, or ``{"decision": "no_call", "answer": ...}``.  The history holds
    each step as the conversation protocol writes it (:mod:`toollab.agents.conversation`:
    ``{"decision": "call", "call": ...}`` / ``{"decision": "no_call", "answer": ...}``), exactly
    what the training conversations of ``toollab data sft --conversations`` hold; unconstrained,
    it holds the model's own text.  Each message runs the protocol's turn loop
    (:class:`~toollab.agents.conversation.TurnRunner`), the one ``toollab eval
    --conversations`` measures.
    """

    def __init__(
        self,
        model: Model,
        template: Template,
        tools: list[Tool],
        executor: Executor | None,
        options: GenerateOptions,
        max_steps: int = 4,
        *,
        constrained: bool = False,
        require_call: bool = True,
    ) -> None:
        self.model = model
        self.template = template
        self.tools = tools
        self.executor = executor
        self.options = options
        self.max_steps = max_steps
        #: whether answers are decoded under the call schema (needs tools and backend support)
        self.constrained = bool(constrained and tools and model.supports_constraints)
        self.require_call = require_call
        self.messages: list[Message] = []
        self.runner = TurnRunner(
            model,
            template,
            tools,
            self._execute,
            options,
            max_steps=max_steps,
            constrained=self.constrained,
            require_call=require_call,
        )
        self.reset()

    @property
    def guard(self) -> RepeatGuard:
        return self.runner.guard

    def reset(self) -> None:
        system = self.template.system_prompt(self.tools)
        # a tool-aware chat template documents the tools itself: no empty system turn then
        self.messages = [{"role": "system", "content": system}] if system else []

    def policy(self, first_step: bool) -> CallPolicy:
        """The constraint of one answer (only used when :attr:`constrained`)."""
        return turn_policy(first_step, self.require_call)

    async def _execute(self, calls: list[ToolCall]) -> list[Any]:
        """One observation per call: the tool's output, or ``{"error": ...}``."""
        if self.executor is None:
            return [{"error": "no tools loaded (start with --tools FILE)"} for _ in calls]
        return list(self.executor.execute(calls).observations)

    def turn(self, text: str) -> str | None:
        """Handle one user message; prints the calls, results and answer; returns the answer.

        A model error drops the whole turn — the message and any tool rounds it started — so
        the history never keeps a message without its answer or a call without its result.
        A call identical to one already answered in this turn is not run again
        (:class:`~toollab.agents.conversation.RepeatGuard`): the first repeat is told the result
        is known, the second ends the turn with that result as the answer.
        """
        start = len(self.messages)
        outcome: TurnOutcome = run_sync(self.runner.run_turn(self.messages, text, self._show_step))
        if outcome.ended_by == MODEL_ERROR:
            console.print(f"[bold red]model error:[/] {outcome.error}", highlight=False)
            rounds = sum(1 for m in self.messages[start:] if m.get("role") == "assistant")
            del self.messages[start:]
            dropped = f" and its {rounds} tool round{'s' if rounds != 1 else ''}" if rounds else ""
            console.print(f"[dim]the message{dropped} left the history; send it again[/]")
            return None
        if outcome.ended_by == UNPARSED:
            last = outcome.steps[-1]
            console.print(Panel(Text(last.output.text), title="model output", border_style="dim"))
            console.print(
                f"[yellow]could not read the output:[/] {last.parsed.error}", highlight=False
            )
            return None
        if outcome.ended_by == REPEATED:
            console.print("[yellow]the model repeated a call already answered; its result:[/]")
        if outcome.ended_by == STEP_LIMIT:
            console.print(f"[yellow]stopped after {self.max_steps} rounds of calls[/]")
            return None
        if outcome.ended_by == FINAL:
            done = f"{self.max_steps} round{'s' if self.max_steps != 1 else ''} of calls"
            console.print(f"[yellow]{done}, then an answer with no further call:[/]")
        reply = outcome.answer or ""
        self._show_answer(reply)
        return reply

    def _show_step(self, step: TurnStep) -> None:
        for call, result, known, again in zip(
            step.calls, step.results, step.known, step.repeats, strict=True
        ):
            console.print(f"[bold magenta]call[/] {_show_call(call)}", highlight=False)
            if known:
                note = " [yellow](known: not run again)[/]"
            else:
                note = " [yellow](the same result as before)[/]" if again else ""
            console.print(f"  [cyan]→[/] {escape(result)}{note}", highlight=False)

    def _show_answer(self, reply: str) -> None:
        console.print(
            Panel(Text(reply.strip() or "(empty answer)"), title="answer", border_style="green")
        )


def _load_tools(
    path: Path | None, *, trust: bool = False, workspace: Path | None = None
) -> tuple[list[Tool], Executor | None]:
    """The tools of ``path`` and an executor for them: confined unless ``trust``."""
    if path is None:
        return [], None
    if trust or path.suffix.lower() != ".py":
        pool = ToolPool.load(path)  # schemas only, or the user's own trusted module
        return list(pool.tools), Executor(pool, confine=not trust)
    # the file is read in the sandbox too: its module-level code never runs in this process
    try:
        box = Sandbox(workspace)
    except (ValueError, OSError) as exc:
        raise UsageError(f"--workspace cannot be used: {exc}", path=workspace) from None
    try:
        pool = load_confined(path, box)
    except BaseException:
        box.close()
        raise
    return list(pool.tools), Executor(pool, confine=True, sandbox=box)


def tools_mode(executor: Executor | None) -> str:
    """How the loaded tools run, in one line (rich markup)."""
    if executor is None:
        return "no tools"
    if not any(executor.pool.entry(n).executable for n in executor.pool.names):
        return "tool schemas only: nothing runs"
    if not executor.confine:
        return "[bold yellow]tools run in this process, unconfined (--trust-tools)[/]"
    box = executor.sandbox
    fence = box.confinement
    line = f"tools run confined: {fence.describe()}; workspace {box.workdir}"
    if not fence.complete:
        why = "; ".join(fence.notes) or "the kernel does not allow more"
        line = (
            f"[bold yellow]{line}[/]\n[yellow]confinement is partial here ({why}): "
            "install bubblewrap (apt-get install bubblewrap) for a filesystem boundary[/]"
        )
    return line


def register(app: typer.Typer) -> None:
    @app.command("chat")
    @handle_errors
    def chat(
        model: str = typer.Option(
            "bundled:smollm2-135m",
            "--model",
            "-m",
            help="Model string, e.g. bundled:smollm2-135m, llamacpp:/m.gguf, openai:m@url, hf:dir, fake:script.json.",
        ),
        tools_file: Path | None = typer.Option(
            None,
            "--tools",
            "-t",
            help="Tool file (JSON/YAML tool schemas or a Python module of @tool functions).",
        ),
        template: str = typer.Option(
            "json",
            "--template",
            help="Prompt template (json, hermes, python, react, seal, chat, ...).",
        ),
        max_tokens: int = typer.Option(256, "--max-tokens", help="Tokens per model turn."),
        max_steps: int = typer.Option(
            4,
            "--max-steps",
            help="Rounds of calls per message; then, constrained, one answer with no call allowed.",
        ),
        temperature: float = typer.Option(0.0, "--temperature", help="0 = greedy."),
        seed: int = typer.Option(0, "--seed", help="Sampling seed."),
        native: bool = typer.Option(
            False,
            "--native/--no-native",
            help="Use the server's native tool calls (OpenAI-compatible backends).",
        ),
        constrained: bool = typer.Option(
            True,
            "--constrained/--no-constrained",
            help="Decode each answer under the tools' JSON Schema (one valid call, or a no-call "
            "answer) on backends that support it (llama.cpp, OpenAI-compatible servers, "
            "transformers with outlines).",
        ),
        require_call: bool = typer.Option(
            True,
            "--require-call/--no-require-call",
            help="Constrained: the first answer to each message must call a tool (later ones may "
            "answer); --no-require-call lets the model answer at once.",
        ),
        trust_tools: bool = typer.Option(
            False,
            "--trust-tools",
            help="Run the tools of a Python --tools file in this process, unconfined: they can "
            "read your environment and files and use the network. Only for your own code; by "
            "default each call runs in the sandbox (bubblewrap, no network, limits).",
        ),
        workspace: Path | None = typer.Option(
            None,
            "--workspace",
            help="Directory the confined tools work in (default: a temporary one, removed at "
            "the end). An existing directory is never changed: where the tools run as another "
            "user (toollab as root) they get a fresh subdirectory of it, kept after the run. "
            "Quota: 512 MB and 10,000 files and directories.",
        ),
    ) -> None:
        """Chat with a model that can call tools: see its calls, their results and the answer."""

        tpl = get_template(template)
        tools, executor = _load_tools(tools_file, trust=trust_tools, workspace=workspace)
        with console.status(f"loading {model}"):
            m = load_model(model)
        tpl = tpl.with_model(m)  # `chat`: the model's own chat template
        opts = GenerateOptions(
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            native_tools=native,
            template_tools=tpl.tools_in_chat_template,
        )
        session = ChatSession(
            m,
            tpl,
            tools,
            executor,
            opts,
            max_steps=max_steps,
            constrained=constrained,
            require_call=require_call,
        )
        names = ", ".join(t.name for t in tools) or "none"
        mode = "constrained" if session.constrained else "unconstrained"
        console.print(
            f"[bold]{m.name}[/] · template {template} · tools: {names} · {mode}", highlight=False
        )
        console.print(tools_mode(executor), highlight=False)
        console.print("[dim]/reset clears the conversation, /exit leaves[/]")
        try:
            while True:
                console.print("[bold cyan]you>[/] ", end="")
                line = sys.stdin.readline()
                if not line:
                    console.print()
                    break
                text = line.strip()
                if not text:
                    continue
                if text in ("/exit", "/quit"):
                    break
                if text == "/reset":
                    session.reset()
                    console.print("[dim]conversation cleared[/]")
                    continue
                session.turn(text)
        finally:
            m.close()
            if executor is not None:
                if executor.confine:
                    executor.sandbox.close()  # its processes; a temporary workspace is removed
                executor.close()
