"""SambaNova ToolBench's action generator as an agent (``action``).

One request per instance, built as upstream's ``action_generator/rag_generator.py`` builds it:

* **retrieval** — BM25 over one document per API (the instance's tools: name, description and
  parameters) and, separately, over one document per demonstration ("Task: {goal}\\nAction:\\n
  {answer}"); the query is the raw goal.  The top ``k_api`` APIs (upstream's in-memory BM25
  returns ``top_k`` documents whatever their score; so does this agent: tools sharing no word
  with the goal fill the remaining places in pool order) and the top ``k_demos`` (3)
  demonstrations.  The APIs are shown in the pool's order rather than by score, so that the
  instances of one environment share the prompt's prefix (:meth:`ActionAgent.top_apis`);
* **prompt** — the skeleton ``"{api_docs}\\n{examples}\\nTask: {query}\\nAction:\\n"`` as the
  user message, with ``api_docs`` = ``"I have the following set of API:\\n\\n"`` + each document
  followed by ``"\\n"`` + one rule of 13 dashes, and ``examples`` built the same way from
  ``"I have the following set of examples:\\n\\n"`` (either is empty when nothing is
  retrieved), plus a system prompt that regulates the output to calls only (the paper's
  Fig. 5 exists only as an image: :data:`SYSTEM_PROMPT` follows its description, and allows a
  plain-text answer when no API fits, since no-call instances exist);
* **decoding** — greedy, stopped at ``------`` and ``Task:`` (plus the template's stops),
  output stripped and read with the template's parser.

Demonstrations come only from an environment's **train** split
(:func:`toollab.envs.generate.generate` with ``split="train"``, Call instances only, generated
with the run's seed — the seed ``toollab bench`` and ``toollab data generate`` split by — unless
``split_seed`` says otherwise); the environment is the one the instance's ``source`` names
(``env:<name>``).  A demonstration whose goal is the instance's own goal is never shown.
Instances of datasets without an environment get the API documents only.  Each environment's
demonstration index is built once per agent.

With constrained decoding the grammar admits only the retrieved APIs
(:func:`toollab.models.policy.run_policy`), and the demonstrations show their answers in the
constrained JSON form (:func:`toollab.models.policy.constrained_answer`), the form the model is
held to; unconstrained they are rendered by the template.  Everything after the request — the
read-back and the execution of the predicted program in the instance's environment — is the
``single`` agent's (this agent only overrides :meth:`SingleTurnAgent.ask`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from toollab.agents.base import AgentOptions, register_agent
from toollab.agents.single import Ask, SingleTurnAgent
from toollab.envs.generate import generate
from toollab.errors import UsageError
from toollab.models.constrain import DECISION_KEY, NO_CALL
from toollab.models.policy import CallPolicy, constrained_answer
from toollab.schema import Instance, Tool, ToolCall
from toollab.templates.base import Template

API_HEADER = "I have the following set of API:\n\n"
EXAMPLES_HEADER = "I have the following set of examples:\n\n"
#: the rule that closes each section (13 dashes)
RULE = "-------------"
PROMPT = "{api_docs}\n{examples}\nTask: {query}\nAction:\n"
#: upstream's stop strings, always added
STOPS = ("------", "Task:")
ENV_PREFIX = "env:"

SYSTEM_PROMPT = """You write API calls that accomplish a task.
The message has three sections: the API you may use, examples of tasks with the calls that accomplish them, and then the task, after "Task:". Write its calls after "Action:".
Guidelines:
- Reply with the calls only, in the order they must run, in the form the examples use.
- Use only the API listed; take every argument value from the task.
- Write no explanation, no comment and no other text.
- If none of the API can accomplish the task, make no call: reply with one short sentence in plain text.
Form of one call: {one}"""
#: the placeholder call that shows the answer form in the system prompt
_FORM_CALL = ToolCall(name="api_name", arguments={"argument": "value"})


def api_doc(tool: Tool) -> str:
    """A tool's text document (as upstream's ``functions/`` files: a description line, the
    call, its parameters), ending with a newline like a file."""
    lines = [f"# {tool.description.strip() or tool.name}", tool.name, "", "Parameters:"]
    required = set(tool.required)
    for pname, spec in tool.properties.items():
        info = spec if isinstance(spec, dict) else {}
        tags = ["required" if pname in required else "optional"]
        if isinstance(info.get("type"), str):
            tags.append(str(info["type"]))
        if isinstance(info.get("enum"), list):
            tags.append("one of " + ", ".join(json.dumps(v) for v in info["enum"]))
        if "default" in info:
            tags.append(f"default {json.dumps(info['default'])}")
        desc = str(info.get("description", "")).strip()
        lines.append(f"{pname}: ({', '.join(tags)}) {desc}".rstrip())
    if not tool.properties:
        lines.append("(none)")
    return "\n".join(lines) + "\n"


def demo_doc(goal: str, answer: str) -> str:
    """A demonstration's document (upstream's ``examples/`` files), ending with a newline."""
    return f"Task: {goal}\nAction:\n{answer}\n"


def section(header: str, docs: Sequence[str]) -> str:
    """``header`` + each document followed by a newline + the rule; empty without documents."""
    if not docs:
        return ""
    return header + "".join(f"{d}\n" for d in docs) + RULE


def action_prompt(api_docs: Sequence[str], demos: Sequence[str], query: str) -> str:
    """The user message: upstream's skeleton filled in."""
    return PROMPT.format(
        api_docs=section(API_HEADER, api_docs),
        examples=section(EXAMPLES_HEADER, demos),
        query=query,
    )


