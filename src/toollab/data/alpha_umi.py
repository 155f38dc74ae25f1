"""α-UMi's data format and its role rendering (X-PLUG/Multi-LLM-Agent, GLPFT).

One module renders everything the three roles see and write, from one *trace*: the agent
(:mod:`toollab.agents.alpha_umi`), the step-level loader (:mod:`toollab.data.adapters.alpha_umi`)
and the exporter (:mod:`toollab.sft.alpha_umi`) all call it, and so will the role data of
GLPFT training (:func:`role_samples` gives each role's ``input`` and ``target``).

**The format.**  A JSON list of traces ``{"tools": [{"Name", "function", "input": {arg:
"<type>, <description>"}}], "instruction", "conversations": [{"from", "value"}]}`` whose
``from`` is ``user``, ``assistant`` (the planner), ``caller``, ``observation`` or
``conclusion`` (the summarizer).  A caller turn is ``Action: <name>\\nAction Input: <JSON>``.
The route of an assistant turn is implied by the next turn: a caller turn (``Next: caller.``),
a conclusion turn (``Next: conclusion.``), or none, which must be a ``Next: give up.`` turn.

**Rendering** (upstream's, ``GLPFT/utils/prompt_lib.py`` and ``process_data/toolbench``):
turns are concatenated without newlines as ``role: value</s>``, except ``observation: value``,
which has no ``</s>``; a prompt is ``"system: "`` + the role's template + its cue (``" assistant:
"``, ``" caller: "``, ``" conclusion: "``); ``{doc}`` is ``json.dumps(tool) + "\\n"`` per tool.
The template wording is upstream's, typos included ("assess", "Base on").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toollab.errors import InputError
from toollab.schema import Tool, ToolCall

Role = Literal["user", "assistant", "caller", "observation", "conclusion"]
ROLES: tuple[Role, ...] = ("user", "assistant", "caller", "observation", "conclusion")
#: the route a planner turn names
Route = Literal["caller", "conclusion", "give up"]
#: upstream's end-of-turn text (the LLaMA tokenizer reads it as EOS)
EOS = "</s>"
SYSTEM = "system: "
PLANNER_CUE = " assistant: "
CALLER_CUE = " caller: "
SUMMARIZER_CUE = " conclusion: "
#: the markers, in the order a plan is searched for them (the first one written wins)
MARKERS: dict[Route, str] = {
    "give up": "Next: give up.",
    "conclusion": "Next: conclusion.",
    "caller": "Next: caller.",
}
#: observations are cut to this many characters (+ "...") in the live loop
OBSERVATION_LIMIT = 1024
#: what upstream renames a call to a tool that does not exist
HALLUCINATED = "invalid_hallucination_function_name"
#: a summarizer output that says nothing is read as this answer (upstream)
NO_ANSWER = "none"

_HEADER = "You have assess to the following apis:\n{doc}\nThe conversation history is:\n{history}\n"
_CALL_FORMAT = (
    "Action: the name of api that should be called in this step, should be exactly in "
    "[{tool_names}],\nAction Input: the api call request."
)
PLANNER_TEMPLATE = (
    _HEADER + "You are the assistant to plan what to do next and whether is caller's or "
    "conclusion's turn to answer.\nAnswer with a following format:\nThe thought of the next "
    "step, followed by Next: caller or conclusion or give up."
)
CALLER_TEMPLATE = (
    _HEADER + "The thought of this step is:\n{thought}\nBase on the thought make an api call "
    "in the following format:\n" + _CALL_FORMAT
)
SUMMARIZER_TEMPLATE = "Make a conclusion based on the conversation history:\n{history}"
BACKBONE_TEMPLATE = (
    _HEADER + "You should answer the action of next step in the following format:\nThe thought "
    "to solve the question,\n" + _CALL_FORMAT + "\nOnce you think the question is finished, "
    "output conclusion: the final answer of the question or give up if you think you cannot "
    "answer this question.\n"
)


# -- the records ------------------------------------------------------------------------------
class UmiTool(BaseModel):
    """One tool document as α-UMi writes it."""

    model_config = ConfigDict(extra="ignore")

    Name: str = Field(min_length=1)
    function: str = ""
    input: dict[str, str] = Field(default_factory=dict)


class Turn(BaseModel):
    """One conversation turn (``{"from": role, "value": text}``)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    role: Role = Field(alias="from")
    value: str

    @classmethod
    def of(cls, role: Role, value: str) -> Turn:
        return cls.model_validate({"from": role, "value": value})

    def to_json(self) -> dict[str, str]:
        return {"from": self.role, "value": self.value}


