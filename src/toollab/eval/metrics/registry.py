"""The scorer registry.

A scorer turns a run's predictions (``Prediction`` records) and the dataset's instances into one
:class:`MetricResult`.  Scorers register themselves with :func:`scorer`; :func:`applicable_scorers`
picks the ones that fit a dataset by ``Instance.source``.

Every scorer follows the same contract:

* it never raises on model output: an errored or empty prediction scores as a failure;
* it re-reads ``Prediction.raw`` with the upstream rule of its benchmark where the benchmark
  defines one, so its numbers do not depend on the parser the run used;
* figures are fractions in ``[0, 1]`` (``None`` when a figure is undefined, e.g. no items).
"""

from __future__ import annotations

import fnmatch
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from toollab.errors import ArgumentError, check_arg
from toollab.registry import Registry
from toollab.schema import Instance
from toollab.schema.measures import mean, prf, ratio
from toollab.schema.record import Prediction

__all__ = [
    "MetricResult",
    "Scorer",
    "applicable_scorers",
    "get_scorer",
    "instance_key",
    "mean",
    "prf",
    "ratio",
    "score_all",
    "scorer",
    "scorer_class",
    "scorer_names",
]

Number = float | None


class MetricResult(BaseModel):
    """What a scorer returns."""

    scorer: str = ""
    #: headline figures, e.g. ``{"tool_f1": 0.93}``
    metrics: dict[str, Number] = Field(default_factory=dict)
    #: the same or related figures per category / split, e.g. ``{"nested": {"tool_f1": 0.7}}``
    breakdown: dict[str, dict[str, Number]] = Field(default_factory=dict)
    #: error-type counts, e.g. ``{"simple_function_checker:wrong_func_name": 3}``
    errors: dict[str, int] = Field(default_factory=dict)
    #: per-instance details keyed by instance id (``id@repeat`` for repeats > 0)
    per_instance: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: sizes behind the figures (``n``, ``missing``, ...)
    counts: dict[str, int] = Field(default_factory=dict)
    #: plain-language remarks (e.g. which figures need a judge)
    notes: list[str] = Field(default_factory=list)

    def add_error(self, kind: str, n: int = 1) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + n


class Scorer(ABC):
    """Base class of every scorer.  Subclasses set the class attributes and implement
    :meth:`score`; :meth:`accepts` may be overridden for finer selection than ``formats``."""

    name: ClassVar[str] = ""
    #: ``Instance.source`` values (glob patterns allowed, e.g. ``"env:*"``) this scorer reads
    formats: ClassVar[tuple[str, ...]] = ()
    #: what it reads from a prediction: ``raw``, ``steps``, ``execution``, ``judge``
    needs: ClassVar[tuple[str, ...]] = ("raw",)
    description: ClassVar[str] = ""
    #: part of the default selection of :func:`applicable_scorers` (the upstream-faithful
    #: scorers); a corrected variant (``*_strict``) is ``False`` and runs when named
    default: ClassVar[bool] = True

    def accepts(self, instance: Instance) -> bool:
        src = instance.source or ""
        return any(fnmatch.fnmatchcase(src, pat) for pat in self.formats)

    @abstractmethod
    def score(self, predictions: list[Prediction], instances: dict[str, Instance]) -> MetricResult:
        """Score ``predictions`` (any order, unknown ids counted) against ``instances``."""

    @classmethod
    def definitions(cls) -> dict[str, dict[str, Any]]:
        """The figures this scorer defines, by figure name: ``{label, definition, percent}``
        (every view prints the label and shows the definition).  None by default."""
        return {}

    # -- shared by subclasses ----------------------------------------------------------------
    def pairs(
        self, predictions: list[Prediction], instances: dict[str, Instance], result: MetricResult
    ) -> Iterator[tuple[Prediction, Instance]]:
        """The (prediction, instance) pairs this scorer reads; unknown ids are counted."""
        unknown = 0
        for pred in predictions:
            inst = instances.get(pred.id)
            if inst is None:
                unknown += 1
                continue
            if self.accepts(inst):
                yield pred, inst
        if unknown:
            result.counts["unknown_id"] = result.counts.get("unknown_id", 0) + unknown

    def new_result(self) -> MetricResult:
        return MetricResult(scorer=self.name)


