"""α-UMi: a planner, a caller and a summarizer (``alpha-umi``), and the single-LLM backbone of
the same loop (``alpha-umi-backbone``), as X-PLUG/Multi-LLM-Agent runs them.

Every prompt is rendered by :mod:`toollab.data.alpha_umi` (``"system: "`` + upstream's template
+ the role's cue, the history as ``role: value</s>`` with ``observation:`` turns left open) and
completed verbatim (no chat template), stopped at ``</s>``.  One **step**:

1. the planner writes a thought and ``Next: caller.``, ``Next: conclusion.`` or ``Next: give
   up.``; its output is cut after the first marker.  An output with no marker is read as a
   caller step (``Next: caller.`` appended, as upstream) and the step records ``unrouted``;
2. ``give up`` ends the episode (``ended_by="give_up"``);
3. ``conclusion``: the summarizer is given the history and the plan, cue ``" conclusion: "``;
   its text is the final answer.  An empty (or ``.`` / ``,``) answer is recorded as upstream's
   ``none`` with an error on the step (``ended_by="no_answer"``);
4. ``caller``: the caller is given the history, the plan as its thought, cue ``" caller: "``;
   the text after the last ``Action:`` / ``Action Input:`` is the call (input ``{}`` when
   absent).  A name that is not one of the tools (exact, else the one tool whose name ends
   with it) is a hallucination: recorded on the step, answered by an observation that says so,
   never executed.  An input that is not a JSON object is answered the same way.  Otherwise
   the call runs in the instance's environment; its observation, cut at 1,024 characters, ends
   the step.

**Live** (an instance of an environment, ``toollab bench``): from ``user: <query>``, at most
``max_steps`` (4, upstream's DFS path) planner steps; ``ended_by="max_steps"`` after the last
without a conclusion.  DFS backtracking after a give-up is not done: a give-up ends the
episode.  **Static** (an instance of the ``alpha-umi`` format, which carries the gold history
in ``metadata["alpha_umi"]``): exactly one step from the gold history, nothing executed, and
``raw`` in the layout of upstream's evaluator (``assistant: <plan></s>caller: <call>``), which
the ``alpha_umi`` scorer reads.  Decoding follows the run's options (greedy by default;
upstream's static pipeline samples by accident).

**Models.**  Each role uses the run's model unless the agent is given its own: a model string or
a :class:`~toollab.models.base.Model` per role (``AlphaUmiAgent(planner=..., caller=...,
summarizer=...)``; ``toollab eval/bench --role planner=SPEC``); a role string that starts with
``+`` (``+lora=/p.gguf``) is appended to the run's model string (one base, one adapter per
role).  ``metadata["roles"]`` names the model each role used.  The backbone renders its history with each planner turn merged with its call or
conclusion (``thought\\nAction: ...\\nAction Input: ...``) and writes the same.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from toollab.agents.base import (
    AgentOptions,
    execute_call,
    register_agent,
    timings_of,
    usage_of,
)
from toollab.data.alpha_umi import (
    EOS,
    HALLUCINATED,
    MARKERS,
    NO_ANSWER,
    SYSTEM,
    Route,
    Turn,
    UmiTool,
    backbone_history,
    backbone_input,
    call_of,
    call_text,
    caller_input,
    cut_plan,
    observation_text,
    planner_input,
    read_call,
    summarizer_input,
    umi_tool,
)
from toollab.envs.base import CallExecutor, HasState
from toollab.envs.execute import render_action
from toollab.errors import UsageError, did_you_mean
from toollab.models.base import ChatRequest, GenerateOptions, Model, ModelOutput
from toollab.models.registry import check_model_string, load_model
from toollab.parsing import ParseResult
from toollab.schema import Instance, Tool, ToolCall
from toollab.schema.record import ExecutionRecord, Prediction, Step
from toollab.templates.base import Template

#: planner steps on one path (upstream's DFS: 12 tree nodes, 3 per step)
MAX_STEPS = 4
ROLE_NAMES = ("planner", "caller", "summarizer")
RoleModel = Model | str | None


def resolve_tool(name: str, tools: list[Tool]) -> Tool | None:
    """The tool a caller names: the exact name, else the one tool whose name ends with it."""
    for t in tools:
        if t.name == name:
            return t
    if not name:
        return None
    ends = [t for t in tools if t.name.endswith(name)]
    return ends[0] if len(ends) == 1 else None


@dataclass
class _Episode:
    """What one instance's run accumulates."""

    instance: Instance
    docs: list[UmiTool]
    history: list[Turn]
    env: CallExecutor | None
    outputs: list[ModelOutput] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    made: list[ToolCall] = field(default_factory=list)
    observations: list[Any] = field(default_factory=list)
    answer: str | None = None
    ended_by: str = "max_steps"
    error: str | None = None
    #: the step in the layout of upstream's evaluator (static mode)
    raw: str = ""
    #: the first prompt sent (recorded as the prediction's prompt)
    first_prompt: str | None = None
    #: the model each role used (its name)
    role_models: dict[str, str] = field(default_factory=dict)


