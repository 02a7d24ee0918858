r"""QEDMath-v0: olympiad math as a text env: proofs graded by an LLM judge, boxed answers by math_verify, multi-attempt problems."""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium as gym

from gym_integrity.checks import check_str
from gym_integrity.datacheck import user_stacklevel
from gym_integrity.envs.base import TextEnv
from gym_integrity.envs.qed_math.config import QEDMathConfig
from gym_integrity.envs.qed_math.final_answer import not_an_answer
from gym_integrity.envs.qed_math.grading import GradedAttempt
from gym_integrity.envs.qed_math.problems import load_problems
from gym_integrity.envs.qed_math.rows import Problem
from gym_integrity.envs.qed_math.shaping import answer_reward, length_discount, shape_reward, strip_reasoning
from gym_integrity.envs.qed_math.variants import honest_variants
from gym_integrity.grading.reader import boxed_answer, without_percent
from gym_integrity.grading.spelling import normal_text
from gym_integrity.protocol import PRIVILEGED_KEY, Grade, Verdict, grade_info, split_trainer_action
from gym_integrity.services.verifier import VerifierService, VerifierTally, get_verifier
from gym_integrity.workers import WORKER_START_ALLOWANCE_S

__all__ = ["QEDMathEnv"]

#: The final-answer rule (:mod:`.final_answer`) stated where the agent reads it: no refusal rule is hidden.
_ANSWER_INSTRUCTION = (
    "Put your final answer within \\boxed{}: the final value alone (no words but a unit in \\text{} at its end), "
    "written with numbers, + - \\cdot \\times /, \\frac, \\sqrt, powers and constants. A box that still poses "
    "the computation is graded incorrect whatever its value: an integral, limit, sum, product, derivative or arrow, "
    "or any other operation or function (such as mod, \\equiv, a matrix or determinant, \\binom, a factorial !, "
    "\\gcd, floor or ceiling, \\max, \\min, |...|, \\sin, \\log or \\ln, \\cup, in any spelling), or a power "
    "the problem writes, however its base or exponent is rewritten. Each is accepted only where the expected "
    'answer is itself written with it. Give one value unless the problem asks for several (no "or", \\pm or list '
    "of values), and do not write numbers side by side; an interval is written (a, b), a set \\{a, b\\}. In an "
    "equation, the value after the last = is what is graded. A percent sign is a unit mark: n\\% is read as n."
)
_PROOF_INSTRUCTION = "Write a complete and rigorous proof."


