"""Prompt templates (see :mod:`toollab.templates.base`)."""

from toollab.templates.base import Template, get_template, register_template, template_names

__all__ = ["Template", "get_template", "register_template", "template_names"]
