"""QEDMath-v0 episodes: selection, no leaks, rewards, shaping, multi-attempt, and the stack being load-bearing."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import gym_integrity
from gym_integrity.envs.qed_math import QEDMathEnv
from gym_integrity.envs.qed_math.problems import load_problems
from gym_integrity.protocol import TrainerAction
from gym_integrity.services import verifier as verifier_service
from gym_integrity.vector import make_threaded_vec
from gym_integrity.workers import _machine_paths, pool_dir, server_name
from gym_integrity.wrappers import integrity_stack

DEADLINE = 1.5  # where a timeout is the point
VERIFIER = {"deadline_s": 10.0}  # elsewhere: a verdict must not depend on machine load
# An endpoint that refuses connections at once: proof steps come back as no-verdicts fast.
DEAD_JUDGE = {"base_url": "http://127.0.0.1:9/v1", "api_key": "test-key", "model": "judge", "timeout_s": 2.0,
              "max_retries": 0}
BUILTIN = load_problems(None).problems


@pytest.fixture(scope="module", autouse=True)
def _keep_verifier_warm():
    """Hold one env open so the shared verifier is not shut down and restarted between tests."""
    env = QEDMathEnv(verifier=VERIFIER)
    env.unwrapped._verifier.wait_ready(60)
    yield
    env.close()


def make(**kwargs: Any) -> gym.Env:
    kwargs.setdefault("verifier", VERIFIER)
    return gym.make("QEDMath-v0", **kwargs)


def _strings(value: Any) -> list[str]:
    """Every key and text leaf of ``info`` (numbers such as latencies are not answer channels)."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [str(k), *_strings(v)]]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def _assert_no_gold(problem, obs: str, info: dict) -> None:
    # The statement itself may mention a number equal to a short gold answer;
    # what must not appear is anything the env adds from the answer fields.
    added = obs.replace(problem.problem, "")
    secrets = {s for s in (problem.gold_answer, problem.reference_solution) if s}
    leaves = _strings(info)
    for secret in secrets:
        if len(secret) >= 3:
            assert secret not in added, problem.problem_id
            assert not any(secret in leaf for leaf in leaves), problem.problem_id
        assert secret not in leaves, problem.problem_id


def test_registered_and_stacked():
    env = make()
    assert env.spec.id == "QEDMath-v0" and env.spec.nondeterministic
    names = []
    inner = env
    while isinstance(inner, gym.Wrapper):
        names.append(type(inner).__name__)
        inner = inner.env
    assert names[:3] == ["TerminalFreeze", "HideInfoKeys", "MaxStepsTruncation"]
    assert isinstance(env.unwrapped, QEDMathEnv)
    env.close()


def test_gymnasium_env_checker_passes():
    from gymnasium.utils.env_checker import check_env

    # The registered spec says nondeterministic (proofs are LLM-graded; verifier
    # metrics such as latency differ per step), which the checker honours.
    env = make(problem_types=["answer"]).unwrapped
    check_env(env, skip_render_check=True)
    env.close()


def test_reset_seed_is_reproducible_and_problem_id_picks():
    a, b = make(), make()
    ids_a = [a.reset(seed=s)[1]["problem_id"] for s in range(8)]
    ids_b = [b.reset(seed=s)[1]["problem_id"] for s in range(8)]
    assert ids_a == ids_b and len(set(ids_a)) > 1
    obs, info = a.reset(options={"problem_id": "qed-prf-002"})
    assert info["problem_id"] == "qed-prf-002" and "irrational" in obs
    with pytest.raises(ValueError, match="unknown problem id 'nope'"):
        a.reset(options={"problem_id": "nope"})
    answers_only = QEDMathEnv(verifier=VERIFIER, problem_types=["answer"])
    with pytest.raises(ValueError, match=r"'qed-prf-002' is a proof problem, left out by problem_types=\['answer'\]"):
        answers_only.reset(options={"problem_id": "qed-prf-002"})
    answers_only.close()
    with pytest.raises(TypeError, match=r"^QEDMathEnv.reset options\['index'\] is not an option.*'problem_id'"):
        a.reset(options={"index": 3})
    a.close(), b.close()


def test_vector_env_equal_seeds_form_a_group():
    envs = gym.make_vec("QEDMath-v0", num_envs=2, vectorization_mode="sync", verifier=VERIFIER)
    _, info = envs.reset(seed=[5, 5])
    assert info["problem_id"][0] == info["problem_id"][1]
    envs.close()


