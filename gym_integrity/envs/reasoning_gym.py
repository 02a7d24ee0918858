"""ReasoningGym-v0: reasoning-gym's procedural tasks (and weighted composites) as a single-turn text env."""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass, field, fields
from typing import Any, Mapping, Sequence

import gymnasium as gym

from gym_integrity.checks import is_int, is_number
from gym_integrity.extract import ANSWER_FORMATS, extract_answer
from gym_integrity.infotree import copy_tree
from gym_integrity.protocol import PRIVILEGED_KEY, Grade, Verdict, grade_info, split_trainer_action
from gym_integrity.spaces import UnicodeText

__all__ = ["ReasoningGymConfig", "ReasoningGymEnv", "available_datasets"]

_INSTRUCTIONS = {
    "tag": "Put your final answer between <answer> and </answer>.",
    "boxed": "Put your final answer in \\boxed{}.",
    "either": "Put your final answer between <answer> and </answer>.",
    "raw": "Reply with your final answer only.",
}
_MAX_TEXT = 1_000_000


def available_datasets() -> list[str]:
    """Names of every reasoning-gym dataset (imports reasoning_gym)."""
    import reasoning_gym  # noqa: F401  (importing registers the datasets)
    from reasoning_gym.factory import DATASETS

    return sorted(name for name in DATASETS if name != "composite")


def _check_dataset_name(name: Any, field_name: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"ReasoningGymConfig.{field_name} must be a dataset name (str), got {type(name).__name__}")
    names = available_datasets()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=3)
        hint = f" Did you mean {close}?" if close else ""
        raise ValueError(f"ReasoningGymConfig.{field_name}: unknown reasoning-gym dataset {name!r}.{hint} "
                         f"Valid choices: {', '.join(names)}")


def _check_task_config(name: str, task_config: Mapping[str, Any], where: str) -> None:
    """Build the task's own config dataclass once, so a bad value fails at make, naming the field."""
    from reasoning_gym.factory import DATASETS

    config_cls = DATASETS[name][1]
    valid = sorted(f.name for f in fields(config_cls))
    unknown = sorted(set(task_config) - set(valid))
    if unknown:
        raise ValueError(f"{where}: {name} has no option(s) {unknown}; valid options: {valid}")
    try:
        cfg = config_cls(**task_config)
        if hasattr(cfg, "validate"):
            cfg.validate()
    except (AssertionError, ValueError, TypeError) as exc:
        raise ValueError(f"{where}: invalid config for {name}: {exc or type(exc).__name__}; options: {valid}") from None


@dataclass
class ReasoningGymConfig:
    """What ``gym.make("ReasoningGym-v0", **kwargs)`` accepts.

    Attributes:
        dataset: A reasoning-gym dataset name, or a composite: a list of
            ``{"name": str, "weight": float, "config": dict}`` (weight and config
            optional) or a mapping ``{name: weight}``.
        dataset_config: Options of a single dataset (e.g. ``{"min_animals": 3}``).
        size: How many distinct items ``reset()`` draws from. Items are generated
            lazily by index, so a large size costs nothing.
        seed: The generator seed: which items exist. The ``reset`` seed picks among them.
        answer_format: ``"tag"`` (``<answer>...</answer>``), ``"boxed"``,
            ``"either"`` (tag, else boxed; the default) or ``"raw"`` (whole reply).
        max_answer_chars: Longer extracted answers are graded ``too_long``
            (bounds the work any task scorer is given).
    """

    dataset: str | Sequence[Mapping[str, Any]] | Mapping[str, float] = "leg_counting"
    dataset_config: Mapping[str, Any] = field(default_factory=dict)
    size: int = 100_000
    seed: int = 42
    answer_format: str = "either"
    max_answer_chars: int = 4096

    def composite_specs(self) -> list[dict[str, Any]] | None:
        """The composite as a list of ``{"name", "weight", "config"}``, or None for a single dataset."""
        if isinstance(self.dataset, str):
            return None
        if isinstance(self.dataset, Mapping):
            return [{"name": n, "weight": w, "config": {}} for n, w in self.dataset.items()]
        return [{"name": s.get("name"), "weight": s.get("weight", 1.0), "config": dict(s.get("config", {}))}
                for s in self.dataset]

    def validate(self) -> None:
        for name in ("size", "seed", "max_answer_chars"):
            value = getattr(self, name)
            if not is_int(value):
                raise TypeError(f"ReasoningGymConfig.{name} must be an int, got {type(value).__name__}")
        if self.size < 1:
            raise ValueError(f"ReasoningGymConfig.size must be >= 1, got {self.size}")
        if self.max_answer_chars < 1:
            raise ValueError(f"ReasoningGymConfig.max_answer_chars must be >= 1, got {self.max_answer_chars}")
        if self.answer_format not in ANSWER_FORMATS:
            raise ValueError(f"ReasoningGymConfig.answer_format must be one of {ANSWER_FORMATS}, "
                             f"got {self.answer_format!r}")
        if not isinstance(self.dataset_config, Mapping):
            raise TypeError(f"ReasoningGymConfig.dataset_config must be a dict, got {type(self.dataset_config).__name__}")
        if isinstance(self.dataset, (bytes, bytearray)) or not isinstance(self.dataset, (str, Sequence, Mapping)):
            raise TypeError("ReasoningGymConfig.dataset must be a dataset name, a list of "
                            f"{{'name', 'weight', 'config'}} dicts or a {{name: weight}} mapping; got {type(self.dataset).__name__}")
        specs = self.composite_specs()
        if specs is None:
            _check_dataset_name(self.dataset, "dataset")
            _check_task_config(self.dataset, self.dataset_config, "ReasoningGymConfig.dataset_config")
            return
        if not specs:
            raise ValueError("ReasoningGymConfig.dataset: a composite needs at least one dataset")
        if self.dataset_config:
            raise ValueError("ReasoningGymConfig.dataset_config applies to a single dataset; "
                             "give a composite's options per entry as {'name', 'weight', 'config'}")
        seen = set()
        for spec in specs:
            _check_dataset_name(spec["name"], "dataset[].name")
            if spec["name"] in seen:
                raise ValueError(f"ReasoningGymConfig.dataset: {spec['name']!r} appears twice in the composite")
            seen.add(spec["name"])
            weight = spec["weight"]
            if not is_number(weight) or not weight > 0:
                raise ValueError(f"ReasoningGymConfig.dataset: weight of {spec['name']!r} must be a number > 0, got {weight!r}")
            _check_task_config(spec["name"], spec["config"], f"ReasoningGymConfig.dataset[{spec['name']}].config")


