"""Collect episodes: a policy callable plays every sub-env of a batch, turn after turn, until each has ended.

The policy is any callable taking a list of conversations (each a list of chat
messages; ``tools=`` the env's schemas when it has them) and returning one
completion per conversation: a ``str``, a :class:`Completion` or its dict. It
may be sync or async. An exception it returns in place of a completion fails
that conversation only; one it raises fails every conversation of the call.
Either way the episode stops as it stands (:attr:`Episode.error`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from gym_integrity.checks import check_int, check_str
from gym_integrity.rollout.batch import EnvBatch, as_batch
from gym_integrity.rollout.conversation import Conversation, Episode, as_completion
from gym_integrity.rollout.provenance import Provenance

__all__ = ["collect", "acollect", "Rollout", "policy_error_kind"]

#: What an ended sub-env is stepped with while its batch goes on: the stack freezes it (or the vector env
#: autoresets it); nothing it returns is read.
_IDLE_ACTION = ""


def policy_error_kind(exc: BaseException) -> tuple[str, str]:
    """``(kind, message)`` of a policy failure: its own ``kind`` (eval's ``PolicyError``), else ``policy_raised``."""
    kind = getattr(exc, "kind", None)
    if isinstance(kind, str):
        return kind, str(exc)
    return "policy_raised", f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


class Rollout:
    """One batch of episodes in play: which conversations need a completion, then one batched step.

    The drivers (:func:`collect`, :func:`acollect`, eval's runner) loop
    ``wanting()`` -> policy -> ``give()`` -> ``step()`` until ``done``.
    """

    def __init__(
        self, envs: EnvBatch, seeds: Sequence[int | None], *, system_prompt: str | None = None, first_index: int = 0
    ) -> None:
        self.envs = envs
        if len(seeds) != envs.size:
            raise ValueError(f"rollout: {len(seeds)} seeds for {envs.size} sub-envs; give one seed per sub-env")
        observations, infos = envs.reset(list(seeds))
        tools = envs.tools()
        spec = envs.spec()
        provenance = Provenance(spec.id, spec.kwargs) if spec is not None else None
        self.conversations = []
        for i, (obs, info) in enumerate(zip(observations, infos)):
            episode = Episode(
                index=first_index + i,
                seed=seeds[i],
                problem_id=info.get("problem_id"),
                dataset=info.get("dataset"),
                provenance=provenance.of(seeds[i], info.get("problem_id")) if provenance else {},
            )
            self.conversations.append(Conversation(episode, obs, tools[i], system_prompt))

    @property
    def done(self) -> bool:
        return all(c.done for c in self.conversations)

    def wanting(self) -> list[int]:
        """Sub-envs still playing whose queue of actions is empty: they need the policy's next turn."""
        return [i for i, c in enumerate(self.conversations) if not c.done and not c.pending]

    def give(self, indices: Sequence[int], completions: Any) -> None:
        """Hand out the policy's answers (or the error it raised, ``completions`` an exception) in order."""
        if isinstance(completions, BaseException):
            for i in indices:
                self.conversations[i].fail(*policy_error_kind(completions))
            return
        completions = list(completions)
        if len(completions) != len(indices):
            raise ValueError(
                f"rollout: the policy returned {len(completions)} completions for {len(indices)} conversations"
            )
        for i, completion in zip(indices, completions):
            if isinstance(completion, BaseException):
                self.conversations[i].fail(*policy_error_kind(completion))
            else:
                self.conversations[i].add_completion(as_completion(completion))

    def step(self) -> None:
        """One batched step: each playing sub-env's next queued action; ended ones idle."""
        actions, calls, live = [], [], []
        for c in self.conversations:
            if not c.done and c.pending:
                action, call = c.next_action()
                actions.append(action)
                calls.append(call)
                live.append(True)
            else:
                actions.append(_IDLE_ACTION)
                calls.append(None)
                live.append(False)
        if not any(live):
            return
        for c, call, is_live, result in zip(self.conversations, calls, live, self.envs.step(actions)):
            if is_live:
                c.observe(call, *result)

    def episodes(self) -> list[Episode]:
        return [c.episode for c in self.conversations]


def _tools_kwargs(rollout: Rollout, indices: Sequence[int]) -> dict[str, Any]:
    tools = [rollout.conversations[i].tools for i in indices]
    return {"tools": tools} if any(t for t in tools) else {}


def _seed_list(envs: EnvBatch, seeds: Any) -> list[int | None]:
    if seeds is None:
        return [None] * envs.size
    if isinstance(seeds, int):
        check_int("collect seeds", seeds, low=0)
        return [seeds + i for i in range(envs.size)]
    return list(seeds)


def _check_policy(policy: Any) -> None:
    if not callable(policy):
        raise TypeError(
            f"collect: policy must be a callable (conversations -> completions), got {type(policy).__name__}"
        )


def collect(
    env: Any, policy: Callable[..., Any], seeds: Any = None, *, system_prompt: str | None = None, max_turns: int = 1000
) -> list[Episode]:
    """Play one episode per sub-env of ``env`` (a vector env, or a single env for one seed) with ``policy``.

    ``seeds``: one per sub-env (equal seeds form a GRPO group), an int (``s,
    s+1, ...``) or None. For a single env, a list of several seeds plays them
    one after another. An async policy runs on a private event loop; from
    inside a running loop (a notebook cell) use :func:`acollect`.

    Example:

        >>> from gym_integrity.rollout import collect
        >>> from gym_integrity.vector import make_threaded_vec
        >>> envs = make_threaded_vec("ReasoningGym-v0", 4, dataset="leg_counting", autoreset_mode="Disabled")
        >>> episodes = collect(envs, lambda chats: ["<answer>4</answer>"] * len(chats), seeds=[3, 3, 5, 5])
        >>> [(e.seed, e.verdict, e.steps) for e in episodes][:2]
        [(3, 'incorrect', 1), (3, 'incorrect', 1)]
        >>> envs.close()
    """
    _check_policy(policy)
    check_str("collect system_prompt", system_prompt, optional=True)
    batch = as_batch(env)
    seed_list = _seed_list(batch, seeds)
    loop: asyncio.AbstractEventLoop | None = None
    try:
        episodes: list[Episode] = []
        for start in range(0, len(seed_list), batch.size) if not batch.vector else [0]:
            chunk = seed_list[start : start + batch.size] if not batch.vector else seed_list
            rollout = Rollout(batch, chunk, system_prompt=system_prompt, first_index=start)
            for _ in range(max_turns):
                if rollout.done:
                    break
                wanting = rollout.wanting()
                if wanting:
                    try:
                        result = policy(
                            [rollout.conversations[i].messages for i in wanting], **_tools_kwargs(rollout, wanting)
                        )
                        if inspect.isawaitable(result):
                            loop = loop or asyncio.new_event_loop()
                            result = loop.run_until_complete(result)
                    except Exception as exc:  # noqa: BLE001 - the policy's fault fails its conversations, not the run
                        result = exc
                    rollout.give(wanting, result)
                rollout.step()
            episodes.extend(rollout.episodes())
        return episodes
    finally:
        if loop is not None:
            loop.close()


async def acollect(
    env: Any, policy: Callable[..., Any], seeds: Any = None, *, system_prompt: str | None = None, max_turns: int = 1000
) -> list[Episode]:
    """:func:`collect` from async code: env calls run in a thread, so grading never blocks the event loop."""
    _check_policy(policy)
    batch = as_batch(env)
    seed_list = _seed_list(batch, seeds)
    episodes: list[Episode] = []
    for start in range(0, len(seed_list), batch.size) if not batch.vector else [0]:
        chunk = seed_list[start : start + batch.size] if not batch.vector else seed_list
        rollout = await asyncio.to_thread(Rollout, batch, chunk, system_prompt=system_prompt, first_index=start)
        await drive(rollout, policy, max_turns)
        episodes.extend(rollout.episodes())
    return episodes


async def drive(
    rollout: Rollout,
    policy: Callable[..., Awaitable[Any] | Any],
    max_turns: int = 1000,
    call: Callable[[Callable[[], Any]], Awaitable[Any]] | None = None,
) -> None:
    """Play ``rollout`` to its end with ``policy``; ``call(fn)`` runs an env call off the loop (default a thread)."""
    run = call or (lambda fn: asyncio.to_thread(fn))
    for _ in range(max_turns):
        if rollout.done:
            return
        wanting = rollout.wanting()
        if wanting:
            try:
                result = policy([rollout.conversations[i].messages for i in wanting], **_tools_kwargs(rollout, wanting))
                if inspect.isawaitable(result):
                    result = await result
            except Exception as exc:  # noqa: BLE001 - the policy's fault fails its conversations, not the run
                result = exc
            rollout.give(wanting, result)
        await run(rollout.step)
