"""The reward-function adapter: TRL's and verl's shapes over a dataset as a file, a list or a datasets.Dataset,
audited for real (in process and through the CLI's child processes); reasoning-gym's own scorers by name."""

from __future__ import annotations

import json

import datasets
import pytest

import reward_toys
from gym_integrity.audit import Status, check_integrity
from gym_integrity.audit.adapters_reward import RewardFunctionEnv, load_rows
from gym_integrity.audit.adapters_targets import GOLD_NOTE, adapt, annotate, build
from gym_integrity.cli import main
from gym_integrity.wrappers import integrity_stack

LENIENCY_PROBES = ["gold_answer_scored", "constant_answers", "covering_sprays"]


@pytest.fixture
def data_file(tmp_path):
    return reward_toys.write_jsonl(tmp_path / "sums.jsonl", reward_toys.rows())


@pytest.mark.parametrize("fn", [reward_toys.lenient, reward_toys.verl_lenient])
def test_a_reward_that_pays_any_text_holding_the_gold_fails_with_evidence(fn, data_file):
    report = check_integrity(lambda: RewardFunctionEnv(fn, str(data_file)), probes=LENIENCY_PROBES)
    assert report.verdict.value == "fail"
    assert report.status_of("gold_answer_scored") is Status.PASSED
    covering = report.result("covering_sprays")
    assert covering.status is Status.FAILED
    assert any("-> reward 1" in line and "chance 0" in line for line in covering.evidence), covering.evidence
    constant = report.result("constant_answers")
    assert constant.status is Status.FAILED and any("every integer 0..999" in line for line in constant.evidence)


@pytest.mark.parametrize("fn", [reward_toys.strict, reward_toys.verl_strict])
def test_a_strict_reward_passes_every_probe(fn, data_file):
    report = check_integrity(lambda: RewardFunctionEnv(fn, str(data_file)))
    assert report.passed, (report.failures, report.missing)


def test_the_stack_around_an_adapted_reward_keeps_it_passing_and_the_leniency_failing(data_file):
    strict = check_integrity(lambda: build("reward:reward_toys:strict", stacked=True, dataset=str(data_file)))
    assert strict.passed and strict.stacked, (strict.failures, strict.missing)
    lenient = check_integrity(lambda: integrity_stack(RewardFunctionEnv(reward_toys.lenient, str(data_file))),
                              probes=["covering_sprays"])
    assert lenient.status_of("covering_sprays") is Status.FAILED  # the stack does not grade: leniency stays


def test_dataset_shapes_json_list_datasets_object_and_conversational_prompts(tmp_path):
    items = reward_toys.rows(6)
    path = tmp_path / "sums.json"
    path.write_text(json.dumps(items))
    chat = [{**row, "prompt": [{"role": "user", "content": row["prompt"]}]} for row in items]
    for dataset, fn in ((str(path), reward_toys.strict), (items, reward_toys.strict),
                        (datasets.Dataset.from_list(items), reward_toys.strict),
                        (datasets.DatasetDict({"train": datasets.Dataset.from_list(chat)}), reward_toys.strict_chat)):
        env = RewardFunctionEnv(fn, dataset)
        obs, _ = env.reset(seed=3)
        assert obs.startswith("Add ") and env.gold_answers() == [items[3]["answer"]]
        assert env.step(f"<answer>{items[3]['answer']}</answer>")[1:3] == (1.0, True)
        assert env.step("<answer>0</answer>")[1] == 1.0  # after the end: the grade stands, no second call
        env.reset(seed=3)
        assert env.step("<answer>0</answer>")[1] == 0.0


def test_verl_gold_from_reward_model_when_no_answer_column():
    items = [{k: v for k, v in row.items() if k != "answer"} for row in reward_toys.rows(4)]
    env = RewardFunctionEnv(reward_toys.verl_strict, items)
    assert env.style == "verl" and env.gold_column == "reward_model.ground_truth"
    env.reset(seed=1)
    gold = items[1]["reward_model"]["ground_truth"]
    assert env.gold_answers() == [gold]
    _, reward, _, _, info = env.step(f"<answer>{gold}</answer>")
    assert reward == 1.0 and info["reward_fn"] == {"source": "toy_sums"}


def test_none_is_no_reward_and_flagged():
    env = RewardFunctionEnv(reward_toys.abstaining, reward_toys.rows(2))
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("anything")
    assert (reward, terminated, info["reward_is_none"]) == (0.0, True, True)