def test_async_vector_env_grades_in_forked_workers():
    """Sub-envs forked from a process whose verifier is running build their own pool."""
    envs = gym.make_vec("QEDMath-v0", num_envs=2, vectorization_mode="async",
                        vector_kwargs={"shared_memory": False},
                        verifier={"deadline_s": 10.0, "num_workers": 1, "spare_workers": 0})
    try:
        envs.reset(seed=[0, 0], options={"problem_id": "qed-ans-007"})
        _, reward, terminated, _, info = envs.step([r"\boxed{49}", r"\boxed{48}"])
        why = {key: list(info[key]) for key in ("verdict", "cause") if key in info}  # what to read if it fails
        assert list(reward) == [1.0, 0.0] and all(terminated), (list(reward), list(terminated), why)
        assert list(info["verdict"]) == ["correct", "incorrect"], why
    finally:
        envs.close()


def test_async_vector_env_grades_when_it_forks_while_the_pool_start_lock_is_held():
    """gym.make_vec builds one env in the parent first: its client starts the machine pool's server in the
    background, holding the start lock, while AsyncVectorEnv forks. The sub-envs, which find no server yet and
    need that lock, must still get it and grade (a copy of the locked fd kept in a child would hold it)."""
    config = {"deadline_s": 10.0, "num_workers": 1, "spare_workers": 0, "queue_timeout_s": 29.0}  # its own server
    name = server_name(verifier_service._HANDLER, verifier_service.VerifierConfig(**config).pool)
    held = _machine_paths.flock(os.path.join(pool_dir(), name + ".lock"), time.monotonic() + 60)
    assert held is not None
    try:
        envs = gym.make_vec("QEDMath-v0", num_envs=2, vectorization_mode="async",
                            vector_kwargs={"shared_memory": False}, verifier=config)  # forked while held
    finally:
        _machine_paths.unlock(held)
    try:
        envs.reset(seed=[0, 0], options={"problem_id": "qed-ans-007"})
        _, reward, _, _, info = envs.step([r"\boxed{49}", r"\boxed{48}"])
        why = {key: list(info[key]) for key in ("verdict", "cause") if key in info}
        assert list(reward) == [1.0, 0.0] and list(info["verdict"]) == ["correct", "incorrect"], why
    finally:
        envs.close()


def test_gold_never_in_obs_or_info_over_every_builtin_problem():
    stacked = make(judge=DEAD_JUDGE)
    raw = QEDMathEnv(verifier=VERIFIER, judge=DEAD_JUDGE)
    for problem in BUILTIN:
        obs, info = stacked.reset(options={"problem_id": problem.problem_id})
        _assert_no_gold(problem, obs, info)
        raw_obs, raw_info = raw.reset(options={"problem_id": problem.problem_id})
        assert raw_obs == obs and "privileged" in raw_info  # the raw env keeps it where the stack removes it
        _assert_no_gold(problem, raw_obs, {k: v for k, v in raw_info.items() if k != "privileged"})
        for _ in range(stacked.unwrapped.step_budget):
            obs, reward, terminated, truncated, info = stacked.step(r"</think>I believe it is \boxed{-12345}.")
            _assert_no_gold(problem, obs, info)
            assert problem.reference_solution not in stacked.unwrapped.render()
        assert terminated and not truncated
        if problem.grader == "judge":
            assert info["no_verdict"] and reward == 0.0 and not info["success"]
        else:
            assert info["verdict"] == "incorrect" and reward == 0.0
    stacked.close(), raw.close()


def test_resubmitting_gold_after_the_end_pays_on_raw_env_not_through_stack():
    raw = QEDMathEnv(verifier=VERIFIER)
    stacked = make()
    for env in (raw, stacked):
        env.reset(options={"problem_id": "qed-ans-001"})
        _, reward, terminated, _, _ = env.step(r"\boxed{1000}")
        assert (reward, terminated) == (0.0, True)
    gold = raw.gold_answers()[0]
    assert gold == "1170"
    _, raw_reward, _, _, raw_info = raw.step(f"\\boxed{{{gold}}}")
    assert raw_reward == 1.0 and raw_info["verdict"] == "correct"  # the exploit the stack exists for
    requests_before = stacked.unwrapped._verifier.stats()["verifier/requests"]
    _, reward, terminated, _, info = stacked.step(f"\\boxed{{{gold}}}")
    assert reward == 0.0 and terminated and info["verdict"] == "incorrect"
    assert info["integrity"]["frozen"] and info["integrity"]["ignored_steps"] == 1
    assert stacked.unwrapped._verifier.stats()["verifier/requests"] == requests_before  # no grader call
    raw.close(), stacked.close()


