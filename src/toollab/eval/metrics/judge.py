"""An LLM judge with an on-disk cache, and the ToolEyes judge prompts.

Any :class:`toollab.models.base.Model` can judge.  Each request is keyed by the sha256 of the
judge model's name and the prompt messages; answers are appended to a JSONL cache file, so
re-scoring a run asks nothing again.  The score is read the upstream way — the first ``10`` or
digit after ``Evaluation Score:`` — with fallbacks for judges that drift from the format.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from toollab.errors import InputError
from toollab.models.base import ChatRequest, GenerateOptions, Model, run_sync

Message = dict[str, str]

_SCORE_LINE = re.compile(r"Evaluation Score\s*:[^\n]*", re.IGNORECASE)
_FIRST = re.compile(r"(10|\d)")
_ANY_SCORE = re.compile(r"\b(10|[1-9])(?:\s*/\s*10)?\b")


def parse_judge_score(text: str) -> int | None:
    """The 1–10 score in a judge's answer, or ``None`` when there is none.

    Upstream reads the first ``10`` or digit on the ``Evaluation Score:`` line.  When that line
    is missing, the last stand-alone number 1–10 of the answer (``"8/10"``, ``"Score: 7"``) is
    taken.
    """
    if not isinstance(text, str) or not text:
        return None
    lines = _SCORE_LINE.findall(text)
    for line in lines:
        m = _FIRST.search(line.split(":", 1)[1])
        if m:
            return int(m.group(1))
    hits = _ANY_SCORE.findall(text)
    return int(hits[-1]) if hits else None


class Verdict(BaseModel):
    score: int | None
    reason: str
    cached: bool = False
    error: str | None = None


class Judge:
    """Asks ``model`` and caches the answers in ``cache_path`` (JSONL)."""

    def __init__(
        self,
        model: Model,
        cache_path: str | Path | None = None,
        *,
        max_tokens: int = 1024,
        temperature: float = 0.0,
        concurrency: int | None = None,
    ) -> None:
        self.model = model
        self.cache_path = Path(cache_path) if cache_path else None
        self.options = GenerateOptions(max_tokens=max_tokens, temperature=temperature)
        self.concurrency = concurrency
        self._cache: dict[str, str] = {}
        self._lock = threading.Lock()
        self.requests_made = 0
        if self.cache_path and self.cache_path.exists():
            self._load(self.cache_path)

    @property
    def name(self) -> str:
        return getattr(self.model, "name", type(self.model).__name__)

    def key(self, messages: list[Message]) -> str:
        blob = json.dumps([self.name, messages], ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _load(self, path: Path) -> None:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"judge cache is not UTF-8 text ({exc.reason} at byte {exc.start})", path=path
            ) from exc
        except OSError as exc:
            raise InputError(f"cannot read the judge cache: {exc.strerror}", path=path) from exc
        for line in text.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a torn last line from an interrupted run
            if isinstance(rec, dict) and isinstance(rec.get("key"), str):
                self._cache[rec["key"]] = str(rec.get("text", ""))

    def _store(self, key: str, text: str) -> None:
        self._cache[key] = text
        if self.cache_path is None:
            return
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, self.cache_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"key": key, "judge": self.name, "text": text}, ensure_ascii=False))
            fh.write("\n")

    def ask_many(self, prompts: list[list[Message]]) -> list[Verdict]:
        """Judge every prompt (cached ones are not asked again); order is kept."""
        keys = [self.key(p) for p in prompts]
        todo: dict[str, list[Message]] = {}
        for k, p in zip(keys, prompts, strict=True):
            if k not in self._cache and k not in todo:
                todo[k] = p
        errors: dict[str, str] = {}
        if todo:
            reqs = [
                ChatRequest(messages=list(p), options=self.options, tag=k) for k, p in todo.items()
            ]
            outs = run_sync(self.model.batch(reqs, self.concurrency))
            self.requests_made += len(reqs)
            for k, out in zip(todo, outs, strict=True):
                if out.error:
                    errors[k] = out.error  # not cached: a later run may succeed
                else:
                    self._store(k, out.text)
        verdicts = []
        for k in keys:
            if k in errors:
                verdicts.append(Verdict(score=None, reason="", error=errors[k]))
                continue
            text = self._cache.get(k, "")
            verdicts.append(
                Verdict(score=parse_judge_score(text), reason=text, cached=k not in todo)
            )
        return verdicts

    def ask(self, messages: list[Message]) -> Verdict:
        return self.ask_many([messages])[0]


# -- ToolEyes judge prompts (Code/Evaluation/util/process_utils.py; paper Tables 10–14) -----------

_EXPERT = (
    "As a professional assessment expert, your task is to objectively evaluate the quality of the "
    "provided data based on the given guidelines."
)
_FORMAT = (
    'Please provide your assessment in the following format:"""\n'
    "Scoring Reason: <Provide a reason for your score, referencing the given criteria>.\n\n"
    "Evaluation Score: <Assign a score between 1 and 10>.\n"
    '"""\n'
)

