"""TRL's ``GRPOTrainer`` on our envs: a prompt dataset, a reward function and tool environments.

Three functions, each taking a registered id and any ``gym_integrity.make``
keyword arguments, each failing at construction on a bad id or option:

* :func:`make_dataset`: a ``datasets.Dataset`` with a ``prompt`` column and the
  columns that pick each item again (``env_id``, ``seed``, ``problem_id``),
  never a gold answer;
* :func:`reward_function`: TRL's reward signature; grades every completion
  through the registered stack (the same item again from the row's seed),
  returns ``None`` for a no-verdict (TRL leaves it out of the group baseline)
  and feeds ``len(completion_ids[i])`` to length shaping;
* :func:`environment_factory`: for tool envs (FinQA-v0), a class TRL builds one
  instance of per rollout, with one method per tool made from the env's own
  schemas and ``get_reward()`` read off the finished episode.

Nothing here imports TRL: the objects follow TRL's conventions, and the
``[trl]`` extra installs TRL for the trainer itself. Example (no TRL needed)::

    >>> from gym_integrity.integrations.trl import make_dataset, reward_function
    >>> rows = make_dataset("ReasoningGym-v0", num_problems=2, dataset="leg_counting")
    >>> rows.column_names
    ['prompt', 'env_id', 'seed', 'problem_id']
    >>> reward = reward_function("ReasoningGym-v0", dataset="leg_counting")
    >>> reward.__name__, reward(prompts=rows["prompt"], completions=["<answer>-1</answer>"] * 2, seed=rows["seed"])
    ('reasoninggym_reward', [0.0, 0.0])
    >>> reward.close()
"""

from __future__ import annotations

import inspect
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar

import gymnasium as gym

from gym_integrity.checks import check_int, check_str
from gym_integrity.integrations.items import check_item, first_observations, make_registered
from gym_integrity.protocol import TrainerAction, Verdict

__all__ = ["make_dataset", "reward_function", "environment_factory", "EnvReward", "ToolEnvironment", "MAX_DATASET_ROWS"]

#: ``make_dataset(num_problems=None)`` makes one row per item the env draws from, at most this many.
MAX_DATASET_ROWS = 10_000
#: Completions graded at once: grading waits on worker processes and the judge, not on this process's GIL.
_GRADING_THREADS = 8
_JSON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _short_name(env_id: str) -> str:
    """``"QEDMath-v0"`` -> ``"qedmath"``: a name for TRL's logs."""
    return re.sub(r"[^0-9a-z]+", "", env_id.rsplit("-v", 1)[0].lower()) or "env"


def make_dataset(env_id: str, num_problems: int | None = None, seed: int = 0, **env_kwargs: Any) -> Any:
    """A ``datasets.Dataset`` of ``num_problems`` prompts for ``GRPOTrainer(train_dataset=...)``.

    Each row is the first observation of ``reset(seed=s)`` through the
    registered stack, as a chat (``prompt``: one user message), with ``env_id``,
    ``seed`` (what :func:`reward_function` and :func:`environment_factory` use
    to pick the item again) and the public ``problem_id``. The seeds are the
    first from ``seed`` up whose items differ
    (:func:`gym_integrity.seeding.distinct_item_seeds`): items repeat only once
    the env has no new one. The rows carry nothing the agent could not see: the
    stack's HideInfoKeys has run.

    Args:
        env_id: A registered id.
        num_problems: How many rows. None: one per item the env draws from
            (``env.unwrapped.num_items``), at most :data:`MAX_DATASET_ROWS`.
        seed: The first row's seed.
        **env_kwargs: Anything ``gym_integrity.make`` takes.
    """
    if num_problems is None:
        env = make_registered("make_dataset", env_id, env_kwargs)
        try:
            items = getattr(env.unwrapped, "num_items", None)
        finally:
            env.close()
        if items is None:
            raise ValueError(f"make_dataset: {env_id} does not say how many items it has; pass num_problems=N")
        num_problems = min(int(items), MAX_DATASET_ROWS)
    rows: dict[str, list[Any]] = {"prompt": [], "env_id": [], "seed": [], "problem_id": []}
    for row_seed, observation, problem_id in first_observations("make_dataset", env_id, num_problems, seed, env_kwargs):
        rows["prompt"].append([{"role": "user", "content": observation}])
        rows["env_id"].append(env_id)
        rows["seed"].append(row_seed)
        rows["problem_id"].append(problem_id)
    from datasets import Dataset

    return Dataset.from_dict(rows)