def test_multi_attempt_scores_each_attempt_until_its_own_end():
    env = make()
    obs, info = env.reset(options={"problem_id": "qed-ms-001"})
    assert info["max_attempts"] == 3 and env.unwrapped.step_budget == 3 and "3 attempts" in obs
    obs, reward, terminated, truncated, info = env.step(r"\boxed{10}")
    assert (reward, terminated, truncated, info["attempt"], info["attempts_remaining"]) == (0.0, False, False, 1, 2)
    assert "incorrect" in obs and "2 attempts remaining" in obs and "15" not in obs
    obs, reward, terminated, truncated, info = env.step(r"\boxed{15}")
    assert (reward, terminated, truncated, info["attempt"], info["verdict"]) == (1.0, True, False, 2, "correct")
    # After its own end the stack freezes: a third answer changes nothing.
    _, reward, terminated, _, info = env.step(r"\boxed{99}")
    assert (reward, terminated, info["integrity"]["frozen"]) == (1.0, True, True)

    env.reset(options={"problem_id": "qed-ms-003"})  # two attempts, all wrong
    results = [env.step(r"\boxed{2}")[1:4] for _ in range(2)]
    assert results == [(0.0, False, False), (0.0, True, False)]
    env.close()


def test_multi_attempt_config_and_row_values():
    env = make(max_attempts=2)
    _, info = env.reset(options={"problem_id": "qed-ms-006"})  # the row says 4
    assert info["max_attempts"] == 4
    _, info = env.reset(options={"problem_id": "qed-ans-001"})  # no row value: the config's
    assert info["max_attempts"] == 2
    _, reward, terminated, _, info = env.step(r"\boxed{1}")
    assert not terminated and info["attempts_remaining"] == 1
    env.close()
    default = make()
    assert default.reset(options={"problem_id": "qed-ms-004"})[1]["max_attempts"] == 3
    assert default.reset(options={"problem_id": "qed-ans-004"})[1]["max_attempts"] == 1
    default.close()


@pytest.mark.parametrize(
    "preset, text, reward, verdict",
    [
        ("pure_success", r"\boxed{1170}", 1.0, "correct"),
        ("pure_success", r"\boxed{7}", 0.0, "incorrect"),
        ("pure_success", "no box", 0.0, "no_answer"),
        ("base", r"\boxed{1170}", 1.0, "correct"),
        ("base", r"\boxed{7}", -0.5, "incorrect"),
        ("base", "no box", -1.0, "no_answer"),
        ("base", r"\boxed{}", -1.0, "unparsable"),
        ("base", r"\boxed{1", -1.0, "unparsable"),
    ],
)
def test_reward_presets(preset, text, reward, verdict):
    env = make(reward_preset=preset)
    env.reset(options={"problem_id": "qed-ans-001"})
    _, got, _, _, info = env.step(text)
    assert (got, info["verdict"], info["no_verdict"]) == (reward, verdict, False)
    env.close()


TOWER = r"\boxed{9^{9^{9^{9}}}}"  # refused unrun (answer_cost): graded timeout at once
SLOW = r"\boxed{(x+1)^{999}(x-1)^{999}}"  # the static check refuses it; the test below lets it through


def test_timeout_of_the_answers_own_run_is_graded_and_paid_like_unparsable(monkeypatch):
    """Issue 9: a forced timeout must not escape the penalties (before: a 0.0 no-verdict, never shaped). SLOW stands in
    for whatever answer_cost's check misses: the check is switched off for it, so the run budget stops it."""
    from gym_integrity.services import verifier as module

    original = module.refusal
    missed = SLOW[len("\\boxed{"):-1]
    monkeypatch.setattr(module, "refusal", lambda text, **kwargs: None if text == missed else original(text, **kwargs))
    env = make(reward_preset="base", max_tokens=100, buffer_tokens=50,
               verifier={"deadline_s": DEADLINE, "num_workers": 1})
    assert env.unwrapped._verifier.wait_ready(60)  # time the grading, not the pool's interpreter start
    env.reset(options={"problem_id": "qed-ans-001"})
    start = time.monotonic()
    _, reward, terminated, _, info = env.step(TrainerAction(SLOW, num_tokens=90))
    assert time.monotonic() - start <= DEADLINE + 1.0
    assert (info["verdict"], info["no_verdict"], terminated) == ("timeout", False, True)
    assert f"past its {DEADLINE:g} s budget on a worker of its own" in info["cause"]
    assert info["metrics"]["verifier/timeouts"] >= 1.0
    # Shaped like any graded answer: the overlong penalty applies (90 tokens: 0.8 of the 50-token buffer).
    assert info["metrics"]["reward/overlong_penalty"] == pytest.approx(-0.8)
    assert info["metrics"]["reward/shaping_applied"] == 1.0
    env.reset(options={"problem_id": "qed-ans-001"})
    _, unparsable_reward, _, _, unparsable_info = env.step(TrainerAction(r"\boxed{}", num_tokens=90))
    assert unparsable_info["verdict"] == "unparsable"
    assert reward == unparsable_reward == pytest.approx(-1.8)
    env.reset(options={"problem_id": "qed-ans-001"})
    assert env.step(r"\boxed{1170}")[1] == 1.0  # the next request is served normally
    env.close()