FOCUS_SYSTEM = (
    _EXPERT
    + "\n\nWhen given a tool document, a user query, and a thought chain that addresses the query, "
    "please rate the quality of the thought chain based on the following criteria:\n\n"
    "1. The extent to which the thought chain consistently focuses on resolving the user query. "
    "The more relevant it is to the user query, the higher the score.\n\n"
    "2. The ability of the thought chain to adapt promptly when the user provides new information "
    "or makes new requests. The higher the alignment with the new information and requests, the "
    "higher the score. If there is no new information or requests, please ignore the criteria.\n\n"
    + _FORMAT
)
VALIDITY_SYSTEM = (
    _EXPERT
    + "\n\nWhen given a tool document, a user query, and a thought chain that addresses the query, "
    "please rate the quality of the thought chain based on the following criteria:\n\n"
    "1. Each step should succinctly summarize relevant information from the previous step; the "
    "more comprehensive the summary, the higher the score.\n\n"
    "2. Each step should timely plan for the next one; the more detailed the next step, the "
    "higher the score.\n\n"
    "3. Each step should be distinct from the previous one and contribute to resolving the user's "
    "query; the less repetition, the higher the score.\n\n" + _FORMAT
)
QUALITY_SYSTEM = (
    _EXPERT
    + "\n\nWhen given a tool document, a user query and a thought chain that addresses the query, "
    "please rate the quality of the thought chain based on the following criteria:\n\n"
    "1. The presence or absence of grammatical errors in the thought chain. The fewer the errors, "
    "the higher the score.\n\n"
    "2. The logical consistency of the thought chain. The fewer logical inconsistencies, the "
    "higher the score.\n\n"
    "3. The timeliness of detection and correction of any logical inconsistencies in the thought "
    "chain. The more timely the correction, the higher the score.\n\n" + _FORMAT
)
MATCH_SYSTEM = (
    _EXPERT
    + " \n\nWhen presented with a tool document, a THOUGHT, and a tool from the tool document, "
    "please ascertain the correlation between the specified tool and the given THOUGHT based on "
    "the guidelines below:\n\n"
    "    1. If the THOUGHT is empty, assign a score of 5 immediately.\n\n"
    "    2. If the THOUGHT is not empty, determine if the chosen tool is more pertinent to the "
    "planning in the THOUGHT compared to other tools in the tool document based on the tool "
    "documentation description. The more relevant the tool, the higher the score.\n\n" + _FORMAT
)
RELEVANCE_SYSTEM = (
    _EXPERT
    + " \n\nWhen presented with a tool documentation, a user's initial query and a corresponding "
    "response, please rate the response's effectiveness in meeting the user's needs using the "
    "following criteria:\n\n"
    "1. Assess whether the response directly addresses the user's original question. The more "
    "on-point the response is, the higher it should be scored.\n"
    "2. Determine if the response includes any inaccurate information. Unless you have exact "
    "information, you need to assume that the information in the response is correct. A response "
    "with minimal inaccuracies should receive a higher score.\n"
    "3. Consider if the response offer suggestions that could help resolve the user's query? The "
    "more beneficial the guidance, the higher the score should be. Disregard this criterion if the "
    "user's question has been fully answered by the response.\n\n" + _FORMAT
)


def _chain_prompt(system: str, document: str, query: str, chain: str) -> list[Message]:
    user = (
        f'\nTool Document:\n{document}\n\nUser Query:"""\n{query}\n"""\n\n'
        f'Thought Chain:"""\n{chain}\n"""\n\nAssessment:'
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def focus_prompt(document: str, query: str, chain: str) -> list[Message]:
    """Intent comprehension (IU, paper Table 10)."""
    return _chain_prompt(FOCUS_SYSTEM, document, query, chain)


def validity_prompt(document: str, query: str, chain: str) -> list[Message]:
    """Behaviour planning, validity (paper Table 11)."""
    return _chain_prompt(VALIDITY_SYSTEM, document, query, chain)


def quality_prompt(document: str, query: str, chain: str) -> list[Message]:
    """Behaviour planning, integrity (paper Table 12)."""
    return _chain_prompt(QUALITY_SYSTEM, document, query, chain)


def match_prompt(document: str, thought: str, tool: str) -> list[Message]:
    """Tool-thought match of one turn (paper Table 13)."""
    user = (
        f'\nTool Document:\n{document}\n\nTHOUGHT:"""\n{thought}\n"""\n\n'
        f'Tool:"""\n{tool}\n"""\n\nAssessment:'
    )
    return [{"role": "system", "content": MATCH_SYSTEM}, {"role": "user", "content": user}]


def relevance_prompt(document: str, query: str, response: str) -> list[Message]:
    """Answer quality (AO, the upstream ``eval_relavance`` prompt)."""
    user = (
        f'\nTool Document:\n{document}\n    \nUser Query:"""\n{query}\n"""\n\n'
        f'Corresponding Response:"""\n{response}\n"""\n\nAssessment:'
    )
    return [{"role": "system", "content": RELEVANCE_SYSTEM}, {"role": "user", "content": user}]


def as_judge(value: Any, cache_path: str | Path | None = None) -> Judge | None:
    """Accept a :class:`Judge`, a :class:`Model` (wrapped) or ``None``."""
    if value is None or isinstance(value, Judge):
        return value
    if isinstance(value, Model):
        return Judge(value, cache_path)
    raise TypeError(f"a judge must be a toollab Model or Judge, got {type(value).__name__}")
