"""FinQA-v0 episodes: the tool world on the shipped data, actions, the seed scenarios (stack vs raw), leaks."""

from __future__ import annotations

import json
import time

import gymnasium as gym
import pytest

import gym_integrity
from gym_integrity.envs.finqa import TOOL_SCHEMAS, FinQAEnv, format_tool_call
from gym_integrity.envs.finqa.actions import FORMAT_HELP
from gym_integrity.envs.finqa.data import load_dataset_cached

QID = "fq002"   # Northwind gross margin 2024: 38.2%
COMPANY = "northwind_foods"
INCOME = "nwf_ConsolidatedStatementsOfIncomeTableTextBlock"
RIGHT, WRONG = "38.2%", "12%"


def call(name: str, **arguments) -> dict:
    return {"tool": name, "arguments": arguments}


def submit(answer: str) -> str:
    return format_tool_call("submit_answer", {"answer": answer})


def stacked(**kwargs):
    env = gym.make("FinQA-v0", **kwargs)
    env.reset(options={"question_id": QID})
    return env


def raw(**kwargs) -> FinQAEnv:
    env = FinQAEnv(**kwargs)
    env.reset(options={"question_id": QID})
    return env


# ---------------------------------------------------------------- the tool world


def test_scripted_policy_solves_a_question_with_the_tools():
    env = gym.make("FinQA-v0")
    obs, info = env.reset(options={"question_id": QID})
    assert "gross margin" in obs and f"Company: {COMPANY}" in obs and "sql_query(" in obs
    assert info["problem_id"] == QID and "privileged" not in info
    tables = json.loads(env.step(call("get_descriptions", company_name=COMPANY))[0])
    assert INCOME in tables and len(tables) == 4
    info_text = env.step(call("get_table_info", company_name=COMPANY, table_name=INCOME))[0]
    assert "gross_profit" in json.loads(info_text)["unique_vals_per_col"]["line_item"]
    query = (f"SELECT line_item, to_number(\"2024\") AS v FROM {INCOME} "
             "WHERE line_item IN ('gross_profit', 'net_revenue')")
    obs, reward, terminated, truncated, info = env.step(call("sql_query", company_name=COMPANY,
                                                             table_name=INCOME, query=query))
    values = {r["line_item"]: r["v"] for r in json.loads(obs)}
    assert (reward, terminated, truncated, info["verdict"], info["tool"]) == (0.0, False, False, "pending", "sql_query")
    margin = 100 * values["gross_profit"] / values["net_revenue"]
    obs, reward, terminated, truncated, info = env.step(submit(f"\\boxed{{{margin:.2f}\\%}}"))
    assert (reward, terminated, truncated, info["verdict"]) == (1.0, True, False, "correct")
    assert info["metrics"]["finqa/tool_calls"] == 4.0 and info["metrics"]["finqa/sql_queries"] == 1.0
    assert info["integrity"]["steps"] == 4


def test_wrong_answer_scores_zero():
    env = stacked()
    _, reward, terminated, _, info = env.step(submit(WRONG))
    assert (reward, terminated, info["verdict"]) == (0.0, True, "incorrect")


@pytest.mark.parametrize("action", [
    {"tool": "get_descriptions", "arguments": {"company_name": COMPANY}},
    {"name": "get_descriptions", "arguments": json.dumps({"company_name": COMPANY})},
    {"type": "function", "function": {"name": "get_descriptions", "arguments": json.dumps({"company_name": COMPANY})}},
    '<tool_call>{"name": "get_descriptions", "arguments": {"company_name": "northwind_foods"}}</tool_call>',
    'Let me look.\n<tool_call>\n{"name": "get_descriptions", "arguments": {"company_name": "northwind_foods"}}\n</tool_call>',
    '{"name": "get_descriptions", "arguments": {"company_name": "northwind_foods"}}',
    'I will call:\n```json\n{"name": "get_descriptions", "arguments": {"company_name": "northwind_foods"}}\n```',
])
def test_every_accepted_action_form(action):
    env = stacked()
    obs, reward, terminated, _, info = env.step(action)
    assert INCOME in json.loads(obs) and info["tool_ok"] and (reward, terminated) == (0.0, False)