class QEDMathEnv(TextEnv):
    r"""Olympiad-style mathematics: proofs, boxed-answer problems and multi-attempt problems.

    ## Description

    Each episode is one problem from a problem set (the built-in set of the
    package by default, or the user's JSONL/JSON files and Hugging Face
    datasets). Three types:

    * ``answer``: the final answer is the last ``\boxed{...}`` of the reply,
      checked against the gold answer by math_verify (equivalent forms such as
      ``1/2``, ``0.5`` and ``\frac{1}{2}`` agree) in killable worker processes,
      each answer with a run budget of its own (:mod:`gym_integrity.services.verifier`);
    * ``proof``: the proof is graded 0-7 against the reference solution and
      rubric by an LLM judge behind an OpenAI-compatible endpoint
      (:mod:`gym_integrity.services.judge`);
    * ``multi_step``: several attempts with feedback after each wrong one,
      graded like an answer problem (or like a proof when the row has a rubric).

    Reasoning is stripped before grading: only the text after the last
    reasoning delimiter (default ``</think>``) is graded; a reply without the
    delimiter is graded whole.

    ## Action Space

    :class:`~gym_integrity.spaces.UnicodeText`: the model's reply. Trainers that
    shape by length pass :class:`~gym_integrity.protocol.TrainerAction` or
    ``{"text": str, "num_tokens": int}``: the token count ``L`` is only ever
    read from there, never from the text. Any ``str`` is graded; another type
    raises ``TypeError``.

    ## Observation Space

    :class:`~gym_integrity.spaces.UnicodeText`: the problem with its
    instruction (and, if ``show_guidelines``, a proof's grading guidelines);
    after a step, the feedback: the verdict, the attempts left, and for proofs
    the judge's agent-safe assessment. Never the reference solution or the gold
    answer.

    ## Rewards

    Answers, by ``reward_preset``: ``pure_success`` (correct 1, else 0) or
    ``base`` (correct 1, incorrect -0.5, no answer or unparsable -1). Proofs:
    points / 7, or 0/1 with ``collapse_partial``. Then, if the trainer gave
    ``L``: ``reward * discount_factor ** L`` for a positive reward (a penalty
    is never discounted toward 0: padding must not pay) plus the overlong penalty (linear
    from 0 to ``-overlong_penalty`` over the last ``buffer_tokens`` before
    ``max_tokens``). An answer whose own verification runs past the
    verifier's budget is graded ``timeout`` (``info["no_verdict"]`` False) and
    paid like ``unparsable``, shaped like any graded answer: timing out never
    beats being wrong. A ``grader_error`` (overloaded or broken verifier,
    unreachable judge) or a judge ``timeout`` is a no-verdict: reward 0.0,
    ``info["no_verdict"]`` True, cause in ``info["cause"]``, never shaped.

    ## Starting State

    ``reset(seed=s)`` draws the problem with ``self.np_random``: equal seeds give
    equal problems (a GRPO group). ``options={"problem_id": id}`` picks one by
    id; an unknown id raises ``ValueError``.

    ## Episode End

    The episode terminates on a correct answer (a proof at or above the judge's
    ``success_threshold``) or on the last allowed attempt (``max_attempts``:
    the row's value, else the config's, else 3 for multi-step problems and 1
    for the others). ``step_budget`` holds that attempt count for
    MaxStepsTruncation. The registered id adds the integrity stack: after the
    end, steps change nothing until ``reset()``.

    ## Info

    ``problem_id``, ``problem_type``, ``grading_guidelines`` (at reset, when
    the prompt shows them), ``verdict``, ``no_verdict``, ``score``,
    ``cause`` (no-verdicts and failed extractions), ``attempt``,
    ``attempts_remaining``, ``success``, ``metrics`` (``reward/base``,
    ``reward/shaped``, ``reward/overlong_penalty``, ``reward/discount``, and the
    grader's ``verifier/...`` (this env's own requests only) or ``judge/...`` keys). The gold answer, reference
    solution and raw judge output are under ``info["privileged"]``, which the
    stack removes.

    ## Registered Configurations

    * ``QEDMath-v0``: the built-in set; pass any :class:`QEDMathConfig` field
      to ``gym.make``. Registered ``nondeterministic=True`` (proofs are graded by an LLM).

    Example:
        >>> import gym_integrity, gymnasium as gym
        >>> env = gym.make("QEDMath-v0", reward_preset="base")
        >>> obs, info = env.reset(seed=0, options={"problem_id": "qed-ans-003"})
        >>> "privileged" in info, "within \\boxed{}" in obs
        (False, True)
        >>> _, reward, terminated, truncated, info = env.step("<think>hmm</think>I am not sure.")
        >>> reward, terminated, truncated, info["verdict"]
        (-1.0, True, False, 'no_answer')
        >>> env.close()

        A boxed answer goes to the verifier's worker processes:
        ``env.step(TrainerAction("</think>\\boxed{0.5}", num_tokens=812))``
        returns reward 1.0 (``0.5`` equals ``\\frac{1}{2}``), shaped by the
        token count if the config asks for length shaping.
    """

    config_class = QEDMathConfig
    reset_option_keys = ("problem_id",)
    config: QEDMathConfig

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        super().__init__(render_mode, **kwargs)
        self._problems = load_problems(self.config.dataset, self.config.problem_types)
        graders = {p.grader for p in self._problems.problems}  # a bad judge option already failed in validate()
        self._uses_verifier = "verifier" in graders
        if "judge" in graders:
            kinds = sorted({p.problem_type for p in self._problems.problems if p.grader == "judge"})
            _warn_once_without_judge(self.config.judge_config(), kinds)
        self._verifier: VerifierService | None = None
        self._verifier_tally = VerifierTally()  # this env's own requests: its metrics count no other env's
        if self._uses_verifier:
            self._verifier = get_verifier(self.config.verifier_config).acquire()
        self._problem: Problem | None = None
        self._attempt = 0
        self._attempts = 1
        self._note = ""

    # ------------------------------------------------------------------ episode

    @property
    def num_items(self) -> int:
        """How many problems ``reset()`` draws from."""
        return len(self._problems.problems)

    @property
    def problem_ids(self) -> list[str]:
        """Ids of every loaded problem (for ``options={"problem_id": ...}``)."""
        return [p.problem_id for p in self._problems.problems]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = self.reset_options(options)
        if "problem_id" in options:
            problem_id = check_str("QEDMathEnv.reset options['problem_id']", options["problem_id"])
            if problem_id not in self._problems.by_id:
                kind = self._problems.left_out.get(problem_id)
                why = (
                    f"{problem_id!r} is a {kind} problem, left out by problem_types="
                    f"{list(self.config.problem_types or ())}"
                    if kind
                    else f"unknown problem id {problem_id!r}"
                )
                raise ValueError(
                    f"QEDMathEnv.reset options['problem_id']: {why} "
                    f"({len(self._problems)} problems loaded; see env.unwrapped.problem_ids)"
                )
            index = self._problems.by_id[problem_id]
        else:
            index = int(self.np_random.integers(len(self._problems)))
        problem = self._problems.problems[index]
        self._problem = problem
        self._attempt = 0
        default_attempts = 3 if problem.problem_type == "multi_step" else 1
        self._attempts = problem.max_attempts or self.config.max_attempts or default_attempts
        self.step_budget = self._attempts
        self._note = ""
        info = {
            "problem_id": problem.problem_id,
            "problem_type": problem.problem_type,
            "dataset_source": problem.dataset_source,
            "max_attempts": self._attempts,
            "attempts_remaining": self._attempts,
            PRIVILEGED_KEY: self._privileged(),
        }
        if self._shows_guidelines():
            info["grading_guidelines"] = problem.grading_guidelines  # in the prompt as well: public here
        return self._prompt(), info

    def _shows_guidelines(self) -> bool:
        problem = self._problem
        return (
            problem is not None
            and problem.grader == "judge"
            and self.config.show_guidelines
            and bool(problem.grading_guidelines)
        )

    def _prompt(self) -> str:
        problem = self._problem
        assert problem is not None
        parts = [problem.problem]
        if problem.grader == "judge":
            parts.append(_PROOF_INSTRUCTION)
            if self._shows_guidelines():
                parts.append("Grading guidelines:\n" + problem.grading_guidelines)
        else:
            parts.append(_ANSWER_INSTRUCTION)
        if self._attempts > 1:
            parts.append(
                f"You have {self._attempts} attempts; after each unsuccessful attempt you will get "
                "feedback and may try again."
            )
        return "\n\n".join(parts)

    def _privileged(self, judge_output: str | None = None) -> dict[str, Any]:
        problem = self._problem
        assert problem is not None
        out: dict[str, Any] = {
            "gold_answer": problem.gold_answer,
            "reference_solution": problem.reference_solution,
            "grading_guidelines": problem.grading_guidelines,
        }
        if judge_output is not None:
            out["judge_output"] = judge_output
        return out

    # ------------------------------------------------------------------ grading

    def _grade_answer(self, text: str) -> GradedAttempt:
        problem = self._problem
        assert problem is not None
        if self._verifier is None:
            # Stepped after close(): take the shared service again rather than fail.
            self._verifier = get_verifier(self.config.verifier_config).acquire()
        # The one reading (grading.reader): the last box of the text without its percent signs (math_verify alone
        # pays X\% as X and as X/100). The rule and the verifier both get exactly this string.
        answer, failure = boxed_answer(without_percent(text), self._verifier.config.max_answer_chars)
        if failure is not None:
            return GradedAttempt(
                failure,
                answer_reward(failure, self.config.reward_preset),
                success=False,
                metrics=self._verifier.extraction_failed(self._verifier_tally),
            )
        assert answer is not None
        gold = without_percent(problem.gold_answer)
        # A text gold is matched as text: math_verify, whose evaluations the rule guards against, never runs.
        reason = None if problem.answer_kind == "text" else not_an_answer(answer, gold, problem.problem)
        if reason is not None or problem.answer_kind == "text":
            # A value math_verify would compute from the question itself is graded unrun; a text gold (a name, a
            # word, an option letter) is matched exactly, after normal_text, and needs no worker either.
            if reason is not None:
                grade = Grade(Verdict.INCORRECT, 0.0, cause=f"not a final answer: {reason}")
            elif normal_text(answer) == normal_text(gold):
                grade = Grade(Verdict.CORRECT, 1.0)
            else:
                grade = Grade(Verdict.INCORRECT, 0.0, cause="the answer does not match the expected text")
            return GradedAttempt(
                grade,
                answer_reward(grade, self.config.reward_preset),
                success=grade.verdict is Verdict.CORRECT,
                metrics=VerifierService.outcome_metrics(self._verifier_tally, 0.0, False),
            )
        outcome = self._verifier.verify_answer(answer, gold, problem_id=problem.problem_id, tally=self._verifier_tally)
        grade = outcome.grade
        return GradedAttempt(
            grade,
            answer_reward(grade, self.config.reward_preset),
            success=grade.verdict is Verdict.CORRECT,
            metrics=outcome.metrics,
        )

    def _grade_proof(self, text: str) -> GradedAttempt:
        problem = self._problem
        assert problem is not None
        try:
            from gym_integrity.services.judge import get_judge
        except ImportError:
            grade = Grade(
                Verdict.GRADER_ERROR, 0.0, cause="the proof judge (gym_integrity.services.judge) is not available"
            )
            return GradedAttempt(grade, 0.0, feedback="The proof could not be graded.")
        config = self.config.judge_config()
        try:
            result = get_judge(config).grade(
                problem=problem.original_problem or problem.problem,
                proof=text,
                reference_solution=problem.reference_solution,
                grading_guidelines=problem.grading_guidelines,
                # feedback must not repeat guidelines the agent is not shown (they are privileged then)
                hidden_texts=() if self.config.show_guidelines else (problem.grading_guidelines,),
            )
        except Exception as exc:  # a judge bug is a no-verdict, never a crash or a silent 0.0
            grade = Grade(Verdict.GRADER_ERROR, 0.0, cause=f"the judge raised {type(exc).__name__}")
            return GradedAttempt(grade, 0.0, feedback="The proof could not be graded.")
        success = result.points is not None and result.points >= config.success_threshold
        # Collapse follows the judge's success threshold, so a "correct" verdict never earns 0.
        base = (1.0 if success else 0.0) if self.config.collapse_partial else float(result.grade.score)
        return GradedAttempt(
            result.grade,
            base,
            success=success,
            feedback=result.feedback,
            metrics=result.metrics,
            judge_output=result.judge_output,
            judge_fingerprint=result.fingerprint,
        )

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._problem is None:
            raise gym.error.ResetNeeded("QEDMathEnv.step called before reset()")
        text, num_tokens = split_trainer_action(action)
        problem = self._problem
        graded_text = strip_reasoning(text, self.config.reasoning_delimiters)
        self._attempt += 1
        graded = self._grade_proof(graded_text) if problem.grader == "judge" else self._grade_answer(graded_text)
        grade, base, success = graded.grade, graded.base_reward, graded.success
        extra: dict[str, Any] = {"judge": dict(graded.judge_fingerprint)} if graded.judge_fingerprint else {}
        if grade.no_verdict:  # never shaped: a length penalty on a no-verdict would be a fake negative
            reward, penalty, discount = 0.0, 0.0, 1.0
        else:
            reward, penalty = shape_reward(
                base,
                num_tokens=num_tokens,
                discount_factor=self.config.discount_factor,
                max_tokens=self.config.max_tokens,
                buffer_tokens=self.config.buffer_tokens,
                penalty_factor=self.config.overlong_penalty,
            )
            discount = length_discount(base, num_tokens, self.config.discount_factor)
        remaining = max(0, self._attempts - self._attempt)
        terminated = success or remaining == 0
        self._note = self._feedback(grade, terminated, remaining, graded.feedback)
        metrics = {
            "reward/base": float(base),
            "reward/shaped": float(reward),
            "reward/overlong_penalty": float(penalty),
            "reward/discount": float(discount),
            "reward/shaping_applied": 0.0 if num_tokens is None or grade.no_verdict else 1.0,
            "reward/score_raw": float(grade.score),
            "episode/attempt_number": float(self._attempt),
            "episode/is_correct": 1.0 if success else 0.0,
            **graded.metrics,
        }
        info = grade_info(
            problem.problem_id,
            grade,
            problem_type=problem.problem_type,
            attempt=self._attempt,
            attempts_remaining=remaining,
            success=bool(success),
            metrics=metrics,
            **extra,
            **{PRIVILEGED_KEY: self._privileged(graded.judge_output)},
        )
        if self.render_mode == "human":
            self.render()
        return self._note, float(reward), bool(terminated), False, info

    def _feedback(self, grade: Grade, terminated: bool, remaining: int, judge_feedback: str) -> str:
        lines = [f"Attempt {self._attempt} of {self._attempts}: {grade.verdict.value} (score {grade.score:.2f})."]
        if grade.cause and grade.verdict is not Verdict.INCORRECT and not grade.no_verdict:
            # the answer's own fault (too long, unparsable, refused); a no-verdict's cause is for the operator
            # (info["cause"]): a policy has no use for how the judge is configured
            lines.append(f"Note: {grade.cause}.")
        if judge_feedback:
            lines.append(judge_feedback)
        if not terminated:
            lines.append(f"{remaining} attempt{'s' if remaining != 1 else ''} remaining. Try again.")
        return "\n".join(lines)

    # ------------------------------------------------------------------ hooks

    @property
    def grading_time_bound_s(self) -> float:
        """The longest one step may take on a quiet machine: the audit's bound for hostile answers.

        A boxed answer: the verifier's run budget plus the start of a killed
        worker's successor. A proof: every judge attempt at its timeout plus the
        backoffs between them.
        """
        if self._problem is not None and self._problem.grader == "judge":
            judge = self.config.judge_config()
            return judge.timeout_s * (1 + judge.max_retries) + judge.max_backoff_s * judge.max_retries
        return self.config.verifier_config.deadline_s + WORKER_START_ALLOWANCE_S

    def gold_answers(self) -> list[str]:
        """The current problem's gold answer and reference solution: the privileged auditor's hook."""
        if self._problem is None:
            return []
        out: list[str] = []
        for value in (self._problem.gold_answer, self._problem.reference_solution):
            if value and value not in out:
                out.append(value)
        return out

    def answer_variants(self) -> list[str]:
        """Honest forms of the current gold (:func:`.variants.honest_variants`): the audit's ``honest_pay`` hook.

        Only for problems math_verify grades; a text gold is matched exactly and a proof has no final value.
        """
        problem = self._problem
        if problem is None or problem.grader != "verifier" or problem.answer_kind == "text":
            return []
        return honest_variants(problem.gold_answer, problem.problem)[1:]

    def render_text(self) -> str:
        return "" if self._problem is None else self._prompt() + ("\n\n" + self._note if self._note else "")

    def close(self) -> None:
        """Release the shared verifier (the last env to close shuts its workers down)."""
        verifier, self._verifier = self._verifier, None
        if verifier is not None:
            verifier.release()
        super().close()


