"""FinQA-v0: financial questions answered through table tools and a read-only SQL sandbox.

Modules: ``env`` (FinQAEnv), ``config`` (FinQAConfig), ``data`` (the per-process
cache), ``records`` (Table, Question, FinQADataset), ``sources`` (the loaders),
``tools`` (tools and their OpenAI schemas), ``sql_engine`` and ``sql_sandbox``, ``scoring`` (and
``amounts``: one number read and matched), ``actions`` (dict / JSON / ``<tool_call>`` parsing). Nothing heavy is imported here:
``ENTRY`` is the id's registration and audit facts, the rest loads on first use
(``datasets`` only when a hub id is used).
"""

from gym_integrity.envs.entry import EnvEntry, lazy_exports

__all__ = [
    "FinQAEnv",
    "FinQAConfig",
    "TOOL_SCHEMAS",
    "DOCUMENT_TOOL_SCHEMA",
    "format_tool_call",
    "score_answer",
    "ENTRY",
]

ENTRY = EnvEntry(
    "FinQA-v0",
    "gym_integrity.envs.finqa:FinQAEnv",
    "financial questions answered through table tools and a read-only SQL sandbox, one tool call per step",
    ends_by_itself=False,  # a tool env: only MaxStepsTruncation ends an episode that never submits
    max_episode_steps=50,  # FinQAConfig.step_budget's default (a step_budget= option moves the bound with it)
)

__getattr__ = lazy_exports(
    __name__,
    {
        "FinQAConfig": "config",
        "FinQAEnv": "env",
        "format_tool_call": "env",
        "score_answer": "scoring",
        "TOOL_SCHEMAS": "tools",
        "DOCUMENT_TOOL_SCHEMA": "tools",
    },
)
