"""ReasoningGymEnv: one reasoning-gym item per episode, answered once, graded by the dataset's scoring policy."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import gymnasium as gym

from gym_integrity.checks import check_choice, check_int, reject_unknown
from gym_integrity.envs.reasoning_gym.config import ReasoningGymConfig
from gym_integrity.envs.reasoning_gym.datasets import ItemCache, dataset_key, load_dataset
from gym_integrity.envs.reasoning_gym.scoring import Grader
from gym_integrity.extract import extract_answer
from gym_integrity.infotree import copy_tree
from gym_integrity.protocol import PRIVILEGED_KEY, Grade, grade_info, split_trainer_action
from gym_integrity.services.pool import WORKER_START_ALLOWANCE_S
from gym_integrity.spaces import UnicodeText
from gym_integrity.wrappers.stack import stack_switch_hints

__all__ = ["ReasoningGymEnv"]

_INSTRUCTIONS = {
    "tag": "Put your final answer between <answer> and </answer>.",
    "boxed": "Put your final answer in \\boxed{}.",
    "either": "Put your final answer between <answer> and </answer>.",
    "raw": "Reply with your final answer only.",
}
_MAX_TEXT = 1_000_000
_IN_PROCESS_BOUND_S = 1.0
_ITEMS = ItemCache()


class ReasoningGymEnv(gym.Env[str, str]):
    """A reasoning-gym task as a single-turn text environment.

    ## Description

    Each episode is one item of a `reasoning-gym <https://github.com/open-thought/reasoning-gym>`_
    procedural dataset (``leg_counting``, ``basic_arithmetic``, ``sudoku``, ...,
    about a hundred in all) or of a weighted composite of several. The model
    reads the question and answers once; the answer is graded by the
    dataset's scoring policy (docs/reasoning_gym.md).

    ## Action Space

    :class:`~gym_integrity.spaces.UnicodeText`: the model's reply. The final
    answer is taken from the last ``<answer>...</answer>`` (or ``\\boxed{}``, by
    ``answer_format``). Any ``str`` is graded; a non-``str`` raises ``TypeError``.

    ## Observation Space

    :class:`~gym_integrity.spaces.UnicodeText`: the question followed by the
    answer-format instruction. After the step: a one-line grading note
    (verdict and score, never the answer).

    ## Rewards

    A score in [0, 1]. Under the default ``scoring="strict"``: 1.0 for the
    answer (exact after the task's normalisation, numbers within a tolerance
    relative to the gold, or any answer the task's own scorer fully accepts
    where many are valid), partial credit only where the task's scorer earns
    it by content, 0.0 otherwise: never for containing the gold or for a
    well-formed guess. ``scoring="reasoning_gym"`` pays every task's original
    scorer, leniencies included. Scorers that evaluate the answer run in
    sandboxed workers behind a check of the task's answer language; an answer
    outside it is ``unparsable``, one whose scoring runs past
    ``score_timeout_s`` is ``timeout`` (graded: reward 0.0,
    ``info["no_verdict"]`` False). A scorer that raises or returns NaN, or a
    sandbox failure, gives a ``grader_error`` no-verdict (reward 0.0,
    ``info["no_verdict"]`` True).

    ## Starting State

    ``reset(seed=s)`` draws an item index in ``[0, size)`` from
    ``self.np_random``: equal seeds give equal items (a GRPO group).
    ``options={"index": i}`` picks item ``i``. ``size`` (an attribute) is the
    configured size, or for the default ``size=None`` 100,000 within the
    dataset's own limit (word_ladder: 20,000) and eager cap (acre: 2,000).

    ## Episode End

    Single-turn: the first step ends the episode (``terminated=True,
    truncated=False``). The registered id adds the integrity stack, so steps
    after the end change nothing.

    ## Info

    ``problem_id`` (``"<dataset>/<index>"``), ``dataset``, ``index``,
    ``verdict``, ``no_verdict``, ``score``, ``metrics`` (and ``cause`` when the
    grade has one). The item's answer and raw metadata (which can hold the
    answer, e.g. leg_counting's ``total_legs``) sit under
    ``info["privileged"]``, removed by the stack.

    ## Registered Configurations

    * ``ReasoningGym-v0``: defaults to ``leg_counting``; pass any
      :class:`ReasoningGymConfig` field to ``gym.make``.

    Example:
        >>> import gym_integrity, gymnasium as gym
        >>> env = gym.make("ReasoningGym-v0", dataset="leg_counting")
        >>> question, info = env.reset(seed=0)
        >>> info["problem_id"], "privileged" in info
        ('leg_counting/85062', False)
        >>> _, reward, terminated, truncated, info = env.step("<answer>0</answer>")
        >>> reward, terminated, truncated, info["verdict"]
        (0.0, True, False, 'incorrect')
        >>> composite = gym.make("ReasoningGym-v0", dataset={"leg_counting": 2, "basic_arithmetic": 1})
    """

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        reject_unknown("ReasoningGymConfig", kwargs, [f.name for f in fields(ReasoningGymConfig)],
                       hints=stack_switch_hints("ReasoningGym-v0"))
        check_choice("ReasoningGymEnv.render_mode", render_mode, (None, *self.metadata["render_modes"]))
        self.config = ReasoningGymConfig(**kwargs)
        self.config.validate()
        self.render_mode = render_mode
        self.observation_space = UnicodeText(_MAX_TEXT)
        self.action_space = UnicodeText(_MAX_TEXT, min_length=0)
        self.step_budget = 1
        self.size = self.config.resolved_size()  # how many items reset() draws from (``size=None`` resolved)
        self._key = dataset_key(self.config.dataset, self.config.dataset_config, self.config.composite_specs(),
                                self.size, self.config.seed)
        self._dataset = load_dataset(self._key)
        self._grader = Grader(scoring=self.config.scoring, dataset=self._dataset, key=self._key,
                              dataset_names=self.config.dataset_names(), score_timeout_s=self.config.score_timeout_s)
        self._instruction = _INSTRUCTIONS[self.config.answer_format]
        self._item: dict[str, Any] | None = None
        self._index = -1
        self._source = ""  # the item's dataset: a composite's member, else the configured name
        self._last_note = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        reject_unknown("ReasoningGymEnv.reset options", options, ["index"], subscript=True)
        if "index" in options:
            index = check_int("ReasoningGymEnv.reset options['index']", options["index"], low=0, high=self.size - 1)
        else:
            index = int(self.np_random.integers(self.size))
        self._index = index
        self._item = _ITEMS.get(self._key, self._dataset, index)
        self._source = str(self._item.get("metadata", {}).get("source_dataset", self.config.dataset))
        self._last_note = ""
        info = {"problem_id": f"{self._source}/{index}", "dataset": self._source, "index": index,
                PRIVILEGED_KEY: self._privileged()}
        return self._question(), info

    def _question(self) -> str:
        assert self._item is not None
        return f"{self._item['question'].rstrip()}\n\n{self._instruction}"

    def _privileged(self) -> dict[str, Any]:
        assert self._item is not None
        # A fresh copy per call: callers keep and mutate what we return.
        return {"answer": self._item["answer"], "metadata": copy_tree(self._item.get("metadata", {}))}

    def _grade(self, text: str) -> Grade:
        extraction = extract_answer(text, self.config.answer_format, self.config.max_answer_chars)
        if extraction.failure is not None:
            return Grade(extraction.failure, 0.0)
        assert self._item is not None and extraction.answer is not None
        return self._grader.grade(extraction.answer, self._item, self._source)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._item is None:
            raise gym.error.ResetNeeded("ReasoningGymEnv.step called before reset()")
        text, _ = split_trainer_action(action)
        grade = self._grade(text)
        reward = float(grade.score)
        self._last_note = f"Graded: {grade.verdict.value} (score {grade.score:.2f})."
        info = grade_info(f"{self._source}/{self._index}", grade, dataset=self._source, index=self._index,
                          attempt=1, metrics={"reward/score": reward},
                          **{PRIVILEGED_KEY: self._privileged()})
        if self.render_mode == "human":
            self.render()
        return self._last_note, reward, True, False, info

    @property
    def grading_time_bound_s(self) -> float:
        """The longest one step may take on a quiet machine: the audit's bound for hostile answers.

        Sandboxed scorers: the run budget plus the start of a killed worker's
        successor. In-process scorers are plain string and number comparisons
        on at most ``max_answer_chars`` characters (the canary sweep checks it).
        """
        if self._grader.needs_pool:
            return self.config.score_timeout_s + WORKER_START_ALLOWANCE_S
        return _IN_PROCESS_BOUND_S

    def gold_answers(self) -> list[str]:
        """The current item's gold answer: the privileged auditor's hook, not an agent channel."""
        if self._item is None or self._item.get("answer") is None:  # some tasks (propositional_logic) have no single answer
            return []
        return [str(self._item["answer"])]

    def render(self) -> str | None:
        text = "" if self._item is None else self._question() + ("\n\n" + self._last_note if self._last_note else "")
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        """Release the sandbox pool, if this env's datasets use it."""
        grader = getattr(self, "_grader", None)  # absent when __init__ failed
        if grader is not None:
            grader.close()
        super().close()