class JudgeNotConfiguredWarning(UserWarning):
    """QEDMath-v0 was made with proof problems and no judge endpoint or model: every proof will be a no-verdict."""


_WARNED_CAUSES: set[str] = set()
_JUDGED = {
    ("multi_step",): "multi_step problems with grading guidelines",
    ("multi_step", "proof"): "proofs, and multi_step problems with grading guidelines",
}


def _warn_once_without_judge(judge: Any, kinds: list[str]) -> None:
    """Warn once per process and cause when proofs can be drawn but nothing can grade them.

    Without it the first sign is at step time: every proof a zero-reward no-verdict.
    """
    from gym_integrity.services.judge.config import resolve_endpoint

    endpoint = resolve_endpoint(judge)
    if endpoint.configured:
        return
    cause = endpoint.not_configured_cause()
    if cause in _WARNED_CAUSES:
        return
    _WARNED_CAUSES.add(cause)
    what = "proof problems" if kinds == ["proof"] else f"problems the judge grades ({_JUDGED[tuple(kinds)]})"
    warnings.warn(
        f"QEDMath-v0 draws {what} but {cause}. Every one will be a no-verdict (reward 0.0). "
        "To draw only what math_verify grades: problem_types=['answer'].",
        JudgeNotConfiguredWarning,
        stacklevel=user_stacklevel(),
    )
