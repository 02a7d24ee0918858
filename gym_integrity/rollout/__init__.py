"""Rollouts for training and eval: episodes from any vector env or single env, played by any policy callable.

>>> import gym_integrity
>>> from gym_integrity.rollout import collect, group_advantages, batch_metrics
>>> env = gym_integrity.make("ReasoningGym-v0", dataset="leg_counting")
>>> episodes = collect(env, lambda chats: ["<answer>0</answer>" for _ in chats], seeds=[1, 1])
>>> [e.verdict for e in episodes], group_advantages(episodes).tolist()
(['incorrect', 'incorrect'], [0.0, 0.0])
>>> batch_metrics(episodes)["rollout/verdict/incorrect"]
2.0
>>> env.close()
"""

from gym_integrity.rollout.batch import EnvBatch, sub_info
from gym_integrity.rollout.collect import Rollout, acollect, collect, drive, policy_error_kind
from gym_integrity.rollout.conversation import Completion, Conversation, Episode, as_completion
from gym_integrity.rollout.endpoint import EndpointPolicy
from gym_integrity.rollout.stats import batch_metrics, group_advantages

__all__ = [
    "collect",
    "acollect",
    "drive",
    "Rollout",
    "EnvBatch",
    "sub_info",
    "Completion",
    "Conversation",
    "Episode",
    "as_completion",
    "EndpointPolicy",
    "batch_metrics",
    "group_advantages",
    "policy_error_kind",
]