def test_trainer_action_text_is_used():
    from gym_integrity.protocol import TrainerAction
    env = stacked()
    obs = env.step(TrainerAction(format_tool_call("get_descriptions", {"company_name": COMPANY}), num_tokens=12))[0]
    assert INCOME in json.loads(obs)
    assert env.step({"text": submit(RIGHT), "num_tokens": 3})[1] == 1.0


@pytest.mark.parametrize("action", [
    {"text": 5}, {"text": None}, {"text": {"tool": "list_tools"}}, {"text": ["x"]},
    {"text": "hi", "arguments": {}}, {"text": submit(RIGHT), "tool": "submit_answer"}, {"text": "hi", "extra": 1},
])
def test_a_text_dict_that_is_not_a_trainer_action_is_read_as_a_tool_call(action):
    """Only {"text": str[, "num_tokens"]} is the trainer's; any other dict is the model's call: an error step."""
    env = stacked()
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs.startswith("Error") and (reward, terminated, truncated) == (0.0, False, False), obs
    assert info["tool_ok"] is False and info["verdict"] == "pending"
    assert env.step(submit(RIGHT))[1:3] == (1.0, True)   # the episode goes on


@pytest.mark.parametrize("tokens", [-1, "3", True, 1.5, [1], 10**10], ids=["neg", "str", "bool", "float", "list", "huge"])
def test_a_dict_with_a_bad_token_count_is_the_models_and_an_error_step(tokens):
    """A model can write {"text": ..., "num_tokens": "x"} as JSON as well as a trainer: an error step (red team)."""
    env = stacked()
    obs, reward, terminated, truncated, info = env.step({"text": submit(RIGHT), "num_tokens": tokens})
    assert obs.startswith("Error") and (reward, terminated, truncated) == (0.0, False, False), obs
    assert env.step({"text": submit(RIGHT), "num_tokens": 12})[1:3] == (1.0, True)   # a valid one is the trainer's


def test_a_nested_blow_up_is_refused_before_it_takes_a_worker_and_the_next_query_works():
    """Nested CTEs blow up in sqlite's prepare phase (13.7 s in process before; a worker held for its whole
    budget, and others' queries queued behind it, under the pool alone): refused by their nesting instead."""
    ctes = [f"a0 AS NOT MATERIALIZED (SELECT line_item AS x FROM {INCOME} WHERE 1)"]
    ctes += [f"a{k} AS NOT MATERIALIZED (SELECT p0.x AS x FROM a{k - 1} p0, a{k - 1} p1, a{k - 1} p2 WHERE 1)"
             for k in range(1, 11)]
    query = "WITH " + ", ".join(ctes) + " SELECT x FROM a10 WHERE 0"
    env = stacked(sql_timeout_s=0.5)
    assert env.unwrapped.grading_time_bound_s >= 0.55 + 3.0   # the run budget plus a successor's start
    env.step(call("sql_query", company_name=COMPANY, table_name=INCOME, query="SELECT 1 FROM x WHERE 1"))  # warm
    start = time.monotonic()
    obs, reward, terminated, truncated, info = env.step(call("sql_query", company_name=COMPANY, table_name=INCOME,
                                                             query=query))
    assert time.monotonic() - start < 0.5
    assert obs.startswith("Error: at most 1 level of nesting") and info["tool_ok"] is False
    assert (reward, terminated) == (0.0, False) and info["metrics"]["finqa/sql_unavailable"] == 0.0
    obs = env.step(call("sql_query", company_name=COMPANY, table_name=INCOME,
                        query=f"SELECT \"2024\" FROM {INCOME} WHERE line_item = 'gross_profit'"))[0]
    assert json.loads(obs) == [{"2024": "$4,768"}]
    env.close()


def test_pathological_tool_call_tags_are_handled_fast():
    env = stacked()
    for text in ("<tool_call>" * 9000, "</tool_call>" + "<tool_call>" * 9000, '{"name":' * 12000, "[" * 99_000):
        obs, reward, terminated, _, _ = env.step(text)
        assert obs.startswith("Error") and (reward, terminated) == (0.0, False)


