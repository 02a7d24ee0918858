"""make_ray_vec on a local Ray started here: the vector-env conformance of the threaded env, and actors killed mid-step."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import ray  # noqa: F401  (the [ray] extra is installed: a missing Ray must fail, not skip)
else:
    ray = pytest.importorskip("ray")

from gymnasium.vector import AutoresetMode  # noqa: E402

from gym_integrity.envs.finqa import format_tool_call  # noqa: E402
from gym_integrity.openai_stub.judge_server import JudgeServer  # noqa: E402
from gym_integrity.vector import make_threaded_vec  # noqa: E402

pytestmark = pytest.mark.ray

ID, KW = "ReasoningGym-v0", {"dataset": "leg_counting"}
PROOF = "</think>For every integer n, n^3 - n = (n-1) n (n+1) is a product of three consecutive integers."


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def _actions(*texts: str) -> np.ndarray:
    return np.array(list(texts), dtype=object)


def test_same_layout_as_the_threaded_vector_env():
    from gym_integrity.ray import make_ray_vec

    remote, local = make_ray_vec(ID, 3, **KW), make_threaded_vec(ID, 3, **KW)
    try:
        assert repr(remote) == "RayVectorEnv(ReasoningGym-v0, num_envs=3)"
        assert remote.single_observation_space == local.single_observation_space
        assert remote.single_action_space == local.single_action_space
        obs_r, info_r = remote.reset(seed=[11, 11, 12])
        obs_l, info_l = local.reset(seed=[11, 11, 12])
        assert list(obs_r) == list(obs_l) and obs_r[0] == obs_r[1] != obs_r[2]   # equal seeds: one group
        assert sorted(info_r) == sorted(info_l) and info_r["problem_id"].tolist() == info_l["problem_id"].tolist()
        gold = local.envs[2].unwrapped.gold_answers()[0]
        actions = _actions("<answer>4</answer>", "nonsense", f"<answer>{gold}</answer>")
        out_r, out_l = remote.step(actions), local.step(actions)
        assert list(out_r[0]) == list(out_l[0])
        for a, b in zip(out_r[1:4], out_l[1:4]):
            assert a.tolist() == b.tolist()
        assert out_r[1].tolist()[2] == 1.0
        assert sorted(out_r[4]) == sorted(out_l[4])
        assert out_r[4]["verdict"].tolist() == out_l[4]["verdict"].tolist()
        # NEXT_STEP autoreset, as the threaded env: the ended sub-envs reset on the next step, ungraded.
        _, rewards, terminated, _, infos = remote.step(_actions("x", "y", "z"))
        assert rewards.tolist() == [0.0, 0.0, 0.0] and terminated.tolist() == [False] * 3 and "verdict" not in infos
    finally:
        remote.close(), local.close()


def test_a_finished_sub_env_stepped_with_its_batch_earns_nothing_more():
    from gym_integrity.ray import make_ray_vec

    submit = format_tool_call("submit_answer", {"answer": "38.2%"})       # fq002: Northwind gross margin 2024
    explore = format_tool_call("list_tools", {})
    envs = make_ray_vec("FinQA-v0", 2, autoreset_mode=AutoresetMode.DISABLED)
    try:
        envs.reset(seed=[0, 0], options={"question_id": "fq002"})
        totals, frozen = np.zeros(2), []
        for step in range(4):
            actions = _actions(submit if step == 0 else explore, submit if step == 3 else explore)
            _, rewards, terminated, truncated, infos = envs.step(actions)
            totals += rewards
            frozen.append((rewards[0], bool(infos["integrity"]["frozen"][0]), bool(terminated[0] | truncated[0])))
    finally:
        envs.close()
    assert totals.tolist() == [1.0, 1.0]
    assert all(later == (0.0, True, True) for later in frozen[1:])


def test_an_actor_killed_between_steps_gives_its_sub_env_a_no_verdict_and_is_replaced():
    from gym_integrity.ray import make_ray_vec

    envs = make_ray_vec(ID, 3, autoreset_mode=AutoresetMode.DISABLED, **KW)
    try:
        envs.reset(seed=[1, 2, 3])
        dead_pid = envs.envs[1].actor_pid
        os.kill(dead_pid, signal.SIGKILL)
        _, rewards, terminated, truncated, infos = envs.step(_actions("<answer>0</answer>").repeat(3))
        assert infos["verdict"].tolist() == ["incorrect", "grader_error", "incorrect"]
        assert infos["no_verdict"].tolist() == [False, True, False]
        assert f"pid {dead_pid}" in infos["cause"][1] and "died mid-step" in infos["cause"][1]
        assert rewards.tolist() == [0.0, 0.0, 0.0] and truncated.tolist() == [False, True, False]
        assert terminated.tolist() == [True, False, True]
        assert envs.envs[1].replacements == 1 and envs.envs[1].actor_pid != dead_pid
        # Stepped again with its batch before a reset: the same no-verdict, frozen, paying nothing.
        _, rewards, _, truncated, infos = envs.step(_actions("<answer>0</answer>").repeat(3))
        assert rewards[1] == 0.0 and truncated[1] and infos["integrity"]["frozen"][1]
        assert infos["verdict"][1] == "grader_error"
        # The replacement actor plays the next episode like any other.
        obs, infos = envs.reset(seed=[1, 2, 3])
        assert infos["problem_id"][1].startswith("leg_counting/")
        _, _, terminated, _, infos = envs.step(_actions("<answer>0</answer>").repeat(3))
        assert terminated.tolist() == [True] * 3 and "grader_error" not in infos["verdict"].tolist()
    finally:
        envs.close()


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED])
def test_several_sub_envs_per_actor_play_step_for_step_as_the_threaded_vector_env(mode):
    from gym_integrity.ray import make_ray_vec

    remote = make_ray_vec(ID, 5, envs_per_actor=2, autoreset_mode=mode, **KW)
    local = make_threaded_vec(ID, 5, autoreset_mode=mode, **KW)
    try:
        assert len({env.actor_pid for env in remote.envs}) == 3                  # 2 + 2 + 1 slots
        assert [env.slot for env in remote.envs] == [0, 1, 0, 1, 0]
        seeds = [4, 4, 5, 6, 7]
        assert list(remote.reset(seed=seeds)[0]) == list(local.reset(seed=seeds)[0])
        golds = local.call("gold_answers")
        assert remote.call("gold_answers") == golds                             # call() runs on the actors
        for turn in range(3):   # answers right and wrong; then the ended sub-envs autoreset (or stay frozen)
            actions = _actions(*(f"<answer>{g[0]}</answer>" if (i + turn) % 2 else "x" for i, g in enumerate(golds)))
            out_r, out_l = remote.step(actions), local.step(actions)
            assert list(out_r[0]) == list(out_l[0])
            assert [a.tolist() for a in out_r[1:4]] == [b.tolist() for b in out_l[1:4]]
            assert sorted(out_r[4]) == sorted(out_l[4])
            for key in ("verdict", "problem_id"):
                if key in out_l[4]:
                    assert out_r[4][key].tolist() == out_l[4][key].tolist()
        mask = np.array([False, True, False, False, True])
        assert list(remote.reset(seed=seeds, options={"reset_mask": mask})[0]) == \
            list(local.reset(seed=seeds, options={"reset_mask": mask})[0])
    finally:
        remote.close(), local.close()


def test_an_actor_holding_two_sub_envs_dies_and_both_get_the_no_verdict():
    from gym_integrity.ray import make_ray_vec

    envs = make_ray_vec(ID, 4, envs_per_actor=2, autoreset_mode=AutoresetMode.DISABLED, **KW)
    try:
        envs.reset(seed=[1, 2, 3, 4])
        dead_pid = envs.envs[2].actor_pid
        assert envs.envs[3].actor_pid == dead_pid != envs.envs[0].actor_pid
        os.kill(dead_pid, signal.SIGKILL)
        _, rewards, terminated, truncated, infos = envs.step(_actions("<answer>0</answer>").repeat(4))
        assert infos["verdict"].tolist() == ["incorrect", "incorrect", "grader_error", "grader_error"]
        assert all(f"pid {dead_pid}" in cause for cause in infos["cause"][2:])
        assert truncated.tolist() == [False, False, True, True] and rewards.tolist() == [0.0] * 4
        assert envs.envs[2].actor_pid == envs.envs[3].actor_pid != dead_pid and envs.envs[3].replacements == 1
        _, rewards, _, _, infos = envs.step(_actions("<answer>0</answer>").repeat(4))   # replays, frozen
        assert rewards.tolist() == [0.0] * 4 and infos["integrity"]["frozen"].tolist() == [True] * 4
        # call() meeting a dead actor raises Ray's error and replaces it; its sub-envs owe the no-verdict.
        envs.reset(seed=[1, 2, 3, 4])
        os.kill(envs.envs[0].actor_pid, signal.SIGKILL)
        with pytest.raises(ray.exceptions.RayActorError):
            envs.call("gold_answers")
        assert envs.envs[0].replacements == 1 and len(envs.call("gold_answers")) == 4
        _, rewards, _, truncated, infos = envs.step(_actions("<answer>0</answer>").repeat(4))
        assert infos["verdict"].tolist() == ["grader_error", "grader_error", "incorrect", "incorrect"]
        assert truncated.tolist() == [True, True, False, False] and rewards.tolist() == [0.0] * 4
        # Killed during a reset of only one of its sub-envs: that one is reset on the replacement, and the other
        # (whose episode was on the dead actor) owes its no-verdict on the next step.
        envs.reset(seed=[1, 2, 3, 4])
        os.kill(envs.envs[0].actor_pid, signal.SIGKILL)
        _, infos = envs.reset(seed=[9, 9, 9, 9], options={"reset_mask": np.array([True, False, False, False])})
        assert infos["problem_id"][0].startswith("leg_counting/") and envs.envs[0].replacements == 2
        _, rewards, _, truncated, infos = envs.step(_actions("<answer>0</answer>").repeat(4))
        assert infos["verdict"].tolist() == ["incorrect", "grader_error", "incorrect", "incorrect"]
        assert truncated.tolist()[1] and not infos["integrity"]["frozen"][1] and rewards[1] == 0.0
    finally:
        envs.close()


def test_an_actor_killed_while_its_step_is_grading_is_a_no_verdict_not_a_hang():
    from gym_integrity.ray import make_ray_vec

    # The judge never answers, so both steps are in flight on their actors: sub-env 0's actor is killed after
    # 1.5 s, sub-env 1 waits out its judge deadline (4 s) and gets the judge's own no-verdict.
    with JudgeServer("hang", hang_s=60.0) as judge:
        cfg = {"base_url": judge.url, "model": "test-judge", "timeout_s": 4.0, "max_retries": 0}
        envs = make_ray_vec("QEDMath-v0", 2, autoreset_mode=AutoresetMode.DISABLED, judge=cfg,
                            problem_types=["proof"])
        try:
            envs.reset(seed=[0, 0], options={"problem_id": "qed-prf-001"})
            victim = envs.envs[0].actor_pid
            killer = threading.Timer(1.5, os.kill, (victim, signal.SIGKILL))
            killer.start()
            start = time.monotonic()
            _, rewards, _, truncated, infos = envs.step(_actions(PROOF, PROOF))
            took = time.monotonic() - start
            killer.join()
        finally:
            envs.close()
    assert took < 30, f"the batch waited {took:.0f} s"
    assert infos["no_verdict"].tolist() == [True, True] and rewards.tolist() == [0.0, 0.0]
    assert f"pid {victim}" in infos["cause"][0] and "died mid-step" in infos["cause"][0]
    assert "Ray actor" not in infos["cause"][1]                 # the live sub-env's own judge deadline
    assert truncated.tolist()[0] is True


def test_a_silent_actor_is_killed_at_the_step_timeout():
    from gym_integrity.ray import make_ray_vec

    with JudgeServer("hang", hang_s=60.0) as judge:
        cfg = {"base_url": judge.url, "model": "test-judge", "timeout_s": 50.0, "max_retries": 0}
        envs = make_ray_vec("QEDMath-v0", 1, step_timeout_s=3.0, judge=cfg, problem_types=["proof"])
        try:
            envs.reset(seed=0, options={"problem_id": "qed-prf-001"})
            silent = envs.envs[0].actor_pid
            _, _, _, truncated, infos = envs.step(_actions(PROOF))
            assert truncated.tolist() == [True] and infos["no_verdict"].tolist() == [True]
            assert f"pid {silent}" in infos["cause"][0] and "did not answer within 3 s" in infos["cause"][0]
            assert envs.envs[0].actor_pid != silent
        finally:
            envs.close()


def test_the_actors_on_a_node_grade_on_that_node_s_one_pool():
    from gym_integrity.ray import make_ray_vec

    pool_dir = os.environ["GYM_INTEGRITY_POOL_DIR"]   # this run's own (tests/conftest.py); the actors inherit it
    before = {f for f in os.listdir(pool_dir) if f.endswith(".alive")}
    # A verifier config no other test uses: its machine pool is this test's alone.
    kwargs = {"problem_types": ["answer"], "verifier": {"num_workers": 1, "gold_cache_size": 4093}}
    envs = make_ray_vec("QEDMath-v0", 4, autoreset_mode=AutoresetMode.DISABLED, **kwargs)
    try:
        assert len(envs.grading_pools) == 1 and set(envs.grading_pools) == {e.node_id for e in envs.envs}
        envs.reset(seed=0, options={"problem_id": "qed-ans-001"})
        _, rewards, _, _, infos = envs.step(_actions("\\boxed{1170}").repeat(4))
        assert rewards.tolist() == [1.0] * 4 and infos["verdict"].tolist() == ["correct"] * 4
        assert len({e.actor_pid for e in envs.envs}) == 4                     # four processes ...
        assert len({f for f in os.listdir(pool_dir) if f.endswith(".alive")} - before) == 1   # ... one pool
        assert envs.call("gold_answers")[0][0] == "1170"                   # call() runs on the actors
    finally:
        envs.close()


def test_the_scaling_page_local_ray_block_runs_as_written(capsys):
    import pathlib
    import re

    page = (pathlib.Path(__file__).resolve().parents[3] / "docs" / "scaling.md").read_text(encoding="utf-8")
    block = next(b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "make_ray_vec(" in b)  # the one-machine block
    # Ray is already up (this module's fixture): the block's ray.init joins it instead of failing.
    exec(compile(block.replace("ray.init(", "ray.init(ignore_reinit_error=True, "), "docs/scaling.md", "exec"), {})


def test_the_scale_benchmark_runs_and_prints_its_tables(capsys):
    import pathlib
    import runpy

    bench = runpy.run_path(str(pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "bench_scale.py"),
                           run_name="bench_scale")
    assert bench["main"](["--quick"]) == 0
    out = capsys.readouterr().out
    for row in ("machine pool (threaded vector env)", "Ray actors (make_ray_vec)", "make_ray_vec", "MiB / env"):
        assert row in out


def test_usage_errors():
    from gym_integrity.ray import make_ray_vec

    with pytest.raises(ValueError, match="not a registered id"):
        make_ray_vec("Nope-v0", 2)
    with pytest.raises(ValueError, match="num_envs"):
        make_ray_vec(ID, 0)
    with pytest.raises(ValueError, match="envs_per_actor"):
        make_ray_vec(ID, 2, envs_per_actor=0)
    with pytest.raises(ValueError, match="autoreset_mode must be one of .*'Disabled'"):  # before any actor
        make_ray_vec(ID, 2, autoreset_mode="disabled")
    with pytest.raises(TypeError, match="actor_options"):
        make_ray_vec(ID, 1, actor_options=["num_cpus"])
    with pytest.raises((TypeError, ValueError), match="dataset"):  # the env's own option error, before any actor
        make_ray_vec(ID, 1, dataset=3)


def test_record_episode_statistics_counts_each_episode_once():
    # The convention of every vector env we build (tests/test_vector_autoreset.py): next-step autoreset.
    from gymnasium.wrappers.vector import RecordEpisodeStatistics

    from gym_integrity.ray import make_ray_vec

    envs = RecordEpisodeStatistics(make_ray_vec("FinQA-v0", 2))
    submit, explore = format_tool_call("submit_answer", {"answer": "38.2%"}), format_tool_call("list_tools", {})
    try:
        assert envs.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
        for _ in range(2):   # sub-env 0 submits at once and is stepped on; sub-env 1 submits at its third step
            envs.reset(seed=[0, 0], options={"question_id": "fq002"})
            for step in range(3):
                envs.step(_actions(submit if step == 0 else explore, submit if step == 2 else explore))
        records = sorted((float(r), int(n)) for r, n in zip(envs.return_queue, envs.length_queue))
    finally:
        envs.close()
    assert records == [(1.0, 1), (1.0, 1), (1.0, 3), (1.0, 3)]   # no 0-step records, no unfinished episode
