"""The :class:`Dataset` every adapter returns, the adapter registry and :func:`load_dataset`.

An adapter reads one upstream benchmark's files as they are published and turns every record into
a :class:`toollab.schema.Instance`.  Adapters register under a format name
(``@register_adapter``); :func:`get_adapter` finds them, with a did-you-mean hint for typos.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from toollab.data.atomic import atomic_write
from toollab.data.jsonl import json_text
from toollab.data.stats import compute_stats
from toollab.errors import ArgumentError, InputError, UsageError, check_arg, did_you_mean
from toollab.registry import Registry
from toollab.schema import Instance, Tool


def _instance_bytes(inst: Instance) -> bytes:
    """The canonical serialization of one instance (its content, id included).  Where the data
    lies on disk is not content: an adapter's ``metadata["file"]`` counts by its file name only,
    so the same data read from another folder (another clone, another machine) has the same
    fingerprint and its runs resume and rescore there."""
    file = inst.metadata.get("file")
    if isinstance(file, str) and file:
        inst = inst.model_copy(update={"metadata": {**inst.metadata, "file": Path(file).name}})
    # ``reference`` at its default is left out, so fingerprints from before the field existed
    # still match the same data
    skip = {"reference"} if inst.reference else None
    try:
        return inst.model_dump_json(exclude=skip).encode("utf-8")
    except ValueError:  # a lone surrogate in the text: escape it
        dumped = inst.model_dump(mode="json", exclude=skip)
        return json.dumps(dumped, sort_keys=True).encode("ascii")


@dataclass
class Dataset:
    """Instances of one benchmark plus the pool of every tool they (or the tool files) define."""

    name: str
    format: str
    instances: list[Instance]
    tools: list[Tool] = field(default_factory=list)
    path: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)
    #: adapter-specific counts shown by ``toollab data inspect`` (e.g. ToolEyes' control tools)
    details: dict[str, Any] = field(default_factory=dict)
    #: what a user must know about how this data differs from the upstream setting (see
    #: :func:`note`); shown by ``data inspect`` and, as a :class:`DataNote`, by every command
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for inst in self.instances:
            if inst.id in seen:
                raise InputError(f"duplicate instance id {inst.id!r}", path=self.path)
            seen.add(inst.id)
        self._index: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.instances)

    def __iter__(self) -> Iterator[Instance]:
        return iter(self.instances)

    def __getitem__(self, i: int) -> Instance:
        return self.instances[i]

    @property
    def ids(self) -> list[str]:
        return [inst.id for inst in self.instances]

    @property
    def fingerprint(self) -> str:
        """A stable hash of the instances, ids and content, in order: tells runs on different
        data apart, and a dataset whose instances were edited from the one a run used (a
        resume then refuses to mix old and new predictions).  Computed once per list of
        instances (about 0.25 ms per instance)."""
        key = (id(self.instances), len(self.instances))
        cached = self.__dict__.get("_fingerprint")
        if cached is not None and cached[0] == key:
            return str(cached[1])
        h = hashlib.sha256()
        for inst in self.instances:
            h.update(_instance_bytes(inst))
            h.update(b"\n")
        value = h.hexdigest()[:16]
        self.__dict__["_fingerprint"] = (key, value)
        return value

    def by_id(self, inst_id: str) -> Instance:
        if self._index is None:
            self._index = {inst.id: i for i, inst in enumerate(self.instances)}
        if inst_id not in self._index:
            raise InputError(f"no instance {inst_id!r} in dataset {self.name!r}", path=self.path)
        return self.instances[self._index[inst_id]]

    def tool(self, name: str) -> Tool | None:
        for t in self.tools:
            if t.name == name:
                return t
        return None

    def subset(self, instances: Iterable[Instance], name: str | None = None) -> Dataset:
        """The same dataset restricted to ``instances`` (the tool pool is kept)."""
        return Dataset(
            name=name or self.name,
            format=self.format,
            instances=list(instances),
            tools=self.tools,
            path=self.path,
            options=dict(self.options),
            details=dict(self.details),
            notes=list(self.notes),
        )

    def head(self, n: int) -> Dataset:
        return self.subset(self.instances[: max(n, 0)])

    def filter(self, pred: Callable[[Instance], bool]) -> Dataset:
        return self.subset(i for i in self.instances if pred(i))

    def stats(self) -> dict[str, Any]:
        """Counts: instances, tools, calls per instance, nested, by category/decision/split."""
        out: dict[str, Any] = {
            "name": self.name,
            "format": self.format,
            "path": str(self.path) if self.path is not None else None,
            "fingerprint": self.fingerprint,
        }
        out.update(compute_stats(self.instances, self.tools))
        if self.details:
            out["details"] = dict(self.details)
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def write_jsonl(self, path: str | Path) -> Path:
        """Write the instances as toollab JSON lines (readable with ``--format toollab``)."""
        p = Path(path)
        with atomic_write(p) as fh:  # only a regular file is replaced; never half a file
            for inst in self.instances:
                fh.write(json_text(inst.model_dump(mode="json")) + "\n")
        return p


class DataNote(UserWarning):
    """A dataset is read in a setting that differs from upstream's (e.g. Seal-Tools instances
    offering only their gold tools).  The CLI prints these as ``note: ...`` on stderr."""


def note(message: str) -> str:
    """Emit ``message`` as a :class:`DataNote` and return it (for ``Dataset.notes``)."""
    warnings.warn(message, DataNote, stacklevel=3)
    return message


def tool_pool(tools: Iterable[Tool]) -> list[Tool]:
    """Distinct tool definitions in first-seen order (same name + category + schema = same tool)."""
    seen: set[tuple[str, str | None, str, str]] = set()
    out: list[Tool] = []
    for t in tools:
        key = (t.name, t.category, t.description, json.dumps(t.parameters, sort_keys=True))
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def offer_tools(instance: Instance, tools: list[Tool]) -> Instance:
    """The instance offered ``tools`` in place of the tools the dataset hands it (retrieval in
    the loop).  The answer key stays: a gold tool left out is a retriever miss, named in
    ``metadata["gold_not_offered"]``."""
    names = {t.name for t in tools}
    meta = dict(instance.metadata)
    meta["gold_not_offered"] = sorted({c.name for c in instance.gold} - names)
    return instance.model_copy(update={"tools": tools, "metadata": meta})


# -- adapters ---------------------------------------------------------------------------------


class Adapter:
    """Reads one benchmark's upstream files.  Subclasses set ``name`` and define ``load``.

    ``load(self, path: Path, *, option=default, ...) -> Dataset`` reads a folder or file; its
    keyword-only parameters are the adapter's options (``-o key=value`` on the command line).
    Values may arrive as strings and are converted by the adapter.
    """

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    #: the prompt template a run uses when none is named (``--template``): the benchmark's own
    default_template: ClassVar[str] = "json"
    #: the agent a run uses when none is named (``--agent``): the benchmark's own protocol
    default_agent: ClassVar[str] = "single"
    #: evaluation data only: exporting it as training data is refused (``toollab data sft``)
    evaluation_only: ClassVar[bool] = False
    #: what executes the calls when the run names nothing (``--tool-server``): ``sim`` for a
    #: benchmark whose tools are real APIs answered by the simulated tool server; ``None``: the
    #: environment the instances name, if any
    default_tool_server: ClassVar[str | None] = None
    #: ``load(path, **options) -> Dataset``; each adapter names its own options
    load: Callable[..., Dataset]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not callable(getattr(cls, "load", None)):
            raise TypeError(f"adapter {cls.__name__} must define load(path, **options)")

    def defaults_for(self, instances: Iterable[Instance]) -> Adapter:
        """The adapter whose defaults (template, agent, tool server) a run over ``instances`` of
        this format uses: this one.  toollab's own format answers with the adapter its
        instances came from, so a file it wrote is run as its benchmark is."""
        return self

    def offered(self, instance: Instance, tools: list[Tool]) -> Instance:
        """The instance as a retriever offers it ``tools`` (:func:`offer_tools`: the answer key
        stays).  A benchmark whose right decision depends on what is offered (DEER: no proper
        tool among the candidates, no call) re-derives its answer key here."""
        return offer_tools(instance, tools)

    def load_tools(self, path: Path, **options: Any) -> list[Tool]:
        """Read only the tool pool (default: the pool of :meth:`load`)."""
        return self.load(path, **options).tools

    def option_names(self) -> list[str]:
        sig = inspect.signature(self.load)
        return [p.name for p in sig.parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]

    def check_options(self, options: dict[str, Any]) -> None:
        known = self.option_names()
        for key in options:
            if key not in known:
                accepted = ", ".join(known) if known else "none"
                raise UsageError(
                    f"unknown option {key!r} for format {self.name!r}"
                    f"{did_you_mean(key, known)}; accepted options: {accepted}"
                )


def _norm(fmt: str) -> str:
    return fmt.strip().lower().replace("_", "-").replace(" ", "-")


def _adopt_adapter(registry: Registry[Adapter], name: str, cls: Any) -> None:
    """An entry point's adapter class: registered under the entry point's name."""
    if not (isinstance(cls, type) and issubclass(cls, Adapter)):
        raise TypeError(f"a dataset format must be an Adapter subclass, got {cls!r}")
    if _norm(getattr(cls, "name", "")) != name:
        raise ValueError(f"the adapter's name is {getattr(cls, 'name', None)!r}, not {name!r}")
    register_adapter(cls)


#: one adapter instance per dataset format; plugins: ``format:NAME`` entry points
ADAPTERS: Registry[Adapter] = Registry(
    "format",
    label="dataset format",
    builtins=("toollab.data.adapters",),
    normalize=_norm,
    adopt=_adopt_adapter,
    known_label="known formats",
)
A = TypeVar("A", bound=type[Adapter])


def register_adapter(cls: A) -> A:
    """Class decorator: register an adapter under its ``name`` and ``aliases``."""
    inst = cls()
    ADAPTERS.register(inst.name, inst, aliases=inst.aliases)
    return cls


def available_formats() -> list[str]:
    return ADAPTERS.names()


def get_adapter(fmt: str) -> Adapter:
    """The adapter for ``fmt`` (case, ``_`` and ``-`` do not matter)."""
    return ADAPTERS.get(fmt)


def _check_path(path: str | Path) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise InputError("no such file or directory", path=p)
    return p


def _check_load_args(function: str, path: object, format: object) -> None:
    if not isinstance(path, str | Path) or not str(path).strip():
        raise ArgumentError(f"{function}(path)", "a path (a non-empty str or Path)", path)
    check_arg(f"{function}(format)", format, str, "a format name such as 'bfcl'")


def load_dataset(path: str | Path, format: str, **options: Any) -> Dataset:
    """Read a benchmark in its upstream layout, e.g. ``load_dataset("data/seal-tools", "seal-tools")``."""
    _check_load_args("load_dataset", path, format)
    adapter = get_adapter(format)
    adapter.check_options(options)
    return adapter.load(_check_path(path), **options)


def load_tools(path: str | Path, format: str, **options: Any) -> list[Tool]:
    """Read a benchmark's tool pool only (e.g. DEER's ``tool.json``, Seal-Tools' ``tool.jsonl``)."""
    _check_load_args("load_tools", path, format)
    adapter = get_adapter(format)
    adapter.check_options(options)
    return adapter.load_tools(_check_path(path), **options)


# -- option checks shared by adapters -----------------------------------------------------------


def as_list(value: Any, option: str) -> list[str] | None:
    """An option that takes several names: a list, or a comma-separated string."""
    if value is None:
        return None
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, list | tuple | set):
        items = [str(v).strip() for v in value]
    else:
        raise UsageError(f"option {option!r} takes names (comma-separated), got {value!r}")
    return items


def as_path(value: Any, option: str) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str | Path):
        raise UsageError(f"option {option!r} takes a path, got {value!r}")
    return _check_path(value)


def check_choices(values: list[str], choices: list[str], option: str) -> None:
    for v in values:
        if v not in choices:
            raise UsageError(
                f"unknown {option} {v!r}{did_you_mean(v, choices)}; available: {', '.join(choices)}"
            )
