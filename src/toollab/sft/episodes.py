"""Whole conversations from the environments, for training past the first call.

An episode is one conversation in one environment world (a train instance's seed), written in
the conversation protocol of :mod:`toollab.agents.conversation` (what ``toollab chat`` speaks):

1. the first user turn is a Call instance of the environment's **train** split; its gold
   program is executed step by step, for real, and every call is followed by its real result;
   references to earlier outputs are resolved to the values the earlier calls returned (in a
   conversation the model reads them);
2. after the last result, the answer: a deterministic text built from the observed values
   (:func:`answer_from`: "The price is 183.73 ...");
3. up to ``followups`` further user turns, each one of:
   * a **follow-up call** — a goal drawn from the environment's templates *in the world as the
     earlier turns left it* (its API combination a train combination, its query not reserved for
     evaluation), run after the earlier turns; a candidate that repeats a call already answered
     in the conversation, or does not execute there, is drawn again;
   * a **no-call** — a request of another environment that none of the offered tools can serve
     (the train split's NoCall instances): answered in text, no call;
   * a **no-search** — a question the model answers itself (the train split's NoSearch
     instances).

Every user turn is kept as the :class:`~toollab.schema.Instance` it came from, so the leakage
guard screens it like any other example.

The same episodes of a **held-out** split (``EpisodeConfig.split`` ``validation`` or ``test``)
are what the conversation evaluation plays (:mod:`toollab.eval.conversations`): every turn then
comes from that split instead (its worlds, its API combinations — test combinations for the test
split — and its reserved query texts), and the answer step of each turn after results keeps the
values the reference answer writes (:func:`answer_values`), which the ``conversation`` scorer
looks for in the model's answers.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from toollab.agents.conversation import (
    NO_TOOL_FITS,
    answer_turn,
    call_key,
    call_turn,
    observation_text,
    plain,
    tool_message,
)
from toollab.envs.base import Environment, env_class, instance_seed
from toollab.envs.generate import SPLITS, generate
from toollab.envs.splits import is_test_goal, query_allowed, task_set
from toollab.envs.tasks.common import Goal, TemplateError
from toollab.errors import ToolExecutionError, UsageError
from toollab.schema import Decision, GoldCall, Instance, Tool, ToolCall
from toollab.tools.execution import CallFailure, CallResult, prepare_call

Message = dict[str, Any]

#: kinds of user turn
CALL, FOLLOW_UP, NO_CALL, NO_SEARCH = "call", "follow-up call", "no-call", "no-search"
#: programs longer than this are left out of conversations (one step per call)
MAX_STEPS = 8
#: template draws a follow-up call may take before the turn becomes a no-call / no-search
FOLLOW_UP_TRIES = 30
#: facts per observation, and the longest value written into an answer
MAX_FACTS, MAX_VALUE = 6, 100


@dataclass
class Step:
    """One assistant step: its text, and the call it made with that call's result (or none)."""

    target: str
    call: ToolCall | None = None
    result: str | None = None
    #: an answer after results: the observed values it writes (:func:`answer_values`)
    values: list[str] = field(default_factory=list)


@dataclass
class UserTurn:
    instance: Instance
    kind: str
    steps: list[Step]


@dataclass
class Conversation:
    id: str
    env: str
    seed: int
    tools: list[Tool]
    turns: list[UserTurn] = field(default_factory=list)

    def messages(self, system: str) -> list[Message]:
        """The whole conversation as chat messages (``system`` first when non-empty)."""
        msgs: list[Message] = [{"role": "system", "content": system}] if system else []
        for turn in self.turns:
            msgs.append({"role": "user", "content": turn.instance.query})
            for step in turn.steps:
                msgs.append({"role": "assistant", "content": step.target})
                if step.call is not None and step.result is not None:
                    msgs.append(tool_message(step.call, step.result))
        return msgs

    @property
    def steps(self) -> list[Step]:
        return [s for t in self.turns for s in t.steps]


# -- the answer built from observed values -------------------------------------------------------
def _words(key: str) -> str:
    return key.replace("_", " ").strip()


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str) and value.strip() and len(value) <= MAX_VALUE:
        return value
    return None


def _label(item: Any) -> str | None:
    """The name of a listed item: itself when scalar, else its first short string field."""
    text = _scalar(item)
    if text is not None:
        return text
    if isinstance(item, dict):
        for key in ("title", "name", "id", "payee", "symbol"):
            text = _scalar(item.get(key))
            if text is not None:
                return text
        return next((t for t in map(_scalar, item.values()) if t and not t[:1].isdigit()), None)
    return None


@dataclass(frozen=True)
class Fact:
    """One phrase of an answer and the observed values it writes."""

    text: str
    values: tuple[str, ...] = ()