@pytest.mark.parametrize("action", [
    "", "the answer is 38.2%", "\\boxed{38.2}", "{", "{}", '{"arguments": {}}', "<tool_call>not json</tool_call>",
    '<tool_call>{"name": "a"}</tool_call><tool_call>{"name": "b"}</tool_call>',
    '{"name": "get_descriptions", "arguments": {}} {"name": "submit_answer", "arguments": {"answer": "1"}}',
    '{"name": "get_descriptions", "arguments": "not json"}', '{"name": "get_descriptions", "arguments": [1]}',
    '{"name": "drop_tables", "arguments": {}}', '{"name": 42}', "\x00" * 50, "{" * 5000, "🙂" * 1000,
    {"tool": "submit_answer", "arguments": {}}, {"tool": "submit_answer", "arguments": {"answer": [1]}},
    {"tool": None}, {"arguments": {"answer": RIGHT}}, {"tool": "sql_query", "arguments": {"query": "x"}},
])
def test_malformed_actions_are_error_steps_not_crashes(action):
    env = stacked()
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs.startswith("Error") and (reward, terminated, truncated) == (0.0, False, False)
    assert info["verdict"] == "pending" and info["tool_ok"] is False
    assert env.observation_space.contains(obs)
    if not (isinstance(action, dict) and action.get("tool") in ("submit_answer", "sql_query")):
        assert "submit_answer" in obs   # the tool names and the expected format are listed
        assert obs.count(FORMAT_HELP) <= 1   # the format once, not once from the parser and again from the env
    else:
        assert "takes arguments" in obs or "must be strings" in obs   # a known tool: its arguments are listed
    _, reward, terminated, _, _ = env.step(submit(RIGHT))   # the episode goes on
    assert (reward, terminated) == (1.0, True)


class _Unprintable:
    def __str__(self):
        raise RuntimeError("no str")

    __repr__ = __format__ = __str__


class _UnprintableInt(int):
    def __str__(self):
        raise RuntimeError("no str")

    __repr__ = __str__


class _BrokenMapping(dict):
    def items(self):
        raise RuntimeError("no items")

    def __iter__(self):
        raise RuntimeError("no iter")


def _nested(depth: int):
    value: object = RIGHT
    for _ in range(depth):
        value = {"a": value}
    return value


def _self_containing():
    loop: list = []
    loop.append(loop)
    looped: dict = {}
    looped["answer"] = looped
    return loop, looped


_LOOP, _LOOPED = _self_containing()


@pytest.mark.parametrize("arguments", [
    {"answer": 10 ** 5000}, {"answer": -(10 ** 100_000)}, {"answer": float("nan")}, {"answer": float("-inf")},
    {"answer": b"38.2%"}, {"answer": bytearray(b"1")}, {"answer": {1, 2}}, {"answer": frozenset()},
    {"answer": _Unprintable()}, {"answer": object()}, {"answer": _nested(5000)}, {"answer": [0] * 1_000_000},
    {"answer": _LOOP}, _LOOPED, {"answer": 1j}, {1: "x"}, {("a",): "x"}, {"answer": "x" * 10_000_000},
    {"answer": [[[[[[]]]]]] * 50_000},
])
def test_structured_actions_with_unexpected_values_are_error_steps_never_exceptions(arguments):
    # Before issue 10, a 5,000-digit int raised ValueError out of step() (Python's int-to-str limit).
    env = stacked()
    for action in ({"tool": "submit_answer", "arguments": arguments},
                   {"tool": "sql_query", "arguments": {"company_name": COMPANY, "table_name": INCOME, "query": arguments}},
                   {"type": "function", "function": {"name": "submit_answer", "arguments": arguments}}):
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs.startswith("Error") and (reward, terminated, truncated) == (0.0, False, False), obs
        assert info["tool_ok"] is False and env.observation_space.contains(obs)
    _, reward, terminated, _, _ = env.step(submit(RIGHT))   # the episode goes on
    assert (reward, terminated) == (1.0, True)


@pytest.mark.parametrize("action", [
    {"tool": 10 ** 5000}, {"name": _Unprintable()}, _BrokenMapping(tool="submit_answer"), {"tool": b"submit_answer"},
    {"function": {"name": "submit_answer", "arguments": '{"answer": 1' + "0" * 5000 + "}"}},
    '{"name": "submit_answer", "arguments": {"answer": NaN}}', '{"name": "submit_answer", "arguments": {"answer": -Infinity}}',
    {"text": 10 ** 5000}, {"tool": "submit_answer", "arguments": _LOOPED},
])
def test_odd_tool_call_envelopes_are_error_steps_never_exceptions(action):
    env = stacked()
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs.startswith("Error") and (reward, terminated, truncated) == (0.0, False, False), obs
    assert info["tool_ok"] is False and info["verdict"] == "pending"


