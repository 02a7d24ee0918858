"""First observation -> first gold answer of a registered env's items: what the tests' scripted policies 'know'."""

from __future__ import annotations

import gym_integrity


def golds(env_id: str, seeds, **kwargs) -> dict[str, str]:
    """Through the auditor's privileged hook (``gold_answers()``), never a channel the agent has."""
    env = gym_integrity.make(env_id, **kwargs)
    out = {}
    try:
        for seed in seeds:
            obs, _ = env.reset(seed=seed)
            out[obs] = env.unwrapped.gold_answers()[0]
    finally:
        env.close()
    return out
