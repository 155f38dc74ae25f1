"""toollab's own format: one :class:`toollab.schema.Instance` per JSON line.

``Dataset.write_jsonl`` writes it; generated and converted datasets use it so that every other
part of toollab can read them back with ``--format toollab``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import cast

from pydantic import ValidationError

from toollab.data.base import (
    Adapter,
    Dataset,
    available_formats,
    get_adapter,
    register_adapter,
    tool_pool,
)
from toollab.data.jsonl import iter_jsonl
from toollab.errors import InputError
from toollab.schema import GoldCall, Instance, ToolCall, link_calls


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(x) for x in first.get("loc", ()))
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"not a toollab instance: {loc}: {first.get('msg')}{more}"


def _relink(inst: Instance) -> Instance:
    """JSON keeps only a reference's label: link it to its producing call (and output field)."""
    if not any(c.refs for c in inst.gold):
        return inst
    fields = {t.name: t.return_fields for t in inst.tools}
    gold = cast(list[GoldCall], link_calls(cast(list[ToolCall], inst.gold), fields))
    return inst.model_copy(update={"gold": gold})


@register_adapter
class NativeAdapter(Adapter):
    name = "toollab"
    aliases = ("native", "instances")
    description = "toollab instances, one JSON object per line (Dataset.write_jsonl)"

    def defaults_for(self, instances: Iterable[Instance]) -> Adapter:
        """The adapter of the instances' one ``source`` where it names a format (a Seal-Tools
        file written back by ``toollab data holdout`` runs with Seal-Tools' template, whose
        output its scorer reads); else this one (mixed or generated instances)."""
        sources = {i.source for i in instances}
        if len(sources) == 1:
            (source,) = sources
            if source and source != self.name and source in available_formats():
                return get_adapter(source)
        return self

    def load(self, path: Path) -> Dataset:
        """``path``: a ``.jsonl`` file, or a folder whose ``*.jsonl`` files are read in order."""
        files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
        if not files:
            raise InputError("no *.jsonl files", path=path)
        instances: list[Instance] = []
        for f in files:
            for rec in iter_jsonl(f):
                try:
                    inst = Instance.model_validate(rec.data)
                except ValidationError as exc:
                    raise rec.error(_problem(exc)) from exc
                if inst.split is None and path.is_dir():
                    inst.split = f.stem
                instances.append(_relink(inst))
        return Dataset(
            name=path.stem,
            format=self.name,
            instances=instances,
            tools=tool_pool(t for i in instances for t in i.tools),
            path=path,
        )