@functools.lru_cache(maxsize=64)
def _load_dataset(key: str) -> Any:
    """One generator per distinct config per process, shared by every env instance."""
    import reasoning_gym
    from reasoning_gym.composite import CompositeConfig, CompositeDataset, DatasetSpec

    spec = json.loads(key)
    if spec["composite"] is None:
        return reasoning_gym.create_dataset(spec["dataset"], **{**spec["dataset_config"], "size": spec["size"],
                                                                "seed": spec["seed"]})
    datasets = [DatasetSpec(name=s["name"], weight=float(s["weight"]), config=s["config"]) for s in spec["composite"]]
    return CompositeDataset(CompositeConfig(size=spec["size"], seed=spec["seed"], datasets=datasets))


class ReasoningGymEnv(gym.Env[str, str]):
    """A reasoning-gym task as a single-turn text environment.

    ## Description

    Each episode is one item of a `reasoning-gym <https://github.com/open-thought/reasoning-gym>`_
    procedural dataset (``leg_counting``, ``basic_arithmetic``, ``sudoku``, ...,
    about a hundred in all) or of a weighted composite of several. The model
    reads the question and answers once; the task's own ``score_answer`` grades
    the answer, partial credit included.

    ## Action Space

    :class:`~gym_integrity.spaces.UnicodeText`: the model's reply. The final
    answer is taken from the last ``<answer>...</answer>`` (or ``\\boxed{}``, by
    ``answer_format``). Any ``str`` is graded; a non-``str`` raises ``TypeError``.

    ## Observation Space

    :class:`~gym_integrity.spaces.UnicodeText`: the question followed by the
    answer-format instruction. After the step: a one-line grading note
    (verdict and score, never the answer).

    ## Rewards

    The task's score in [0, 1]: 1.0 correct, in between partial (some tasks
    give partial credit), 0.0 wrong or no answer. A scorer that raises gives a
    ``grader_error`` no-verdict (reward 0.0, ``info["no_verdict"]`` True).

    ## Starting State

    ``reset(seed=s)`` draws an item index from ``self.np_random``: equal seeds
    give equal items (a GRPO group). ``options={"index": i}`` picks item ``i``.

    ## Episode End

    Single-turn: the first step ends the episode (``terminated=True,
    truncated=False``). The registered id adds the integrity stack, so steps
    after the end change nothing.

    ## Info

    ``problem_id`` (``"<dataset>/<index>"``), ``dataset``, ``index``,
    ``verdict``, ``no_verdict``, ``score``, ``metrics``. The item's answer and
    raw metadata (which can hold the answer, e.g. leg_counting's
    ``total_legs``) sit under ``info["privileged"]``, removed by the stack.

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
        unknown = set(kwargs) - {f.name for f in fields(ReasoningGymConfig)}
        if unknown:
            raise TypeError(f"ReasoningGym-v0 got unknown option(s) {sorted(unknown)}; "
                            f"valid: {[f.name for f in fields(ReasoningGymConfig)]}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.config = ReasoningGymConfig(**kwargs)
        self.config.validate()
        self.render_mode = render_mode
        self.observation_space = UnicodeText(_MAX_TEXT)
        self.action_space = UnicodeText(_MAX_TEXT, min_length=0)
        self.step_budget = 1
        key = json.dumps({"dataset": self.config.dataset if isinstance(self.config.dataset, str) else None,
                          "dataset_config": dict(self.config.dataset_config), "composite": self.config.composite_specs(),
                          "size": self.config.size, "seed": self.config.seed}, sort_keys=True)
        self._dataset = _load_dataset(key)
        self._instruction = _INSTRUCTIONS[self.config.answer_format]
        self._item: dict[str, Any] | None = None
        self._index = -1
        self._source = ""  # the item's dataset: a composite's member, else the configured name
        self._last_note = ""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        if "index" in options:
            index = options["index"]
            if not is_int(index) or not 0 <= index < self.config.size:
                raise ValueError(f"options['index'] must be an int in [0, {self.config.size}), got {index!r}")
        else:
            index = int(self.np_random.integers(self.config.size))
        self._index = index
        self._item = self._dataset[index]
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
        try:
            score = float(self._dataset.score_answer(extraction.answer, entry=self._item))
        except Exception as exc:  # a task scorer bug is a no-verdict, never a silent 0.0
            return Grade(Verdict.GRADER_ERROR, 0.0, cause=f"{self._source}.score_answer raised {type(exc).__name__}")
        if score != score:  # NaN
            return Grade(Verdict.GRADER_ERROR, 0.0, cause=f"{self._source}.score_answer returned NaN")
        score = min(max(score, 0.0), 1.0)
        verdict = Verdict.CORRECT if score >= 1.0 else Verdict.PARTIAL if score > 0.0 else Verdict.INCORRECT
        return Grade(verdict, score)

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
