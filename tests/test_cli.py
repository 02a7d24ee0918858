"""The gym-integrity command: `list` and `play` driven as a person would, through the installed entry point."""

import shutil
import subprocess
import sys

import pytest

import gym_integrity


def run_cli(*args, stdin=""):
    exe = shutil.which("gym-integrity", path=str(__import__("pathlib").Path(sys.executable).parent))
    cmd = [exe, *args] if exe else [sys.executable, "-m", "gym_integrity.cli", *args]
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "TERM": "dumb"})


def test_list_shows_every_id_with_its_description():
    out = run_cli("list")
    assert out.returncode == 0, out.stderr
    for entry in gym_integrity.REGISTERED:
        assert entry.id in out.stdout
        assert entry.description.split()[0] in out.stdout
    assert "without dataset= plays leg_counting" in out.stdout


def test_list_datasets_names_every_reasoning_gym_dataset_one_a_line():
    from gym_integrity.envs.reasoning_gym import available_datasets

    out = run_cli("list", "--datasets")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "leg_counting" in lines[0] and lines[1:] == available_datasets()


def test_play_a_wrong_answer_shows_reward_and_verdict():
    out = run_cli("play", "ReasoningGym-v0", "--seed", "0", stdin="<answer>-5</answer>\n")
    assert out.returncode == 0, out.stderr
    assert "legs" in out.stdout and "verdict incorrect" in out.stdout and "episode terminated" in out.stdout


def test_play_the_right_answer_over_several_lines():
    from gym_integrity.envs.reasoning_gym import ReasoningGymEnv

    env = ReasoningGymEnv(dataset="basic_arithmetic")
    env.reset(seed=1)
    answer = env.gold_answers()[0]
    stdin = f'"""\nlet me think\n<answer>{answer}</answer>\n"""\n'
    out = run_cli("play", "ReasoningGym-v0", "--seed", "1", "--env-kwargs", '{"dataset": "basic_arithmetic"}', stdin=stdin)
    assert out.returncode == 0, out.stderr
    assert "reward 1.000" in out.stdout and "verdict correct" in out.stdout
    assert answer not in out.stdout.split("your answer")[0]  # the question screen did not show it


def test_play_end_of_input_and_bad_id():
    assert "left unfinished" in run_cli("play", "ReasoningGym-v0", stdin="").stdout
    bad = run_cli("play", "NoSuchEnv-v0")
    assert bad.returncode == 2 and "NoSuchEnv" in bad.stderr and "Traceback" not in bad.stderr


def test_play_usage_errors_exit_2_with_the_reason():
    bad_json = run_cli("play", "ReasoningGym-v0", "--env-kwargs", "dataset=gcd")
    assert bad_json.returncode == 2 and "--env-kwargs: not JSON" in bad_json.stderr
    assert "Traceback" not in bad_json.stderr
    bad_option = run_cli("play", "ReasoningGym-v0", "--env-kwargs", '{"datset": "gcd"}')
    assert bad_option.returncode == 2 and "did you mean 'dataset'" in bad_option.stderr
    assert "Traceback" not in bad_option.stderr


def test_serve_usage_errors_exit_2_with_the_reason():
    bad_json = run_cli("serve", "ReasoningGym-v0", "--env-kwargs", "not json")
    assert bad_json.returncode == 2 and "--env-kwargs: not JSON" in bad_json.stderr
    not_object = run_cli("serve", "ReasoningGym-v0", "--env-kwargs", "[1]")
    assert not_object.returncode == 2 and "must be a JSON object, got list" in not_object.stderr


def test_serve_without_the_extra_names_the_install_command():
    import importlib.util

    if importlib.util.find_spec("openenv") is not None:
        pytest.skip("openenv-core is installed here: tests/integrations/openenv/test_serve.py covers the command")
    out = run_cli("serve", "ReasoningGym-v0", "--port", "1")
    assert out.returncode == 2 and "pip install 'gym-integrity[serve]'" in out.stderr