def source_environment(instance: Instance) -> str | None:
    """The environment an instance's ``source`` names (``env:<name>``), if any."""
    source = instance.source or ""
    return source[len(ENV_PREFIX) :] if source.startswith(ENV_PREFIX) else None


class _Answers:
    """How the answers are written in one run: by the template, or in the constrained form."""

    def __init__(self, template: Template, policy: CallPolicy | None) -> None:
        self.template, self.policy = template, policy
        #: what tells two forms apart (a model's own chat template renders calls its own way)
        self.key = json.dumps(
            [template.name, policy.model_dump() if policy else None, self.render([_FORM_CALL], [])]
        )

    def render(
        self, calls: Sequence[ToolCall], tools: Sequence[Tool], answer: str | None = None
    ) -> str | None:
        """The answer text, or ``None`` when this form cannot write the calls in one turn.  No
        calls (a declining demonstration) are written as the no-call answer: ``answer`` in
        plain text, or the constrained no-call object where the policy admits one."""
        if not calls:
            return self.declined(answer)
        if self.policy is None:
            if not self.template.can_express(calls):
                return None
            return self.template.render_calls(list(calls))
        try:
            value = constrained_answer(calls, tools, self.policy)
        except UsageError:
            return None
        return json.dumps(value, ensure_ascii=False)

    def declined(self, answer: str | None) -> str | None:
        """A no-call answer in this form, or ``None`` when the form has none."""
        if self.policy is None:
            return answer.strip() or None if answer else None
        if not (self.policy.allow_no_call and self.policy.decision == "inline"):
            return None
        value: dict[str, str] = {DECISION_KEY: NO_CALL}
        if self.policy.answer_field and answer:
            value["answer"] = answer
        return json.dumps(value, ensure_ascii=False)


class _DemoIndex:
    """One environment's demonstrations, written in one answer form, indexed by BM25."""

    def __init__(self, pool: list[Instance], answers: _Answers) -> None:
        self.examples: list[Instance] = []
        self.docs: list[str] = []
        for inst in pool:
            text = answers.render(list(inst.gold), inst.tools, inst.answer)
            if text is not None:
                self.examples.append(inst)
                self.docs.append(demo_doc(inst.query, text))
        from toollab.retrieval import DemoRetriever  # numpy: the [retrieval] extra

        self.retriever = (
            DemoRetriever(self.examples, texts=self.docs, declining=True) if self.examples else None
        )

    def top(self, query: str, k: int) -> list[tuple[Instance, str]]:
        """The ``k`` best demonstrations for ``query``, never one with this very goal."""
        if self.retriever is None:
            return []
        by_id = {e.id: i for i, e in enumerate(self.examples)}
        hits = self.retriever.retrieve(query, min(k + 1, len(self.examples)))
        out = [(e, self.docs[by_id[e.id]]) for e in hits if e.query.strip() != query.strip()]
        return out[:k]


