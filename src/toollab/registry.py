"""One registry for every kind of extension, and the one plugin entry-point group.

toollab is extended the same way whatever the kind: a model provider, an agent, a scorer, a
prompt template, an environment, a dataset format, a retriever or an output parser is an object
registered under a name in the :class:`Registry` of its kind.  The built-ins are registered by
the same decorators a plugin uses (``@register_agent("react")``, ``@scorer(...)``,
``@register_env(...)``, ...): toollab's own components are plugins that happen to ship with it.

A registry loads lazily: the first lookup imports the built-in modules of its kind, then the
plugins of that kind, so a CLI command pays only for the kinds it uses.

Plugins
-------
An installed distribution offers components through **one** entry-point group,
:data:`PLUGIN_GROUP` (``toollab.plugins``), with one entry point per component named
``KIND:NAME``::

    [project.entry-points."toollab.plugins"]
    "agent:myagent" = "myplugin.agents:MyAgent"
    "scorer:myscorer" = "myplugin.scorers:MyScorer"
    "model:echo" = "myplugin.models:echo_provider"

``KIND`` is one of :func:`kinds` (``model``, ``agent``, ``scorer``, ``template``,
``environment``, ``format``, ``retriever``, ``parser``) and ``NAME`` the name users type.  The
entry point's object is loaded when its kind is first used.  If importing it registered ``NAME``
already (the object is decorated with the kind's decorator) nothing more happens; otherwise the
object itself is registered under ``NAME`` (a factory, a class) after the kind's check.  A
built-in keeps its name: a plugin entry point that names one is skipped with a warning, and a
plugin whose import registers a built-in's name (of any kind) fails to load with a
:class:`PluginError` naming it.  A plugin that fails to load (an exception, ``SystemExit`` or its
own ``KeyboardInterrupt`` at import; a real Ctrl-C still stops toollab) is skipped with a :class:`PluginWarning`, and asking for it by name raises the
:class:`PluginError` that says why.  A distribution whose metadata cannot be read is skipped
with a warning (:func:`broken_distributions`).

Model providers are still also read from the older group ``toollab.models`` (entry point name =
provider name).
"""

from __future__ import annotations

import importlib
import inspect
import re
import signal
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from importlib.metadata import Distribution, EntryPoint, distributions
from types import FrameType
from typing import Any, Generic, TypeVar

from toollab.errors import ArgumentError, InputError, UsageError, check_arg, did_you_mean

T = TypeVar("T")

#: the one entry-point group of toollab plugins; entry point names are ``KIND:NAME``
PLUGIN_GROUP = "toollab.plugins"
#: the origin of a component registered by toollab itself
BUILTIN = "builtin"


class PluginError(InputError):
    """An installed plugin cannot be used: it fails to import, names an unknown kind, or its
    object is not what its kind needs."""


class PluginWarning(UserWarning):
    """A plugin was skipped (it failed to load, or names a built-in)."""


@dataclass(frozen=True)
class PluginEntry:
    """One entry point of :data:`PLUGIN_GROUP` (or of a kind's older group), parsed."""

    kind: str
    name: str
    #: ``module:object`` the entry point names
    value: str
    #: the distribution that declares it, ``"name version"``
    dist: str
    group: str
    entry_point: EntryPoint

    @property
    def where(self) -> str:
        label = f"{self.kind}:{self.name}" if self.group == PLUGIN_GROUP else self.name
        return f"entry point {label!r} = {self.value!r} of {self.dist} (group {self.group!r})"


