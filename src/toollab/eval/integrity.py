"""What a run let the model know: the protocol facts that shaped its requests, and every setting
that read the answer key on purpose.

A result counts only if the model could not see the answer.  Requests are built from an
instance's inputs alone (:class:`~toollab.schema.Instance`: query, messages, tools, the
environment's initial state) plus the facts the benchmark's protocol publishes for it
(:class:`~toollab.schema.ProtocolFacts`, e.g. a BFCL file's category, which fixes the call shape
of constrained decoding).  Oracle and ablation settings that read the answer key on purpose (the
``oracle`` model, DEER's teacher-forced second round, ``use_gold_count``) are allowed, and every
run that uses one says so in ``run.json`` and its report.  ``tests/test_leak.py`` holds the line:
it swaps every instance's answer key for another's and checks that every request stays
byte-identical.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from toollab.schema import Instance

NONE = "none"


def protocol_facts_used(instances: Iterable[Instance], constrained: bool) -> str:
    """What ``run.json`` says under ``protocol_facts``: the published facts that shaped the call
    grammar (constrained decoding), e.g. ``"category = parallel, simple_python (call shape)"``."""
    published: dict[str, set[str]] = {}
    shaped = False
    for inst in instances:
        facts = inst.protocol
        for key, value in facts.published.items():
            published.setdefault(key, set()).add(value)
        shaped = shaped or facts.max_calls is not None or facts.no_call is not None
    if not published and not shaped:
        return NONE
    stated = "; ".join(f"{k} = {', '.join(sorted(v))}" for k, v in sorted(published.items()))
    if not constrained:
        return f"{stated or 'published'} (not used: unconstrained decoding)"
    return f"{stated or 'published'} (shapes the constrained call grammar)"


def answer_key_readers(readers: Mapping[str, str | None]) -> str:
    """What ``run.json`` says under ``answer_key_read_by``: ``"none"``, or each component that
    reads the answer key on purpose with what it reads, e.g. ``"model oracle: answers ..."``."""
    named = [f"{who}: {what}" for who, what in readers.items() if what]
    return "; ".join(named) if named else NONE


def integrity_fields(
    instances: Iterable[Instance],
    *,
    constrained: bool,
    model: Any = None,
    agent: Any = None,
    settings: Mapping[str, str | None] | None = None,
) -> dict[str, str]:
    """The two ``run.json`` fields of a run (see the module docstring).

    ``model`` and ``agent`` are the run's objects (their ``reads_answer_key``); ``settings`` names
    any other answer-reading setting in use with its description."""
    readers: dict[str, str | None] = {}
    if model is not None:
        readers[f"model {model.name}"] = model.reads_answer_key
    if agent is not None:
        readers[f"agent {agent.name}"] = agent.reads_answer_key
    readers.update(settings or {})
    return {
        "protocol_facts": protocol_facts_used(instances, constrained),
        "answer_key_read_by": answer_key_readers(readers),
    }
