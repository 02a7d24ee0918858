"""One sub-env's side of a rollout: its chat history, how a completion becomes env steps, and the episode it adds up to."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gym_integrity.protocol import TrainerAction

__all__ = ["Completion", "Conversation", "Episode", "as_completion"]


@dataclass
class Completion:
    """What a policy wrote for one conversation: text, native tool calls (``id``, ``name``, JSON ``arguments``),
    and the trainer's token counts (``completion_tokens=None``: estimated as one token per 4 characters)."""

    text: str = ""
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    completion_tokens: int | None = None
    prompt_tokens: int = 0
    latency_s: float | None = None
    truncated: bool = False


def as_completion(value: Any) -> Completion:
    """A policy's answer for one conversation: a ``str``, a :class:`Completion`, or its dict form."""
    if isinstance(value, Completion):
        return value
    if isinstance(value, str):
        return Completion(value)
    if isinstance(value, Mapping):
        unknown = set(value) - set(Completion.__dataclass_fields__)
        if unknown:
            raise TypeError(f"a completion dict takes {sorted(Completion.__dataclass_fields__)}, got {sorted(unknown)}")
        return Completion(**value)
    if hasattr(value, "content") and hasattr(value, "tool_calls"):  # endpoint.ChatReply
        return Completion(
            value.content,
            list(value.tool_calls),
            value.completion_tokens,
            value.prompt_tokens,
            value.latency_s,
            value.truncated,
        )
    raise TypeError(
        f"a policy must return, per conversation, a str, a Completion or a dict; got {type(value).__name__}"
    )


@dataclass
class Episode:
    """One finished (or abandoned) episode: what a trainer and an eval record need.

    ``reward`` is the final step's (a multi-attempt episode's last attempt, a
    tool episode's submission); ``return_`` the sum over steps. ``error`` is
    the policy's failure (``kind``, ``message``) when it ended the episode;
    with ``steps == 0`` nothing was graded and the episode is left out
    (:attr:`usable` is False), else it is scored as it stood.
    """

    index: int
    seed: int | None
    problem_id: Any = None
    dataset: Any = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    reward: float = 0.0
    return_: float = 0.0
    verdict: str | None = None
    no_verdict: bool = False
    cause: str | None = None
    score: float | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    steps: int = 0
    terminated: bool = False
    truncated: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_estimated: bool = False
    reply_truncated: bool = False
    latency_s: list[float] = field(default_factory=list)
    turn_tokens: list[int] = field(default_factory=list)
    error: tuple[str, str] | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def ended(self) -> bool:
        return self.terminated or self.truncated

    @property
    def usable(self) -> bool:
        """Train on it: graded (not a no-verdict) and not left out for a policy fault before any step."""
        return not self.no_verdict and not (self.error is not None and self.steps == 0)

    def to_record(self) -> dict[str, Any]:
        """One JSON line for a results file that ``gym-integrity regrade`` reads back (docs/regrade.md)."""
        provenance = self.provenance
        return {
            "env_id": provenance.get("env_id"),
            "env_kwargs": provenance.get("env_kwargs"),
            "seed": self.seed,
            "problem_id": self.problem_id,
            "dataset": self.dataset,
            "messages": self.messages,
            "turn_tokens": self.turn_tokens,
            "reward": self.reward,
            "return": self.return_,
            "verdict": self.verdict,
            "no_verdict": self.no_verdict,
            "cause": self.cause,
            "steps": self.steps,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "policy_error": self.error[0] if self.error else None,
            "provenance": provenance,
        }


def _tool_message(call: Mapping[str, str], observation: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call["id"], "content": observation}


class Conversation:
    """A sub-env's chat history and its queue of actions not yet stepped.

    :meth:`add_completion` turns the policy's turn into env actions: each
    native tool call (when the env has tools) is one step, else the text is one
    :class:`~gym_integrity.protocol.TrainerAction` carrying the trainer's token
    count. :meth:`observe` records a step's outcome and the next message.
    """

    def __init__(
        self, episode: Episode, observation: str, tools: list[dict[str, Any]] | None, system_prompt: str | None = None
    ) -> None:
        self.episode = episode
        self.tools = tools or None
        self.pending: list[tuple[Any, Mapping[str, str] | None]] = []
        if system_prompt:
            episode.messages.append({"role": "system", "content": system_prompt})
        episode.messages.append({"role": "user", "content": observation})

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.episode.messages

    @property
    def done(self) -> bool:
        return self.episode.ended or self.episode.error is not None

    def add_completion(self, completion: Completion) -> None:
        episode = self.episode
        tokens = completion.completion_tokens
        if tokens is None:  # no usable count: estimate, so omitting it cannot switch length shaping off
            tokens = -(-len(completion.text + "".join(c["arguments"] for c in completion.tool_calls)) // 4)
            episode.tokens_estimated = True
        if completion.latency_s is not None:
            episode.latency_s.append(round(completion.latency_s, 6))
        episode.reply_truncated |= completion.truncated
        episode.prompt_tokens += completion.prompt_tokens
        episode.completion_tokens += tokens
        episode.turn_tokens.append(tokens)
        if completion.tool_calls and self.tools:
            episode.messages.append(
                {
                    "role": "assistant",
                    "content": completion.text or None,
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": c["arguments"]},
                        }
                        for c in completion.tool_calls
                    ],
                }
            )
            self.pending = [({"tool": c["name"], "arguments": c["arguments"]}, c) for c in completion.tool_calls]
        else:
            episode.messages.append({"role": "assistant", "content": completion.text})
            self.pending = [(TrainerAction(completion.text, num_tokens=tokens), None)]

    def next_action(self) -> tuple[Any, Mapping[str, str] | None]:
        return self.pending.pop(0)

    def observe(
        self,
        call: Mapping[str, str] | None,
        observation: str,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: Mapping[str, Any],
    ) -> None:
        episode = self.episode
        episode.return_ += float(reward)
        episode.reward = float(reward)
        episode.steps += 1
        episode.terminated, episode.truncated = bool(terminated), bool(truncated)
        episode.verdict = info.get("verdict")
        episode.no_verdict = bool(info.get("no_verdict"))
        episode.score = info.get("score")
        episode.metrics = dict(info.get("metrics") or {})
        episode.cause = info.get("cause")
        if call is not None:
            episode.messages.append(_tool_message(call, observation))
        elif not episode.ended:
            episode.messages.append({"role": "user", "content": observation})
        if episode.ended:  # calls after the end get no step: the stack would only replay the final one
            for _, rest in self.pending:
                if rest is not None:
                    episode.messages.append(_tool_message(rest, "The episode is over."))
            self.pending = []

    def fail(self, kind: str, message: str) -> None:
        """The policy failed for this conversation: the episode stops as it stands."""
        self.episode.error = (kind, message)
        self.pending = []
