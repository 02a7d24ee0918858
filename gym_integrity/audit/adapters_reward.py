"""A reward function over a dataset, as the text env the auditor plays: TRL's ``reward_funcs`` and verl's ``compute_score``.

A reward function is not an env: a trainer draws a dataset row, the policy
writes one completion, and the trainer calls the function once on it.
:class:`RewardFunctionEnv` plays exactly that, without touching the function:
``reset(seed)`` draws row ``seed % len(dataset)`` and shows its prompt,
``step(text)`` calls the function once on ``text`` and ends the episode. A
trainer never calls the function again for a completion it has graded, so
steps after the end get the end's transition back without a call (the audit
then measures the function, not an end this adapter invented). Two call shapes:

* ``"trl"``: ``fn(prompts=[prompt], completions=[completion], **columns)``, each
  other column of the row as a one-element list, the result a list of one
  ``float`` or ``None`` (TRL's "does not apply": reward 0.0 here, with
  ``info["reward_is_none"]``). A conversational prompt (a list of messages), or
  ``conversational=True`` (TRL's ``accuracy_reward`` reads only that form), gets
  the completion as ``[{"role": "assistant", "content": text}]``. TRL also
  passes ``completion_ids`` and ``trainer_state``; the auditor has neither, and
  a function that requires them fails at the first step, with that error;
* ``"verl"``: ``fn(data_source=..., solution_str=text, ground_truth=...,
  extra_info=...)`` from the row's ``data_source``, its gold and its
  ``extra_info`` (only those the function takes: verl's ``gsm8k.compute_score``
  takes two); a ``float`` or a dict with ``"score"``.

``"auto"`` (the default) reads the function's parameters: ``solution_str`` means
verl, anything else TRL. The dataset is a ``.jsonl``/``.json``/``.parquet``
file, a ``datasets`` id (``datasets.load_dataset(id, name, split=...)``), a
``datasets.Dataset`` (or ``DatasetDict`` with ``split``), or a list of dicts.
The gold (the privileged ``gold_answers()`` hook, never shown to the agent) is
the row's ``gold_column`` (a dotted path reaches into a dict column: verl's
``reward_model.ground_truth``); by default the first of :data:`GOLD_COLUMNS`
the rows have. Without one, the probes that need a gold do not run and say so.

Example:
    >>> def lenient(prompts, completions, answer, **columns):
    ...     return [1.0 if gold in text else 0.0 for text, gold in zip(completions, answer)]
    >>> env = RewardFunctionEnv(lenient, [{"prompt": "What is 3 + 4?", "answer": "7"}])
    >>> env.reset(seed=0)[0], env.gold_answers()
    ('What is 3 + 4?', ['7'])
    >>> env.step("It is 7, or maybe 8.")[1:3]
    (1.0, True)
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym

from gym_integrity.checks import check_choice, check_type
from gym_integrity.envs.base import MAX_TEXT_CHARS
from gym_integrity.spaces import UnicodeText

__all__ = [
    "RewardFunctionEnv",
    "load_rows",
    "load_callable",
    "column",
    "has_column",
    "first_column",
    "dataset_columns",
    "row_gold",
    "message_text",
    "reasoning_gym_scorer_env",
    "PROMPT_COLUMNS",
    "GOLD_COLUMNS",
    "STYLES",
]

STYLES = ("auto", "trl", "verl")
#: Where a prompt is looked for when no ``prompt_column`` is given, in this order.
PROMPT_COLUMNS = ("prompt", "question", "problem", "query", "input", "instruction")
#: Where a gold is looked for when no ``gold_column`` is given, in this order (verl's layout included).
GOLD_COLUMNS = (
    "answer",
    "solution",
    "ground_truth",
    "gold",
    "gold_answer",
    "target",
    "expected_answer",
    "reward_model.ground_truth",
    "reward_spec.ground_truth",
)
_MISSING = object()
#: The observation after the one step (an observation is never empty): it says nothing about the grade.
_GRADED = "The completion was graded."


def load_callable(spec: str) -> Any:
    """``"module:name"`` (or ``"path/to/file.py:name"``, a dotted name for a nested one) -> the object it names.

    A module not on the path is looked for in the working directory too, as
    ``python -m`` would. Raises ``ValueError`` for a spec without ``:``.
    """
    from gym_integrity.audit.isolate import _load_class, import_env_modules

    check_type("load_callable spec", spec, str, "'module:name'")
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name:
        raise ValueError(f"expected 'module:function' or 'path/to/file.py:function', got {spec!r}")
    if not where.endswith(".py"):
        import_env_modules([where])
    return _load_class(spec)


def column(row: Mapping[str, Any], path: str) -> Any:
    """The value at ``path`` in ``row`` (``"a.b"`` reaches into a dict column), or the module's missing marker.

    >>> column({"reward_model": {"ground_truth": "7"}}, "reward_model.ground_truth")
    '7'
    """
    value: Any = row
    if path in row:
        return row[path]
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def row_gold(row: Mapping[str, Any] | None, gold_column: str | None) -> list[str] | None:
    """The gold answers in ``row``'s ``gold_column`` (a list column gives several), or None if there are none.

    >>> row_gold({"reward_model": {"ground_truth": 7}}, "reward_model.ground_truth"), row_gold({"a": 1}, None)
    (['7'], None)
    """
    if row is None or gold_column is None:
        return None
    gold = column(row, gold_column)
    if gold is _MISSING or gold is None:
        return None
    return [str(g) for g in (gold if isinstance(gold, (list, tuple)) else [gold]) if str(g).strip()]


def has_column(row: Mapping[str, Any], path: str) -> bool:
    """Whether ``row`` has a value at ``path`` (``"a.b"`` reaches into a dict column)."""
    return column(row, path) is not _MISSING


def dataset_columns(
    row: Mapping[str, Any], prompt_column: str | None, gold_column: str | None
) -> tuple[str, str | None]:
    """The prompt and gold columns to read, given or found in ``row`` (:data:`PROMPT_COLUMNS`, :data:`GOLD_COLUMNS`);
    ``ValueError`` for a column the rows lack, or no prompt column at all. The gold column may be None (none)."""
    prompt = prompt_column or first_column(row, PROMPT_COLUMNS)
    if prompt is None or not has_column(row, prompt):
        raise ValueError(
            f"no prompt column {prompt_column or PROMPT_COLUMNS!r} in the dataset's rows "
            f"(columns: {list(row)}): pass prompt_column="
        )
    if gold_column is not None and not has_column(row, gold_column):
        raise ValueError(f"no gold column {gold_column!r} in the dataset's rows (columns: {list(row)})")
    return prompt, gold_column or first_column(row, GOLD_COLUMNS)


def message_text(prompt: Any) -> str:
    """A prompt as the text the policy sees: a string as it is, a list of chat messages as their contents.

    >>> message_text([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}])
    'Be brief.\\n\\n2+2?'
    """
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence) and all(isinstance(m, Mapping) for m in prompt):
        return "\n\n".join(str(m.get("content", "")) for m in prompt)
    return str(prompt)


def _read_file(path: str) -> list[dict[str, Any]]:
    if path.endswith(".jsonl"):
        with open(path, encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if isinstance(data, Mapping) and isinstance(data.get("data"), list):
            data = data["data"]
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of rows (or {{'data': [...]}}), got {type(data).__name__}")
        return data
    if path.endswith(".parquet"):
        import datasets

        return _rows_of(datasets.Dataset.from_parquet(path), None)
    raise ValueError(f"dataset file {path!r}: expected a .jsonl, .json or .parquet file")


def _rows_of(data: Any, split: str | None) -> Any:
    """A ``datasets`` object as an indexable of rows (a ``Dataset`` indexes lazily)."""
    import datasets

    if isinstance(data, datasets.DatasetDict):
        if split is None:
            if len(data) != 1:
                raise ValueError(f"the dataset has splits {list(data)}: pass split=")
            split = next(iter(data))
        if split not in data:
            raise ValueError(f"split {split!r} is not one of the dataset's {list(data)}")
        return data[split]
    return data


def load_rows(dataset: Any, *, split: str | None = None, name: str | None = None) -> Any:
    """The dataset's rows, indexable and sized: from a file, a ``datasets`` id or object, or a list of dicts."""
    if isinstance(dataset, (str, os.PathLike)):
        path = os.fspath(dataset)
        if os.path.isfile(path):
            rows: Any = _read_file(path)
        elif path.endswith((".jsonl", ".json", ".parquet")):
            raise FileNotFoundError(f"dataset file {path!r} does not exist")
        else:
            import datasets

            rows = _rows_of(datasets.load_dataset(path, name, split=split), split)
    elif isinstance(dataset, Sequence) and not isinstance(dataset, (str, bytes)):
        rows = list(dataset)
    elif type(dataset).__module__.startswith("datasets"):
        rows = _rows_of(dataset, split)
    else:
        raise TypeError(
            f"dataset must be a .jsonl/.json/.parquet path, a datasets id, a datasets.Dataset or a list "
            f"of dicts, got {type(dataset).__name__}"
        )
    if len(rows) == 0:
        raise ValueError("the dataset has no rows")
    if not isinstance(rows[0], Mapping):
        raise TypeError(f"dataset rows must be dicts, got {type(rows[0]).__name__}")
    return rows


