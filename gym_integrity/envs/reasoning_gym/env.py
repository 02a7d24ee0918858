"""ReasoningGymEnv: one reasoning-gym item per episode, answered once, graded by the dataset's scoring rule."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from gym_integrity.checks import check_int
from gym_integrity.envs.base import TextEnv
from gym_integrity.envs.reasoning_gym import draw, draw_plans
from gym_integrity.envs.reasoning_gym.config import ReasoningGymConfig
from gym_integrity.envs.reasoning_gym.datasets import ItemCache, dataset_key, load_dataset
from gym_integrity.envs.reasoning_gym.scoring import Grader
from gym_integrity.envs.reasoning_gym.tasks import draw_filter, has_right_rule, is_right_answer, solve
from gym_integrity.grading.reader import extract_answer
from gym_integrity.infotree import copy_tree
from gym_integrity.protocol import PRIVILEGED_KEY, Grade, grade_info, split_trainer_action
from gym_integrity.workers import WORKER_START_ALLOWANCE_S

__all__ = ["ReasoningGymEnv"]

_INSTRUCTIONS = {
    "tag": "Put your final answer between <answer> and </answer>.",
    "boxed": "Put your final answer in \\boxed{}.",
    "either": "Put your final answer between <answer> and </answer>.",
    "raw": "Reply with your final answer only.",
}
_IN_PROCESS_BOUND_S = 1.0
_ITEMS = ItemCache()
#: Draws one reset may make past items its draw filter refuses: graph_color under strict draws about one default
#: item in 280, so 4096 tries miss about once in two million resets (then the last item drawn is used);
#: propositional_logic skips 74 in a hundred
_MAX_REDRAWS = 4096
#: Indices an env remembers as not drawn (a few MB at most), so a repeated seed skips them without generating them
_MAX_UNDRAWN_KEPT = 200_000


def _note(grade: Grade) -> str:
    """The observation after the step: the verdict and the score, never the answer."""
    return f"Graded: {grade.verdict.value} (score {grade.score:.2f})."


class ReasoningGymEnv(TextEnv):
    """A reasoning-gym task as a single-turn text environment.

    ## Description

    Each episode is one item of a `reasoning-gym <https://github.com/open-thought/reasoning-gym>`_
    procedural dataset (``leg_counting``, ``basic_arithmetic``, ``sudoku``, ...,
    about a hundred in all; ``gym-integrity list --datasets`` names them) or
    of a weighted composite of several. Without ``dataset=`` it is
    ``leg_counting``. The model
    reads the question and answers once; the answer is graded by the
    dataset's scoring rule (docs/reasoning_gym.md).

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

    ``reset(seed=s)`` draws an item index in ``[0, size)`` with
    ``self.np_random`` (gymnasium's seeding), and each unseeded reset after it
    the next index of the same stream: equal seeds give equal items (a GRPO
    group) on every machine. Under strict scoring the draw is balanced
    (``draw.py``): each reset's answer label comes from a low-discrepancy
    sequence over the seed, so no fixed answer beats a uniform guess, and
    items whose answer is in their question are not drawn. The plan ships with
    the package for each dataset's default configuration (another's is built
    from 300 items at the first reset of a process).
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
    grade has one). The item's answer (at reset and step) and raw metadata
    (at the step; it can hold the answer, e.g. leg_counting's ``total_legs``)
    sit under ``info["privileged"]`` and nowhere else; the stack's
    HideInfoKeys removes it.

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

    config_class = ReasoningGymConfig
    reset_option_keys = ("index",)
    config: ReasoningGymConfig

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        super().__init__(render_mode, **kwargs)
        self.size = self.config.resolved_size()  # how many items reset() draws from (``size=None`` resolved)
        self._key = dataset_key(
            self.config.dataset, self.config.dataset_config, self.config.composite_specs(), self.size, self.config.seed
        )
        self._dataset = load_dataset(self._key)
        self._grader = Grader(
            scoring=self.config.scoring,
            dataset=self._dataset,
            key=self._key,
            dataset_names=self.config.dataset_names(),
            score_timeout_s=self.config.score_timeout_s,
        )
        self._instruction = _INSTRUCTIONS[self.config.answer_format]
        self._item: dict[str, Any] | None = None
        self._index = -1
        self._source = ""  # the item's dataset: a composite's member, else the configured name
        self._last_note = ""
        self._metadata_out = False  # the item's metadata went out in an info (the next one gets a copy)
        self._undrawn: set[int] = set()  # indices its policy does not draw, under strict scoring
        self._resets_since_seed = 0  # the balanced draw's position in the seed's sequence of strata

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self._resets_since_seed = 0
        if options is not None:
            options = self.reset_options(options)
        if options and "index" in options:
            index = check_int("ReasoningGymEnv.reset options['index']", options["index"], low=0, high=self.size - 1)
            item = _ITEMS.get(self._key, self._dataset, index)
        else:
            index, item = self._draw_item()
        self._index = index
        self._item = item
        self._source = self._source_of(item)
        self._last_note = ""
        self._metadata_out = False
        answer = item["answer"]
        info = {
            "problem_id": f"{self._source}/{index}",
            "dataset": self._source,
            "index": index,
            PRIVILEGED_KEY: {"answer": answer if type(answer) is str or answer is None else copy_tree(answer)},
        }
        return self._question(), info

    # --- the balanced draw (draw.py): under strict scoring, labels equally likely and no answer in its question ---
    @property
    def balanced_draw(self) -> bool:
        return bool(self.config.balanced_draw) if self._balanced_draw is None else self._balanced_draw

    @balanced_draw.setter
    def balanced_draw(self, on: bool) -> None:  # benchmarks/chance_table.py measures the draw with it off and on
        self._balanced_draw = on

    _balanced_draw: bool | None = None

    def _draw_item(self) -> tuple[int, dict[str, Any]]:
        if self.config.scoring != "strict" or not self.balanced_draw:
            return self._next_drawn_item()
        plan = draw_plans.plan_for(self._key, self.config.scoring, self._sample_item, self.size, self._pays)
        position = draw.stratum_position(self.np_random_seed, self._resets_since_seed)  # never seeded: OS entropy's
        self._resets_since_seed += 1
        return plan.draw(
            position,
            lambda: int(self.np_random.integers(self.size)),
            self._sample_item,
            draw_plans.labels_for(self._key, self.config.scoring),
            self._next_drawn_item,
            self._pays_own_example,
            self._pays,
        )

    def _sample_item(self, index: int) -> dict[str, Any] | None:
        """The item at ``index`` if its policy draws it and strict scoring pays its own example answer, else None
        (also when the generator fails on that index: maze's raises on some, and a walk visits many)."""
        try:
            item = _ITEMS.get(self._key, self._dataset, index)
        except Exception:  # noqa: BLE001  (the task's generator: any failure means no item here)
            return None
        return item if self._drawn(index, item) and self._pays_own_example(item) else None

    def _pays_own_example(self, item: dict[str, Any]) -> bool:
        """Whether strict scoring pays the example answer reasoning-gym keeps for the item (if it keeps one): an
        item whose example it refuses would hold an honest answer to a rule the question does not state."""
        example = draw.own_example(item)
        return example is None or self._grader.grade(example, item, self._source_of(item)).score >= 1.0

    def _pays(self, answer: str, item: Mapping[str, Any]) -> bool:
        """Whether this env's scoring pays ``answer`` in full on ``item``: what joins the draw's labels into classes
        (``draw.Pays``)."""
        return self._grader.grade(answer, item, self._source_of(item)).score >= 1.0

    # --- end of the balanced draw ---

    def _next_drawn_item(self) -> tuple[int, dict[str, Any]]:
        """The seed's next item, skipping (under strict scoring) items its dataset's policy does not draw."""
        index = -1
        for _ in range(_MAX_REDRAWS):
            index = int(self.np_random.integers(self.size))
            if index in self._undrawn:  # known: not generated again (a reset repeats its seed's draws)
                continue
            item = _ITEMS.get(self._key, self._dataset, index)
            if self._drawn(index, item):
                return index, item
        # Unlucky, or too few items: the indices in turn from the last one drawn (still the seed's choice).
        for offset in range(1, self.size + 1):
            walked = (index + offset) % self.size
            if walked not in self._undrawn:
                item = _ITEMS.get(self._key, self._dataset, walked)
                if self._drawn(walked, item):
                    return walked, item
        raise ValueError(
            f"ReasoningGymEnv size={self.size} leaves no item strict scoring draws for dataset "
            f"{self.config.dataset!r}: each is one a content-free answer would be paid on (the draw "
            "filters, docs/reasoning_gym.md); raise size (the default, None, draws from 100,000)"
        )

    def _drawn(self, index: int, item: dict[str, Any]) -> bool:
        """Whether reset may draw this item: always, unless strict scoring's draw filter refuses it (remembered)."""
        if self.config.scoring != "strict":
            return True
        source = self._source_of(item)
        drawn = draw_filter(source)
        if not self._unwinnable(item.get("answer"), source) and (drawn is None or drawn(item)):
            return True
        if len(self._undrawn) >= _MAX_UNDRAWN_KEPT:
            self._undrawn.clear()
        self._undrawn.add(index)
        return False

    def _unwinnable(self, gold: Any, source: str) -> bool:
        """Whether no answer could match this gold under strict scoring: an empty one (an empty answer is no answer:
        string_manipulation makes some), or one longer than strict scoring reads (the answer cap, or the answer
        language's: palindrome_partitioning lists every partition of a 15-letter string in over 4096 characters)."""
        if not isinstance(gold, str):
            return False
        cap = min(self.config.max_answer_chars, self._grader.longest_answer(source) or self.config.max_answer_chars)
        return gold == "" or len(gold.strip()) > cap

    def _source_of(self, item: Mapping[str, Any]) -> str:
        """The item's dataset: a composite's member, else the configured name."""
        return str(item.get("metadata", {}).get("source_dataset", self.config.dataset))

    def _question(self) -> str:
        assert self._item is not None
        rule = draw.STATED_RULES.get(self._source) if self.config.scoring == "strict" else None
        if rule is not None:  # a rule strict scoring holds answers to, stated (draw.STATED_RULES)
            return f"{self._item['question'].rstrip()}\n\n{rule}\n\n{self._instruction}"
        return f"{self._item['question'].rstrip()}\n\n{self._instruction}"

    def _privileged(self) -> dict[str, Any]:
        """The step's privileged info: the answer and the generator's metadata, the item's own objects.

        Not copied: the agent never sees them (the stack drops the key, and
        ``reveal_on_end`` shows them to the trainer on the final transition
        only), the item is this episode's alone (generated at this reset, or a
        copy out of the slow-item cache) and nothing reads it after the one
        graded step. Deep copies of leg_counting's metadata at reset and at step
        cost about as much as the whole stack. The reset's info carries the
        answer only, so no two calls share an object (gymnasium's check_env
        checks it); a raw env stepped again after its end gets a copy.
        """
        assert self._item is not None
        metadata = self._item.get("metadata", {})
        if self._metadata_out:
            metadata = copy_tree(metadata)
        self._metadata_out = True
        return {"answer": self._item["answer"], "metadata": metadata}

    def _grade(self, text: str) -> Grade:
        extraction = extract_answer(text, self.config.answer_format, self.config.max_answer_chars)
        if extraction.failure is not None:
            return Grade(extraction.failure, 0.0)
        assert self._item is not None and extraction.answer is not None
        return self._grader.grade(extraction.answer, self._item, self._source)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._item is None:
            raise gym.error.ResetNeeded("ReasoningGymEnv.step called before reset()")
        text = action if type(action) is str else split_trainer_action(action)[0]
        grade = self._grade(text)
        reward = float(grade.score)
        self._last_note = _note(grade)
        info = grade_info(
            f"{self._source}/{self._index}",
            grade,
            dataset=self._source,
            index=self._index,
            attempt=1,
            metrics={"reward/score": reward},
        )
        info[PRIVILEGED_KEY] = self._privileged()
        if self.render_mode == "human":
            self.render()
        return self._last_note, reward, True, False, info

    @property
    def num_items(self) -> int:
        """How many items ``reset()`` draws from: ``size``."""
        return self.size

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
        """The current item's gold answer: the privileged auditor's hook, not an agent channel.

        Items with no single answer (rush_hour, boxnet, ...) get one from the
        dataset's solver (``tasks.TASKS``), which reads the item's metadata;
        none if it has no solver or finds nothing within its bound.
        """
        if self._item is None:
            return []
        answer = self._item.get("answer")
        if answer is None:
            answer = solve(self._source, self._item)
        return [] if answer is None else [str(answer)]

    def is_right_answer(self, answer: str) -> bool:
        """Whether ``answer`` is right for the current item, by the task's own judgement: the privileged auditor's
        hook for chance where many answers are right, not an agent channel.

        The task module's rule where it writes one (``tasks.TASKS``: graph_color, jugs, propositional_logic,
        quantum_lock), apart from the scorer; else, on a dataset with many right answers
        (``table.MANY_RIGHT_ANSWERS``), reasoning-gym's own ``score_answer`` paying it 1.0 under strict scoring's
        requirements (sandboxed where grading is), whatever this env's scoring mode. False on every other
        dataset: its one right answer is the gold, which the audit's chance already counts.
        """
        if self._item is None:
            return False
        if has_right_rule(self._source):
            return is_right_answer(self._source, self._item, answer)
        return self._grader.own_full_credit(answer, self._item, self._source)

    def render_text(self) -> str:
        return "" if self._item is None else self._question() + ("\n\n" + self._last_note if self._last_note else "")

    def close(self) -> None:
        """Release the sandbox pool, if this env's datasets use it."""
        grader = getattr(self, "_grader", None)  # absent when __init__ failed
        if grader is not None:
            grader.close()
        super().close()