class Trace(BaseModel):
    """One α-UMi record: tools, the instruction and the conversation."""

    model_config = ConfigDict(extra="ignore")

    tools: list[UmiTool] = Field(default_factory=list)
    instruction: str = ""
    conversations: list[Turn]
    #: an id, when the file gives one (upstream's files do not)
    id: str | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "tools": [t.model_dump() for t in self.tools],
            "instruction": self.instruction,
            "conversations": [t.to_json() for t in self.conversations],
        }
        if self.id is not None:
            out["id"] = self.id
        return out


class PlanStep(BaseModel):
    """One gold planner step of a trace, with what follows it."""

    #: the index of the assistant turn in ``conversations``
    index: int
    #: the turns before it (the gold history)
    history: list[Turn]
    route: Route
    #: the assistant turn's text, its ``Next: ...`` marker included
    plan: str
    #: the caller turn (``Action: ...``) or the conclusion; ``None`` for give-up
    answer: str | None = None

    def reference(self) -> str:
        """The step in the layout of upstream's evaluator (what ``alpha_umi`` scores)."""
        if self.route == "caller":
            return f"assistant: {self.plan}{EOS}caller: {self.answer}{EOS}"
        if self.route == "conclusion":
            return f"assistant: {self.plan}{EOS}conclusion: {self.answer}{EOS}"
        return self.plan


class RoleSample(BaseModel):
    """One training / evaluation sample of a role: the prompt ``input`` (without the
    ``"system: "`` prefix, as upstream's records) and the ``target`` (without ``</s>``)."""

    role: Literal["planner", "caller", "summarizer", "backbone"]
    input: str
    target: str
    #: the index of the turn it is made for
    turn: int

    def prompt(self) -> str:
        """What the model is given: ``"system: " + input``."""
        return SYSTEM + self.input


# -- tools ------------------------------------------------------------------------------------------
def umi_tool(tool: Tool) -> UmiTool:
    """A toollab tool as α-UMi documents it (name's last 64 characters, description's first
    256, each argument ``"<type>, <description's last 256>"``, or just the type)."""
    args: dict[str, str] = {}
    for name, spec in tool.properties.items():
        info = spec if isinstance(spec, dict) else {}
        typ = info.get("type")
        typ_text = typ if isinstance(typ, str) else json.dumps(typ) if typ is not None else "any"
        desc = str(info.get("description", "")).strip()
        args[name] = f"{typ_text}, {desc[-256:]}" if desc else typ_text
    return UmiTool(Name=tool.name[-64:], function=tool.description[:256], input=args)


_JSON_TYPES = ("string", "integer", "number", "boolean", "object", "array", "null")


def toollab_tool(doc: UmiTool) -> Tool:
    """An α-UMi tool document as a toollab tool.  The format says nothing of required
    arguments, so none is required; an argument's type is kept when it is a JSON Schema type."""
    props: dict[str, object] = {}
    for name, text in doc.input.items():
        typ, sep, desc = text.partition(",")
        typ = typ.strip().lower()
        spec: dict[str, object] = {}
        if typ in _JSON_TYPES:
            spec["type"] = typ
            if sep:
                spec["description"] = desc.strip()
        else:
            spec["description"] = text.strip()
        props[name] = spec
    return Tool(
        name=doc.Name,
        description=doc.function,
        parameters={"type": "object", "properties": props, "required": []},
    )


def tool_docs(tools: Sequence[UmiTool]) -> str:
    """``{doc}``: ``json.dumps(tool) + "\\n"`` for each tool."""
    return "".join(json.dumps(t.model_dump()) + "\n" for t in tools)


def tool_names(tools: Sequence[UmiTool]) -> str:
    return ", ".join(t.Name for t in tools)


# -- turns -----------------------------------------------------------------------------------------
def render_history(turns: Sequence[Turn]) -> str:
    """``role: value</s>`` per turn, ``observation: value`` without ``</s>``, no newlines."""
    return "".join(f"{t.role}: {t.value}" + ("" if t.role == "observation" else EOS) for t in turns)


def cut_observation(text: str) -> str:
    """An observation as the live loop shows it: at most 1,024 characters, then ``...``."""
    return text if len(text) <= OBSERVATION_LIMIT else text[:OBSERVATION_LIMIT] + "..."


