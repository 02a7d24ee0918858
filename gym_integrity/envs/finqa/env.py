"""FinQA-v0: a financial question answered through table tools and read-only SQL, one tool call per step."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from gym_integrity.checks import check_int, check_str, is_int
from gym_integrity.envs.base import TextEnv
from gym_integrity.envs.finqa.actions import FORMAT_HELP, ActionError, parse_action, read_structured
from gym_integrity.envs.finqa.config import FinQAConfig
from gym_integrity.envs.finqa.data import cached_datasets, load_dataset_cached
from gym_integrity.envs.finqa.records import FinQADataset, Question
from gym_integrity.envs.finqa.scoring import score_answer
from gym_integrity.envs.finqa.sql_sandbox import SQL_UNAVAILABLE, PooledSQLSandbox, acquire_sql_pool, run_budget_s
from gym_integrity.envs.finqa.tools import LIST_TOOLS, FinQATools
from gym_integrity.protocol import (
    MAX_NUM_TOKENS,
    PRIVILEGED_KEY,
    Grade,
    TrainerAction,
    Verdict,
    grade_info,
    split_trainer_action,
)
from gym_integrity.spaces import UnicodeText
from gym_integrity.workers import WORKER_START_ALLOWANCE_S, Pool, ProcessCache

__all__ = ["FinQAEnv", "format_tool_call"]

_TOOLS: ProcessCache[tuple[Any, ...], FinQATools] = ProcessCache("FinQA tools")


def _shared_tools(dataset: FinQADataset, config: FinQAConfig) -> FinQATools:
    """One FinQATools per (dataset, limits) per process: its lookups are built once, not per env."""
    key = (id(dataset), config.sql_timeout_s, config.sql_row_cap, config.max_result_chars)
    tools = _TOOLS.get(key)
    if tools is not None and tools.dataset is dataset:
        return tools
    live = {id(d) for d in cached_datasets()} | {id(dataset)}
    for stale, old in _TOOLS.items():
        if old is tools or id(old.dataset) not in live:  # after clear_dataset_cache(): let old data go
            _TOOLS.pop(stale)
    sandbox = PooledSQLSandbox(config.sql_timeout_s, config.sql_row_cap, config.max_result_chars)
    return _TOOLS.setdefault(key, FinQATools(dataset, sandbox, config.max_result_chars))


def _is_trainer_dict(action: Any) -> bool:
    """A dict is the trainer's ``{"text", "num_tokens"}`` only when those are its keys, text is a str and
    num_tokens is absent, None or a valid count.

    Anything else (``{"text": 5}``, ``{"text": "x", "arguments": {}}``, ``{"text": "x", "num_tokens": "x"}``)
    is read as a model-written tool call: a model can write that JSON as well as a trainer, so it is an
    error step, never an exception.
    """
    if not (
        isinstance(action, dict)
        and "text" in action
        and set(action) <= {"text", "num_tokens"}
        and isinstance(action["text"], str)
    ):
        return False
    tokens = action.get("num_tokens")
    return tokens is None or (is_int(tokens) and 0 <= tokens <= MAX_NUM_TOKENS)


def format_tool_call(name: str, arguments: Mapping[str, Any] | None = None) -> str:
    """The ``<tool_call>`` text a chat model would emit for one call (handy for scripts and audits).

    >>> format_tool_call("submit_answer", {"answer": "12.5%"})
    '<tool_call>{"name": "submit_answer", "arguments": {"answer": "12.5%"}}</tool_call>'
    """
    return "<tool_call>" + json.dumps({"name": name, "arguments": dict(arguments or {})}) + "</tool_call>"


class FinQAEnv(TextEnv):
    r"""Answer a question about a company's 10-K filing by calling tools over its tables.

    ## Description

    Each episode is one question about one (fictional, by default) company. The
    agent explores the company's tables with tools, one call per step, and ends
    the episode by submitting an answer:

    * ``get_descriptions(company_name)``: the company's table names;
    * ``get_table_info(company_name, table_name)``: description, columns, types
      and the distinct values of label columns (not the numbers);
    * ``sql_query(company_name, table_name, query)``: one read-only ``SELECT``
      (named columns, a ``WHERE`` filter) run in a sandbox on a killable worker process;
    * ``submit_answer(answer)``: ends the episode with the score;
    * ``read_document(company_name)``: the filing text (original-FinQA data only);
    * ``list_tools``: the OpenAI function-calling schemas of the tools.

    The schemas are also :attr:`tools` (for a chat template's ``tools=``).
    Data: the embedded set (37 questions, 4 companies, 16 tables), a local
    FinQA-benchmark root or original FinQA JSON (``data_path`` or
    ``$FINQA_DATA_PATH``), or a hub id through ``datasets``; loaded once per
    process and shared by all instances.

    ## Action Space

    :class:`~gym_integrity.spaces.UnicodeText`: the model's text holding one
    tool call, as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
    or a bare JSON object ``{"name": ..., "arguments": {...}}``. ``step()``
    also accepts the structured dict ``{"tool": name, "arguments": {...}}``
    (or OpenAI's ``{"function": {"name", "arguments"}}``), and a
    :class:`~gym_integrity.protocol.TrainerAction` or its dict
    ``{"text": str, "num_tokens": int}`` (its text is used; a dict with other
    keys or a non-``str`` text is read as a tool call). Any text is handled:
    text without exactly one tool call is a step that returns an error
    observation listing the tool names and the expected format; so is a dict
    holding anything but plain JSON values (a 5,000-digit int, NaN, bytes, a
    set, an object, a self-containing list). A non-``str``, non-dict action
    raises ``TypeError``.

    ## Observation Space

    :class:`~gym_integrity.spaces.UnicodeText`. After ``reset()``: the question,
    the company and the tool list. After each step: the tool's result (JSON, or
    a line starting ``Error:``). After the submission: a grading note (verdict
    and score, never the gold answer).

    ## Rewards

    0.0 for every tool call; the submission's score (1.0 correct, 0.0 not) on
    the step that submits. Scoring (:mod:`gym_integrity.envs.finqa.scoring`):
    ``"tolerance"`` (default; 1% relative and 1.0 absolute) or
    ``"finqa_exact"`` (the original FinQA rule); either way a scale or point word
    on a bare gold is read against the question's text (the unit it asks in).

    ## Starting State

    ``reset(seed=s)`` draws the question with ``self.np_random`` (equal seeds,
    equal questions). ``options={"question_id": id}`` or ``{"index": i}`` picks one.

    ## Episode End

    ``submit_answer`` terminates (``terminated=True``). The step budget
    (``step_budget``, default 50) is declared here and enforced by
    MaxStepsTruncation in the registered stack (``truncated=True``); a
    submission on the last allowed step is scored and reported terminated.
    This raw class enforces nothing after the end: it would grade a second
    submission. The registered stack's TerminalFreeze prevents that.

    ## Info

    ``problem_id``, ``company``, ``verdict`` (``pending`` on tool steps;
    ``no_answer`` on the step where the stack truncates an episode with no submission),
    ``no_verdict``, ``score``, ``tool``, ``tool_ok``, ``metrics`` (``finqa/*``
    counts). Gold answers and the explanation sit under ``info["privileged"]``,
    removed by the stack unless the trainer opts in with
    ``gym_integrity.make("FinQA-v0", reveal_on_end=True)``.

    ## Registered Configurations

    * ``FinQA-v0``: the embedded set; pass any :class:`FinQAConfig` field to ``gym.make``.

    Example:
        >>> import gym_integrity, gymnasium as gym
        >>> env = gym.make("FinQA-v0")
        >>> obs, info = env.reset(options={"question_id": "fq001"})
        >>> info["company"], "privileged" in info
        ('northwind_foods', False)
        >>> call = {"tool": "sql_query", "arguments": {"company_name": "northwind_foods",
        ...     "table_name": "nwf_ConsolidatedStatementsOfIncomeTableTextBlock",
        ...     "query": "SELECT \"2024\" FROM nwf_ConsolidatedStatementsOfIncomeTableTextBlock "
        ...              "WHERE line_item = 'net_revenue'"}}
        >>> env.step(call)[:4]
        ('[{"2024": "$12,480"}]', 0.0, False, False)
        >>> _, reward, terminated, truncated, info = env.step(
        ...     '<tool_call>{"name": "submit_answer", "arguments": {"answer": "12480"}}</tool_call>')
        >>> reward, terminated, truncated, info["verdict"]
        (1.0, True, False, 'correct')
    """

    config_class = FinQAConfig
    reset_option_keys = ("question_id", "index")
    config: FinQAConfig

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        super().__init__(render_mode, **kwargs)
        self.dataset = load_dataset_cached(self.config)
        self._tools = _shared_tools(self.dataset, self.config)
        # A tool call is short: its cap is the config's own (max_action_chars); step() also takes dict calls.
        self.action_space = UnicodeText(self.config.max_action_chars, min_length=0)
        self.step_budget = self.config.step_budget
        # The longest one step takes on a quiet machine: a SQL query's run budget on its worker (a kill at the
        # budget stops what the in-worker clock cannot) plus the start of a killed worker's successor, which
        # the next query may wait for. Everything else in a step is pure Python (milliseconds). Read by the audit.
        self.grading_time_bound_s: float = run_budget_s(self.config.sql_timeout_s) + WORKER_START_ALLOWANCE_S
        self._sql_pool: Pool | None = None  # held from the first sql_query to close()
        self._question: Question | None = None
        self._index = -1
        self._last_obs = ""
        self._counts: dict[str, float] = {}

    # -------------------------------------------------------------- public helpers

    @property
    def num_items(self) -> int:
        """How many questions ``reset()`` draws from."""
        return len(self.dataset.questions)

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The OpenAI function-calling schemas of this env's tools (a fresh copy)."""
        return copy.deepcopy(self._tools.schemas)

    @property
    def tool_names(self) -> tuple[str, ...]:
        return self._tools.names + (LIST_TOOLS,)

    def gold_answers(self) -> list[str]:
        """The current question's accepted answers: the privileged auditor's hook, not an agent channel."""
        return [] if self._question is None else list(self._question.answers)

    @staticmethod
    def format_submission(answer: str) -> str:
        """The action text that submits ``answer`` (what an audit or a scripted policy sends)."""
        return format_tool_call("submit_answer", {"answer": answer})

    def audit_answer_action(self, answer: str) -> str:
        """The audit's hook: the action that submits ``answer``."""
        return self.format_submission(answer)

    def audit_non_answer_action(self) -> str:
        """The audit's hook: a read-only action that answers nothing."""
        return format_tool_call(LIST_TOOLS)

    # -------------------------------------------------------------- episode

    def _pick(self, options: Mapping[str, Any]) -> int:
        n = len(self.dataset.questions)
        if "question_id" in options:
            qid = check_str("FinQAEnv.reset options['question_id']", options["question_id"])
            if qid not in self.dataset.question_index:
                raise ValueError(
                    f"FinQAEnv.reset options['question_id'] must be the id of a loaded question, got {qid!r}"
                )
            return self.dataset.question_index[qid]
        if "index" in options:
            return check_int("FinQAEnv.reset options['index']", options["index"], low=0, high=n - 1)
        return int(self.np_random.integers(n))

    def _intro(self) -> str:
        q = self._question
        assert q is not None
        lines = [q.user_query, "", f"Company: {q.company}", "", "Tools:"]
        for schema in self._tools.schemas:
            fn = schema["function"]
            args = ", ".join(fn["parameters"]["required"])
            lines.append(f"- {fn['name']}({args}): {fn['description']}")
        lines.append(f"- {LIST_TOOLS}(): the tools' JSON schemas.")
        lines += [
            "",
            FORMAT_HELP,
            f"You have {self.step_budget} tool calls, the submission included. End with submit_answer.",
        ]
        return "\n".join(lines)

    def _privileged(self) -> dict[str, Any]:
        q = self._question
        assert q is not None
        return {"gold_answers": list(q.answers), "exact_answer": q.exact_answer, "explanation": q.explanation}

    def _info(self, grade: Grade, tool: str, tool_ok: bool) -> dict[str, Any]:
        q = self._question
        assert q is not None
        metrics = {**self._counts, "finqa/score": float(grade.score)}
        return grade_info(
            q.id,
            grade,
            company=q.company,
            tool=tool,
            tool_ok=tool_ok,
            metrics=metrics,
            **{PRIVILEGED_KEY: self._privileged()},
        )

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._index = self._pick(self.reset_options(options))
        self._question = self.dataset.questions[self._index]
        self._counts = {
            "finqa/tool_calls": 0.0,
            "finqa/sql_queries": 0.0,
            "finqa/tool_errors": 0.0,
            "finqa/sql_unavailable": 0.0,
        }
        self._last_obs = self._intro()
        q = self._question
        info = {
            "problem_id": q.id,
            "company": q.company,
            "question_type": q.question_type,
            PRIVILEGED_KEY: self._privileged(),
        }
        if self.render_mode == "human":
            self.render()
        return self._last_obs, info

    def _tool_list_text(self, message: str = "") -> str:
        """The tool names and the call format, the format left out when ``message`` already states it."""
        return f"Tools: {list(self.tool_names)}." + ("" if FORMAT_HELP in message else f" {FORMAT_HELP}")

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._question is None:
            raise gym.error.ResetNeeded("FinQAEnv.step called before reset()")
        if isinstance(action, Mapping):
            # Read into plain JSON data first: a dict's content is usually the model's tool call, so an odd
            # value in it (a 5,000-digit int, NaN, a set) is an error step, never an exception.
            action = read_structured(action, self.config.max_action_chars)
            if _is_trainer_dict(action):
                action, _ = split_trainer_action(action)  # token counts are not used: FinQA does not shape
        elif isinstance(action, TrainerAction):
            action, _ = split_trainer_action(action)
        if not isinstance(action, (str, Mapping, ActionError)):
            raise TypeError(
                "FinQA action must be a str (the model's text holding one tool call) or a dict "
                f'{{"tool": name, "arguments": {{...}}}}; got {type(action).__name__}'
            )
        self._counts["finqa/tool_calls"] += 1
        parsed = action if isinstance(action, ActionError) else parse_action(action, self.config.max_action_chars)
        reward, terminated = 0.0, False
        grade = Grade(Verdict.PENDING, 0.0)
        if isinstance(parsed, ActionError):
            obs, tool, ok = parsed.message + "\n" + self._tool_list_text(parsed.message), "", False
        elif parsed.name == LIST_TOOLS:
            obs, tool, ok = json.dumps(self._tools.schemas), LIST_TOOLS, True
        elif parsed.name == "submit_answer":
            problem = self._tools.check_arguments("submit_answer", parsed.arguments)
            if problem is not None:
                obs, tool, ok = problem, "submit_answer", False
            else:
                grade = self._grade(str(parsed.arguments["answer"]))
                reward, terminated = float(grade.score), True
                obs, tool, ok = (
                    (
                        f"Answer submitted. Graded: {grade.verdict.value} (score {grade.score:.2f}). "
                        "The episode is over."
                    ),
                    "submit_answer",
                    True,
                )
        elif parsed.name in self._tools.names:
            if parsed.name == "sql_query" and self._sql_pool is None:
                self._sql_pool = acquire_sql_pool()  # the first query of this env (again after a close)
            obs, ok = self._tools.call(parsed.name, parsed.arguments)
            tool = parsed.name
            if tool == "sql_query":
                self._counts["finqa/sql_queries"] += 1
                if obs.startswith(SQL_UNAVAILABLE):  # the pool's fault, not the query's: counted apart
                    self._counts["finqa/sql_unavailable"] += 1
        else:
            obs, tool, ok = (f"Error: unknown tool {parsed.name[:64]!r}.\n" + self._tool_list_text()), "", False
        if not ok:
            self._counts["finqa/tool_errors"] += 1
        self._last_obs = obs
        info = self._info(grade, tool, ok)
        if self.render_mode == "human":
            self.render()
        return obs, reward, terminated, False, info

    def _grade(self, answer: str) -> Grade:
        q = self._question
        assert q is not None
        exact = self.config.scoring == "finqa_exact"
        golds = [q.exact_answer] if exact and q.exact_answer else list(q.answers)
        try:
            # the question as shown states the scale and point unit a bare gold is asked in
            config = self.config
            return score_answer(answer, golds, config.scoring, config.rel_tol, config.abs_tol, question=q.user_query)
        except Exception as exc:  # a scorer bug is a no-verdict, never a silent 0.0
            return Grade(Verdict.GRADER_ERROR, 0.0, cause=f"finqa scoring raised {type(exc).__name__}")

    def render_text(self) -> str:
        return "" if self._question is None else self._last_obs

    def close(self) -> None:
        """Release the SQL worker pool, if this env used it: the last env of the process out stops its workers."""
        pool, self._sql_pool = getattr(self, "_sql_pool", None), None  # absent when __init__ failed
        if pool is not None:
            pool.release()
        super().close()

    def __repr__(self) -> str:
        return f"<FinQAEnv {self.dataset.source} questions={len(self.dataset.questions)}>"
