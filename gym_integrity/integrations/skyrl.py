"""SkyRL on our envs: a ``skyrl_gym`` ``BaseTextEnv`` for any registered id, registered with skyrl_gym's registry.

Importing this module registers every id of ours under the same name with
``skyrl_gym`` (``skyrl_gym.make("FinQA-v0", env_config=..., extras=...)``), and
:data:`GENERIC_ID` (``"gym_integrity"``), whose id comes from the row's
``extras["env_id"]`` (a user's env registered with ``gym_integrity.register_env``
after this import, or ``"module:Id-v0"``). :func:`register` adds one more id.

* ``extras`` is the dataset row's per-sample dict, as SkyRL passes it:
  ``seed`` picks the item (the same seed for a whole group: a GRPO group),
  ``problem_id`` (optional) is checked against what the seed picks, and
  ``env_kwargs`` (or ``env_config["env_kwargs"]``) go to ``gym_integrity.make``.
  :func:`make_rows` writes such rows: the prompt is the stacked env's first
  observation and no row holds a gold.
* ``step(text)`` is one step of the stacked env: a multi-turn or tool env
  (FinQA-v0's ``<tool_call>`` text) answers with its observation as the next
  user message until it ends (``done``). Steps after the end stay frozen.
* ``metadata`` carries ``verdict``, ``no_verdict``, ``cause``, ``problem_id``,
  ``score`` and the stack's ``integrity`` on every step. A no-verdict's reward is
  0.0 (SkyRL's rewards are floats) with ``metadata["no_verdict"] = True``;
  ``get_metrics()`` counts it (``no_verdict`` 1.0), so SkyRL's aggregated
  metrics show the rate: drop those samples, never train on them as 0.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

try:
    import skyrl_gym
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("gym_integrity.integrations.skyrl needs skyrl-gym: pip install 'gym-integrity[skyrl]'") from exc
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from gym_integrity.checks import check_int, check_str
from gym_integrity.integrations.items import check_item, make_registered
from gym_integrity.protocol import TrainerAction
from gym_integrity.registration import env_entries
from gym_integrity.seeding import distinct_item_seeds

__all__ = ["GymTextEnv", "register", "make_rows", "GENERIC_ID"]

#: The skyrl_gym id whose env id comes from each row's ``extras["env_id"]``.
GENERIC_ID = "gym_integrity"
#: What ``metadata`` shows of the env's info (everything else in info stays with the env).
_METADATA_KEYS = ("problem_id", "verdict", "no_verdict", "cause", "score", "integrity")


def _plain(value: Any) -> dict[str, Any]:
    """A mapping (an omegaconf DictConfig included) as a plain dict."""
    if value is None:
        return {}
    if hasattr(value, "_metadata") and hasattr(value, "keys"):  # omegaconf, without importing it
        from omegaconf import OmegaConf

        return dict(OmegaConf.to_container(value, resolve=True))
    if not isinstance(value, Mapping):
        raise TypeError(f"GymTextEnv: env_config and extras must be mappings, got {type(value).__name__}")
    return dict(value)


class GymTextEnv(BaseTextEnv):
    """One episode of a registered env through its stack, in SkyRL's ``init``/``step`` protocol."""

    def __init__(self, env_config: Any = None, extras: Any = None, *, env_id: str | None = None) -> None:
        super().__init__()
        config, row = _plain(env_config), _plain(extras)
        self.env_id = check_str("GymTextEnv env_id", env_id or row.get("env_id") or config.get("env_id"))
        env_kwargs = {**_plain(config.get("env_kwargs")), **_plain(row.get("env_kwargs"))}
        if "seed" not in row:
            raise ValueError(f"GymTextEnv({self.env_id!r}): extras needs a 'seed' (make_rows writes one)")
        self.seed = check_int("GymTextEnv extras['seed']", row["seed"], low=0)
        self.problem_id = row.get("problem_id")
        self._env = make_registered("GymTextEnv", self.env_id, env_kwargs)
        self._metrics: dict[str, float] = {}
        self.done = False

    def init(self, prompt: Any = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Reset to the row's item; the prompt as given if its last message holds the first observation, else that."""
        observation, info = self._env.reset(seed=self.seed)
        check_item("GymTextEnv.init", self.seed, self.problem_id, info)
        self.turns, self.done, self._metrics = 0, False, {}
        self.max_turns = int(getattr(self._env.unwrapped, "step_budget", 1))
        metadata: dict[str, Any] = {k: info[k] for k in ("problem_id", "integrity") if k in info}
        if (
            isinstance(prompt, list)
            and prompt
            and isinstance(prompt[-1], Mapping)
            and observation in str(prompt[-1].get("content", ""))
        ):
            return prompt, metadata
        return [*(prompt if isinstance(prompt, list) else []), {"role": "user", "content": observation}], metadata

    def step(self, action: str, num_tokens: int | None = None) -> BaseTextEnvStepOutput:
        """One step of the stacked env with the model's text (``num_tokens``: the trainer's count, for shaping)."""
        observation, reward, terminated, truncated, info = self._env.step(TrainerAction(action, num_tokens))
        self.turns += 1
        frozen = bool(info.get("integrity", {}).get("frozen", False))
        done = bool(terminated or truncated)
        if done and not frozen:
            self.done = True
            self._metrics = {
                "reward": float(reward),
                "no_verdict": float(bool(info.get("no_verdict"))),
                f"verdict/{info.get('verdict', '')}": 1.0,
            }
        metadata = {k: info[k] for k in _METADATA_KEYS if k in info}
        return BaseTextEnvStepOutput(
            observations=[] if done else [{"role": "user", "content": observation}],
            reward=float(reward),
            done=done,
            metadata=metadata,
        )

    def get_metrics(self) -> dict[str, Any]:
        """The finished episode's reward, no-verdict flag (1.0/0.0) and verdict (``verdict/<word>``: 1.0)."""
        return dict(self._metrics)

    def close(self) -> None:
        self._env.close()


def register(env_id: str) -> None:
    """Register ``env_id`` (one of ours or a user's) with ``skyrl_gym`` under the same name."""
    check_str("skyrl.register env_id", env_id)
    if env_id not in skyrl_gym.registry:
        skyrl_gym.register(id=env_id, entry_point=GymTextEnv, kwargs={"env_id": env_id})


def make_rows(env_id: str, num_problems: int, seed: int = 0, **env_kwargs: Any) -> list[dict[str, Any]]:
    """SkyRL dataset rows: ``prompt`` (the first observation as a chat), ``env_class`` and ``extras`` (seed, ids)."""
    env = make_registered("make_rows", env_id, env_kwargs)
    try:
        rows = []
        for row_seed in distinct_item_seeds(env, check_int("make_rows num_problems", num_problems, low=1), seed):
            observation, info = env.reset(seed=row_seed)
            rows.append(
                {
                    "prompt": [{"role": "user", "content": observation}],
                    "env_class": env_id,
                    "extras": {
                        "env_id": env_id,
                        "seed": row_seed,
                        "problem_id": str(info.get("problem_id", "")),
                        "env_kwargs": dict(env_kwargs),
                    },
                }
            )
    finally:
        env.close()
    return rows


if GENERIC_ID not in skyrl_gym.registry:
    skyrl_gym.register(id=GENERIC_ID, entry_point=GymTextEnv)
for _entry in env_entries():
    register(_entry.id)