def observation_text(value: object) -> str:
    """An executed call's observation as text (JSON unless it is a string), cut."""
    if isinstance(value, str):
        return cut_observation(value)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return cut_observation(text)


def route_of(text: str) -> Route | None:
    """The route the first ``Next: ...`` marker of ``text`` names, if any."""
    found = [(text.find(m), r) for r, m in MARKERS.items() if m in text]
    return min(found)[1] if found else None


def cut_plan(text: str) -> tuple[str, Route | None]:
    """A planner output cut after its first marker, and its route (``None``: no marker)."""
    route = route_of(text)
    if route is None:
        return text.strip(), None
    marker = MARKERS[route]
    return text[: text.find(marker) + len(marker)].strip(), route


def with_marker(thought: str, route: Route) -> str:
    """A thought followed by its marker as upstream's data writes it (``"\\n Next: caller."``;
    only the marker for an empty thought)."""
    thought = thought.strip()
    return f"{thought}\n {MARKERS[route]}" if thought else f" {MARKERS[route]}"


def thought_of(plan: str) -> str:
    """A plan without its ``Next: ...`` marker (and what follows it)."""
    route = route_of(plan)
    return plan[: plan.find(MARKERS[route])].strip() if route is not None else plan.strip()


def call_text(name: str, arguments: str) -> str:
    """A caller turn: ``Action: <name>\\nAction Input: <JSON>``."""
    return f"Action: {name}\nAction Input: {arguments}"


def read_call(text: str) -> tuple[str, str]:
    """``(action, action input)`` from a caller output: the text after the last ``Action:``
    and the last ``Action Input:`` (input ``{}`` when absent), as upstream's parser reads it."""
    action_input = "{}"
    if "Action Input:" in text:
        action_input = text[text.rindex("Action Input:") + len("Action Input:") :].strip()
        text = text[: text.rindex("Action Input:")]
    action = ""
    if "Action:" in text:
        action = text[text.rindex("Action:") + len("Action:") :].strip()
    return action, action_input or "{}"


def call_of(name: str, action_input: str) -> ToolCall | str:
    """The call a caller turn makes, or why its input is not a JSON object."""
    try:
        args = json.loads(action_input)
    except json.JSONDecodeError as exc:
        return f"Action Input is not JSON ({exc.msg})"
    except ValueError as exc:
        return f"Action Input is not JSON ({exc})"
    if not isinstance(args, dict):
        return f"Action Input is not a JSON object (got {type(args).__name__})"
    return ToolCall(name=name, arguments=args)


# -- prompts -----------------------------------------------------------------------------------
def planner_input(tools: Sequence[UmiTool], history: Sequence[Turn]) -> str:
    return (
        PLANNER_TEMPLATE.format(doc=tool_docs(tools), history=render_history(history)) + PLANNER_CUE
    )


def caller_input(tools: Sequence[UmiTool], history: Sequence[Turn], thought: str) -> str:
    text = CALLER_TEMPLATE.format(
        doc=tool_docs(tools),
        history=render_history(history),
        thought=thought,
        tool_names=tool_names(tools),
    )
    return text + CALLER_CUE


def summarizer_input(history: Sequence[Turn]) -> str:
    return SUMMARIZER_TEMPLATE.format(history=render_history(history)) + SUMMARIZER_CUE


def backbone_input(tools: Sequence[UmiTool], history: Sequence[Turn]) -> str:
    text = BACKBONE_TEMPLATE.format(
        doc=tool_docs(tools), history=render_history(history), tool_names=tool_names(tools)
    )
    return text + PLANNER_CUE


def backbone_history(turns: Sequence[Turn]) -> list[Turn]:
    """The single LLM's history: each planner turn merged with the caller or conclusion turn
    that follows it into one ``assistant`` turn (its merged target)."""
    out: list[Turn] = []
    for i, t in enumerate(turns):
        if t.role in ("caller", "conclusion"):
            continue
        if t.role == "assistant":
            nxt = turns[i + 1] if i + 1 < len(turns) else None
            out.append(Turn.of("assistant", backbone_target(t.value, nxt)))
        else:
            out.append(t)
    return out