def _dist_of(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "an unknown distribution"
    return f"{dist.metadata['Name']} {dist.version}"


#: installed distributions whose metadata cannot be read, each with the problem (reported once)
_BROKEN_DISTS: dict[str, str] = {}


def _dist_label(dist: Distribution) -> str:
    path = getattr(dist, "_path", None)
    return str(path) if path is not None else repr(dist)


@cache
def _group(group: str) -> tuple[EntryPoint, ...]:
    """The entry points of ``group`` (one scan of the installed distributions per group and
    process).  A distribution whose metadata cannot be read (a malformed or non-UTF-8
    ``entry_points.txt`` or ``METADATA``) is skipped with a :class:`PluginWarning`: one broken
    package never stops toollab from starting."""
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for dist in distributions():
        label = _dist_label(dist)
        try:
            name = dist.metadata["Name"]
            key = re.sub(r"[-_.]+", "-", name).lower() if isinstance(name, str) else label
            if key in seen:  # the first of one name on sys.path wins, as importlib's own scan
                continue
            seen.add(key)
            found.extend(dist.entry_points.select(group=group))
            _note_unread_lines(dist, label)
        except Exception as exc:  # metadata is text from outside: anything may be wrong
            if label not in _BROKEN_DISTS:
                problem = (
                    f"the installed distribution at {label} has unreadable metadata and is "
                    f"skipped: {type(exc).__name__}: {exc}"
                )
                _BROKEN_DISTS[label] = problem
                warnings.warn(f"toollab: {problem}", PluginWarning, stacklevel=2)
    return tuple(found)


def shield_pydantic_plugins() -> None:
    """Read pydantic's own plugins now, guarded.  pydantic scans every installed distribution's
    entry points when the first model class is made; one malformed ``entry_points.txt`` on
    ``sys.path`` would make that (so ``import toollab``, so every command) raise.  On such a
    failure pydantic goes on without plugins and the broken distribution is named in a
    :class:`PluginWarning` (the scan of :data:`PLUGIN_GROUP` skips it likewise)."""
    try:
        from pydantic.plugin._loader import get_plugins
    except ImportError:  # pragma: no cover - a pydantic without plugins
        return
    try:
        get_plugins()  # a failed scan leaves pydantic with no plugins, and it does not retry
    except Exception as exc:
        _group(PLUGIN_GROUP)  # warns about each distribution it skips
        if not _BROKEN_DISTS:
            warnings.warn(
                f"toollab: pydantic's plugins could not be read and are not used: "
                f"{type(exc).__name__}: {exc}",
                PluginWarning,
                stacklevel=2,
            )


#: an ``entry_points.txt`` line importlib reads: a ``[section]`` or ``name = value``
_EP_LINE = re.compile(r"\[[^\[\]]+\]|[^=\s][^=]*=\s*\S.*")


def _note_unread_lines(dist: Distribution, label: str) -> None:
    """Record, as a problem of the distribution, the lines of an ``entry_points.txt`` that
    mentions toollab which importlib silently ignores (a section header without its ``]``, a
    line outside any section, one without ``=``): the plugin they were meant to declare would
    otherwise be missing without a word."""
    text = dist.read_text("entry_points.txt")
    if not text or "toollab" not in text:
        return
    section = False
    bad: list[str] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if _EP_LINE.fullmatch(line) is None or (not section and not line.startswith("[")):
            bad.append(f"line {n}: {line[:60]!r}")
        elif line.startswith("["):
            section = True
    if bad and label not in _BROKEN_DISTS:
        problem = (
            f"the entry_points.txt of the distribution at {label} has lines that are not read: "
            + "; ".join(bad[:3])
            + (f" (+{len(bad) - 3} more)" if len(bad) > 3 else "")
        )
        _BROKEN_DISTS[label] = problem
        warnings.warn(f"toollab: {problem}", PluginWarning, stacklevel=3)


def broken_distributions() -> list[str]:
    """The problems of installed distributions whose metadata could not be read."""
    for group in (PLUGIN_GROUP,):
        _group(group)
    return sorted(_BROKEN_DISTS.values())


def refresh_plugins() -> None:
    """Forget the entry points read so far (after installing a plugin in a running process);
    registries already loaded keep what they have."""
    _group.cache_clear()
    _BROKEN_DISTS.clear()


def plugin_entries() -> list[PluginEntry]:
    """Every entry point of :data:`PLUGIN_GROUP`, parsed into kind and name (``kind`` is ``""``
    when the name has no ``KIND:`` prefix)."""
    out = []
    for ep in _group(PLUGIN_GROUP):
        kind, sep, name = ep.name.partition(":")
        if not sep:
            kind, name = "", ep.name
        out.append(
            PluginEntry(kind.strip(), name.strip(), ep.value, _dist_of(ep), PLUGIN_GROUP, ep)
        )
    return out


_KINDS: dict[str, Registry[Any]] = {}

#: the plugin entry points being imported in this thread (innermost last)
_IMPORTING = threading.local()


def _importing_plugin() -> PluginEntry | None:
    stack: list[PluginEntry] = getattr(_IMPORTING, "stack", [])
    return stack[-1] if stack else None


def kinds() -> dict[str, Registry[Any]]:
    """The registries created so far, by kind (each is created by the module that owns its kind,
    e.g. ``toollab.agents.base``)."""
    return dict(_KINDS)


def unknown_kind_entries() -> list[tuple[PluginEntry, str]]:
    """Entry points of :data:`PLUGIN_GROUP` whose ``KIND`` is not a kind, each with the problem."""
    out = []
    for entry in plugin_entries():
        if entry.kind in _KINDS:
            continue
        problem = (
            f"{entry.where}: its name must be KIND:NAME"
            if not entry.kind
            else f"{entry.where}: unknown kind {entry.kind!r}"
            f"{did_you_mean(entry.kind, list(_KINDS))}"
        )
        out.append((entry, f"{problem}; kinds: {', '.join(sorted(_KINDS))}"))
    return out


def _default_adopt(registry: Registry[Any], name: str, obj: Any) -> None:
    if not callable(obj):
        raise TypeError(
            f"a {registry.label} must be a class or a factory, got {type(obj).__name__}"
        )
    registry.register(name, obj)


class Registry(Generic[T]):
    """Named objects of one kind: registration, lookup with did-you-mean errors, lazy built-ins
    and plugins.

    ``kind`` is the ``KIND`` of entry point names; ``label`` names the kind in messages
    ("unknown *model provider* 'x'"); ``builtins`` are the modules whose import registers the
    built-ins; ``normalize`` maps a name typed by the user to its key (e.g. ``str.lower``);
    ``adopt(registry, name, obj)`` registers the object of an entry point that did not register
    itself (by default: any callable, under the entry point's name), raising ``TypeError`` or
    ``ValueError`` when the object does not fit; ``legacy_group`` is an older entry-point group
    of this kind whose names are bare names.
    """

    def __init__(
        self,
        kind: str,
        *,
        label: str | None = None,
        builtins: Sequence[str] = (),
        normalize: Callable[[str], str] | None = None,
        adopt: Callable[[Registry[T], str, Any], None] | None = None,
        known_label: str = "known",
        legacy_group: str | None = None,
    ) -> None:
        if not kind.isidentifier() or ":" in kind:
            raise ValueError(f"invalid registry kind {kind!r}")
        if kind in _KINDS:
            raise ValueError(f"a registry of kind {kind!r} exists already")
        self.kind = kind
        self.label = label or kind
        self.builtins = tuple(builtins)
        self.known_label = known_label
        self.legacy_group = legacy_group
        self._normalize = normalize or (lambda s: s)
        self._adopt = adopt or _default_adopt
        self._entries: dict[str, T] = {}
        #: user-typed key (normalised name or alias) -> registered name
        self._keys: dict[str, str] = {}
        self._origin: dict[str, str] = {}
        self._broken: dict[str, PluginError] = {}
        #: entry points skipped because they name a built-in, with the message
        self._skipped: list[str] = []
        self._loading_origin: str | None = None
        self._loaded = False
        self._builtins_loaded = False
        self._lock = threading.RLock()
        _KINDS[kind] = self

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} registered)"

    # -- registration -------------------------------------------------------------------------
    def register(self, name: str, obj: T, *, aliases: Sequence[str] = ()) -> T:
        """Register ``obj`` under ``name`` (and ``aliases``); a later registration of the same
        name replaces the earlier one, except that a built-in loaded late never replaces what
        user code registered.  Returns ``obj``."""
        self._check_name(name, aliases)
        name = self._normalize(name.strip())
        origin = self._loading_origin or _origin_of(obj)
        plugin = _importing_plugin()
        if plugin is not None and origin != BUILTIN:
            self._refuse_builtin_names(plugin, [name, *aliases])
        with self._lock:
            if origin == BUILTIN and self._origin.get(name, BUILTIN) != BUILTIN:
                return obj
            self._entries[name] = obj
            self._origin[name] = origin
            self._broken.pop(name, None)
            for key in (name, *aliases):
                self._keys[self._normalize(key)] = name
        return obj

    def _check_name(self, name: object, aliases: Sequence[object]) -> None:
        if not isinstance(name, str) or not name.strip():
            hint = (
                ' (the decorator takes the name: @register_...("name"))' if callable(name) else ""
            )
            raise ArgumentError(
                f"the {self.label}'s name", f"a non-empty name (a string){hint}", name
            )
        for alias in aliases:
            check_arg(f"an alias of {self.label} {name!r}", alias, str, "a string")

    def _refuse_builtin_names(self, plugin: PluginEntry, names: Sequence[str]) -> None:
        """A plugin being imported may not register a built-in's name or alias (whatever kind
        its entry point is of): :class:`PluginError` naming the plugin."""
        self._load_builtins()
        for key in names:
            owner = self._keys.get(self._normalize(key.strip()))
            if owner is not None and self._origin.get(owner) == BUILTIN:
                raise PluginError(
                    f"importing it registers the {self.label} {key!r}, the name of a built-in; "
                    "a plugin cannot replace a built-in (choose another name)",
                    where=plugin.where,
                )

    def decorator(self, name: str, *, aliases: Sequence[str] = ()) -> Callable[[T], T]:
        """``@registry.decorator("name")``: register the decorated object under ``name``."""
        self._check_name(name, aliases)

        def deco(obj: T) -> T:
            return self.register(name, obj, aliases=aliases)

        return deco

    def remove(self, name: str) -> None:
        """Forget ``name`` (and its aliases); unknown names are ignored."""
        key = self._normalize(name)
        with self._lock:
            self._entries.pop(key, None)
            self._origin.pop(key, None)
            for alias in [k for k, v in self._keys.items() if v == key]:
                del self._keys[alias]

    # -- lookup -------------------------------------------------------------------------------
    def names(self) -> list[str]:
        """The registered names, sorted."""
        self.load()
        return sorted(self._entries)

    def registered(self) -> list[str]:
        """The registered names in registration order (built-ins first, then plugins)."""
        self.load()
        return list(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        self.load()
        return isinstance(name, str) and self._normalize(name.strip()) in self._keys

    def __len__(self) -> int:
        self.load()
        return len(self._entries)

    def items(self) -> list[tuple[str, T]]:
        """``(name, object)`` pairs, sorted by name."""
        return [(n, self._entries[n]) for n in self.names()]

    def resolve(self, name: str) -> str:
        """The registered name that ``name`` (any case/alias the kind accepts) stands for; an
        unknown name raises :class:`~toollab.errors.UsageError` with a did-you-mean hint."""
        check_arg(f"the {self.label} name", name, str, "a name (a string)")
        self.load()
        key = self._normalize(name.strip())
        found = self._keys.get(key)
        if found is not None:
            return found
        if key in self._broken:
            raise self._broken[key]
        hint = did_you_mean(key, list(self._keys))
        raise UsageError(
            f"unknown {self.label} {name!r}{hint}; "
            f"{self.known_label}: {', '.join(sorted(self._entries))}"
        )

    def get(self, name: str) -> T:
        """The object registered under ``name``."""
        return self._entries[self.resolve(name)]

    def origin(self, name: str) -> str:
        """Where ``name`` comes from: :data:`BUILTIN`, ``"<distribution> <version>"`` for a
        plugin, or the module that registered it."""
        return self._origin[self.resolve(name)]

    def broken(self) -> dict[str, PluginError]:
        """Plugins of this kind that could not be loaded, by name, with the reason."""
        self.load()
        return dict(self._broken)

    def problems(self) -> list[str]:
        """Every plugin of this kind that is not in use, and why."""
        self.load()
        return [f"{self.label} {n!r}: {e}" for n, e in sorted(self._broken.items())] + list(
            self._skipped
        )

    # -- loading ------------------------------------------------------------------------------
    def load(self) -> None:
        """Import the built-ins and the installed plugins of this kind (once)."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            self._loaded = True  # set first: a built-in module may list names while importing
            try:
                self._load_builtins()
            except BaseException:
                self._loaded = False
                raise
            entries = [e for e in plugin_entries() if e.kind == self.kind]
            if self.legacy_group:
                entries += [
                    PluginEntry(self.kind, ep.name, ep.value, _dist_of(ep), ep.group, ep)
                    for ep in _group(self.legacy_group)
                ]
            for entry in entries:
                self._load_entry(entry)

    def _load_builtins(self) -> None:
        """Import the modules that register the built-ins of this kind (once)."""
        if self._builtins_loaded:
            return
        with self._lock:
            if self._builtins_loaded:
                return
            self._builtins_loaded = True
            previous, self._loading_origin = self._loading_origin, BUILTIN
            try:
                for mod in self.builtins:
                    importlib.import_module(mod)
            except BaseException:
                self._builtins_loaded = False
                raise
            finally:
                self._loading_origin = previous

    def _load_entry(self, entry: PluginEntry) -> None:
        name = self._normalize(entry.name)
        if name in self._entries:
            if self._origin.get(name) == BUILTIN:
                message = f"{entry.where} names the built-in {self.label} {name!r}; skipped"
                self._skipped.append(message)
                warnings.warn(f"toollab: {message}", PluginWarning, stacklevel=2)
            return
        self._loading_origin = entry.dist
        stack = getattr(_IMPORTING, "stack", None)
        if stack is None:
            stack = _IMPORTING.stack = []
        stack.append(entry)
        try:
            with _user_interrupts() as user_interrupted:
                obj = entry.entry_point.load()
            if name not in self._entries:
                if inspect.ismodule(obj):
                    if entry.group == PLUGIN_GROUP:
                        raise ValueError(
                            f"importing module {obj.__name__!r} registered no {self.label} {name!r}"
                        )
                    return  # an older-group module entry point registers what it registers
                self._adopt(self, name, obj)
        # a plugin's sys.exit() or its own KeyboardInterrupt does not end toollab (a real
        # Ctrl-C while it is imported does)
        except (Exception, SystemExit, KeyboardInterrupt) as exc:
            if isinstance(exc, KeyboardInterrupt) and user_interrupted[0]:
                raise
            if isinstance(exc, PluginError):
                err = exc
            else:
                what = f"SystemExit({exc.code!r})" if isinstance(exc, SystemExit) else ""
                err = PluginError(
                    f"cannot load: {what or type(exc).__name__}" + ("" if what else f": {exc}"),
                    where=entry.where,
                )
            if name:
                self._broken[name] = err
            warnings.warn(
                f"toollab: {self.label} plugin {name!r} skipped: {err}", PluginWarning, stacklevel=2
            )
        finally:
            stack.pop()
            self._loading_origin = None


@contextmanager
def _user_interrupts() -> Iterator[list[bool]]:
    """While a plugin is imported, note whether a real interrupt arrives (``SIGINT``; or
    ``SIGTERM`` where a handler turns it into ``KeyboardInterrupt``, as the CLI's does), so that
    a ``KeyboardInterrupt`` the plugin raises itself is told apart from the user's.  Off the
    main thread (no signal handler can be set there) every interrupt counts as the user's."""
    seen = [False]
    if threading.current_thread() is not threading.main_thread():
        seen[0] = True
        yield seen
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def watch(signum: int, frame: FrameType | None) -> None:
        seen[0] = True
        handler = previous[signal.Signals(signum)]
        if callable(handler):
            handler(signum, frame)
        elif handler != signal.SIG_IGN:  # SIG_DFL (or a handler set outside Python)
            raise KeyboardInterrupt

    for sig, handler in previous.items():
        if sig == signal.SIGINT or callable(handler):
            signal.signal(sig, watch)
    try:
        yield seen
    finally:
        for sig, handler in previous.items():
            if handler is not None:
                signal.signal(sig, handler)


def _origin_of(obj: Any) -> str:
    mod = getattr(obj, "__module__", None) or type(obj).__module__
    return BUILTIN if mod.startswith("toollab.") else mod