def _completion_text(completion: Any) -> str:
    """The model's text: a standard completion, or the last assistant message of a conversational one."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        for message in reversed(completion):
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                content = message.get("content")
                if isinstance(content, str):
                    return content
                if isinstance(content, Sequence):  # a list of parts: its text parts (anything else is not text)
                    return "".join(
                        p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)
                    )
                return ""
        return ""
    raise TypeError(
        f"reward_function: a completion must be a str or a list of chat messages, got {type(completion).__name__}"
    )


class EnvReward:
    """A TRL reward function grading each completion through the registered stack (see :func:`reward_function`).

    Each call re-creates every row's item (``reset(seed=row seed)``) on an env
    of its own per grading thread and steps the completion once as a
    :class:`~gym_integrity.protocol.TrainerAction` carrying
    ``len(completion_ids[i])``. Up to eight completions grade at once: the
    verifier pool and the judge do the work outside this process's GIL.
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any]) -> None:
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs)
        self.__name__ = f"{_short_name(env_id)}_reward"  # TRL names the reward's log columns after it
        self._lock = threading.Lock()
        self._local = threading.local()
        self._envs: list[gym.Env] = [
            make_registered("reward_function", env_id, self.env_kwargs)
        ]  # fails here, not in training
        self._spare = list(self._envs)
        self._executor: ThreadPoolExecutor | None = None
        #: The verdicts of the last call, in completion order (for callers that log them their own way).
        self.last_verdicts: list[str] = []

    def __repr__(self) -> str:
        return f"EnvReward({self.env_id!r}, **{self.env_kwargs!r})"

    def _env(self) -> gym.Env:
        env = getattr(self._local, "env", None)
        if env is None:
            with self._lock:
                env = self._spare.pop() if self._spare else None
                if env is None:
                    env = make_registered("reward_function", self.env_id, self.env_kwargs)
                    self._envs.append(env)
            self._local.env = env
        return env

    def _grade(
        self, text: str, seed: int, num_tokens: int | None, problem_id: str | None = None
    ) -> tuple[float | None, str]:
        env = self._env()
        _, info = env.reset(seed=seed)
        check_item(self.__name__, seed, problem_id, info)
        _, reward, _, _, info = env.step(TrainerAction(text, num_tokens=num_tokens))
        verdict = str(info.get("verdict", ""))
        return (None if info.get("no_verdict") else float(reward)), verdict

    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] | None = None,
        completion_ids: Sequence[Sequence[int]] | None = None,
        *,
        seed: Sequence[int] | None = None,
        env_id: Sequence[str] | None = None,
        problem_id: Sequence[str] | None = None,
        log_metric: Callable[[str, float], None] | None = None,
        **columns: Any,
    ) -> list[float | None]:
        if completions is None:
            raise TypeError("reward_function: called without completions (TRL passes prompts=, completions=)")
        n = len(completions)
        if seed is None:
            raise ValueError(
                f"{self.__name__}: the dataset needs a 'seed' column to pick each item again "
                "(gym_integrity.integrations.trl.make_dataset writes one)"
            )
        if len(seed) != n:
            raise ValueError(f"{self.__name__}: {len(seed)} seeds for {n} completions")
        if env_id is not None and any(row_id != self.env_id for row_id in env_id):
            other = next(row_id for row_id in env_id if row_id != self.env_id)
            raise ValueError(f"{self.__name__}: a row of env_id {other!r} reached the reward for {self.env_id!r}")
        texts = [_completion_text(c) for c in completions]
        seeds = [
            check_int(f"{self.__name__} seed", int(s) if isinstance(s, float) and float(s).is_integer() else s, low=0)
            for s in seed
        ]
        if completion_ids is not None and len(completion_ids) != n:
            raise ValueError(f"{self.__name__}: {len(completion_ids)} completion_ids for {n} completions")
        tokens = [None] * n if completion_ids is None else [len(ids) for ids in completion_ids]
        ids = [None] * n if problem_id is None else list(problem_id)
        if len(ids) != n:
            raise ValueError(f"{self.__name__}: {len(ids)} problem_ids for {n} completions")
        if n <= 1:
            results = [self._grade(t, s, k, i) for t, s, k, i in zip(texts, seeds, tokens, ids)]
        else:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(_GRADING_THREADS, thread_name_prefix=self.__name__)
            results = list(self._executor.map(self._grade, texts, seeds, tokens, ids))
        rewards = [reward for reward, _ in results]
        self.last_verdicts = [verdict for _, verdict in results]
        if log_metric is not None:
            # TRL averages each metric over the batches that logged it, so every verdict is logged in every batch,
            # zeros included: a verdict logged only when present would be overstated over a logging step.
            counts = Counter(self.last_verdicts)
            for verdict in [v.value for v in Verdict] + sorted(set(counts) - {v.value for v in Verdict}):
                log_metric(f"gym_integrity/{verdict}", float(counts.get(verdict, 0)))
            log_metric("gym_integrity/no_verdict", float(sum(r is None for r in rewards)))
        return rewards

    def close(self) -> None:
        """Stop the grading threads and close every env (releasing shared services)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        with self._lock:
            envs, self._envs, self._spare = self._envs, [], []
        for env in envs:
            env.close()
        self._local = threading.local()


def reward_function(env_id: str, **env_kwargs: Any) -> EnvReward:
    """A reward function for ``GRPOTrainer(reward_funcs=...)`` grading through ``env_id``'s registered stack.

    Rows need the ``seed`` column :func:`make_dataset` writes. A completion's
    reward is the env's reward for it as the episode's first step (QEDMath's
    length shaping sees ``len(completion_ids[i])`` tokens); a no-verdict (the
    judge or the verifier could not decide) is ``None``, which TRL leaves out of
    the group's baseline. Per batch, the count of each verdict and of
    no-verdicts goes to TRL's ``log_metric`` hook as ``gym_integrity/<verdict>``.
    Bad ``env_id`` or options raise here. ``close()`` releases the envs.
    """
    return EnvReward(env_id, env_kwargs)


class ToolEnvironment:
    """One rollout's env for ``GRPOTrainer(environment_factory=...)``: the base of :func:`environment_factory`'s classes.

    TRL calls ``reset(**row)``, then the tool methods the model calls, then
    ``get_reward()``; it reuses an instance across batches by resetting it.
    Every public method of a subclass is a tool, so this class has no public
    method but those two.
    """

    env_id: ClassVar[str]
    env_kwargs: ClassVar[dict[str, Any]]

    def __init__(self) -> None:
        self._env = make_registered("environment_factory", self.env_id, self.env_kwargs)
        self._reward: float | None = 0.0
        self._ended = False
        #: The verdict of the episode's last step ("" before the first).
        self.verdict = ""

    def reset(self, **row: Any) -> str | None:
        """Start the row's episode (``reset(seed=row["seed"])``); the question, unless the row's prompt holds it."""
        seed = row.get("seed")
        if seed is None:
            raise ValueError(f"{type(self).__name__}.reset: the row needs a 'seed' column (make_dataset writes one)")
        if row.get("env_id", self.env_id) != self.env_id:
            raise ValueError(
                f"{type(self).__name__}.reset: a row of env_id {row['env_id']!r} reached "
                f"the environment for {self.env_id!r}"
            )
        observation, info = self._env.reset(seed=check_int(f"{type(self).__name__}.reset seed", seed, low=0))
        check_item(f"{type(self).__name__}.reset", seed, row.get("problem_id"), info)
        self._reward, self._ended, self.verdict = 0.0, False, ""
        prompt = row.get("prompt")
        if isinstance(prompt, Sequence) and prompt and isinstance(prompt[-1], Mapping):
            if observation in str(prompt[-1].get("content", "")):
                return None
        return observation

    def get_reward(self) -> float | None:
        """The episode's reward: the final step's, ``None`` for a no-verdict, 0.0 if it never ended (no answer)."""
        return self._reward if self._ended else 0.0

    def _call(self, tool: str, arguments: dict[str, Any]) -> str:
        observation, reward, terminated, truncated, info = self._env.step({"tool": tool, "arguments": arguments})
        if not info.get("integrity", {}).get("frozen", False):
            self.verdict = str(info.get("verdict", ""))
            if terminated or truncated:
                self._ended = True
                self._reward = None if info.get("no_verdict") else float(reward)
        return observation

    def __del__(self) -> None:
        env = self.__dict__.get("_env")
        if env is not None:
            env.close()


def _tool_method(schema: Mapping[str, Any]) -> Callable[..., str]:
    """A method calling one tool, with the signature, type hints and Google-style docstring of its schema.

    TRL (through ``transformers.utils.get_json_schema``) reads the tool's JSON
    schema back from exactly these, so the model sees the env's own schema.
    """
    function = schema["function"]
    name = check_str("tool schema name", function["name"])
    parameters = function.get("parameters", {})
    required = set(parameters.get("required", ()))
    properties = parameters.get("properties", {})

    names = list(properties)

    def tool(self: ToolEnvironment, *args: Any, **arguments: Any) -> str:
        # Positional arguments in the schema's order (TRL passes keywords; a person trying a tool may not).
        for arg_name, value in zip(names, args):
            arguments.setdefault(arg_name, value)
        if len(args) > len(names):
            arguments["_extra_positional"] = list(args[len(names) :])  # the env reports the unknown argument
        return self._call(name, arguments)

    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    arg_lines = []
    for arg, arg_schema in properties.items():
        kind = _JSON_TYPES.get(arg_schema.get("type"), str)
        if arg in required:
            signature.append(inspect.Parameter(arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=kind))
            annotations[arg] = kind
        else:
            signature.append(
                inspect.Parameter(arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=kind | None)
            )
            annotations[arg] = kind | None
        arg_lines.append(f"    {arg}: {' '.join(str(arg_schema.get('description', arg)).split())}")
    annotations["return"] = str
    tool.__name__ = tool.__qualname__ = name
    tool.__signature__ = inspect.Signature(signature, return_annotation=str)  # type: ignore[attr-defined]  # inspect reads a function's __signature__
    tool.__annotations__ = annotations
    doc = " ".join(str(function.get("description", name)).split())
    args = "\n\nArgs:\n" + "\n".join(arg_lines) if arg_lines else ""
    tool.__doc__ = f"{doc}{args}\n\nReturns:\n    The tool's output, as the env's observation."
    return tool


def environment_factory(env_id: str, **env_kwargs: Any) -> type[ToolEnvironment]:
    """A class for ``GRPOTrainer(environment_factory=...)``: ``env_id``'s tools as methods, its reward at the end.

    For envs with tools (``env.unwrapped.tools``, e.g. FinQA-v0). Each instance
    holds one env with the full stack: steps after the end stay frozen (a tool
    called after ``submit_answer`` changes nothing), and a rollout that uses up
    the step budget ends truncated (``get_reward()`` 0.0, verdict
    ``no_answer``). Bad ``env_id`` or options raise here; so does an env without
    tools (use :func:`reward_function`).
    """
    probe = make_registered("environment_factory", env_id, env_kwargs)
    try:
        schemas = probe.unwrapped.tools if hasattr(probe.unwrapped, "tools") else []
    finally:
        probe.close()
    if not schemas:
        raise ValueError(f"environment_factory: {env_id} has no tools; use reward_function({env_id!r}) instead")
    namespace: dict[str, Any] = {"env_id": env_id, "env_kwargs": dict(env_kwargs), "__module__": __name__}
    for schema in schemas:
        method = _tool_method(schema)
        if method.__name__ in ("reset", "get_reward", "verdict") or method.__name__.startswith("_"):
            raise ValueError(
                f"environment_factory: {env_id} has a tool named {method.__name__!r}, "
                "which TRL would not offer as a tool"
            )
        namespace[method.__name__] = method
    name = "".join(part[:1].upper() + part[1:] for part in re.split(r"[^0-9A-Za-z]+", env_id.rsplit("-v", 1)[0]))
    namespace["__doc__"] = f"{env_id} for TRL's environment_factory: one method per tool, get_reward() at the end."
    return type(f"{name}Environment", (ToolEnvironment,), namespace)