def _accepted(fn: Callable[..., Any], names: Sequence[str]) -> set[str]:
    """Which of ``names`` ``fn`` takes as keywords (all of them if it takes ``**kwargs`` or has no signature)."""
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return set(names)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return set(names)
    return {n for n in names if n in parameters}


def _style_of(fn: Callable[..., Any]) -> str:
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature: TRL's shape is the common one
        return "trl"
    return "verl" if "solution_str" in parameters else "trl"


def first_column(row: Mapping[str, Any], names: Sequence[str]) -> str | None:
    """The first of ``names`` that ``row`` has, or None."""
    return next((n for n in names if has_column(row, n)), None)


class RewardFunctionEnv(gym.Env[str, str]):
    """One dataset row per episode, graded once by the reward function (see the module docstring)."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        reward: Callable[..., Any] | str,
        dataset: Any,
        *,
        style: str = "auto",
        prompt_column: str | None = None,
        gold_column: str | None = None,
        split: str | None = None,
        name: str | None = None,
        data_source: str | None = None,
        conversational: bool | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.reward_fn = load_callable(reward) if isinstance(reward, str) else reward
        if not callable(self.reward_fn):
            raise TypeError(f"RewardFunctionEnv reward must be callable or 'module:function', got {reward!r}")
        check_type("RewardFunctionEnv conversational", conversational, (bool, type(None)), "a bool or None")
        self.conversational = conversational
        # verl's own scorers take a subset (gsm8k's compute_score: solution_str and ground_truth): pass what it takes.
        self._verl_arguments = _accepted(self.reward_fn, ("data_source", "solution_str", "ground_truth", "extra_info"))
        check_choice("RewardFunctionEnv style", style, STYLES)
        check_choice("RewardFunctionEnv render_mode", render_mode, (None, "ansi"))
        self.style = _style_of(self.reward_fn) if style == "auto" else style
        self.rows = load_rows(dataset, split=split, name=name)
        self.prompt_column, self.gold_column = dataset_columns(self.rows[0], prompt_column, gold_column)
        self.data_source = data_source
        self.render_mode = render_mode
        self.observation_space = UnicodeText(MAX_TEXT_CHARS)
        self.action_space = UnicodeText(MAX_TEXT_CHARS, min_length=0)
        self.step_budget = 1
        self._row: Mapping[str, Any] | None = None
        self._end: tuple[str, float, bool, bool, dict[str, Any]] | None = None
        self._obs = ""

    @property
    def num_items(self) -> int:
        return len(self.rows)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        if options:  # a reset the caller configured otherwise must not quietly draw a row
            raise TypeError(f"RewardFunctionEnv.reset takes no options, got {sorted(options)}")
        super().reset(seed=seed)
        index = seed % len(self.rows) if seed is not None else int(self.np_random.integers(len(self.rows)))
        self._row = self.rows[index]
        self._end = None
        self._obs = message_text(column(self._row, self.prompt_column))
        return self._obs, {"row": index}

    def gold_answers(self) -> list[str] | None:
        """The privileged auditor hook: the current row's gold column (None without one)."""
        return row_gold(self._row, self.gold_column)

    def _call(self, text: str) -> Any:
        assert self._row is not None
        prompt = column(self._row, self.prompt_column)
        if self.style == "verl":
            gold = column(self._row, self.gold_column) if self.gold_column else None
            arguments = {
                "data_source": self._row.get("data_source", self.data_source),
                "solution_str": text,
                "ground_truth": None if gold is _MISSING else gold,
                "extra_info": self._row.get("extra_info"),
            }
            return self.reward_fn(**{k: v for k, v in arguments.items() if k in self._verl_arguments})
        conversational = not isinstance(prompt, str) if self.conversational is None else self.conversational
        completion: Any = [{"role": "assistant", "content": text}] if conversational else text
        columns = {k: [v] for k, v in self._row.items() if k != self.prompt_column}
        return self.reward_fn(prompts=[prompt], completions=[completion], **columns)

    def _reward(self, result: Any) -> tuple[float, dict[str, Any]]:
        """The function's result as ``(reward, info)``; a result of the wrong shape is a ``TypeError``."""
        if self.style == "trl":
            if not isinstance(result, (list, tuple)) or len(result) != 1:
                raise TypeError(f"a TRL reward function returns one value per completion; got {result!r:.200}")
            result = result[0]
        elif isinstance(result, Mapping):
            extra = {k: v for k, v in result.items() if k != "score" and isinstance(v, (int, float, str, bool))}
            return float(result["score"]), {"reward_fn": extra}
        if result is None:
            return 0.0, {"reward_is_none": True}
        if not isinstance(result, (int, float)):
            raise TypeError(f"the reward function returned {type(result).__name__}, expected a number")
        return float(result), {}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._row is None:
            raise gym.error.ResetNeeded("RewardFunctionEnv.step before reset()")
        if self._end is not None:  # the trainer graded this completion already: it calls no one again
            obs, reward, terminated, truncated, info = self._end
            return obs, reward, terminated, truncated, dict(info)
        if not isinstance(action, str):
            raise TypeError(f"RewardFunctionEnv.step takes text, got {type(action).__name__}")
        reward, info = self._reward(self._call(action))
        self._end = (_GRADED, reward, True, False, info)
        return _GRADED, reward, True, False, dict(info)

    def render(self) -> str:
        return self._obs


