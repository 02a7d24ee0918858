"""FinQA-v0: financial questions answered through table tools and a read-only SQL sandbox.

Modules: ``env`` (FinQAEnv), ``config`` (FinQAConfig), ``data`` (the per-process
cache), ``records`` (Table, Question, FinQADataset), ``sources`` (the loaders),
``tools`` (tools and their OpenAI schemas), ``sql_engine`` and ``sql_sandbox``, ``scoring``,
``actions`` (dict / JSON / ``<tool_call>`` parsing). Nothing heavy is imported here:
``datasets`` loads only when a hub id is used.
"""

from gym_integrity.envs.finqa.config import FinQAConfig
from gym_integrity.envs.finqa.env import FinQAEnv, format_tool_call
from gym_integrity.envs.finqa.scoring import score_answer
from gym_integrity.envs.finqa.tools import DOCUMENT_TOOL_SCHEMA, TOOL_SCHEMAS

__all__ = ["FinQAEnv", "FinQAConfig", "TOOL_SCHEMAS", "DOCUMENT_TOOL_SCHEMA", "format_tool_call", "score_answer"]
