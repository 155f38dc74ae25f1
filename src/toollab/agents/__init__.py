"""Agents: drive a model through a template over one instance (see :mod:`toollab.agents.base`).

Built-in: ``single`` (prompt → model → parse, the default), ``action`` (SambaNova ToolBench's
action generator: retrieved API documents and train-split demonstrations), ``react`` (ToolEyes-style
Thought / Action / Observation loop with tool execution), ``deer`` (DEER's two-round,
teacher-forced inference), ``conversation`` (whole conversations under the conversation
protocol ``toollab chat`` speaks, one user turn after another), ``alpha-umi`` (α-UMi's planner,
caller and summarizer), ``alpha-umi-backbone`` (the single LLM of the same loop) and
``bfcl-multi-turn`` (BFCL's executable multi-turn episodes, played as BFCL's prompting loop).
"""

from toollab.agents.action import ActionAgent
from toollab.agents.alpha_umi import AlphaUmiAgent, AlphaUmiBackbone
from toollab.agents.base import (
    Agent,
    AgentOptions,
    agent_names,
    get_agent,
    register_agent,
)
from toollab.agents.bfcl_multi_turn import BfclMultiTurnAgent
from toollab.agents.converse import ConversationAgent
from toollab.agents.deer import DeerAgent
from toollab.agents.react import ReactAgent
from toollab.agents.single import SingleTurnAgent

__all__ = [
    "ActionAgent",
    "Agent",
    "AgentOptions",
    "AlphaUmiAgent",
    "AlphaUmiBackbone",
    "BfclMultiTurnAgent",
    "ConversationAgent",
    "DeerAgent",
    "ReactAgent",
    "SingleTurnAgent",
    "agent_names",
    "get_agent",
    "register_agent",
]
