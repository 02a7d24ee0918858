"""A skyrl-gym text env (``skyrl_gym.make(id, env_config=..., extras=row)``) over a dataset, as the auditor plays it.

SkyRL builds one env per dataset row: the row (its ``reward_spec`` or
``reward_model`` with the ``ground_truth``, its ``extra_info``) is the env's
``extras``, and ``init(prompt)`` gives the first messages. :class:`SkyRLEnv`
does the same at every ``reset(seed)`` (row ``seed % len(dataset)``) and
forwards ``step`` as it is, steps after ``done`` included. The observation is
the text of the messages; the reward, ``done`` and ``metadata`` are SkyRL's.
The gold (privileged ``gold_answers()``) is the row's ``gold_column``, by
default the first of ``adapters_reward.GOLD_COLUMNS`` the rows have.

SkyRL's ``gsm8k`` envs read the answer after ``####``: for them (and any id
given ``answer_template=``, e.g. ``"#### {answer}"``) the adapter answers in that
form (``audit_answer_action``); other ids get the auditor's usual wrappings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from gym_integrity.audit.adapters_reward import column, dataset_columns, load_rows, message_text, row_gold
from gym_integrity.checks import check_type
from gym_integrity.envs.base import MAX_TEXT_CHARS
from gym_integrity.spaces import UnicodeText

try:
    import skyrl_gym
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("gym_integrity.audit.adapters_skyrl needs skyrl-gym: pip install 'gym-integrity[skyrl]'") from exc

__all__ = ["SkyRLEnv", "ANSWER_TEMPLATES"]

#: How the skyrl-gym envs that read one fixed answer form take it.
ANSWER_TEMPLATES = {"gsm8k": "#### {answer}", "gsm8k_multi_turn": "#### {answer}"}


class SkyRLEnv(gym.Env[str, str]):
    """One skyrl-gym env per episode, built from a dataset row as SkyRL builds it (module docstring)."""

    def __init__(
        self,
        env_id: str,
        *,
        dataset: Any,
        env_config: Mapping[str, Any] | None = None,
        prompt_column: str | None = None,
        gold_column: str | None = None,
        split: str | None = None,
        answer_template: str | None = None,
    ) -> None:
        check_type("SkyRLEnv env_id", env_id, str, "a skyrl-gym id, e.g. 'gsm8k'")
        if env_id not in skyrl_gym.envs.registration.registry:
            raise ValueError(
                f"{env_id!r} is not a skyrl-gym id; registered: {sorted(skyrl_gym.envs.registration.registry)}"
            )
        self.env_id = env_id
        self.env_config = dict(env_config or {})
        self.rows = load_rows(dataset, split=split)
        self.prompt_column, self.gold_column = dataset_columns(self.rows[0], prompt_column, gold_column)
        template = answer_template or ANSWER_TEMPLATES.get(env_id)
        if template is not None:
            self.audit_answer_action = lambda answer: template.format(answer=answer)
        self.observation_space = UnicodeText(MAX_TEXT_CHARS, min_length=0)
        self.action_space = UnicodeText(MAX_TEXT_CHARS, min_length=0)
        self.step_budget = 1
        self._row: Mapping[str, Any] | None = None
        self.skyrl_env: Any = None

    @property
    def num_items(self) -> int:
        return len(self.rows)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        if options:  # SkyRL's init takes none: a configured reset must not quietly draw a row
            raise TypeError(f"SkyRLEnv.reset takes no options, got {sorted(options)}")
        super().reset(seed=seed)
        index = seed % len(self.rows) if seed is not None else int(self.np_random.integers(len(self.rows)))
        self.close()
        self._row = dict(self.rows[index])
        self.skyrl_env = skyrl_gym.make(self.env_id, env_config=dict(self.env_config), extras=dict(self._row))
        prompt = column(self._row, self.prompt_column)
        messages, metadata = self.skyrl_env.init(
            prompt if not isinstance(prompt, str) else [{"role": "user", "content": prompt}]
        )
        turns = getattr(self.skyrl_env, "max_turns", 1)
        self.step_budget = turns if isinstance(turns, int) and turns >= 1 else 1
        return message_text(messages), {"row": index, **dict(metadata or {})}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.skyrl_env is None:
            raise gym.error.ResetNeeded("SkyRLEnv.step before reset()")
        out = self.skyrl_env.step(action)
        obs = message_text(out.get("observations") or "")
        return obs, float(out["reward"]), bool(out["done"]), False, dict(out.get("metadata") or {})

    def gold_answers(self) -> list[str] | None:
        """The privileged auditor hook: the current row's gold column (None without one)."""
        return row_gold(self._row, self.gold_column)

    def close(self) -> None:
        if self.skyrl_env is not None:
            self.skyrl_env.close()
            self.skyrl_env = None