def reasoning_gym_scorer_env(dataset: str, *, size: int = 64, seed: int = 0, **config: Any) -> RewardFunctionEnv:
    """reasoning-gym's own scoring of ``dataset``, as its evaluations run it: the answer read by
    ``reasoning_gym.utils.extract_answer`` (the last ``<answer>`` tag) and paid ``dataset.score_answer(answer,
    entry)``; ``size`` items from ``seed``, ``config`` for ``create_dataset``. The gold is each entry's ``answer``
    (None for tasks with no single answer: the report then says which probes could not run)."""
    import reasoning_gym
    from reasoning_gym.utils import extract_answer

    check_type("reasoning_gym_scorer_env dataset", dataset, str, "a reasoning-gym dataset name")
    data = reasoning_gym.create_dataset(dataset, seed=seed, size=size, **config)
    rows = [{"question": entry["question"], "answer": entry["answer"], "entry": entry} for entry in data]

    def score_answer(
        prompts: list[Any], completions: list[str], entry: list[dict[str, Any]], **columns: Any
    ) -> list[float]:
        return [float(data.score_answer(extract_answer(text), item)) for text, item in zip(completions, entry)]

    score_answer.__qualname__ = f"reasoning_gym[{dataset}].score_answer"
    return RewardFunctionEnv(score_answer, rows, style="trl", prompt_column="question", gold_column="answer")
