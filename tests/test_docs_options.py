"""The docs name the request options the backends actually read."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BACKENDS = ("hf.py", "llamacpp.py")  # the in-process backends that render chat templates


def _chat_template_switches() -> set[str]:
    """The ``GenerateOptions`` field that decides whether the in-process backends hand
    ``tools=`` to the model's chat template, read from their source."""
    found: set[str] = set()
    for name in BACKENDS:
        source = (REPO / "src" / "toollab" / "models" / name).read_text(encoding="utf-8")
        found.update(re.findall(r"req\.tools and req\.options\.(\w+)", source))
    return found


def _sentences_handing_tools_to_templates() -> dict[str, set[str]]:
    """Every docs sentence that says when ``tools=`` reaches a chat template, with the
    ``*_tools`` options it names."""
    out: dict[str, set[str]] = {}
    for path in sorted((REPO / "docs").glob("*.md")):
        text = " ".join(path.read_text(encoding="utf-8").split())
        for sentence in re.split(r"(?<=[.;])\s+", text):
            if "`tools=`" in sentence and "template" in sentence:
                names = set(re.findall(r"`(?:GenerateOptions\.)?(\w+_tools)`", sentence))
                if names:
                    out[f"{path.name}: {sentence[:120]}"] = names
    return out


def test_docs_name_the_option_that_hands_tools_to_chat_templates() -> None:
    switches = _chat_template_switches()
    assert switches == {"template_tools"}
    said = _sentences_handing_tools_to_templates()
    assert len(said) >= 3  # docs/models.md (twice) and docs/templates.md say it
    wrong = {where: names for where, names in said.items() if not names <= switches}
    assert wrong == {}
