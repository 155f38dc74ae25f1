"""A dataset split by tools: a seeded share of the tools it calls held out.

A recipe that trains on a dataset in full leaves nothing to choose on with tools the model never
saw.  :func:`hold_out_tools` makes that choice possible: it holds out a seeded share of the tool
names the dataset's gold calls use and splits the instances three ways,

* **validation** — every instance that calls a held-out tool: unfamiliar tools at choice time;
* **train** — every instance that neither calls nor offers a held-out tool, so training never
  shows one, not even as a distractor;
* **left out** — the rest (they offer a held-out tool without calling it), counted.

The split depends only on the tool names, the share and the seed, never on the order of the
instances.  ``toollab data holdout`` writes both parts in toollab's format (``--format
toollab`` reads them back, scored as the source was).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toollab.data.atomic import write_text_atomic
from toollab.data.base import Dataset, tool_pool
from toollab.errors import UsageError
from toollab.schema import Instance

TRAIN = "train"
VALIDATION = "validation"


@dataclass
class ToolHoldout:
    """The parts of a dataset split by tools (see the module doc)."""

    held_out_tools: list[str]
    train: list[Instance]
    validation: list[Instance]
    #: instances that offer a held-out tool without calling one (in neither part)
    left_out: list[Instance] = field(default_factory=list)

    def datasets(self, name: str, source_format: str) -> tuple[Dataset, Dataset]:
        """(train, validation) as datasets, each instance's ``split`` set to its part."""
        out = []
        for part, insts in ((TRAIN, self.train), (VALIDATION, self.validation)):
            marked = [i.model_copy(update={"split": part}) for i in insts]
            out.append(
                Dataset(
                    name=f"{name}-{part}",
                    format="toollab",
                    instances=marked,
                    tools=tool_pool(t for i in marked for t in i.tools),
                    options={"held_out_from": source_format},
                )
            )
        return out[0], out[1]

    def summary(self) -> dict[str, object]:
        return {
            "held_out_tools": len(self.held_out_tools),
            "train": len(self.train),
            "validation": len(self.validation),
            "left_out": len(self.left_out),
            "tools": self.held_out_tools,
        }


def hold_out_tools(instances: Sequence[Instance], share: float, seed: int = 0) -> ToolHoldout:
    """Hold out ``round(share × n)`` (at least 1) of the ``n`` distinct tool names the gold calls
    use, drawn by a seeded shuffle of the sorted names, and split ``instances`` by them."""
    if not (math.isfinite(share) and 0.0 < share < 1.0):
        raise UsageError(f"--share is a share strictly between 0 and 1, got {share}")
    called = sorted({c.name for i in instances for c in i.gold})
    if len(called) < 2:
        raise UsageError(
            f"the data calls {len(called)} distinct tool(s): nothing to hold out and keep"
        )
    order = list(called)
    random.Random(f"holdout|{seed}").shuffle(order)
    held = set(order[: min(len(order) - 1, max(1, round(share * len(order))))])
    train: list[Instance] = []
    validation: list[Instance] = []
    left_out: list[Instance] = []
    for inst in instances:
        if any(c.name in held for c in inst.gold):
            validation.append(inst)
        elif any(t.name in held for t in inst.tools):
            left_out.append(inst)
        else:
            train.append(inst)
    return ToolHoldout(sorted(held), train, validation, left_out)


def write_holdout(split: ToolHoldout, ds: Dataset, out: Path) -> dict[str, Path]:
    """``out/train.jsonl``, ``out/validation.jsonl`` and ``out/held-out-tools.txt`` (one name a
    line); the folder is made if missing."""
    out.mkdir(parents=True, exist_ok=True)
    train, validation = split.datasets(ds.name, ds.format)
    paths = {
        TRAIN: train.write_jsonl(out / f"{TRAIN}.jsonl"),
        VALIDATION: validation.write_jsonl(out / f"{VALIDATION}.jsonl"),
        "tools": out / "held-out-tools.txt",
    }
    write_text_atomic(paths["tools"], "".join(f"{n}\n" for n in split.held_out_tools))
    return paths