def instance_key(pred: Prediction) -> str:
    return pred.id if not pred.repeat else f"{pred.id}@{pred.repeat}"


# -- the registry ---------------------------------------------------------------------------


def _adopt_scorer(registry: Registry[type[Scorer]], name: str, cls: Any) -> None:
    """An entry point's scorer class: registered under the entry point's name with the
    ``formats``, ``needs``, ``description`` and ``default`` it declares."""
    if not (isinstance(cls, type) and issubclass(cls, Scorer)):
        raise TypeError(f"a scorer must be a Scorer subclass, got {cls!r}")
    scorer(
        name,
        formats=cls.formats,
        needs=cls.needs,
        description=cls.description,
        default=cls.default,
    )(cls)


#: scorer classes; plugins: ``scorer:NAME`` entry points
SCORERS: Registry[type[Scorer]] = Registry(
    "scorer", builtins=("toollab.eval.metrics",), adopt=_adopt_scorer
)


def scorer(
    name: str,
    *,
    formats: tuple[str, ...],
    needs: tuple[str, ...] = ("raw",),
    description: str = "",
    default: bool = True,
) -> Callable[[type[Scorer]], type[Scorer]]:
    """Class decorator: register a :class:`Scorer` subclass under ``name``."""
    check_arg("scorer(name)", name, str, "a scorer name (a string)")
    for arg, value in (("formats", formats), ("needs", needs)):
        if isinstance(value, str) or not isinstance(value, tuple | list):
            raise ArgumentError(f"scorer({arg}=...)", "a tuple of strings", value)
        for item in value:
            check_arg(f"scorer({arg}=...)", item, str, "a tuple of strings")

    def deco(cls: type[Scorer]) -> type[Scorer]:
        if not (isinstance(cls, type) and issubclass(cls, Scorer)):
            raise ArgumentError(f"@scorer({name!r})", "a Scorer subclass", cls)
        cls.name = name
        cls.formats = formats
        cls.needs = needs
        cls.description = description or (cls.__doc__ or "").strip().split("\n")[0]
        cls.default = default
        return SCORERS.register(name, cls)

    return deco


def scorer_names() -> list[str]:
    return SCORERS.names()


def scorer_class(name: str) -> type[Scorer]:
    return SCORERS.get(name)


def get_scorer(name: str, **options: Any) -> Scorer:
    """An instance of the scorer ``name``; ``options`` go to its constructor (e.g. ``judge=``)."""
    return scorer_class(name)(**options)


def applicable_scorers(
    instances: Iterable[Instance] | dict[str, Instance],
    *,
    include_variants: bool = False,
    options: dict[str, dict[str, Any]] | None = None,
) -> list[Scorer]:
    """The scorers that read at least one of these instances, in name order.

    By default only the default (upstream-faithful) scorers; ``include_variants=True`` adds the
    corrected variants (``seal_tools_strict``, ``deer_strict``, ``tooleyes_strict``).
    ``options`` maps a scorer name to constructor options (e.g. ``{"tooleyes": {"judge": j}}``).
    """
    items = list(instances.values()) if isinstance(instances, dict) else list(instances)
    out: list[Scorer] = []
    for name, cls in SCORERS.items():
        if not include_variants and not cls.default:
            continue
        sc = cls(**(options or {}).get(name, {}))
        if any(sc.accepts(inst) for inst in items):
            out.append(sc)
    return out


def score_all(
    predictions: list[Prediction],
    instances: dict[str, Instance],
    scorers: list[Scorer] | None = None,
) -> dict[str, MetricResult]:
    """Run every applicable default scorer (or the given ones); a scorer bug is reported, not
    raised."""
    chosen = scorers if scorers is not None else applicable_scorers(instances)
    out: dict[str, MetricResult] = {}
    for sc in chosen:
        try:
            out[sc.name] = sc.score(predictions, instances)
        except Exception as exc:  # a scorer bug must not lose the other scores
            res = MetricResult(scorer=sc.name)
            res.notes.append(f"scorer failed: {type(exc).__name__}: {exc}")
            res.add_error("scorer_exception")
            out[sc.name] = res
    return out