def _gold_history(instance: Instance) -> tuple[list[UmiTool], list[Turn]] | None:
    """The tool documents and gold history an ``alpha-umi`` instance carries (static mode)."""
    meta = instance.metadata.get("alpha_umi")
    if not isinstance(meta, dict) or not isinstance(meta.get("history"), list):
        return None
    try:
        docs = [UmiTool.model_validate(d) for d in meta.get("tools") or []]
        history = [Turn.model_validate(t) for t in meta["history"]]
    except ValidationError as exc:
        raise UsageError(
            f"instance {instance.id!r}: metadata['alpha_umi'] is not α-UMi data: "
            f"{exc.errors()[0].get('msg')}"
        ) from None
    return docs, history


class _Loop(ABC):
    """The loop shared by the three-role agent and the backbone."""

    name = "alpha-umi"
    stepwise = True
    reads_answer_key: str | None = None
    default_max_tokens = 512

    def __init__(self, max_steps: int = MAX_STEPS) -> None:
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise UsageError(f"max_steps must be a positive integer, got {max_steps!r}")
        self.max_steps = max_steps

    # -- overridden by each agent ----------------------------------------------------------
    @abstractmethod
    async def step(self, ep: _Episode, model: Model, gen: GenerateOptions, static: bool) -> bool:
        """One planner step; ``True`` when the episode ended."""

    # -- shared -----------------------------------------------------------------------------
    async def ask(
        self, ep: _Episode, model: Model, role: str, prompt: str, gen: GenerateOptions
    ) -> ModelOutput:
        if ep.first_prompt is None:
            ep.first_prompt = SYSTEM + prompt
        ep.role_models.setdefault(role, model.name)
        out = await model.safe_request(
            ChatRequest(prompt=SYSTEM + prompt, options=gen, tag=ep.instance.id)
        )
        ep.outputs.append(out)
        if out.error:
            ep.steps.append(Step(role=role, text=out.text, error=out.error))
            ep.error, ep.ended_by = out.error, "error"
        return out

    async def call(self, ep: _Episode, text: str, static: bool) -> Step:
        """Read a caller's text, check it, and (live) execute it; the history gets the caller
        turn and its observation."""
        name, action_input = read_call(text)
        step = Step(role="caller", text=text)
        tool = resolve_tool(name, list(ep.instance.tools))
        call = call_of(tool.name if tool else name, action_input)
        if tool is None:
            step.error = f"the caller named a tool that does not exist: {name!r}"
            step.parsed = ParseResult.fail(step.error, details={"hallucinated": True})
            observation: Any = {"error": f"No such function name: {HALLUCINATED}"}
        elif isinstance(call, str):
            step.error = call
            step.parsed = ParseResult.fail(call)
            observation = {"error": call}
        else:
            step.parsed = ParseResult.ok([call])
            if static:
                observation = None
            else:
                ep.made.append(call)
                if ep.env is None:
                    observation = {"error": "no environment is available to execute this tool"}
                else:
                    observation, _err = await execute_call(ep.env, call)
                ep.observations.append(observation)
        shown = call_text(tool.name if tool else HALLUCINATED, action_input)
        ep.history.append(Turn.of("caller", shown))
        if observation is not None and not static:
            step.observation = observation
            ep.history.append(Turn.of("observation", observation_text(observation)))
        elif observation is not None:
            step.observation = observation
        return step

    async def run(
        self, instance: Instance, model: Model, template: Template, options: AgentOptions
    ) -> Prediction:
        t0 = time.perf_counter()
        gold = _gold_history(instance)
        static = gold is not None
        if gold is not None:
            docs, history = gold
            if not docs:
                docs = [umi_tool(t) for t in instance.tools]
            env = None
        else:
            docs = [umi_tool(t) for t in instance.tools]
            history = [Turn.of("user", instance.query)]
            env = options.environment(instance) if options.environment else None
        ep = _Episode(instance, docs, list(history), env)
        gen = options.generate.model_copy(deep=True)
        gen.stop = list(dict.fromkeys([*gen.stop, EOS]))
        gen.template_tools = False
        gen.json_schema, gen.grammar = None, None
        for _ in range(1 if static else self.max_steps):
            if await self.step(ep, model, gen, static):
                break
        else:
            if static:
                ep.ended_by = "step"
        return self._prediction(ep, static, t0)

    def _prediction(self, ep: _Episode, static: bool, t0: float) -> Prediction:
        if ep.error is not None and not ep.made:
            parsed = ParseResult.fail(f"no model output: {ep.error}")
        elif static:
            calls = [c for s in ep.steps if s.parsed is not None for c in s.parsed.calls]
            parsed = ParseResult.ok(calls) if calls else ParseResult.no_call(ep.answer)
        elif ep.made:
            parsed = ParseResult.ok(list(ep.made), text=ep.answer)
        elif ep.answer is not None or ep.ended_by == "give_up":
            parsed = ParseResult.no_call(ep.answer)
        else:
            reasons = [s.error for s in ep.steps if s.error]
            parsed = ParseResult.fail(
                reasons[-1] if reasons else f"no call and no answer in {len(ep.steps)} steps"
            )
        execution = None
        if not static:
            execution = ExecutionRecord(
                crashed=ep.error is not None,
                actions=[render_action(ep.env, c) for c in ep.made],
                observations=ep.observations,
                turns=sum(1 for s in ep.steps if s.role in ("planner", "backbone")),
                ended_by=ep.ended_by,
                finished=ep.ended_by == "conclusion",
                answer=ep.answer,
            )
            if isinstance(ep.env, HasState):
                execution.state = ep.env.state()
        timings = timings_of(ep.outputs)
        timings["total_s"] = time.perf_counter() - t0
        raw = ep.raw if static else EOS.join(f"{s.role}: {s.text}" for s in ep.steps)
        return Prediction(
            id=ep.instance.id,
            prompt=ep.first_prompt,
            raw=raw,
            parsed=parsed,
            steps=ep.steps,
            execution=execution,
            error=ep.error,
            usage=usage_of(ep.outputs),
            timings=timings,
            metadata={
                "ended_by": ep.ended_by,
                "mode": "static" if static else "live",
                "roles": dict(ep.role_models),
                "unrouted": sum(
                    1 for s in ep.steps if s.parsed and s.parsed.details.get("unrouted")
                ),
                "hallucinated": sum(
                    1 for s in ep.steps if s.parsed and s.parsed.details.get("hallucinated")
                ),
            },
        )


