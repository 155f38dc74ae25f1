"""α-UMi's step-level data (X-PLUG/Multi-LLM-Agent): one instance per gold planner step.

A file is a JSON list (or JSON lines) of traces ``{"tools", "instruction", "conversations"}``
(:mod:`toollab.data.alpha_umi` describes the format); a folder is read file by file
(``*.json`` then ``*.jsonl``, sorted).  Each assistant turn of a trace becomes one instance,
as upstream's static pipeline (``infer_pipeline.py``) makes one sample per gold step:

* ``metadata["alpha_umi"]``: the step's inputs, the tool documents as written and the gold
  history before the step (``history``, turns as ``{"from", "value"}``); it is one of
  :data:`~toollab.schema.instance.INPUT_METADATA_KEYS`, the rest of the metadata is answer key;
* ``metadata["reference"]``: the step in the layout upstream's evaluator reads
  (``assistant: <plan></s>caller: <call></s>``, ``... conclusion: <answer></s>`` or the plan
  alone for give-up), scored by ``alpha_umi``; ``metadata["tool_names"]`` the names on offer;
* ``tools``: the documents as toollab tools (no argument is required: the format does not say);
  ``gold``: the step's call when it is a call with a JSON-object input; ``answer``: the
  conclusion of a conclusion step; ``category`` the step's route.

The default agent is ``alpha-umi``: given such an instance it predicts the one step from the
gold history (see :mod:`toollab.agents.alpha_umi`).  ``toolbench-steps`` is another name for the
format (α-UMi's step files are made from ToolBench trajectories).  A malformed record or
conversation is an :class:`InputError` naming the file, the record's line and index and the turn.
"""

from __future__ import annotations

from pathlib import Path

from toollab.data.alpha_umi import (
    PlanStep,
    Trace,
    call_of,
    parse_trace,
    read_call,
    steps,
    toollab_tool,
)
from toollab.data.base import Adapter, Dataset, register_adapter, tool_pool
from toollab.data.jsonl import read_records
from toollab.errors import InputError
from toollab.schema import Decision, GoldCall, Instance, Tool, ToolCall

SOURCE = "alpha-umi"


def _files(path: Path) -> list[Path]:
    if not path.is_dir():
        return [path]
    files = sorted(path.glob("*.json")) + sorted(path.glob("*.jsonl"))
    if not files:
        raise InputError("no *.json or *.jsonl files", path=path)
    return files


def _tools(trace: Trace, path: Path, line: int, where: str) -> list[Tool]:
    out = []
    for i, doc in enumerate(trace.tools):
        try:
            out.append(toollab_tool(doc))
        except (InputError, ValueError) as exc:
            problem = exc.problem if isinstance(exc, InputError) else str(exc).splitlines()[0]
            raise InputError(
                f"tool {doc.Name!r} cannot be read: {problem}",
                path=path,
                line=line,
                where=f"{where}, tools[{i}]",
            ) from None
    return out


def _gold(step: PlanStep, names: set[str]) -> list[GoldCall]:
    if step.route != "caller" or step.answer is None:
        return []
    name, action_input = read_call(step.answer)
    call = call_of(name, action_input)
    if isinstance(call, ToolCall) and name in names:
        return [GoldCall(name=call.name, arguments=call.arguments)]
    return []


def instances_of(trace: Trace, tools: list[Tool], stem: str, index: int) -> list[Instance]:
    """One instance per planner step of ``trace`` (record ``index`` of file ``stem``)."""
    names = {t.name for t in tools}
    base = trace.id or f"{stem}-{index}"
    query = trace.instruction or trace.conversations[0].value
    docs = [t.model_dump() for t in trace.tools]
    out = []
    for step in steps(trace):
        gold = _gold(step, names)
        decision = Decision.CALL if step.route == "caller" else Decision.NO_CALL
        out.append(
            Instance(
                id=f"{base}-{step.index}",
                query=query,
                tools=tools,
                gold=gold,
                decision=decision,
                answer=step.answer if step.route == "conclusion" else None,
                source=SOURCE,
                category=step.route,
                metadata={
                    "reference": step.reference(),
                    "tool_names": [t.Name for t in trace.tools],
                    # the step's inputs (INPUT_METADATA_KEYS): the model may see them
                    "alpha_umi": {
                        "tools": docs,
                        "history": [t.to_json() for t in step.history],
                    },
                    "record": index,
                    "turn": step.index,
                },
            )
        )
    return out


@register_adapter
class AlphaUmiAdapter(Adapter):
    name = "alpha-umi"
    aliases = ("toolbench-steps", "alpha_umi", "umi")
    description = "α-UMi step-level data: one instance per gold planner step (static protocol)"
    default_agent = "alpha-umi"

    def load(self, path: Path) -> Dataset:
        """``path``: an α-UMi JSON file (a list of traces, or JSON lines) or a folder of them."""
        instances: list[Instance] = []
        for f in _files(path):
            n = 0
            for rec in read_records(f):
                n += 1
                where = f"record {rec.index}"
                try:
                    trace = parse_trace(rec.data, where)
                    tools = _tools(trace, f, rec.line, where)
                    made = instances_of(trace, tools, f.stem, rec.index)
                except InputError as exc:
                    if exc.path is not None:
                        raise
                    raise InputError(exc.problem, path=f, line=rec.line, where=exc.where) from None
                for inst in made:
                    inst.metadata["file"] = str(f)
                instances.extend(made)
            if n == 0:
                raise InputError("no α-UMi records (an empty list or file)", path=f)
        return Dataset(
            name=path.stem,
            format=self.name,
            instances=instances,
            tools=tool_pool(t for i in instances for t in i.tools),
            path=path,
        )