def test_graded_timeout_pays_nothing_under_pure_success():
    env = make(reward_preset="pure_success", verifier={"deadline_s": DEADLINE, "num_workers": 1})
    assert env.unwrapped._verifier.wait_ready(60)
    env.reset(options={"problem_id": "qed-ans-001"})
    _, reward, _, _, info = env.step(TOWER)
    assert (reward, info["verdict"], info["no_verdict"]) == (0.0, "timeout", False)
    env.close()


def test_two_hostile_answers_do_not_change_six_correct_ones_in_a_threaded_batch():
    """Issue 9: 2 hostile + 6 correct in a threaded vector env of 8, default verifier (two workers).

    Under the old rule (deadline counted from submission) the six correct
    answers queued behind the two hostile ones and came back ``timeout``.
    """
    envs = make_threaded_vec("QEDMath-v0", 8, problem_types=["answer"], reward_preset="base")
    try:
        service = envs.envs[0].unwrapped._verifier
        assert service.config.workers <= 2 and service.wait_ready(60)
        envs.reset(seed=[3] * 8)  # one GRPO group: the same problem everywhere
        golds = {envs.envs[i].unwrapped.gold_answers()[0] for i in range(8)}
        assert len(golds) == 1
        gold = golds.pop()
        hostile = {0, 1}
        actions = np.array([TOWER if i in hostile else f"\\boxed{{{gold}}}" for i in range(8)], dtype=object)
        _, rewards, terminated, _, infos = envs.step(actions)
        assert terminated.all()
        for i in range(8):
            if i in hostile:
                assert (infos["verdict"][i], infos["no_verdict"][i]) == ("timeout", False)
            else:
                assert (infos["verdict"][i], infos["no_verdict"][i], rewards[i]) == ("correct", False, 1.0)
        # The timeout is paid like an unparsable answer of the same batch.
        envs.reset(seed=[3] * 8)
        unparsable = np.array([r"\boxed{}" if i in hostile else f"\\boxed{{{gold}}}" for i in range(8)],
                              dtype=object)
        _, rewards_unparsable, _, _, infos_unparsable = envs.step(unparsable)
        assert [infos_unparsable["verdict"][i] for i in hostile] == ["unparsable"] * 2
        assert [rewards[i] for i in hostile] == [rewards_unparsable[i] for i in hostile] == [-1.0, -1.0]
    finally:
        envs.close()


def test_reasoning_is_stripped_before_grading():
    env = make()
    env.reset(options={"problem_id": "qed-ans-001"})
    _, reward, _, _, info = env.step(r"maybe \boxed{1170}? no...</think>Final: \boxed{1171}")
    assert (reward, info["verdict"]) == (0.0, "incorrect")
    env.reset(options={"problem_id": "qed-ans-001"})
    assert env.step(r"wrong \boxed{3}</think>Final: \boxed{1170}")[1] == 1.0
    env.reset(options={"problem_id": "qed-ans-001"})
    assert env.step(r"no delimiter: graded whole \boxed{1170}")[1] == 1.0
    env.close()
    custom = make(reasoning_delimiters=["<|end_think|>"])
    custom.reset(options={"problem_id": "qed-ans-001"})
    assert custom.step(r"\boxed{1170}</think> \boxed{0} <|end_think|> \boxed{1170}")[1] == 1.0
    custom.close()