def test_subclassed_values_are_read_as_their_builtin_value_without_calling_their_methods():
    env = stacked()
    _, reward, terminated, _, info = env.step(call("submit_answer", answer=_UnprintableInt(12)))
    assert (reward, terminated, info["verdict"]) == (0.0, True, "incorrect")   # graded as "12", not a crash


def test_too_long_action_is_an_error_step():
    env = stacked(max_action_chars=1000)
    obs, reward, terminated, _, _ = env.step("x" * 1001)
    assert obs.startswith("Error: the action is 1001 characters long") and (reward, terminated) == (0.0, False)


@pytest.mark.parametrize("action", [None, 42, b"bytes", ["list"], 3.5])
def test_non_str_non_dict_action_raises_type_error(action):
    env = raw()
    with pytest.raises(TypeError, match="str .* or a dict"):
        env.step(action)


def test_list_tools_returns_the_schemas_and_env_exposes_them():
    env = stacked()
    obs, reward, terminated, _, info = env.step(call("list_tools"))
    assert json.loads(obs) == list(TOOL_SCHEMAS) == env.unwrapped.tools
    assert (reward, terminated, info["tool"]) == (0.0, False, "list_tools")
    names = [t["function"]["name"] for t in env.unwrapped.tools]
    assert names == ["get_descriptions", "get_table_info", "sql_query", "submit_answer"]
    env.unwrapped.tools[0]["function"]["name"] = "mutated"   # a copy: the env's own stays intact
    assert env.unwrapped.tools[0]["function"]["name"] == "get_descriptions"


# ---------------------------------------------------------------- seed scenarios: stack vs raw


def test_submit_after_submit_is_frozen_through_the_stack():
    env = stacked()
    _, first, terminated, _, _ = env.step(submit(WRONG))
    assert (first, terminated) == (0.0, True)
    _, second, terminated, truncated, info = env.step(submit(RIGHT))
    assert (second, terminated, truncated) == (0.0, True, False)
    assert info["integrity"]["frozen"] and info["integrity"]["ignored_steps"] == 1
    assert info["verdict"] == "incorrect" and info["metrics"]["finqa/tool_calls"] == 1.0


def test_raw_env_rescores_a_second_submit_the_exploit():
    env = raw()
    assert env.step(submit(WRONG))[1:3] == (0.0, True)
    _, reward, terminated, _, info = env.step(submit(env.gold_answers()[0]))
    assert (reward, terminated, info["verdict"]) == (1.0, True, "correct")


def test_submit_after_the_step_budget_ended_the_episode_through_the_stack():
    env = stacked(step_budget=3)
    for n in range(3):
        _, reward, terminated, truncated, info = env.step(call("get_descriptions", company_name=COMPANY))
    assert (reward, terminated, truncated, info["integrity"]["steps"]) == (0.0, False, True, 3)
    obs, reward, terminated, truncated, info = env.step(submit(RIGHT))
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert info["integrity"]["frozen"] and info["verdict"] == "no_answer"
    assert INCOME in obs   # the final observation replayed, nothing graded
    assert env.unwrapped._counts["finqa/tool_calls"] == 3.0


@pytest.mark.parametrize("make", [lambda: stacked(step_budget=2), lambda: _with_max_steps(2)])
def test_an_episode_truncated_without_a_submission_ends_no_answer_not_pending(make):
    # A new user's finding (issue 10): the final info said "pending", a grade that never comes.
    env = make()
    _, reward, terminated, truncated, info = env.step(call("get_descriptions", company_name=COMPANY))
    assert (truncated, info["verdict"]) == (False, "pending")
    _, reward, terminated, truncated, info = env.step("no tool call here")
    assert (reward, terminated, truncated) == (0.0, False, True)
    assert (info["verdict"], info["no_verdict"], info["score"]) == ("no_answer", False, 0.0)
    assert "cause" not in info and info["metrics"]["finqa/score"] == 0.0
    assert env.step(submit(RIGHT))[4]["verdict"] == "no_answer"   # frozen: the end state stays honest


