"""Prompt templates (see :mod:`toollab.templates.base`).

Built-in: ``json``, ``seal``, ``python`` (BFCL), ``react`` (ToolEyes), ``react-5shot`` (ToolEyes'
five-shot prompt), ``hermes``, ``deer`` and ``chat`` (the model's own chat template when it takes
``tools=``).
"""

from toollab.templates.base import (
    RawPrompts,
    RendersObservations,
    Template,
    get_template,
    register_template,
    template_names,
)
from toollab.templates.chat_template import ChatTemplate
from toollab.templates.deer_tpl import DeerTemplate
from toollab.templates.hermes_tpl import HermesTemplate
from toollab.templates.json_tpl import JsonTemplate
from toollab.templates.python_tpl import PythonTemplate
from toollab.templates.react5_tpl import ReactFiveShotTemplate
from toollab.templates.react_tpl import ReactTemplate
from toollab.templates.seal_tpl import SealTemplate

__all__ = [
    "ChatTemplate",
    "DeerTemplate",
    "HermesTemplate",
    "JsonTemplate",
    "PythonTemplate",
    "RawPrompts",
    "ReactFiveShotTemplate",
    "ReactTemplate",
    "RendersObservations",
    "SealTemplate",
    "Template",
    "get_template",
    "register_template",
    "template_names",
]