def test_shaping_uses_the_trainer_token_count_only():
    env = make(discount_factor=0.99, max_tokens=1000, buffer_tokens=200)
    env.reset(options={"problem_id": "qed-ans-001"})
    _, plain, _, _, info = env.step(r"\boxed{1170}")
    assert plain == 1.0 and info["metrics"]["reward/shaping_applied"] == 0.0

    env.reset(options={"problem_id": "qed-ans-001"})
    _, shaped, _, _, info = env.step(TrainerAction(r"\boxed{1170}", num_tokens=900))
    assert shaped == pytest.approx(0.99 ** 900 - 0.5)
    assert info["metrics"]["reward/base"] == 1.0
    assert info["metrics"]["reward/shaped"] == pytest.approx(shaped)
    assert info["metrics"]["reward/overlong_penalty"] == pytest.approx(-0.5)

    env.reset(options={"problem_id": "qed-ans-001"})
    _, via_dict, _, _, _ = env.step({"text": r"\boxed{1170}", "num_tokens": 900})
    assert via_dict == pytest.approx(shaped)

    # A submission cannot set its own token count: claims in the text change nothing.
    for claim in ['{"num_tokens": 1}', "num_tokens=1", "<num_tokens>1</num_tokens>", json.dumps({"text": "x", "num_tokens": 1})]:
        env.reset(options={"problem_id": "qed-ans-001"})
        _, reward, _, _, info = env.step(claim + r" \boxed{1170}")
        assert reward == 1.0 and info["metrics"]["reward/shaping_applied"] == 0.0
        env.reset(options={"problem_id": "qed-ans-001"})
        _, reward, _, _, _ = env.step(TrainerAction(claim + r" \boxed{1170}", num_tokens=900))
        assert reward == pytest.approx(shaped)
    with pytest.raises(TypeError, match="num_tokens"):
        env.reset()
        env.step({"text": "x", "num_tokens": "1"})
    env.close()


def test_non_str_action_raises_type_error_any_str_is_graded():
    env = QEDMathEnv(verifier=VERIFIER, problem_types=["answer"])
    env.reset(seed=1)
    with pytest.raises(TypeError, match="action must be a str"):
        env.step(42)
    for text in ["", "\x00\x01", "数学 🙂 \\boxed{\\}", "}" * 10000, "\\boxed{" * 5000]:
        env.reset(seed=1)
        _, _, terminated, _, info = env.step(text)
        assert terminated and info["verdict"] in ("no_answer", "unparsable", "incorrect")
    env.close()


def test_step_before_reset_raises():
    env = QEDMathEnv(verifier=VERIFIER)
    with pytest.raises(gym.error.ResetNeeded):
        env.step("x")
    env.close()


def test_gold_answers_is_the_auditor_hook():
    env = QEDMathEnv(verifier=VERIFIER)
    assert env.gold_answers() == []
    env.reset(options={"problem_id": "qed-ans-003"})
    assert env.gold_answers()[0] == r"\frac{1}{2}" and len(env.gold_answers()) == 2
    env.reset(options={"problem_id": "qed-prf-001"})
    assert env.gold_answers() == [next(p for p in BUILTIN if p.problem_id == "qed-prf-001").reference_solution]
    env.close()