def observed_facts(value: Any) -> list[Fact]:
    """ "the X is Y" phrases for an observation's values (at most :data:`MAX_FACTS`), each with
    the values it writes: the one definition of what an answer built from a result says."""
    value = plain(value)
    out: list[Fact] = []
    if isinstance(value, dict):
        for key, v in value.items():
            if key == "kind" or len(out) >= MAX_FACTS:
                continue
            text = _scalar(v)
            if text is not None:
                out.append(Fact(f"the {_words(key)} is {text}", (text,)))
            elif isinstance(v, list):
                names = [n for n in map(_label, v[:5]) if n]
                if names:
                    out.append(Fact(f"the {_words(key)} are {', '.join(names)}", tuple(names)))
                elif not v:
                    out.append(Fact(f"there are no {_words(key)}"))
            elif isinstance(v, dict):
                items = [(k, t) for k, t in ((k, _scalar(x)) for k, x in v.items()) if t][:5]
                if items:
                    pairs = ", ".join(f"{k} {t}" for k, t in items)
                    out.append(Fact(f"the {_words(key)} are {pairs}", tuple(t for _, t in items)))
        return out
    if isinstance(value, list):
        names = [n for n in map(_label, value[:5]) if n]
        if names:
            return [Fact(f"the results are {', '.join(names)}", tuple(names))]
        return [Fact("there are no results")]
    text = _scalar(value)
    return [Fact(f"the result is {text}", (text,))] if text is not None else []


def facts(value: Any) -> list[str]:
    """The phrases of :func:`observed_facts`."""
    return [f.text for f in observed_facts(value)]


def answer_from(calls: Sequence[ToolCall], observations: Sequence[Any]) -> str:
    """The final answer of a turn: one sentence per call with the values its result holds."""
    sentences = []
    for call, obs in zip(calls, observations, strict=True):
        found = facts(obs)
        if found:
            sentences.append(f"{call.name}: {'; '.join(found)}.")
        else:
            sentences.append(f"{call.name}: done.")
    return " ".join(sentences) or "Done."


def _stated(value: Any) -> Iterator[str]:
    """The scalar values a call's arguments state, as :func:`_scalar` writes them."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _stated(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _stated(v)
    else:
        text = _scalar(value)
        if text is not None:
            yield text.casefold()


def answer_values(calls: Sequence[ToolCall], observations: Sequence[Any]) -> list[str]:
    """The observed values :func:`answer_from` writes for these results (each once, in order),
    but those the calls' own arguments state: what only reading the results can tell."""
    stated = {t for c in calls for t in _stated(c.model_dump(mode="json")["arguments"])}
    found = (v for obs in observations for f in observed_facts(obs) for v in f.values)
    return [v for v in dict.fromkeys(found) if v.casefold() not in stated]


# -- executing a program step by step -----------------------------------------------------------
class StepRunner:
    """An environment world that programs run in, one call at a time, without resets."""

    def __init__(self, env: Environment, seed: int, tools: list[Tool]) -> None:
        self.env, self.seed, self.tools = env, seed, tools
        self.history: list[list[GoldCall]] = []
        env.reset(seed)

    def restore(self) -> None:
        """Back to the world the accepted programs left (after a template or a failed run)."""
        self.env.reset(self.seed)
        for prog in self.history:
            if self.run(prog) is None:
                raise RuntimeError(f"{self.env.name}: an accepted program no longer executes")

    def run(self, program: Sequence[GoldCall]) -> tuple[list[ToolCall], list[Any]] | None:
        """(the calls with their references resolved, the results), or ``None`` when a call
        fails (the world is then left as it is: :meth:`restore` it)."""
        calls = list(program)
        done: list[CallResult] = []
        made: list[ToolCall] = []
        results: list[Any] = []
        for i, call in enumerate(calls):
            try:
                _entry, args = prepare_call(self.env.pool, calls, i, done)
                out = self.env.call_at(calls, i, done)
            except (CallFailure, ToolExecutionError):
                return None
            done.append(CallResult(index=i, call=call, arguments=args, output=out))
            made.append(ToolCall(name=call.name, arguments=args))
            results.append(out)
        return made, results

    def steps(self, program: Sequence[GoldCall], answered: dict[str, str]) -> list[Step] | None:
        """The steps of a program run now (its calls, results and the answer), or ``None``
        when it fails or repeats a call already answered: an identical call with an identical
        result, in the program or in ``answered`` (call key -> result text of the calls made)."""
        ran = self.run(program)
        if ran is None:
            self.restore()
            return None
        made, results = ran
        texts = [observation_text(r) for r in results]
        seen = dict(answered)
        for call, text in zip(made, texts, strict=True):
            key = call_key(call)
            if seen.get(key) == text:
                self.restore()
                return None
            seen[key] = text
        self.history.append(list(program))
        answered.update(seen)
        steps = [Step(call_turn(c, self.tools), c, t) for c, t in zip(made, texts, strict=True)]
        answer = answer_turn(answer_from(made, results))
        steps.append(Step(answer, values=answer_values(made, results)))
        return steps


