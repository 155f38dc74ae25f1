"""Agents: drive a model through a template over one instance (see :mod:`toollab.agents.base`).

Built-in: ``single`` (prompt → model → parse, the default), ``action`` (SambaNova ToolBench's
action generator: retrieved API documents and train-split demonstrations), ``react`` (ToolEyes-style
Thought / Action / Observation loop with tool execution), ``deer`` (DEER's two-round,
teacher-forced inference) and ``conversation`` (whole conversations under the conversation
protocol ``toollab chat`` speaks, one user turn after another).
"""

from toollab.agents.action import ActionAgent
from toollab.agents.base import (
    Agent,
    AgentOptions,
    agent_names,
    get_agent,
    register_agent,
)
from toollab.agents.converse import ConversationAgent
from toollab.agents.deer import DeerAgent
from toollab.agents.react import ReactAgent
from toollab.agents.single import SingleTurnAgent

__all__ = [
    "ActionAgent",
    "Agent",
    "AgentOptions",
    "ConversationAgent",
    "DeerAgent",
    "ReactAgent",
    "SingleTurnAgent",
    "agent_names",
    "get_agent",
    "register_agent",
]