@register_agent("action")
class ActionAgent(SingleTurnAgent):
    """SambaNova's action generator: retrieved API docs + retrieved demonstrations, one call."""

    name = "action"
    stepwise = False
    reads_answer_key: str | None = None

    def __init__(
        self,
        k_api: int = 20,
        k_demos: int = 3,
        demo_pool: int = 100,
        split_seed: int | None = None,
        declines: float = 0.0,
    ) -> None:
        from toollab.retrieval.base import check_k  # numpy: the [retrieval] extra

        check_k(k_api)
        if isinstance(k_demos, bool) or not isinstance(k_demos, int) or k_demos < 0:
            raise UsageError(f"k_demos must be a non-negative integer, got {k_demos!r}")
        if isinstance(demo_pool, bool) or not isinstance(demo_pool, int) or demo_pool < 1:
            raise UsageError(f"demo_pool must be a positive integer, got {demo_pool!r}")
        if isinstance(declines, bool) or not isinstance(declines, int | float):
            raise UsageError(f"declines must be a number in [0, 1), got {declines!r}")
        if not 0.0 <= declines < 1.0:
            raise UsageError(f"declines must be in [0, 1), got {declines!r}")
        self.k_api, self.k_demos, self.demo_pool = k_api, k_demos, demo_pool
        self.declines = float(declines)
        self.split_seed = split_seed
        self._demos: dict[tuple[str, int, str], _DemoIndex] = {}
        self._apis: dict[str, Any] = {}

    # -- retrieval ----------------------------------------------------------------------------
    def top_apis(self, instance: Instance) -> list[Tool]:
        """The ``k_api`` tools BM25 ranks best for the goal (padded in pool order when fewer
        share a word with it), shown in pool order: the instances of one tool set then share
        the prompt's prefix, which the backend evaluates once (prompt evaluation is most of a
        request's time on a CPU), and with ``k_api`` at least the pool every instance is shown
        every tool anyway."""
        tools = list(instance.tools)
        if len(tools) <= 1:
            return tools
        key = json.dumps([t.model_dump(mode="json") for t in tools], sort_keys=True)
        retriever = self._apis.get(key)
        if retriever is None:
            from toollab.retrieval import get_retriever  # numpy: the [retrieval] extra

            retriever = get_retriever("bm25")
            retriever.index(tools)
            self._apis[key] = retriever
        hits = [h.tool for h in retriever.retrieve(instance.query, self.k_api)]
        top = {id(t) for t in hits}
        rest = [t for t in retriever.tools if id(t) not in top]
        chosen = {id(t) for t in [*hits, *rest][: self.k_api]}
        return [t for t in retriever.tools if id(t) in chosen]

    @property
    def demo_mix(self) -> tuple[float, float, float]:
        """The demonstration pool's Call / NoCall / NoSearch shares: Call only as upstream, or
        ``declines`` of it split evenly between the two declining branches."""
        return (1.0 - self.declines, self.declines / 2, self.declines / 2)

    def demo_index(self, env: str, seed: int, answers: _Answers) -> _DemoIndex:
        """The environment's train-split demonstrations (built once per env, seed and form)."""
        key = (env, seed, answers.key)
        index = self._demos.get(key)
        if index is None:
            try:
                pool = generate(env, "train", self.demo_pool, seed, self.demo_mix)
            except UsageError:  # an environment without goal templates: no demonstrations
                pool = []
            index = _DemoIndex(pool, answers)
            self._demos[key] = index
        return index

    def demonstrations(
        self, instance: Instance, answers: _Answers, seed: int
    ) -> list[tuple[Instance, str]]:
        env = source_environment(instance)
        if env is None or self.k_demos == 0:
            return []
        return self.demo_index(env, seed, answers).top(instance.query, self.k_demos)

    # -- the request ----------------------------------------------------------------------------
    def ask(self, instance: Instance, template: Template, options: AgentOptions) -> Ask:
        seed = self.split_seed
        if seed is None:
            seed = options.generate.seed - options.repeat  # the run's seed
        policy = CallPolicy.for_instance(instance) if options.constrained else None
        answers = _Answers(template, policy if instance.tools else None)
        tools = self.top_apis(instance)
        demos = self.demonstrations(instance, answers, seed)
        form = answers.render([_FORM_CALL], [])
        system = SYSTEM_PROMPT.format(one=form or template.render_calls([_FORM_CALL]))
        user = action_prompt([api_doc(t) for t in tools], [d for _, d in demos], instance.query)
        gen = options.generate.model_copy(
            update={
                "temperature": 0.0,  # greedy, as upstream
                "top_p": 1.0,
                "template_tools": False,  # the prompt documents the tools itself
                "stop": list(dict.fromkeys([*options.generate.stop, *template.stop, *STOPS])),
            }
        )
        metadata: dict[str, object] = {
            "retrieved_apis": [t.name for t in tools],
            "demonstrations": [e.id for e, _ in demos],
        }
        return Ask(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            tools,
            gen,
            metadata,
        )
