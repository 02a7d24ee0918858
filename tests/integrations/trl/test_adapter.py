"""The TRL adapter's three functions on the real envs, without TRL: datasets, graded rewards, tool environments.

TRL itself trains with them in tests/integrations/trl/test_grpo.py (the ``trl`` marker, its own CI step).
"""

import inspect

import gymnasium as gym
import pytest

import gym_integrity
from gym_integrity.envs.finqa.tools import TOOL_SCHEMAS
from gym_integrity.integrations.trl import MAX_DATASET_ROWS, environment_factory, make_dataset, reward_function
from gym_integrity.openai_stub.judge_server import JudgeServer

RG = {"dataset": "leg_counting"}


@pytest.fixture(scope="module")
def judge():
    with JudgeServer("score:7") as server:
        yield server


def judge_cfg(server, **overrides):
    return {"base_url": server.url, "model": "test-judge", "timeout_s": 5.0, "max_retries": 1, "backoff_s": 0.01,
            **overrides}


def gold(env_id, seed, **kwargs):
    env = gym_integrity.make(env_id, **kwargs)
    env.reset(seed=seed)
    answers = env.unwrapped.gold_answers()
    env.close()
    return answers[0]


def test_dataset_rows_are_the_stacked_envs_first_observations_and_nothing_else():
    rows = make_dataset("ReasoningGym-v0", num_problems=3, seed=10, **RG)
    assert rows.column_names == ["prompt", "env_id", "seed", "problem_id"]
    env = gym.make("ReasoningGym-v0", **RG)
    for i, row in enumerate(rows):
        obs, info = env.reset(seed=10 + i)
        assert row["prompt"] == [{"role": "user", "content": obs}]
        assert (row["env_id"], row["seed"], row["problem_id"]) == ("ReasoningGym-v0", 10 + i, info["problem_id"])
    env.close()


def test_dataset_size_defaults_to_the_envs_item_count():
    env = gym.make("QEDMath-v0")
    count = env.unwrapped.num_items
    env.close()
    assert len(make_dataset("QEDMath-v0")) == min(count, MAX_DATASET_ROWS)
    assert gym.make("ReasoningGym-v0", size=5, **RG).unwrapped.num_items == 5


def test_bad_ids_and_options_fail_at_construction_with_the_expected_kind():
    for build in (make_dataset, reward_function, environment_factory):
        with pytest.raises(ValueError, match="'Nope-v0' is not a registered id"):
            build("Nope-v0")
        with pytest.raises(TypeError, match="is not an option"):
            build("FinQA-v0", bogus=1)
    with pytest.raises(ValueError, match="num_problems must be an int >= 1"):
        make_dataset("ReasoningGym-v0", num_problems=0, **RG)
    with pytest.raises(ValueError, match="has no tools; use reward_function"):
        environment_factory("ReasoningGym-v0")


def test_rewards_follow_the_completions_order_across_grading_threads():
    rows = make_dataset("ReasoningGym-v0", num_problems=12, **RG)
    golds = [gold("ReasoningGym-v0", s, **RG) for s in rows["seed"]]
    right = [i % 3 == 0 for i in range(12)]
    completions = [[{"role": "assistant", "content": f"<answer>{g if ok else 'x' + g}</answer>"}]
                   for g, ok in zip(golds, right)]
    logged = {}
    reward = reward_function("ReasoningGym-v0", **RG)
    try:
        assert reward.__name__ == "reasoninggym_reward"
        got = reward(prompts=rows["prompt"], completions=completions, completion_ids=[[1, 2]] * 12,
                     seed=rows["seed"], env_id=rows["env_id"], log_metric=logged.__setitem__, problem_id=rows["problem_id"])
        assert got == [1.0 if ok else 0.0 for ok in right]
        assert reward.last_verdicts == ["correct" if ok else "incorrect" for ok in right]
        # Every verdict in every batch, zeros included: TRL averages a metric over the batches that logged it.
        assert logged == {f"gym_integrity/{v.value}": {"correct": 4.0, "incorrect": 8.0}.get(v.value, 0.0)
                          for v in gym_integrity.Verdict} | {"gym_integrity/no_verdict": 0.0}
        # The same item again from the seed: replaying the batch gives the same rewards.
        assert reward(prompts=rows["prompt"], completions=completions, seed=rows["seed"]) == got
    finally:
        reward.close()


def test_a_no_verdict_is_none_and_counted(judge):
    closed = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "timeout_s": 0.5, "max_retries": 0}
    rows = make_dataset("QEDMath-v0", num_problems=2, problem_types=["proof"], judge=closed)
    logged = {}
    reward = reward_function("QEDMath-v0", problem_types=["proof"], judge=closed)
    try:
        got = reward(prompts=rows["prompt"], completions=["A proof."] * 2, seed=rows["seed"], log_metric=logged.__setitem__)
    finally:
        reward.close()
    assert got == [None, None]
    assert logged["gym_integrity/no_verdict"] == 2.0
    graded = reward_function("QEDMath-v0", problem_types=["proof"], judge=judge_cfg(judge))
    try:
        assert graded(prompts=rows["prompt"], completions=["</think>A proof."] * 2, seed=rows["seed"]) == [1.0, 1.0]
    finally:
        graded.close()