# -- building conversations -----------------------------------------------------------------------
@dataclass
class EpisodeConfig:
    """How many conversations of one environment, and what follows the first turn."""

    env: str
    n: int
    seed: int = 0
    #: the split the turns come from: ``train`` for training data, ``validation`` / ``test``
    #: for the conversation evaluation (held-out worlds, combinations and queries)
    split: str = "train"
    #: at most this many user turns after the first
    followups: int = 2
    #: shares of the follow-up kinds (call, no-call, no-search)
    followup_mix: tuple[float, float, float] = (0.5, 0.25, 0.25)

    def __post_init__(self) -> None:
        if self.n < 0 or self.followups < 0:
            raise UsageError("conversations: n and followups must be >= 0")
        if self.split not in SPLITS:
            raise UsageError(
                f"conversations: unknown split {self.split!r}; known: {', '.join(SPLITS)}"
            )
        if len(self.followup_mix) != 3 or min(self.followup_mix) < 0 or not sum(self.followup_mix):
            raise UsageError("conversations: the follow-up mix is three non-negative shares")


def _names(tools: Sequence[Tool]) -> tuple[str, ...]:
    return tuple(t.name for t in tools)


def _follow_up(
    cfg: EpisodeConfig,
    runner: StepRunner,
    rng: random.Random,
    used: set[str],
    answered: dict[str, str],
    turn_id: str,
) -> UserTurn | None:
    """A follow-up call drawn in the current world, or ``None`` after :data:`FOLLOW_UP_TRIES`."""
    ts = task_set(cfg.env)
    names = sorted(ts.templates)
    weights = [ts.weights.get(n, 1.0) for n in names]
    for _ in range(FOLLOW_UP_TRIES):
        name = rng.choices(names, weights)[0]
        try:
            goal: Goal = ts.templates[name](rng, runner.env)
        except TemplateError:
            runner.restore()
            continue
        runner.restore()
        query = goal.text()
        tools = runner.tools if goal.tools is None else [runner.env.tool(t) for t in goal.tools]
        if (
            not goal.calls
            or len(goal.calls) > MAX_STEPS
            or _names(tools) != _names(runner.tools)
            or is_test_goal(cfg.env, name, goal.calls, runner.seed, 0) is not (cfg.split == "test")
            or query in used
            or not query_allowed(cfg.split, query, call=True)
        ):
            continue
        steps = runner.steps(goal.calls, answered)
        if steps is None:
            continue
        used.add(query)
        inst = Instance(
            id=turn_id,
            query=query,
            tools=runner.tools,
            gold=goal.calls,
            decision=Decision.CALL,
            source=f"env:{cfg.env}",
            category=runner.env.scenario,
            split=cfg.split,
            metadata={"env": cfg.env, "seed": runner.seed, "template": name, "follow_up": True},
        )
        return UserTurn(inst, FOLLOW_UP, steps)
    return None


def _answer_turn(inst: Instance, kind: str) -> UserTurn:
    text = NO_TOOL_FITS if kind == NO_CALL else (inst.answer or NO_TOOL_FITS)
    return UserTurn(inst, kind, [Step(answer_turn(text))])


def build_conversations(cfg: EpisodeConfig) -> list[Conversation]:
    """``cfg.n`` conversations of one environment (deterministic in the config)."""
    rng = random.Random(f"episodes|{cfg.env}|{cfg.seed}")
    # the split of split seed 0 (the evaluation splits' seed); for train never a test
    # combination, for validation / test never a training query or world
    pool = generate(cfg.env, cfg.split, max(40, 3 * cfg.n), 0)
    if cfg.seed:
        rng.shuffle(pool)
    firsts = [i for i in pool if i.gold and len(i.gold) <= MAX_STEPS]
    others = {
        NO_CALL: [i for i in pool if i.decision is Decision.NO_CALL],
        NO_SEARCH: [i for i in pool if i.decision is Decision.NO_SEARCH],
    }
    env = env_class(cfg.env)()
    out: list[Conversation] = []
    used_others: set[str] = set()
    for first in firsts:
        if len(out) >= cfg.n:
            break
        runner = StepRunner(env, instance_seed(first), list(first.tools))
        answered: dict[str, str] = {}
        steps = runner.steps(first.gold, answered)
        if steps is None:
            continue
        part = "" if cfg.split == "train" else f"{cfg.split}-"
        conv = Conversation(
            f"{cfg.env}-conv-{part}{len(out):05d}", cfg.env, runner.seed, runner.tools
        )
        conv.turns.append(UserTurn(first, CALL, steps))
        used = {first.query}
        for _ in range(rng.randint(0, cfg.followups)):
            kind = rng.choices([FOLLOW_UP, NO_CALL, NO_SEARCH], cfg.followup_mix)[0]
            turn_id = f"{conv.id}-turn{len(conv.turns)}"
            turn = (
                _follow_up(cfg, runner, rng, used, answered, turn_id) if kind == FOLLOW_UP else None
            )
            if turn is None:
                kind = NO_CALL if kind == FOLLOW_UP else kind
                fits = [
                    i
                    for i in others[kind]
                    if _names(i.tools) == _names(runner.tools) and i.query not in used
                ]
                fresh = [i for i in fits if i.id not in used_others]
                if not fits:
                    continue
                pick = rng.choice(fresh or fits)
                used_others.add(pick.id)
                used.add(pick.query)
                turn = _answer_turn(pick, kind)
            conv.turns.append(turn)
        out.append(conv)
    return out