def _answer_text(text: str) -> str | None:
    """A summarizer's answer, ``None`` when it says nothing (upstream: ``none``)."""
    answer = text.strip()
    return None if answer in ("", ".", ",") else answer


def parse_roles(items: Sequence[str]) -> dict[str, str]:
    """``["planner=SPEC", "caller=+lora=/c.gguf"]`` → ``{"planner": "SPEC", ...}``; a
    :class:`UsageError` for an unknown role, a role given twice or an empty model string."""
    roles: dict[str, str] = {}
    for item in items:
        role, sep, spec = item.partition("=")
        role, spec = role.strip(), spec.strip()
        if not sep or not spec:
            raise UsageError(
                f"--role takes ROLE=MODEL (e.g. planner=llamacpp:/p.gguf), got {item!r}"
            )
        if role not in ROLE_NAMES:
            raise UsageError(
                f"unknown role {role!r}{did_you_mean(role, list(ROLE_NAMES))}; "
                f"roles: {', '.join(ROLE_NAMES)}"
            )
        if role in roles:
            raise UsageError(f"--role {role} is given twice")
        if not spec.startswith("+"):
            check_model_string(spec)
        roles[role] = spec
    return roles


@register_agent("alpha-umi")
class AlphaUmiAgent(_Loop):
    """Planner → caller / summarizer / give-up (see the module docs)."""

    name = "alpha-umi"

    def __init__(
        self,
        planner: RoleModel = None,
        caller: RoleModel = None,
        summarizer: RoleModel = None,
        *,
        max_steps: int = MAX_STEPS,
    ) -> None:
        super().__init__(max_steps)
        self.roles: dict[str, RoleModel] = {
            "planner": planner,
            "caller": caller,
            "summarizer": summarizer,
        }
        self._loaded: dict[str, Model] = {}

    def model_for(self, role: str, run_model: Model) -> Model:
        """The model a role uses: its own (loaded once), else the run's."""
        spec = self.roles.get(role)
        if spec is None:
            return run_model
        if isinstance(spec, Model):
            return spec
        if spec.startswith("+"):
            spec = run_model.name + spec
        model = self._loaded.get(spec)
        if model is None:
            model = load_model(spec)
            self._loaded[spec] = model
        return model

    def close(self) -> None:
        """Release the role models this agent loaded itself."""
        for model in self._loaded.values():
            model.close()
        self._loaded.clear()

    async def step(self, ep: _Episode, model: Model, gen: GenerateOptions, static: bool) -> bool:
        tools = ep.docs
        out = await self.ask(
            ep, self.model_for("planner", model), "planner", planner_input(tools, ep.history), gen
        )
        if out.error:
            return True
        plan, route = cut_plan(out.text)
        unrouted = route is None
        if route is None:
            route = "caller"
            plan = f"{plan} {MARKERS['caller']}".strip()
        pstep = Step(
            role="planner",
            text=plan,
            parsed=ParseResult.no_call(plan, details={"route": route, "unrouted": unrouted}),
            error="the planner named no route: read as 'Next: caller.'" if unrouted else None,
        )
        ep.steps.append(pstep)
        ep.raw = f"assistant: {plan}"
        if route == "give up":
            ep.ended_by = "give_up"
            return True
        ep.history.append(Turn.of("assistant", plan))
        if route == "conclusion":
            return await self._conclude(ep, model, gen, static)
        sub = await self.ask(
            ep,
            self.model_for("caller", model),
            "caller",
            caller_input(tools, ep.history, plan),
            gen,
        )
        if sub.error:
            return True
        cstep = await self.call(ep, sub.text.strip(), static)
        ep.steps.append(cstep)
        ep.raw += f"{EOS}caller: {cstep.text}"
        return False

    async def _conclude(
        self, ep: _Episode, model: Model, gen: GenerateOptions, static: bool
    ) -> bool:
        out = await self.ask(
            ep,
            self.model_for("summarizer", model),
            "summarizer",
            summarizer_input(ep.history),
            gen,
        )
        if out.error:
            return True
        answer = _answer_text(out.text)
        step = Step(role="conclusion", text=answer or NO_ANSWER)
        if answer is None:
            step.error = "the summarizer wrote no answer"
            ep.ended_by = "no_answer"
        else:
            ep.ended_by = "conclusion"
        ep.answer = answer
        ep.steps.append(step)
        ep.raw += f"{EOS}conclusion: {step.text}"
        return True


