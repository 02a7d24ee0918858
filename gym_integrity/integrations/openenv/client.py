"""The client side: an OpenEnv ``EnvClient`` for served envs, and ``RemoteEnv``, a Gymnasium env over it.

``GymEnvClient`` is openenv-core's own ``EnvClient`` (WebSocket, async, with
``.sync()``) typed with our wire models. ``RemoteEnv`` plays a served env
through it behind the Gymnasium API, rebuilding ``info`` from the public
observation, so what runs on a local env (the audit's probes, a rollout loop)
runs on the wire unchanged and sees exactly what a remote user gets.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from openenv.core import EnvClient
from openenv.core.client_types import StepResult

from gym_integrity.checks import check_str
from gym_integrity.integrations.openenv.models import GymAction, GymObservation, GymState, gym_fields
from gym_integrity.protocol import split_trainer_action
from gym_integrity.spaces import UnicodeText

__all__ = ["GymEnvClient", "RemoteEnv", "observation_info"]

_MAX_TEXT_CHARS = 1_000_000


class GymEnvClient(EnvClient[GymAction, GymObservation, GymState]):
    """openenv-core's ``EnvClient`` for a ``gym-integrity serve`` server.

    Example (a server on port 8000)::

        with GymEnvClient(base_url="http://127.0.0.1:8000").sync() as env:
            first = env.reset(seed=3)
            result = env.step(GymAction(text="<answer>42</answer>"))
            result.reward, result.observation.verdict
    """

    def _step_payload(self, action: GymAction) -> dict[str, Any]:
        if isinstance(action, Mapping):
            return dict(action)
        return action.model_dump(exclude_none=True, exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[GymObservation]:
        fields = gym_fields(payload.get("observation") or {})
        fields["done"], fields["reward"] = payload.get("done", False), payload.get("reward")
        observation = GymObservation.model_validate(fields)
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> GymState:
        return GymState.model_validate(payload)


def observation_info(observation: GymObservation) -> dict[str, Any]:
    """The ``info`` dict a local stacked env would have returned, rebuilt from a served observation."""
    info: dict[str, Any] = dict(observation.details)
    for name in ("problem_id", "verdict", "no_verdict", "score", "cause"):
        value = getattr(observation, name)
        if value is not None:
            info[name] = value
    if observation.metrics:
        info["metrics"] = dict(observation.metrics)
    info["integrity"] = dict(observation.integrity)
    return info


def _to_wire(action: Any) -> GymAction:
    if isinstance(action, GymAction):
        return action
    if isinstance(action, Mapping) and ("tool" in action or "name" in action):
        name = action.get("tool", action.get("name"))
        return GymAction(tool=name, arguments=action.get("arguments"))  # as the model wrote them: the env grades
    text, num_tokens = split_trainer_action(action)
    return GymAction(text=text, num_tokens=num_tokens)


class RemoteEnv(gym.Env[str, Any]):
    """A served env behind the Gymnasium API: ``reset``/``step`` go over one OpenEnv session.

    Actions are what the local env takes: a str, a ``TrainerAction`` or its
    dict, or a tool call ``{"tool": name, "arguments": {...}}``. ``info`` is
    :func:`observation_info` of the served observation. ``close()`` ends the
    session.

    Example (a server on port 8000)::

        env = RemoteEnv("http://127.0.0.1:8000")
        obs, info = env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step("<answer>42</answer>")
        env.close()
    """

    metadata = {"render_modes": []}

    def __init__(self, url: str, *, message_timeout_s: float = 120.0) -> None:
        # The base URL; the session path is the client's to add (a pasted ws://host:port/ws works too).
        self.url = check_str("RemoteEnv url", url).rstrip("/").removesuffix("/ws")
        self.observation_space = UnicodeText(_MAX_TEXT_CHARS)
        self.action_space = UnicodeText(_MAX_TEXT_CHARS, min_length=0)
        self._client = GymEnvClient(base_url=self.url, message_timeout_s=message_timeout_s).sync()
        try:
            self._client.connect()
        except BaseException:
            self._client.close()  # the sync client's event-loop thread would linger until garbage collection
            raise

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        message: dict[str, Any] = {} if seed is None else {"seed": seed}
        if options:
            message["options"] = dict(options)
        observation = self._client.reset(**message).observation
        return observation.text, observation_info(observation)

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        result = self._client.step(_to_wire(action))
        observation = result.observation
        terminated = bool(observation.done and not observation.truncated)
        return (
            observation.text,
            float(result.reward or 0.0),
            terminated,
            observation.truncated,
            observation_info(observation),
        )

    def render(self) -> None:
        """Nothing: the protocol has no render (the observation text is what a person watching would see)."""
        return None

    def state(self) -> GymState:
        """The session's state (episode id, step count, served id, done)."""
        return self._client.state()

    def close(self) -> None:
        self._client.close()