def test_guidelines_in_observation_only_when_asked():
    hidden, shown = make(), make(show_guidelines=True)
    obs_hidden, _ = hidden.reset(options={"problem_id": "qed-prf-001"})
    obs_shown, _ = shown.reset(options={"problem_id": "qed-prf-001"})
    assert "Factorisation" not in obs_hidden and "Factorisation (2 points)" in obs_shown
    hidden.close(), shown.close()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"reward_preset": "lenient"}, "reward_preset"),
        ({"discount_factor": 1.5}, "discount_factor"),
        ({"max_tokens": 100, "buffer_tokens": 200}, "buffer_tokens"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"problem_types": ["essay"]}, "problem_types"),
        ({"reasoning_delimiters": [""]}, "reasoning_delimiters"),
        ({"verifier": {"deadline_s": -1}}, "QEDMathConfig.verifier"),
        ({"verifier": {"workers": 2}}, "QEDMathConfig.verifier"),
        ({"show_guidelines": "yes"}, "show_guidelines"),
        ({"judge": 3}, "QEDMathConfig.judge"),
        ({"no_such_option": 1}, "no_such_option"),
    ],
)
def test_bad_config_fails_at_make_naming_the_field(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        gym.make("QEDMath-v0", **kwargs)


def test_close_releases_the_shared_verifier():
    config = {"deadline_s": 1.75, "num_workers": 1}  # its own service, so nothing else holds it
    first, second = make(verifier=config), make(verifier=config)
    service = first.unwrapped._verifier
    assert service is second.unwrapped._verifier and service.running
    first.close()
    assert service.running
    second.close()
    assert not service.running


def test_integrity_stack_on_raw_class_matches_registration():
    env = integrity_stack(QEDMathEnv(verifier=VERIFIER))
    env.reset(options={"problem_id": "qed-ans-007"})
    _, reward, terminated, _, info = env.step(r"\boxed{49}")
    assert (reward, terminated, "privileged" in info) == (1.0, True, False)
    revealed = gym_integrity.make("QEDMath-v0", reveal_on_end=True, verifier=VERIFIER)
    revealed.reset(options={"problem_id": "qed-ans-007"})
    info = revealed.step(r"\boxed{1}")[4]
    assert info["privileged"]["gold_answer"] == "49"  # the trainer's explicit opt-in, at the end only
    env.close(), revealed.close()


@pytest.mark.parametrize("text, reward", [
    (r"\boxed{1170}", 1.0), (r"\boxed{1170\%}", 1.0), (r"\boxed{1170%}", 1.0),
    (r"\boxed{117000\%}", 0.0), (r"\boxed{11.7}", 0.0),
])
def test_a_percent_sign_is_one_reading_a_unit_mark(text, reward):
    """Issue 25: math_verify reads X\\% as X and as X/100, so 1170\\% and 117000\\% were both correct for 1170."""
    env = make()
    env.reset(options={"problem_id": "qed-ans-001"})
    assert env.step(text)[1] == reward
    env.close()


def test_a_percent_gold_pays_its_number_not_a_hundredth_of_it(tmp_path):
    path = tmp_path / "percent.jsonl"
    path.write_text(json.dumps({"id": "pct-1", "task": "What share of 8 is 2?", "answer": r"25\%"}) + "\n")
    paid = {}
    for text in (r"\boxed{25\%}", r"\boxed{25}", r"\boxed{25 \%}", r"\boxed{0.25}", r"\boxed{2500\%}"):
        env = make(dataset=str(path))
        env.reset()
        paid[text] = env.step(text)[1]
        env.close()
    assert paid == {r"\boxed{25\%}": 1.0, r"\boxed{25}": 1.0, r"\boxed{25 \%}": 1.0, r"\boxed{0.25}": 0.0,
                    r"\boxed{2500\%}": 0.0}


def test_the_question_restated_is_not_an_answer(tmp_path):
    """math_verify evaluates what a question poses: the integral, limit or sum of the statement, boxed, equalled the
    gold, and the deep audit's echo found it. Restated, posed or juxtaposed, it is incorrect; the gold is paid."""
    rows = [("int", r"Evaluate $\int_0^{\pi} x \sin x \, dx$.", r"\pi", r"\int_0^{\pi} x \sin x \, dx"),
            ("lim", r"Find $\lim_{x \to 0} \frac{\sin 2x}{x}$.", "2", r"\lim_{x\to 0}\frac{\sin 2x}{x}"),
            ("sum", r"Compute $\sum_{k=1}^{10} k$.", "55", r"\sum_{k=1}^{10} k"),
            ("juxt", "What is 3 plus 7?", "10", "3 7")]
    path = tmp_path / "posed.jsonl"
    path.write_text("".join(json.dumps({"id": i, "task": task, "answer": gold}) + "\n" for i, task, gold, _ in rows))
    env = make(dataset=str(path))
    for problem_id, _, gold, echo in rows:
        env.reset(options={"problem_id": problem_id})
        _, reward, _, _, info = env.step(rf"\boxed{{{echo}}}")
        assert (reward, info["verdict"]) == (0.0, "incorrect"), (problem_id, info)
        env.reset(options={"problem_id": problem_id})
        assert env.step(rf"\boxed{{{gold}}}")[1] == 1.0, problem_id
    env.close()


def test_every_builtin_gold_is_a_final_answer():
    """The rule that refuses restated questions leaves every shipped answer problem's gold alone."""
    from gym_integrity.envs.qed_math.final_answer import not_an_answer
    from gym_integrity.envs.qed_math.problems import load_problems

    from gym_integrity.grading.reader import boxed_answer, without_percent

    problems = [p for p in load_problems(None, None).problems if p.grader == "verifier"]
    read = {p.problem_id: boxed_answer(without_percent(rf"\boxed{{{p.gold_answer}}}"), 1024)[0] for p in problems}
    assert problems and not [(p.problem_id, not_an_answer(read[p.problem_id], p.gold_answer, p.problem))
                             for p in problems if not_an_answer(read[p.problem_id], p.gold_answer, p.problem)]