def read_backbone(text: str) -> tuple[str, Route | None, str]:
    """A backbone output: ``(thought, route, rest)``, ``rest`` being the call text or the
    answer; the route is ``None`` when it holds neither an action nor a conclusion."""
    if "conclusion:" in text and (
        "Action:" not in text or text.find("conclusion:") < text.find("Action:")
    ):
        thought, _, answer = text.partition("conclusion:")
        answer = answer.strip()
        if answer.lower().rstrip(".") == "give up":
            return thought.strip(), "give up", ""
        return thought.strip(), "conclusion", answer
    if "Action:" in text:
        pos = text.find("Action:")
        return text[:pos].strip(), "caller", text[pos:].strip()
    return text.strip(), None, ""


@register_agent("alpha-umi-backbone")
class AlphaUmiBackbone(_Loop):
    """The single LLM of the same loop: it writes the thought and the call or the conclusion
    in one turn (upstream's ``toolbench_backbone`` prompt)."""

    name = "alpha-umi-backbone"

    async def step(self, ep: _Episode, model: Model, gen: GenerateOptions, static: bool) -> bool:
        history = backbone_history(ep.history)
        out = await self.ask(ep, model, "backbone", backbone_input(ep.docs, history), gen)
        if out.error:
            return True
        thought, route, rest = read_backbone(out.text)
        step = Step(
            role="backbone",
            text=out.text.strip(),
            parsed=ParseResult.no_call(
                thought, details={"route": route or "caller", "unrouted": route is None}
            ),
        )
        ep.steps.append(step)
        if route is None:  # nothing to route: the episode cannot go on
            step.error = "no Action and no conclusion in the output"
            ep.raw = f"assistant: {thought} {MARKERS['caller']}{EOS}caller: "
            ep.ended_by = "no_action"
            return True
        plan = f"{thought} {MARKERS[route]}".strip()
        ep.raw = f"assistant: {plan}"
        if route == "give up":
            ep.ended_by = "give_up"
            return True
        ep.history.append(Turn.of("assistant", plan))
        if route == "conclusion":
            answer = _answer_text(rest)
            ep.answer = answer
            ep.ended_by = "conclusion" if answer is not None else "no_answer"
            if answer is None:
                step.error = "the conclusion is empty"
            ep.raw += f"{EOS}conclusion: {answer or NO_ANSWER}"
            ep.history.append(Turn.of("conclusion", answer or NO_ANSWER))
            return True
        cstep = await self.call(ep, rest, static)
        ep.steps.append(cstep)
        ep.raw += f"{EOS}caller: {cstep.text}"
        return False
