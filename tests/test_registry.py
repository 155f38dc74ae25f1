"""The generic registry every kind uses, and the capability protocols of models and templates.

Plugins through installed entry points are tested from the command line in test_plugins.py.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toollab.errors import UsageError
from toollab.models import BindsInstances, FakeModel, RendersPrompts
from toollab.models.llamacpp import LlamaCppModel
from toollab.models.oracle import OracleModel
from toollab.registry import BUILTIN, PLUGIN_GROUP, Registry, kinds
from toollab.templates import RawPrompts, RendersObservations, get_template
from toollab.templates.chat_template import OwnsChatTemplate


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Registry[object]]:
    """A registry of a throwaway kind whose built-ins live in a module written to ``tmp_path``."""
    kind = f"thing{len(kinds())}"
    (tmp_path / f"{kind}_builtins.py").write_text(
        f"from toollab.registry import kinds\n"
        f"reg = kinds()[{kind!r}]\n"
        f"reg.register('Alpha', 1, aliases=['a'])\n"
        f"IMPORTED = reg.names()  # a built-in may list names while the registry loads\n"
        f"reg.register('beta', 2)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[object] = Registry(
        kind, label="thing", builtins=[f"{kind}_builtins"], normalize=str.lower
    )
    yield reg
    kinds_dict = sys.modules["toollab.registry"]._KINDS
    kinds_dict.pop(kind, None)
    sys.modules.pop(f"{kind}_builtins", None)


def test_builtins_load_once_on_first_use(registry: Registry[object]) -> None:
    module = f"{registry.kind}_builtins"
    assert module not in sys.modules  # nothing is imported before the first lookup
    assert registry.names() == ["alpha", "beta"]
    assert sys.modules[module].IMPORTED == ["alpha"]

    def gamma() -> int:
        return 3

    registry.register("gamma", gamma)
    assert registry.registered() == ["alpha", "beta", "gamma"]  # registration order kept
    assert registry.origin("alpha") == BUILTIN
    assert registry.origin("gamma").endswith("test_registry")  # the module that registered it


def test_lookup_normalises_and_follows_aliases(registry: Registry[object]) -> None:
    assert registry.get("ALPHA") == 1 and registry.get(" a ") == 1
    assert "A" in registry and "delta" not in registry
    assert registry.resolve("a") == "alpha"
    assert registry.items() == [("alpha", 1), ("beta", 2)]


def test_unknown_name_suggests_the_closest(registry: Registry[object]) -> None:
    with pytest.raises(UsageError, match=r"unknown thing 'zzz'; known: alpha, beta") as info:
        registry.get("zzz")
    assert "did you mean" not in str(info.value)
    with pytest.raises(UsageError, match=r"unknown thing 'alpah' \(did you mean 'alpha'\?\)"):
        registry.get("alpah")


def test_register_replaces_and_remove_forgets(registry: Registry[object]) -> None:
    registry.register("beta", 20)  # before the built-ins load: they do not replace it
    assert registry.get("beta") == 20
    registry.register("beta", 21)
    assert registry.get("beta") == 21
    registry.remove("alpha")
    assert registry.names() == ["beta"] and "a" not in registry
    with pytest.raises(ValueError, match="non-empty name"):
        registry.register("  ", 0)


def test_decorator_returns_the_object(registry: Registry[object]) -> None:
    @registry.decorator("made", aliases=["m"])
    def factory() -> int:
        return 5

    assert registry.get("m") is factory and factory() == 5


def test_a_kind_exists_once() -> None:
    import toollab.agents.base  # noqa: F401  (creates the "agent" registry)

    with pytest.raises(ValueError, match="exists already"):
        Registry("agent")
    with pytest.raises(ValueError, match="invalid registry kind"):
        Registry("a:b")
    assert PLUGIN_GROUP == "toollab.plugins"


def test_every_kind_is_registered_with_its_builtins() -> None:
    import toollab.agents.base
    import toollab.data.base
    import toollab.envs.base
    import toollab.eval.metrics.registry
    import toollab.models.registry
    import toollab.parsing.base
    import toollab.retrieval.base
    import toollab.templates.base  # noqa: F401

    found = kinds()
    for kind in ("model", "agent", "scorer", "template", "environment", "format", "retriever"):
        assert found[kind].names(), kind
        assert {found[kind].origin(n) for n in found[kind].names()} >= {BUILTIN}
    assert "react" in found["agent"] and "seal-tools" in found["format"]
    assert found["format"].resolve("Seal_Tools") == "seal-tools"  # case, _ and - do not matter


def test_capabilities_are_protocols() -> None:
    assert isinstance(OracleModel(), BindsInstances)
    assert not isinstance(FakeModel(), BindsInstances)
    assert issubclass(LlamaCppModel, RendersPrompts)
    assert not isinstance(FakeModel(), RendersPrompts)
    assert isinstance(FakeModel(), OwnsChatTemplate)  # every Model answers (None: it has none)
    assert not isinstance(object(), OwnsChatTemplate)
    deer, json_tpl = get_template("deer"), get_template("json")
    assert isinstance(deer, RawPrompts) and not isinstance(json_tpl, RawPrompts)
    assert list(deer.stop) and list(json_tpl.stop) == []
    assert not isinstance(json_tpl, RendersObservations)
    chat = get_template("chat")
    assert chat.with_model(object()) is chat  # not a model: the template stays as it is