def _with_max_steps(n):
    env = gym_integrity.make("FinQA-v0", max_steps=n)
    env.reset(options={"question_id": QID})
    return env


def test_raw_env_does_not_enforce_the_budget_the_exploit():
    env = raw(step_budget=3)
    for _ in range(5):
        assert env.step(call("get_descriptions", company_name=COMPANY))[2:4] == (False, False)
    assert env.step(submit(RIGHT))[1:3] == (1.0, True)


def test_list_tools_after_a_correct_submit_through_the_stack():
    env = stacked()
    obs, reward, _, _, info = env.step(submit(RIGHT))
    assert reward == 1.0
    steps = info["integrity"]["steps"]
    obs2, reward2, terminated, truncated, info2 = env.step(call("list_tools"))
    assert (reward2, terminated, truncated) == (1.0, True, False)   # the reward stays
    assert obs2 == obs and info2["integrity"]["steps"] == steps     # the step count is unchanged
    assert env.unwrapped._counts["finqa/tool_calls"] == 1.0         # the raw env was not called


def test_raw_env_runs_tools_after_the_end_the_exploit():
    env = raw()
    env.step(submit(RIGHT))
    obs, reward, terminated, _, info = env.step(call("list_tools"))
    assert json.loads(obs) == list(TOOL_SCHEMAS)
    assert (reward, terminated, info["metrics"]["finqa/tool_calls"]) == (0.0, False, 2.0)


def test_submission_on_the_last_allowed_step_is_scored_once():
    env = stacked(step_budget=3)
    env.step(call("get_descriptions", company_name=COMPANY))
    env.step(call("get_table_info", company_name=COMPANY, table_name=INCOME))
    _, reward, terminated, truncated, info = env.step(submit(RIGHT))
    assert (reward, terminated, truncated, info["verdict"]) == (1.0, True, False, "correct")
    for n in range(1, 4):
        _, again, terminated, truncated, info = env.step(submit(RIGHT))
        assert (again, terminated, truncated, info["integrity"]["ignored_steps"]) == (1.0, True, False, n)
    assert env.unwrapped._counts["finqa/tool_calls"] == 3.0


def test_frozen_reward_zero_for_loops_that_sum_rewards():
    env = gym_integrity.make("FinQA-v0", frozen_reward="zero")
    env.reset(options={"question_id": QID})
    rewards = [env.step(submit(RIGHT))[1], env.step(submit(RIGHT))[1]]
    assert rewards == [1.0, 0.0]


# ---------------------------------------------------------------- leaks


def _all_text(env) -> str:
    return " ".join([repr(env), str(env), repr(env.unwrapped), str(env.spec), repr(env.observation_space),
                     repr(env.action_space), str(env.unwrapped.render())])


@pytest.mark.parametrize("qid", ["fq002", "fq006", "fq013", "fq035", "fq009"])
def test_gold_never_reaches_obs_info_render_or_repr_through_the_stack(qid):
    env = gym.make("FinQA-v0")
    obs, info = env.reset(options={"question_id": qid})
    question = load_dataset_cached(None).questions[load_dataset_cached(None).question_index[qid]]
    secrets = [*question.answers, question.explanation]
    seen = [obs, json.dumps(info), _all_text(env)]
    for action in (call("list_tools"), "garbage", submit("0"), submit("1")):
        obs, _, _, _, info = env.step(action)
        seen += [obs, json.dumps(info), _all_text(env)]
        assert "privileged" not in info and "gold_answers" not in json.dumps(info)
    for secret in secrets:
        assert all(secret not in text for text in seen), secret


def test_trainer_opt_in_reveals_gold_only_at_the_end():
    env = gym_integrity.make("FinQA-v0", reveal_on_end=True)
    _, info = env.reset(options={"question_id": QID})
    assert "privileged" not in info
    info = env.step(call("list_tools"))[4]
    assert "privileged" not in info
    info = env.step(submit(WRONG))[4]
    assert info["privileged"]["gold_answers"] == [r"\boxed{38.2\%}"]
    assert "gross_profit" in info["privileged"]["explanation"]
    # A truncated episode reveals too (every raw info carries it; the stack hides it until the end).
    env = gym_integrity.make("FinQA-v0", reveal_on_end=True, max_steps=2)
    env.reset(options={"question_id": QID})
    assert "privileged" not in env.step(call("list_tools"))[4]
    _, _, terminated, truncated, info = env.step(call("list_tools"))
    assert (terminated, truncated) == (False, True) and info["privileged"]["gold_answers"] == [r"\boxed{38.2\%}"]