def backbone_target(plan: str, following: Turn | None) -> str:
    """The single LLM's turn: the thought, then ``\\nAction: ...`` or ``\\nconclusion: ...``."""
    thought = thought_of(plan)
    if following is not None and following.role == "caller":
        return f"{thought}\n{following.value}"
    if following is not None and following.role == "conclusion":
        return f"{thought}\nconclusion: {following.value}"
    return f"{thought}\nconclusion: give up."


# -- reading a trace ---------------------------------------------------------------------------
def parse_trace(data: object, where: str) -> Trace:
    """One record as a :class:`Trace`, its conversation checked (:func:`steps`);
    :class:`InputError` naming ``where`` and the field or turn otherwise."""
    try:
        trace = Trace.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first.get("loc", ()))
        raise InputError(f"not an α-UMi record: {loc}: {first.get('msg')}", where=where) from None
    steps(trace, where)
    return trace


def steps(trace: Trace, where: str = "trace") -> list[PlanStep]:
    """Every planner step of a trace, its route implied by the next turn.

    :class:`InputError` (naming ``where`` and the turn) for a conversation that does not start
    with the user, a caller or conclusion turn the planner did not hand over to, an observation
    that follows no call, or a planner turn whose marker names another route than the next
    turn's role."""
    turns = trace.conversations
    if not turns or turns[0].role != "user":
        raise InputError("the conversation must start with a user turn", where=where)
    out: list[PlanStep] = []
    for i, turn in enumerate(turns):
        prev = turns[i - 1].role if i else None
        at = f"{where}, conversations[{i}]"
        if turn.role in ("caller", "conclusion") and prev != "assistant":
            raise InputError(
                f"a {turn.role} turn that the planner did not hand over to "
                f"(it follows {prev!r}, not an assistant turn)",
                where=at,
            )
        if turn.role == "observation" and prev != "caller":
            raise InputError(f"an observation that follows no call (it follows {prev!r})", where=at)
        if turn.role != "assistant":
            continue
        nxt = turns[i + 1] if i + 1 < len(turns) else None
        implied: Route = (
            "caller"
            if nxt is not None and nxt.role == "caller"
            else "conclusion"
            if nxt is not None and nxt.role == "conclusion"
            else "give up"
        )
        written = route_of(turn.value)
        if written is None and implied == "give up":
            following = f"a {nxt.role} turn" if nxt is not None else "the end"
            raise InputError(
                f"an assistant turn that hands over to no role: it is followed by {following} "
                "and does not say 'Next: give up.'",
                where=at,
            )
        if written is not None and written != implied:
            raise InputError(
                f"the assistant turn says {MARKERS[written]!r} but the next turn is "
                f"{nxt.role if nxt is not None else 'the end'!r}",
                where=at,
            )
        plan = turn.value if written is not None else with_marker(turn.value, implied)
        answer = nxt.value if nxt is not None and implied != "give up" else None
        out.append(
            PlanStep(index=i, history=list(turns[:i]), route=implied, plan=plan, answer=answer)
        )
    return out


def role_samples(trace: Trace) -> list[RoleSample]:
    """The role data of one trace, as upstream's ``prepro_*`` scripts make it: a planner and a
    backbone sample per planner step (none when its call names a hallucinated tool), a caller
    sample per call to a real tool, a summarizer sample per conclusion that is not ``none``."""
    tools = trace.tools
    out: list[RoleSample] = []
    for step in steps(trace):
        nxt = trace.conversations[step.index + 1] if step.route != "give up" else None
        hallucinated = nxt is not None and nxt.role == "caller" and HALLUCINATED in nxt.value
        if hallucinated:
            continue
        out.append(
            RoleSample(
                role="planner",
                input=planner_input(tools, step.history),
                target=step.plan,
                turn=step.index,
            )
        )
        out.append(
            RoleSample(
                role="backbone",
                input=backbone_input(tools, backbone_history(step.history)),
                target=backbone_target(step.plan, nxt),
                turn=step.index,
            )
        )
        history = [*step.history, Turn.of("assistant", step.plan)]
        if step.route == "caller" and step.answer is not None:
            out.append(
                RoleSample(
                    role="caller",
                    input=caller_input(tools, history, step.plan),
                    target=step.answer,
                    turn=step.index + 1,
                )
            )
        elif step.route == "conclusion" and step.answer and step.answer != NO_ANSWER:
            out.append(
                RoleSample(
                    role="summarizer",
                    input=summarizer_input(history),
                    target=step.answer,
                    turn=step.index + 1,
                )
            )
    return out
