"""ReasoningGym-v0: grading, reproducibility, bad input, the exploit the stack closes (raw vs stacked), strict and
sandboxed scoring (the sweeps over every dataset are tests/envs/reasoning_gym/test_canaries.py and tests/envs/reasoning_gym/test_constants.py)."""

import re
import subprocess
import sys
import textwrap

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from gym_integrity.envs.reasoning_gym import ReasoningGymEnv

SCAN_DATASETS = ["leg_counting", "basic_arithmetic", "chain_sum", "letter_counting", "word_sorting",
                 "spell_backward", "gcd", "lcm", "prime_factorization", "base_conversion", "caesar_cipher",
                 "count_bits"]
NOTE = re.compile(r"^Graded: [a-z_]+ \(score \d\.\d\d\)\.$")
# Every leaf the stacked env may put in info, and nothing else (a new key must be reviewed for leaks).
ALLOWED_INFO_LEAVES = {"problem_id", "dataset", "index", "verdict", "no_verdict", "score", "cause", "attempt",
                       "metrics.reward/score", "integrity.frozen", "integrity.ignored_steps", "integrity.steps",
                       "integrity.step_budget"}


def leaves(value, prefix=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from leaves(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, value


def answer_of(env):
    return env.unwrapped.gold_answers()[0]


def assert_info_clean(info, item):
    answer = str(item["answer"])
    metadata_keys = set(item["metadata"])
    for path, value in leaves(info):
        assert path in ALLOWED_INFO_LEAVES, f"unexpected info key {path!r}"
        assert path.rsplit(".", 1)[-1] not in metadata_keys - {"source_dataset"}, path
        if path == "problem_id":
            assert value == f"{info['dataset']}/{info['index']}"
        elif isinstance(value, str) and path not in ("dataset", "verdict"):
            assert answer not in value, f"answer in info[{path!r}]"


def test_check_env_passes_raw_and_stacked():
    env = gym.make("ReasoningGym-v0")
    check_env(env.unwrapped, skip_render_check=True)
    with pytest.warns(UserWarning, match="different from the unwrapped"):
        check_env(env, skip_render_check=True)


def test_correct_answer_scores_one_and_wrong_scores_zero():
    env = gym.make("ReasoningGym-v0", dataset="basic_arithmetic")
    env.reset(seed=5)
    _, reward, terminated, truncated, info = env.step(f"thinking...<answer>{answer_of(env)}</answer>")
    assert (reward, terminated, truncated, info["verdict"], info["no_verdict"]) == (1.0, True, False, "correct", False)
    env.reset(seed=5)
    _, reward, _, _, info = env.step(r"the answer is \boxed{123456789}")
    assert (reward, info["verdict"]) == (0.0, "incorrect")
    env.reset(seed=5)
    assert env.step("I give up")[4]["verdict"] == "no_answer"


def test_containing_the_gold_is_not_paid_unless_opted_in():
    """reasoning-gym's base scorer pays len(gold)/len(answer) for any answer containing the gold; strict does not."""
    env = gym.make("ReasoningGym-v0", dataset="leg_counting")
    env.reset(seed=2)
    _, reward, _, _, info = env.step(f"<answer>{answer_of(env)} legs</answer>")
    assert (reward, info["verdict"]) == (0.0, "incorrect")
    lenient = gym.make("ReasoningGym-v0", dataset="leg_counting", scoring="reasoning_gym")
    lenient.reset(seed=2)
    _, reward, _, _, info = lenient.step(f"<answer>{answer_of(lenient)} legs</answer>")
    assert 0.0 < reward < 1.0 and info["verdict"] == "partial"


def test_wrong_then_correct_stays_zero_through_the_stack():
    env = gym.make("ReasoningGym-v0")
    env.reset(seed=11)
    assert env.step("<answer>-1</answer>")[1] == 0.0
    for _ in range(3):
        obs, reward, terminated, _, info = env.step(f"<answer>{answer_of(env)}</answer>")
        assert reward == 0.0 and terminated and info["integrity"]["frozen"]
    assert info["integrity"]["ignored_steps"] == 3


def test_raw_env_shows_the_exploit():
    env = ReasoningGymEnv()
    env.reset(seed=11)
    assert env.step("<answer>-1</answer>")[1] == 0.0
    assert env.step(f"<answer>{answer_of(env)}</answer>")[1] == 1.0  # paid in full after the end


@pytest.mark.parametrize("mode, extra_reward", [("repeat", 1.0), ("zero", 0.0)])
def test_correct_then_extra_step(mode, extra_reward):
    import gym_integrity

    env = gym_integrity.make("ReasoningGym-v0", frozen_reward=mode)
    env.reset(seed=4)
    assert env.step(f"<answer>{answer_of(env)}</answer>")[1] == 1.0
    assert env.step(f"<answer>{answer_of(env)}</answer>")[1] == extra_reward
    env.reset(seed=5)  # the next item is scored normally
    assert env.step(f"<answer>{answer_of(env)}</answer>")[1] == 1.0


def test_no_answer_or_metadata_leaks_over_100_episodes_across_datasets():
    episodes = 0
    for name in SCAN_DATASETS[:10]:
        env = gym.make("ReasoningGym-v0", dataset=name)
        raw = env.unwrapped
        for seed in range(10):
            obs, info = env.reset(seed=seed)
            item = raw._dataset[info["index"]]
            assert obs == raw._question() and obs.startswith(item["question"].rstrip())
            assert_info_clean(info, item)
            for action in ("<answer>wrong</answer>", f"<answer>{item['answer']}</answer>"):
                obs, reward, terminated, truncated, info = env.step(action)
                assert NOTE.match(obs), obs
                assert_info_clean(info, item)
            assert str(item["answer"]) not in env.render().replace(item["question"], "")
            assert str(item["answer"]) not in repr(env) + str(env.spec)
            episodes += 1
    assert episodes == 100


def test_the_scan_catches_the_raw_env():
    raw = ReasoningGymEnv(dataset="leg_counting")
    _, info = raw.reset(seed=0)
    with pytest.raises(AssertionError):
        assert_info_clean(info, raw._dataset[info["index"]])
    assert raw._privileged()["metadata"]["total_legs"] == int(answer_of(raw))  # why metadata is hidden


def test_seeded_reset_is_reproducible_and_forms_groups():
    env = gym.make("ReasoningGym-v0", dataset="basic_arithmetic")
    first = [env.reset(seed=s)[0] for s in range(5)]
    assert first == [env.reset(seed=s)[0] for s in range(5)]
    assert len(set(first)) == 5
    other = gym.make("ReasoningGym-v0", dataset="basic_arithmetic")
    assert other.reset(seed=3)[0] == first[3]
    assert env.reset(options={"index": 17})[1]["index"] == 17
    with pytest.raises(ValueError, match="index"):
        env.reset(options={"index": -1})


def test_huge_size_generates_lazily():
    env = gym.make("ReasoningGym-v0", size=10**12)
    _, info = env.reset(seed=0)
    assert 0 <= info["index"] < 10**12


def test_composite_with_weights():
    env = gym.make("ReasoningGym-v0", dataset=[{"name": "leg_counting", "weight": 1},
                                               {"name": "basic_arithmetic", "weight": 3, "config": {"min_terms": 2}}])
    seen = {env.reset(seed=s)[1]["dataset"] for s in range(40)}
    assert seen == {"leg_counting", "basic_arithmetic"}
    env.reset(seed=1)
    assert env.step(f"<answer>{answer_of(env)}</answer>")[1] == 1.0
    mapping = gym.make("ReasoningGym-v0", dataset={"gcd": 1.0, "lcm": 1.0})
    assert mapping.reset(seed=0)[1]["dataset"] in {"gcd", "lcm"}


@pytest.mark.parametrize("kwargs, match", [
    ({"dataset": "leg_countin"}, "Did you mean.*leg_counting.*Valid choices"),
    ({"dataset_config": {"min_animals": -1}}, "min_animals"),
    ({"answer_format": "xml"}, "answer_format"),
    ({"size": 0}, "size"),
    ({"size": "10"}, "size"),
    ({"dataset": [{"name": "gcd", "weight": 0}]}, "weight"),
    ({"dataset": [{"name": "gcd"}, {"name": "gcd"}]}, "twice"),
    ({"scoring": "lenient"}, "scoring must be one of"),
    ({"score_timeout_s": 0}, "score_timeout_s"),
    ({"score_timeout_s": float("nan")}, "score_timeout_s"),
])
def test_bad_config_fails_at_make(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gym.make("ReasoningGym-v0", **kwargs)


def test_bad_types_fail_at_make_and_step():
    with pytest.raises(TypeError, match="^ReasoningGymConfig.datset is not an option .did you mean 'dataset'"):
        gym.make("ReasoningGym-v0", datset="gcd")
    with pytest.raises(TypeError, match="^ReasoningGymConfig.dataset_config.bogus is not an option"):
        gym.make("ReasoningGym-v0", dataset_config={"bogus": 1})
    with pytest.raises(TypeError, match="^ReasoningGymConfig.size must be an int"):
        gym.make("ReasoningGym-v0", size=10.0)
    with pytest.raises(TypeError, match="^ReasoningGymConfig.scoring must be one of"):
        gym.make("ReasoningGym-v0", scoring=None)
    with pytest.raises(TypeError, match="ReasoningGymConfig.score_timeout_s must be a number"):
        gym.make("ReasoningGym-v0", score_timeout_s=True)
    env = gym.make("ReasoningGym-v0")
    env.reset(seed=0)
    with pytest.raises(TypeError, match="action must be a str"):
        env.step(42)


@pytest.mark.parametrize("text", ["", "x" * 1_000_000, "<answer>" + "9" * 1_000_000 + "</answer>",
                                  "\x00\x07\x1b[31m<answer>\x00</answer>", "\\boxed{{{", "<answer>}{</answer>",
                                  "<answer></answer>", "</answer><answer>", "🙂" * 1000])
def test_any_text_is_graded(text):
    for name in ("leg_counting", "basic_arithmetic", "word_sorting"):
        env = gym.make("ReasoningGym-v0", dataset=name)
        env.reset(seed=0)
        _, reward, terminated, _, info = env.step(text)
        assert terminated and reward == 0.0
        assert info["verdict"] in {"incorrect", "no_answer", "unparsable", "too_long"}


def test_vector_envs_sync_and_async():
    for mode, vector_kwargs in (("sync", {}), ("async", {"shared_memory": False})):
        vec = gym.make_vec("ReasoningGym-v0", num_envs=3, vectorization_mode=mode, vector_kwargs=vector_kwargs,
                           dataset="basic_arithmetic")
        obs, info = vec.reset(seed=[7, 7, 8])
        assert obs[0] == obs[1] != obs[2]
        obs, reward, terminated, truncated, info = vec.step(("<answer>0</answer>",) * 3)
        assert terminated.all() and not truncated.any() and "privileged" not in info
        assert reward.dtype == np.float64
        vec.close()


def test_import_is_light_and_module_prefix_works():
    code = ("import sys, gymnasium as gym\n"
            "env = gym.make('gym_integrity:ReasoningGym-v0')\n"
            "import gym_integrity\n"
            "heavy = [m for m in ('datasets', 'math_verify', 'openai') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    code = ("import sys, gym_integrity\n"
            "heavy = [m for m in ('reasoning_gym', 'datasets', 'math_verify', 'openai') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    subprocess.run([sys.executable, "-c", code], check=True)


# --------------------------------------------------------------------------- strict and sandboxed scoring


def test_sandbox_pool_is_acquired_only_when_needed_and_released_on_close():
    """In a fresh process, so no other test's env holds the shared pool."""
    code = textwrap.dedent("""
        import gymnasium as gym, gym_integrity
        from gym_integrity.envs.reasoning_gym import sandbox
        from gym_integrity.workers import get_pool

        pool = get_pool(sandbox.HANDLER, sandbox.POOL_CONFIG)
        assert not gym.make("ReasoningGym-v0", dataset="leg_counting").unwrapped._grader.sandboxed
        # binary_matrix's own scorer eval()s: sandboxed only where it runs (the opt-in); strict is an exact match
        assert not gym.make("ReasoningGym-v0", dataset="binary_matrix").unwrapped._grader.sandboxed
        assert not pool.running
        lenient = gym.make("ReasoningGym-v0", dataset="binary_matrix", scoring="reasoning_gym")
        composite = gym.make("ReasoningGym-v0", dataset={"leg_counting": 1, "countdown": 1})
        assert lenient.unwrapped._grader.sandboxed and composite.unwrapped._grader.sandboxed and pool.running
        lenient.close()
        assert pool.running  # the composite still uses it
        composite.close()
        composite.close()  # idempotent
        assert not pool.running
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_composite_routes_each_item_to_its_members_scorer():
    env = gym.make("ReasoningGym-v0", dataset={"leg_counting": 1, "countdown": 1}, size=64, seed=3)
    seen = {}
    for seed in range(30):
        _, info = env.reset(seed=seed)
        text = f"<answer>{answer_of(env)}</answer>" if seed % 2 else "<answer>1+__import__('os')</answer>"
        _, reward, _, _, step_info = env.step(text)
        seen.setdefault(info["dataset"], set()).add((reward, step_info["verdict"]))
        if len(seen) == 2 and all(len(v) == 2 for v in seen.values()):
            break
    assert seen["countdown"] == {(1.0, "correct"), (0.0, "unparsable")}  # refused by the arithmetic language
    assert seen["leg_counting"] == {(1.0, "correct"), (0.0, "incorrect")}  # in process, exact match
    env.close()


def test_an_answer_that_runs_past_its_budget_is_graded_timeout_against_itself(monkeypatch):
    """A grammatical answer sympy cannot finish: the worker is killed at the budget; a graded verdict, not a no-verdict.
    the cost bound (grading.cost) refuses this one; the test stands in for whatever it misses by switching it off."""
    import time

    from gym_integrity.envs.reasoning_gym import sandbox

    monkeypatch.setattr(sandbox.cost, "refusal", lambda *args, **kwargs: None)

    env = gym.make("ReasoningGym-v0", dataset="simple_integration", score_timeout_s=1.0, size=4, seed=1)
    env.reset(options={"index": 0})
    env.step(f"<answer>{answer_of(env)}</answer>")  # the pool is warm
    env.reset(options={"index": 0})
    start = time.perf_counter()
    _, reward, terminated, _, info = env.step("<answer>sin(x)**999*cos(x)**999</answer>")
    assert time.perf_counter() - start < 1.0 + 15.0
    assert (reward, terminated, info["verdict"], info["no_verdict"]) == (0.0, True, "timeout", False)
    assert "budget" in info["cause"]
    env.reset(options={"index": 0})  # the next answer is served by a fresh worker
    assert env.step(f"<answer>{answer_of(env)}</answer>")[1] == 1.0
    env.close()


def test_a_scorer_that_raises_on_a_malformed_answer_grades_it():
    """prime_factorization's int() lets a ValueError escape: the answer's fault (graded), since the gold scores fine;
    a scorer that raises with nothing to compare against is a no-verdict."""
    from gym_integrity.envs.reasoning_gym.datasets import own_score

    env = gym.make("ReasoningGym-v0", dataset="prime_factorization")
    env.reset(seed=0)
    _, reward, _, _, info = env.step("<answer>two times three</answer>")
    assert (reward, info["verdict"], info["no_verdict"]) == (0.0, "unparsable", False)
    assert info["cause"] == "prime_factorization.score_answer raised ValueError on this answer"
    raw = env.unwrapped
    broken = dict(raw._item, answer=None)  # no reference answer: the exception is the scorer's
    with pytest.raises(ValueError):
        own_score(raw._dataset, "two times three", broken)


def test_the_worker_handler_runs_in_process_too():
    """sandbox.score is a plain function: the same scores a worker gives. The answer's language is checked once, in
    the parent, before any payload is sent (the worker trusts it)."""
    from gym_integrity.envs.reasoning_gym import sandbox

    env = ReasoningGymEnv(dataset="countdown", size=4, seed=1)
    env.reset(options={"index": 0})
    item, key = env._item, env._key
    assert sandbox.score((key, "countdown", item, answer_of(env))) == ("score", 1.0)
    assert sandbox.score((key, "countdown", item, "1 + 2")) == ("score", 0.05)  # strict drops it
    graded = env._grader.grade("1+__import__('os')", item, "countdown")
    assert (graded.verdict.value, graded.no_verdict) == ("unparsable", False)
    assert graded.cause == "countdown: double underscores are not part of the answer language"
    env.close()


@pytest.mark.parametrize("status, verdict, no_verdict", [
    ("timeout", "timeout", False), ("crashed", "unparsable", False), ("infra_error", "grader_error", True),
    ("overloaded", "grader_error", True), ("error", "grader_error", True)])
def test_pool_outcomes_map_to_grades(status, verdict, no_verdict):
    from gym_integrity.envs.reasoning_gym.sandbox import outcome_grade
    from gym_integrity.workers import PoolStatus

    grade = outcome_grade(PoolStatus(status), "ZeroDivisionError", "countdown", 5.0)
    assert (grade.verdict.value, grade.no_verdict, grade.score) == (verdict, no_verdict, 0.0)
    assert grade.cause
    memory = outcome_grade(PoolStatus.ERROR, "MemoryError", "countdown", 5.0)
    assert (memory.verdict.value, memory.no_verdict) == ("unparsable", False)


@pytest.mark.parametrize("language, good, bad", [
    ("arithmetic", ["94*4 - 61 - 6", "10*(8 - 5) - 6"], ["9**9", "2^3", "1.5", "x", "(1)(2)", "1,2", "((((((((((1))))))))))"]),
    ("algebra", ["-4*(-2*x - 8)**(3/2)/3 + C", "x**-1 + sqrt(x) + pi*E", "exp(x)*sin(2*x)"],
     ["x.real", "x**x**2", "(x**2)**3", "N(x)", "x(2)", "sin", "x**1234", "1e999", "lambda: 1", "x[0]", "y"]),
    ("matrix", ["1 0 1\n0 1 0", "[[1, 0], [0, 1]]", "4 6 -7 3"], ["[1][0]", "1.0", "[[[[[1]]]]]", "x"]),
    ("letters", ["EACADDDDB", "[A, B]"], ["abc", "A(B)", "A1"]),
    ("queens", ["_ Q _ _\n_ _ _ Q", "[[_, Q], [Q, _]]"], ["__", "_Q", "q", "Q1"]),
    ("logic", ["(P \u2228 \u00acQ) \u2192 P", "P \u2227 Q"], ["R", "P and Q", "P(Q)", "\u00ac" * 300 + "P"]),
    ("probability", ["0.3125", "5/16", "3.051757812e-05", "1,000"], ["1e999", "1/2/3x", "9" * 30, "(1)"]),
    ("cube_moves", ["R U' F2 D'", "U U R'"], ["R999", "R.U", "R;U"]),
    ("car_moves", ["F+1 K+1 M-1", "A+12"], ["A+999", "A*2", "A=1"]),
    ("unreviewed", ['["fill C", "pour C->A"]', "Move disk 1 from Peg 2 to Peg 3", "(4.05, -5.48)", '{"a": 1}'],
     ["open ('x')", "x.y", 'f"{x}"', "lambda: 1", "a\\b", "x" + " " * 100 + "(1)", "a#b", "__x"]),
])
def test_answer_languages(language, good, bad):
    from gym_integrity.grading.language import check

    entry = {"metadata": {"variable": "x", "variables": ["P", "Q"]}}
    assert [check(language, text, entry) for text in good] == [None] * len(good)
    assert all(check(language, text, entry) for text in bad), [(t, check(language, t, entry)) for t in bad]


def test_every_dataset_has_a_reviewed_rule():
    """The scoring table was read against these scorers: a dataset added or a scorer changed by an upgrade fails here
    (until reviewed, an added dataset gets the cautious default: full credit only, sandboxed, no Python shapes)."""
    from reasoning_gym.dataset import ProceduralDataset
    from reasoning_gym.factory import DATASETS

    from gym_integrity.envs.reasoning_gym import available_datasets
    from gym_integrity.envs.reasoning_gym.table import BASE_SCORER, RULES, UNREVIEWED, rule_for
    from gym_integrity.grading.rules import Exact

    assert sorted(RULES) == available_datasets()
    on_base = {n for n in RULES if DATASETS[n][0].score_answer is ProceduralDataset.score_answer}
    assert on_base == {n for n, rule in RULES.items() if rule is BASE_SCORER}
    saved = dict(RULES)
    try:
        del RULES["countdown"]
        assert rule_for("countdown") == UNREVIEWED
        del RULES["leg_counting"]
        assert isinstance(rule_for("leg_counting"), Exact)
    finally:
        RULES.update(saved)


def test_an_answer_never_reaches_the_trainers_output(capfd):
    """tower_of_hanoi's scorer prints an illegal move, the answer's own text: nothing of it may reach stdout."""
    env = gym.make("ReasoningGym-v0", dataset="tower_of_hanoi")
    env.reset(seed=0)
    capfd.readouterr()
    _, reward, *_ = env.step("<answer>Move disk 1 from Peg 9 to Peg 1\n\x1b[31mINJECTED</answer>")
    env.close()
    out, err = capfd.readouterr()
    assert reward == 0.0 and "INJECTED" not in out + err and "Peg 9" not in out + err, (out, err)


def test_a_size_that_leaves_no_drawable_item_is_a_clear_error_not_an_undrawn_item():
    """graph_color under strict draws about one default item in 280: 20 items hold none, and reset says so
    instead of serving one its draw filter refuses."""
    env = gym.make("ReasoningGym-v0", dataset="graph_color", size=20)
    with pytest.raises(ValueError, match=r"size=20 leaves no item strict scoring draws for dataset 'graph_color'"):
        env.reset(seed=0)
    env.close()


def test_with_few_drawable_items_every_reset_draws_one_of_them():
    from gym_integrity.envs.reasoning_gym.tasks import draw_filter

    env = gym.make("ReasoningGym-v0", dataset="string_insertion", size=200)
    drawn = draw_filter("string_insertion")
    raw = env.unwrapped
    for seed in range(40):
        env.reset(seed=seed)
        assert drawn(raw._item) and raw._item["answer"] != ""
    env.close()