def test_raw_env_puts_gold_only_under_privileged():
    env = FinQAEnv()
    obs, info = env.reset(options={"question_id": QID})
    assert env.gold_answers() == [r"\boxed{38.2\%}"]
    assert info["privileged"]["gold_answers"] == env.gold_answers()
    assert "38.2" not in obs and "38.2" not in json.dumps({k: v for k, v in info.items() if k != "privileged"})


# ---------------------------------------------------------------- reset, config


def test_reset_is_reproducible_and_options_pick_questions():
    a, b = FinQAEnv(), FinQAEnv()
    ids_a = [a.reset(seed=s)[1]["problem_id"] for s in range(20)]
    ids_b = [b.reset(seed=s)[1]["problem_id"] for s in range(20)]
    assert ids_a == ids_b and len(set(ids_a)) > 5
    assert a.reset(options={"index": 0})[1]["problem_id"] == "fq001"
    for bad in ({"question_id": "nope"}, {"index": -1}, {"index": 10_000}):
        with pytest.raises(ValueError, match=r"^FinQAEnv.reset options\['(question_id|index)'\]"):
            a.reset(options=bad)
    for bad in ({"question_id": 3}, {"index": True}, {"problem_id": "fq001"}):
        with pytest.raises(TypeError, match=r"^FinQAEnv.reset options\["):
            a.reset(options=bad)


def test_step_before_reset_raises():
    with pytest.raises(gym.error.ResetNeeded):
        FinQAEnv().step(submit(RIGHT))


@pytest.mark.parametrize("kwargs, error, field", [
    ({"step_budget": 0}, ValueError, "step_budget"),
    ({"step_budget": True}, TypeError, "step_budget"),
    ({"scoring": "fuzzy"}, ValueError, "scoring"),
    ({"rel_tol": -1}, ValueError, "rel_tol"),
    ({"sql_timeout_s": 0}, ValueError, "sql_timeout_s"),
    ({"data_format": "csv"}, ValueError, "data_format"),
    ({"data_path": 3}, TypeError, "data_path"),
    ({"questions_file": "../x.csv"}, ValueError, "questions_file"),
    ({"no_such_option": 1}, TypeError, "no_such_option"),
])
def test_bad_config_fails_at_make_naming_the_field(kwargs, error, field):
    with pytest.raises(error, match=f"^FinQAConfig.{field}"):
        gym.make("FinQA-v0", **kwargs)


def test_stack_reads_the_declared_budget_and_env_checker_passes():
    env = gym.make("FinQA-v0", step_budget=7)
    _, info = env.reset(seed=1)
    assert info["integrity"]["step_budget"] == 7 and env.unwrapped.step_budget == 7
    from gymnasium.utils.env_checker import check_env
    check_env(FinQAEnv(), skip_render_check=True)


def test_render_modes():
    env = FinQAEnv(render_mode="ansi")
    obs, _ = env.reset(options={"question_id": QID})
    assert env.render() == obs
    with pytest.raises(ValueError, match="render_mode"):
        FinQAEnv(render_mode="rgb_array")


def test_integrity_audit_passes_through_the_stack_and_fails_on_the_raw_env():
    from gym_integrity.audit import check_integrity
    assert check_integrity("FinQA-v0").passed
    raw_report = check_integrity(lambda: FinQAEnv())
    assert not raw_report.passed
    env = raw()
    assert env.step(env.audit_answer_action(env.gold_answers()[0]))[1] == 1.0
    env.reset(options={"question_id": QID})
    assert env.step(env.audit_non_answer_action())[1:3] == (0.0, False)


def test_a_trainer_dict_at_the_action_limit_is_read_like_its_text():
    env = stacked(max_action_chars=1000)
    text = submit(RIGHT).ljust(1000)
    _, reward, terminated, _, _ = env.step({"text": text, "num_tokens": 7})   # keys do not count against the limit
    assert (reward, terminated) == (1.0, True)