def test_without_a_gold_column_the_report_names_the_probes_that_could_not_run():
    items = [{"prompt": row["prompt"], "label_text": row["answer"]} for row in reward_toys.rows(8)]
    report = annotate(check_integrity(lambda: RewardFunctionEnv(reward_toys.abstaining, items),
                                      probes=["gold_answer_scored", "rescore_after_end", "seeded_reset"]))
    assert report.verdict.value == "inconclusive"
    assert {r.probe for r in report.missing} == {"gold_answer_scored", "rescore_after_end"}
    assert GOLD_NOTE in report.notes and "--gold-column" in GOLD_NOTE
    env = RewardFunctionEnv(reward_toys.abstaining, items, gold_column="label_text")
    env.reset(seed=2)
    assert env.gold_answers() == [items[2]["label_text"]]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="gold column 'nope'"):
        RewardFunctionEnv(reward_toys.strict, reward_toys.rows(2), gold_column="nope")
    with pytest.raises(ValueError, match="no prompt column"):
        RewardFunctionEnv(reward_toys.strict, [{"text": "x"}])
    with pytest.raises(TypeError, match="dataset must be"):
        load_rows(42)
    with pytest.raises(ValueError, match="expected a .jsonl"):
        load_rows(__file__)
    with pytest.raises(ValueError, match="'module:function'"):
        RewardFunctionEnv("reward_toys", reward_toys.rows(2))
    with pytest.raises(ValueError, match="KIND:NAME"):
        adapt("nonsense:x")
    env = RewardFunctionEnv(reward_toys.strict, reward_toys.rows(2))
    with pytest.raises(TypeError, match="takes no options"):
        env.reset(options={"x": 1})


def test_cli_audits_reward_functions_in_child_processes(data_file, tmp_path, capsys):
    path = tmp_path / "audit.json"
    code = main(["audit", "reward:reward_toys:lenient", "reward:reward_toys:verl_strict", "--dataset", str(data_file),
                 "--no-progress", "--json", str(path), *sum((["--probe", p] for p in LENIENCY_PROBES), [])])
    out = capsys.readouterr().out
    assert code == 1, out
    lenient, strict = json.loads(path.read_text())["reports"]
    assert (lenient["env_id"], lenient["verdict"], strict["verdict"]) == ("reward:reward_toys:lenient", "fail", "pass")
    assert "as they are" in out and "covering_sprays" in out


@pytest.mark.parametrize("argv, message", [
    (["reward:reward_toys:strict"], "pass --dataset"),
    (["reward:reward_toys:nope", "--dataset", "x.jsonl"], "importing reward_toys:nope raised AttributeError"),
    (["reward:reward_toys:strict", "ReasoningGym-v0", "--dataset", "x.jsonl"], "apart from registered ids"),
])
def test_cli_usage_errors_exit_2(argv, message, capsys):
    code = main(["audit", *argv, "--no-progress"])
    out = capsys.readouterr().out
    assert code == 2 and message in out.replace("\n", " "), out


def test_reasoning_gyms_own_scorer_pays_substrings():
    """rg:DATASET is reasoning-gym's score_answer on its own items: the default scorer's partial credit for any
    answer containing the gold is paid to the digit sprays."""
    env = adapt("rg:leg_counting", size=16)
    env.reset(seed=0)
    [gold] = env.gold_answers()
    assert env.step(f"<answer>{gold}</answer>")[1] == 1.0
    report = check_integrity(lambda: adapt("rg:leg_counting", size=16), probes=["covering_sprays"])
    assert report.status_of("covering_sprays") is Status.FAILED, report.result("covering_sprays").evidence


def test_a_datasets_id_goes_through_load_dataset(tmp_path):
    """A name that is not a file is a datasets id: a local dataset folder takes the same load_dataset path offline."""
    folder = tmp_path / "sums_dataset"
    folder.mkdir()
    reward_toys.write_jsonl(folder / "train.jsonl", reward_toys.rows(5))
    env = RewardFunctionEnv(reward_toys.strict, str(folder), split="train")
    env.reset(seed=4)
    assert env.num_items == 5 and env.gold_answers() == [reward_toys.rows(5)[4]["answer"]]
    assert len(load_rows(str(folder))) == 5  # one split: taken without naming it
    with pytest.raises(ValueError, match="split"):
        load_rows(str(folder), split="test")


def test_conversational_completions_on_request_and_verl_scorers_that_take_fewer_arguments():
    items = reward_toys.rows(3)
    env = RewardFunctionEnv(reward_toys.chat_only, items, conversational=True)
    env.reset(seed=0)
    assert env.step(f"<answer>{items[0]['answer']}</answer>")[1] == 1.0
    with pytest.raises(TypeError):  # a string completion is not what accuracy_reward reads
        plain = RewardFunctionEnv(reward_toys.chat_only, items)
        plain.reset(seed=0)
        plain.step("<answer>1</answer>")
    verl = RewardFunctionEnv(reward_toys.verl_two_arguments, items)
    verl.reset(seed=2)
    assert verl.style == "verl" and verl.step(f"<answer>{items[2]['answer']}</answer>")[1] == 1.0


def test_check_target_audits_in_a_child_process_as_is_or_stacked(data_file):
    from gym_integrity.audit.adapters_targets import check_target

    raw = check_target("reward:reward_toys:lenient", probes=["covering_sprays"], dataset=str(data_file))
    assert raw.raw and raw.stacked is False and raw.status_of("covering_sprays") is Status.FAILED
    stacked = check_target("reward:reward_toys:strict", stacked=True, probes=["rescore_after_end"],
                           dataset=str(data_file))
    assert stacked.stacked and stacked.passed
    with pytest.raises(ValueError, match="pass --dataset"):
        check_target("reward:reward_toys:strict")
