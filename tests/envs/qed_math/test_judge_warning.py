"""QEDMath-v0 made with proofs and no judge warns once, at make, naming what to set; configured or proof-free, it is silent."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest

import gym_integrity  # noqa: F401
from gym_integrity.envs.qed_math import env as qed_env


@pytest.fixture
def fresh(monkeypatch):
    for name in ("JUDGE_BASE_URL", "JUDGE_MODEL", "JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(qed_env, "_WARNED_CAUSES", set())


def _made(**kwargs) -> list[str]:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        gym.make("QEDMath-v0", **kwargs).close()
    return [str(w.message) for w in record if issubclass(w.category, qed_env.JudgeNotConfiguredWarning)]


def test_no_judge_warns_once_per_cause_at_make(fresh):
    first = _made()
    assert len(first) == 1 and "no judge endpoint configured" in first[0] and "JUDGE_BASE_URL" in first[0]
    assert "problem_types=['answer']" in first[0]
    assert _made() == []  # once per process and cause
    no_model = _made(judge={"base_url": "http://127.0.0.1:9/v1"})
    assert len(no_model) == 1 and "no judge model configured" in no_model[0]


def test_the_warning_names_what_the_judge_would_grade(fresh):
    [proofs] = _made(problem_types=["proof"])
    assert proofs.startswith("QEDMath-v0 draws proof problems but ")
    qed_env._WARNED_CAUSES.clear()
    [multi_step] = _made(problem_types=["multi_step"])   # no proof drawn: those with grading guidelines go to the judge
    assert "multi_step problems with grading guidelines" in multi_step and "proof" not in multi_step.split(" but ")[0]


def test_a_configured_judge_or_no_proofs_is_silent(fresh):
    assert _made(problem_types=["answer"]) == []
    assert _made(judge={"base_url": "http://127.0.0.1:9/v1", "model": "m"}) == []


def test_the_warning_points_at_the_users_line_not_gymnasiums(fresh):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        gym.make("QEDMath-v0").close()
    [warning] = [w for w in record if issubclass(w.category, qed_env.JudgeNotConfiguredWarning)]
    assert warning.filename == __file__


def test_how_the_judge_is_configured_stays_out_of_the_agents_observation(fresh):
    """A no-verdict's cause is for the operator (info["cause"]); the agent is told only that it was not scored."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = gym.make("QEDMath-v0", problem_types=["proof"])
    env.reset(seed=0)
    obs, reward, _, _, info = env.step("Proof: by induction on n; the base case holds and each step follows.")
    env.close()
    assert info["verdict"] == "grader_error" and "JUDGE_BASE_URL" in info["cause"]
    assert "JUDGE_BASE_URL" not in obs and "judge=" not in obs and "was not scored" in obs, obs
