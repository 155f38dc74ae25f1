"""``replay:/path/outputs.jsonl``: answer each instance with an output recorded elsewhere.

Outputs produced by another system (an API run, another harness, a paper's released
predictions) are scored through toollab's own parsers and scorers: the agents send their
requests as usual, and this model answers each with the output recorded for the instance the
request is about (``ChatRequest.tag`` is the instance id).

The file is JSON lines, one object per output:

* ``id`` — the instance id;
* ``output`` (or ``raw``, or ``text``) — the model's text; optional ``tool_calls`` (OpenAI form)
  for native calls;
* ``finish_reason`` (optional) — why generation ended, as the recording backend said it
  (``"stop"``, ``"length"``, ...); absent, the output carries none (not ``"stop"``: nothing says
  generation ended at a stop string);
* ``stop`` (optional) — the stop string generation ended at when the recording backend left it
  out of the text (then ``finish_reason``, if given, must be ``"stop"``).  Text that holds its
  stop string (DEER's upstream outputs end in their marker) needs none.

A toollab ``predictions.jsonl`` is such a file (``id`` + ``raw``), so a run can be replayed
through another template's parser or another agent.  Several lines with the same id are the
successive outputs of a multi-turn agent, in order; a single output answers every request for
its instance (repeats).  An instance with no recorded output (or none left) gets a backend
error, which the run records as a failed prediction (scored as a failure).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from toollab.data.jsonl import iter_jsonl
from toollab.errors import BackendError, InputError
from toollab.models.base import ChatRequest, Model, ModelOutput, Timings, Usage
from toollab.models.registry import ModelSpec, merge_options, register_provider
from toollab.schema import ToolCall

TEXT_KEYS = ("output", "raw", "text")


def load_outputs(path: str | Path) -> dict[str, list[ModelOutput]]:
    """Recorded outputs by instance id, in file order; errors name the file and line."""
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise InputError("replay file not found", path=p)
    outputs: dict[str, list[ModelOutput]] = {}
    # iter_jsonl: UTF-8, a regular file, line length, JSON depth and integer size bounded
    for rec in iter_jsonl(p):
        item, n = rec.data, rec.line
        if not isinstance(item, dict):
            raise InputError(
                f"expected an object with 'id' and 'output', got {type(item).__name__}",
                path=p,
                line=n,
            )
        inst_id = item.get("id")
        if not isinstance(inst_id, str) or not inst_id:
            raise InputError("'id' (the instance id, a string) is missing", path=p, line=n)
        outputs.setdefault(inst_id, []).append(_output(item, p, n))
    if not outputs:
        raise InputError("the replay file holds no outputs", path=p)
    return outputs


def _output(item: dict[str, Any], path: Path, line: int) -> ModelOutput:
    text: Any = next((item[k] for k in TEXT_KEYS if k in item), None)
    calls = item.get("tool_calls")
    if text is None and calls is None:
        raise InputError(
            "no output: give 'output' (or 'raw' / 'text') or 'tool_calls'", path=path, line=line
        )
    if text is not None and not isinstance(text, str):
        raise InputError(
            f"the output must be text, got {type(text).__name__}", path=path, line=line
        )
    try:
        parsed = [ToolCall.from_openai(c) for c in calls] if calls is not None else None
    except InputError as exc:
        raise InputError(f"bad tool_calls: {exc.problem}", path=path, line=line) from None
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        raise InputError(f"bad tool_calls ({exc})", path=path, line=line) from None
    finish, stop = item.get("finish_reason"), item.get("stop")
    for key, value in (("finish_reason", finish), ("stop", stop)):
        if value is not None and (not isinstance(value, str) or not value):
            raise InputError(
                f"'{key}' must be a non-empty string, got {value!r}", path=path, line=line
            )
    if stop is not None and finish not in (None, "stop"):
        raise InputError(
            f"'stop' {stop!r} says generation ended at a stop string, but 'finish_reason' is "
            f"{finish!r}",
            path=path,
            line=line,
        )
    return ModelOutput(
        text=text or "",
        tool_calls=parsed,
        finish_reason="stop" if stop is not None else finish,
        stop=stop,
    )


class ReplayModel(Model):
    """Answers a request about instance ``tag`` with the next output recorded for it."""

    supports_constraints = False

    def __init__(
        self,
        outputs: dict[str, list[ModelOutput]],
        *,
        name: str = "replay:",
        max_concurrency: int = 8,
    ) -> None:
        self.outputs = outputs
        self.name = name
        self.max_concurrency = max_concurrency
        self._served: dict[str, int] = {}
        self._lock = threading.Lock()

    async def request(self, req: ChatRequest) -> ModelOutput:
        tag = req.tag or ""
        recorded = self.outputs.get(tag)
        if not recorded:
            raise BackendError(f"no recorded output for instance {tag!r}")
        with self._lock:
            k = self._served.get(tag, 0)
            self._served[tag] = k + 1
        if len(recorded) == 1:
            k = 0  # one output answers every request (repeats)
        elif k >= len(recorded):
            raise BackendError(
                f"instance {tag!r}: {len(recorded)} recorded outputs, request {k + 1} asks for more"
            )
        out = recorded[k].model_copy(deep=True)
        out.usage = Usage(completion_tokens=len(out.text.split()))
        out.timings = Timings(total_s=0.0)
        out.tag = req.tag
        return out


@register_provider("replay", needs_model="a file: replay:/path/outputs.jsonl")
def _replay_provider(spec: ModelSpec, **options: Any) -> Model:
    opts = merge_options(spec, options, ["max_concurrency"])
    if not spec.model:
        raise InputError("replay needs a file: replay:/path/outputs.jsonl")
    return ReplayModel(load_outputs(spec.model), name=spec.raw or "replay:", **opts)