def test_completion_ids_feed_length_shaping():
    rows = make_dataset("QEDMath-v0", num_problems=1, problem_types=["answer"])
    answer = gold("QEDMath-v0", rows["seed"][0], problem_types=["answer"])
    completion = [f"</think>\\boxed{{{answer}}}"]
    reward = reward_function("QEDMath-v0", problem_types=["answer"], max_tokens=100, buffer_tokens=50)
    try:
        short = reward(prompts=rows["prompt"], completions=completion, completion_ids=[[0] * 10], seed=rows["seed"])
        long = reward(prompts=rows["prompt"], completions=completion, completion_ids=[[0] * 100], seed=rows["seed"])
    finally:
        reward.close()
    assert short[0] > long[0]


def test_reward_calls_that_cannot_be_graded_say_what_is_missing():
    reward = reward_function("ReasoningGym-v0", **RG)
    try:
        with pytest.raises(ValueError, match="needs a 'seed' column"):
            reward(prompts=["q"], completions=["a"])
        with pytest.raises(ValueError, match="a row of env_id 'FinQA-v0'"):
            reward(prompts=["q"], completions=["a"], seed=[0], env_id=["FinQA-v0"])
        with pytest.raises(TypeError, match="a completion must be a str or a list of chat messages"):
            reward(prompts=["q"], completions=[42], seed=[0])
        with pytest.raises(ValueError, match="1 completion_ids for 2 completions"):
            reward(prompts=["q"] * 2, completions=["a", "b"], completion_ids=[[1]], seed=[0, 1])
        assert reward(prompts=["q"], completions=[[{"role": "assistant", "content": "\x00" * 100_000}]], seed=[0]) == [0.0]
        parts = [{"type": "text", "text": None}, {"type": "text", "text": 7}, {"type": "image"}]
        assert reward(prompts=["q"], completions=[[{"role": "assistant", "content": parts}]], seed=[0]) == [0.0]
    finally:
        reward.close()


def test_tool_methods_carry_the_envs_own_schemas():
    cls = environment_factory("FinQA-v0")
    public = sorted(name for name, _ in inspect.getmembers(cls, inspect.isfunction) if not name.startswith("_"))
    assert public == sorted(["reset", "get_reward", *(s["function"]["name"] for s in TOOL_SCHEMAS)])
    for schema in TOOL_SCHEMAS:
        function = schema["function"]
        method = getattr(cls, function["name"])
        params = list(inspect.signature(method).parameters)[1:]
        assert params == list(function["parameters"]["properties"])
        assert method.__doc__.startswith(" ".join(function["description"].split()))
        for arg, spec in function["parameters"]["properties"].items():
            assert f"    {arg}: {spec['description']}" in method.__doc__


def test_a_tool_episode_is_graded_once_and_frozen_after_its_end():
    rows = make_dataset("FinQA-v0", num_problems=2)
    env = environment_factory("FinQA-v0")()
    assert env.reset(**rows[0]) is None  # the prompt holds the question already
    question = env.reset(seed=rows["seed"][0])
    assert question == rows[0]["prompt"][0]["content"]
    assert env.get_reward() == 0.0  # no answer yet
    answer = env._env.unwrapped.gold_answers()[0]
    assert env.submit_answer(answer="-1").startswith("Answer submitted. Graded: incorrect")
    assert env.submit_answer(answer=answer).startswith("Answer submitted. Graded: incorrect")  # frozen: not graded
    assert (env.get_reward(), env.verdict) == (0.0, "incorrect")
    env.reset(**rows[0])
    assert "Graded: correct" in env.submit_answer(answer=answer)
    assert (env.get_reward(), env.verdict) == (1.0, "correct")


def test_a_tool_episode_that_runs_out_of_steps_ends_truncated_with_no_answer():
    rows = make_dataset("FinQA-v0", num_problems=1, step_budget=2)
    env = environment_factory("FinQA-v0", step_budget=2)()
    env.reset(**rows[0])
    env.get_descriptions(company_name="nobody")
    last = env.get_descriptions(company_name="nobody")
    assert (env.get_reward(), env.verdict) == (0.0, "no_answer")
    answer = env._env.unwrapped.gold_answers()[0]
    assert env.submit_answer(answer=answer) == last  # frozen: the final transition again, nothing graded
    assert (env.get_reward(), env.verdict) == (0.0, "no_answer")


def test_a_row_graded_under_other_env_kwargs_is_refused_not_scored_zero():
    """Found trying it as a new user: a leg_counting dataset graded by a basic_arithmetic reward scored 0.0 silently."""
    rows = make_dataset("ReasoningGym-v0", num_problems=2, **RG)
    reward = reward_function("ReasoningGym-v0", dataset="basic_arithmetic")
    try:
        with pytest.raises(ValueError, match="give the same env kwargs as the dataset"):
            reward(prompts=rows["prompt"], completions=["<answer>1</answer>"] * 2, seed=rows["seed"],
                   problem_id=rows["problem_id"])
    finally:
        reward.close()
    env = environment_factory("FinQA-v0")()
    with pytest.raises(ValueError, match="give the same env kwargs"):
        env.reset(seed=0, problem_id="not-this-one")


def test_module_prefixed_ids_and_positional_tool_arguments_work_as_in_gym_make():
    assert len(make_dataset("gym_integrity:ReasoningGym-v0", num_problems=1, **RG)) == 1
    rows = make_dataset("FinQA-v0", num_problems=1)
    env = environment_factory("FinQA-v0")()
    env.reset(**rows[0])
    company = rows[0]["prompt"][0]["content"].split("Company: ")[1].split()[0]
    assert env.get_descriptions(company) == env.get_descriptions(company_name=company)
    assert env.get_descriptions(company, "extra").startswith("Error")
