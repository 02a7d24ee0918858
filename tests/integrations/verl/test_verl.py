"""verl's own reward loop worker and agent loop worker on our envs, on CPU: compute_score, whole episodes, no-verdicts.

verl's classes run for real: its ``RewardLoopWorker`` loads ``compute_score``
from the config (``reward.custom_reward_function``) and scores a ``DataProto``
with its ``naive`` reward manager; its ``RLHFDataset`` reads the rows from parquet, its
``AgentLoopWorker`` reads the agent loop YAML, builds :class:`GymAgentLoop` with hydra as in training and
post-processes the episodes into the batch the trainer gets. What stands in
for vLLM is a scripted policy serving token ids, the one part verl leaves to
an inference server; the tokenizer is a byte-level one built here (no hub).
"""

from __future__ import annotations

import json
import os
import pathlib
import re

import pytest

import gym_integrity

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import verl  # the [verl] CI step must fail, not skip, on a broken install
else:
    verl = pytest.importorskip("verl")

import numpy as np
import pandas
import torch
from omegaconf import OmegaConf
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config
from verl import DataProto
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
from verl.experimental.reward_loop.reward_loop import RewardLoopWorker
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.utils.ray_utils import get_event_loop
from verl.workers.rollout.replica import TokenOutput

from gym_integrity.integrations import verl as gv
from gym_integrity.openai_stub.judge_server import JudgeServer

pytestmark = [pytest.mark.verl, pytest.mark.timeout(600)]
RG = {"dataset": "leg_counting"}
CLOSED_JUDGE = {"base_url": "http://127.0.0.1:9/v1", "model": "j", "timeout_s": 0.5, "max_retries": 0}
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
EOS = "<|im_end|>"


# ------------------------------------------------------------------ a local model directory and verl's config


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> pathlib.Path:
    """A tokenizer (byte-level BPE, the chat markers as single tokens) and a tiny model config, saved: no hub."""
    directory = tmp_path_factory.mktemp("model")
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator([CHATML, "<answer>12</answer> \\boxed{3} <tool_call>"], trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>", "<|im_start|>", EOS], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=EOS, pad_token="<|endoftext|>",
                                   clean_up_tokenization_spaces=False)
    fast.chat_template = CHATML
    fast.save_pretrained(directory)
    Qwen3Config(vocab_size=len(fast), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                num_key_value_heads=1, head_dim=16, eos_token_id=fast.eos_token_id,
                pad_token_id=fast.pad_token_id, architectures=["Qwen3ForCausalLM"]).save_pretrained(directory)
    return directory


def verl_config(model_dir: pathlib.Path, tmp_path: pathlib.Path, *, no_verdict: str = "fail",
                reward_kwargs: dict | None = None, response_length: int = 2048):
    """verl's full PPO trainer config (its generated defaults) with our reward function and agent loop set."""
    loops = tmp_path / "agent_loops.yaml"
    loops.write_text(f"- name: {gv.AGENT_NAME}\n  _target_: gym_integrity.integrations.verl.GymAgentLoop\n"
                     f"  no_verdict: {no_verdict}\n")
    config = OmegaConf.load(pathlib.Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml")
    config.actor_rollout_ref.model.path = str(model_dir)
    config.actor_rollout_ref.rollout.name = "vllm"  # mandatory in the config; the scripted policy stands in for it
    config.actor_rollout_ref.rollout.prompt_length = 4096
    config.actor_rollout_ref.rollout.response_length = response_length
    config.actor_rollout_ref.rollout.agent.agent_loop_config_path = str(loops)
    config.reward.custom_reward_function.path = "pkg://gym_integrity.integrations.verl"
    config.reward.custom_reward_function.name = "compute_score"
    config.reward.custom_reward_function.reward_kwargs = reward_kwargs or {}
    return config


class ScriptedPolicy:
    """What an inference server does for verl's agent loop (token ids in, token ids out), its replies scripted.

    ``reply(prompt_text, turn)`` gives the assistant text of the ``turn``-th call for a request.
    """

    def __init__(self, tokenizer, reply) -> None:
        self.tokenizer, self.reply = tokenizer, reply
        self.turns: dict[str, int] = {}
        self.generated: list[int] = []  # token counts served, in order

    async def generate(self, *, request_id: str, prompt_ids: list[int], sampling_params: dict, **_) -> TokenOutput:
        turn = self.turns[request_id] = self.turns.get(request_id, 0) + 1
        text = self.reply(self.tokenizer.decode(prompt_ids), turn)
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
        self.generated.append(len(ids))
        return TokenOutput(token_ids=ids, log_probs=[-0.5] * len(ids), stop_reason="completed")


def run(coroutine):
    """Run on the loop verl's workers took at construction (a Ray actor's one loop, in training)."""
    return get_event_loop().run_until_complete(coroutine)


def gold_of(env_id, seed, **kwargs):
    env = gym_integrity.make(env_id, **kwargs)
    _, info = env.reset(seed=seed)
    gold = env.unwrapped.gold_answers()[0]
    env.close()
    return gold, info


def batch_of(rows, config, tokenizer, tmp_path) -> DataProto:
    """The rows as training feeds them: written to parquet, read by verl's ``RLHFDataset``, batched by its collate."""
    path = tmp_path / f"rows-{len(list(tmp_path.glob('rows-*')))}.parquet"
    pandas.DataFrame(rows).to_parquet(path)
    dataset = RLHFDataset(str(path), tokenizer, config.data)
    return DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]),
                                      meta_info={"validate": False})


def scored(worker: RewardLoopWorker, rows, responses, tokenizer) -> list[dict]:
    """verl's reward loop on one response per row, fed as its agent loop feeds it (``DataProto`` of token ids)."""
    outputs = []
    for row, response in zip(rows, responses):
        prompt = torch.tensor(tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True,
                                                            tokenize=True, return_dict=False))
        reply = torch.tensor(tokenizer(response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id])
        input_ids = torch.cat([prompt, reply])[None]
        data = DataProto.from_dict(
            tensors={"prompts": prompt[None], "responses": reply[None], "input_ids": input_ids,
                     "attention_mask": torch.ones_like(input_ids)},
            non_tensors={k: np.array([row[k]], dtype=object) for k in ("data_source", "reward_model", "extra_info")})
        outputs.append(run(worker.compute_score(data)))
    return outputs


def test_math_verify_reads_latex_as_it_does_without_verl():
    """verl's config stack must not pull math-verify's LaTeX parser back to antlr 4.9 (hydra-core 1.3's pin)."""
    from importlib.metadata import version

    from math_verify import parse

    from gym_integrity.services.math_worker import gold_as_boxed

    assert version("antlr4-python3-runtime") == "4.13.2"
    assert any(not isinstance(p, str) for p in parse(gold_as_boxed(r"10\%"), parsing_timeout=None))  # 4.9: a str


# ------------------------------------------------------------------ compute_score in verl's reward loop


def test_rows_pick_items_again_and_hold_no_gold():
    rows = gv.make_rows("ReasoningGym-v0", 3, seed=5, **RG)
    assert len({r["extra_info"]["problem_id"] for r in rows}) == 3 and rows[0]["extra_info"]["seed"] == 5
    for row in rows:
        gold, info = gold_of("ReasoningGym-v0", row["extra_info"]["seed"], **RG)
        assert row["reward_model"]["ground_truth"] == info["problem_id"] and gold not in json.dumps(row)
        assert json.loads(row["extra_info"]["env_kwargs"]) == RG and row["agent_name"] == gv.AGENT_NAME


def test_verls_reward_loop_worker_scores_through_compute_score(model_dir, tmp_path):
    worker = RewardLoopWorker(verl_config(model_dir, tmp_path))
    tokenizer = worker.input_tokenizer
    rows = gv.make_rows("ReasoningGym-v0", 4, **RG)
    golds = [gold_of("ReasoningGym-v0", r["extra_info"]["seed"], **RG)[0] for r in rows]
    right = [True, False, True, False]
    out = scored(worker, rows, [f"<answer>{g if ok else g + '7'}</answer>" for g, ok in zip(golds, right)], tokenizer)
    assert [o["reward_score"] for o in out] == [1.0 if ok else 0.0 for ok in right]
    assert [o["reward_extra_info"]["verdict"] for o in out] == ["correct" if ok else "incorrect" for ok in right]
    assert {frozenset(o["reward_extra_info"]) for o in out} == {frozenset(
        ["score", "no_verdict", "ended", "verdict", "num_tokens", "steps"])}  # the same keys: verl stacks them


def test_a_no_verdict_fails_the_trajectory_or_is_flagged(model_dir, tmp_path):
    rows = gv.make_rows("QEDMath-v0", 1, problem_types=["proof"], judge=CLOSED_JUDGE)
    failing = RewardLoopWorker(verl_config(model_dir, tmp_path))
    with pytest.raises(gv.NoVerdictError, match="no verdict"):
        scored(failing, rows, ["A proof: trivially true."], failing.input_tokenizer)
    flagging = RewardLoopWorker(verl_config(model_dir, tmp_path, reward_kwargs={"no_verdict": "flag"}))
    out = scored(flagging, rows, ["A proof: trivially true."], flagging.input_tokenizer)[0]
    assert (out["reward_score"], out["reward_extra_info"]["no_verdict"], out["reward_extra_info"]["verdict"]) == \
        (0.0, 1.0, "grader_error")


def test_a_proof_is_graded_by_the_judge(model_dir, tmp_path):
    with JudgeServer("score:7") as judge:
        cfg = {"base_url": judge.url, "model": "test-judge", "timeout_s": 5.0, "max_retries": 1, "backoff_s": 0.01}
        rows = gv.make_rows("QEDMath-v0", 1, problem_types=["proof"], judge=cfg)
        worker = RewardLoopWorker(verl_config(model_dir, tmp_path))
        out = scored(worker, rows, ["</think>A proof."], worker.input_tokenizer)[0]
    assert (out["reward_score"], out["reward_extra_info"]["verdict"], out["reward_extra_info"]["no_verdict"]) == \
        (1.0, "correct", 0.0)


def test_the_legacy_reward_manager_takes_the_score_dict(model_dir):
    """verl's legacy ``NaiveRewardManager`` (the ``trainer.use_v1=False`` path): a padded batch, the extras as lists."""
    from functools import partial

    from verl.workers.reward_manager.naive import NaiveRewardManager

    tokenizer = PreTrainedTokenizerFast.from_pretrained(model_dir)
    rows = gv.make_rows("ReasoningGym-v0", 2, **RG) + gv.make_rows("QEDMath-v0", 1, problem_types=["proof"],
                                                                   judge=CLOSED_JUDGE)
    golds = [gold_of("ReasoningGym-v0", r["extra_info"]["seed"], **RG)[0] for r in rows[:2]]
    prompts = [tokenizer.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=True,
                                             return_dict=False) for r in rows]
    replies = [tokenizer(t, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
               for t in (f"<answer>{golds[0]}</answer>", "<answer>-1</answer>", "A proof.")]
    width_p, width_r = max(map(len, prompts)), max(map(len, replies))
    left = torch.tensor([[0] * (width_p - len(p)) + p for p in prompts])
    right = torch.tensor([r + [0] * (width_r - len(r)) for r in replies])
    mask = torch.tensor([[0] * (width_p - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (width_r - len(r))
                         for p, r in zip(prompts, replies)])
    data = DataProto.from_dict(
        tensors={"prompts": left, "responses": right, "input_ids": torch.cat([left, right], 1), "attention_mask": mask},
        non_tensors={k: np.array([r[k] for r in rows], dtype=object) for k in ("data_source", "reward_model",
                                                                              "extra_info")})
    manager = NaiveRewardManager(tokenizer, num_examine=0, compute_score=partial(gv.compute_score, no_verdict="flag"))
    out = manager(data, return_dict=True)
    assert out["reward_tensor"].sum(-1).tolist() == [1.0, 0.0, 0.0]
    assert out["reward_extra_info"]["verdict"] == ["correct", "incorrect", "grader_error"]
    assert out["reward_extra_info"]["no_verdict"] == [0.0, 0.0, 1.0]
    gv.close_envs()


def test_bad_rows_and_options_say_what_is_expected():
    with pytest.raises(ValueError, match="needs a 'seed'"):
        gv.compute_score("ReasoningGym-v0", "x", "", {})
    with pytest.raises(ValueError, match="no_verdict must be one of"):
        gv.compute_score("ReasoningGym-v0", "x", "", {"seed": 0}, no_verdict="drop")
    with pytest.raises(TypeError, match="solution_str must be a str"):
        gv.compute_score("ReasoningGym-v0", None, "", {"seed": 0})
    with pytest.raises(ValueError, match="seed 0 picks"):
        gv.compute_score("ReasoningGym-v0", "x", "", {"seed": 0, "problem_id": "other/1", "env_kwargs": json.dumps(RG)})
    with pytest.raises(TypeError, match="env kwargs must be JSON data"):
        gv.make_rows("ReasoningGym-v0", 1, dataset=object())
    row = gv.make_rows("ReasoningGym-v0", 1, **RG)[0]
    gv.close_envs()  # closes the envs every thread cached; the next call makes a new one
    again = gv.compute_score(row["data_source"], "<answer>-1</answer>", None, row["extra_info"])
    assert again["verdict"] == "incorrect"
    gv.close_envs()


# ------------------------------------------------------------------ whole episodes through verl's agent loop worker


def run_worker(config, policy, rows, tmp_path) -> DataProto:
    worker = AgentLoopWorker(config, llm_client=policy)
    return run(worker.generate_sequences(batch_of(rows, config, policy.tokenizer, tmp_path)))


def test_single_and_multi_turn_episodes_through_verls_agent_loop_worker(model_dir, tmp_path):
    config = verl_config(model_dir, tmp_path)
    rg = gv.make_rows("ReasoningGym-v0", 1, **RG)[0]
    fin = gv.make_rows("FinQA-v0", 1)[0]
    qed = gv.make_rows("QEDMath-v0", 1, seed=30, problem_types=["multi_step"])[0]  # one math_verify grades
    rg_gold = gold_of("ReasoningGym-v0", rg["extra_info"]["seed"], **RG)[0]
    fin_gold, fin_info = gold_of("FinQA-v0", fin["extra_info"]["seed"])
    qed_gold = gold_of("QEDMath-v0", 30, problem_types=["multi_step"])[0]
    call = '<tool_call>{"name": "%s", "arguments": %s}</tool_call>'

    def reply(prompt: str, turn: int) -> str:
        if "leg" in prompt.lower() and "<answer>" in prompt:
            return f"<answer>{rg_gold}</answer>"
        if "<tool_call>" in prompt:  # FinQA: look, then answer
            return (call % ("get_descriptions", json.dumps({"company_name": fin_info["company"]})) if turn == 1
                    else call % ("submit_answer", json.dumps({"answer": fin_gold})))
        return "</think>\\boxed{-999999}" if turn == 1 else f"</think>\\boxed{{{qed_gold}}}"  # QEDMath: miss, then hit

    policy = ScriptedPolicy(PreTrainedTokenizerFast.from_pretrained(model_dir), reply)
    out = run_worker(config, policy, [rg, fin, qed], tmp_path)
    scores = out.batch["rm_scores"].sum(-1).tolist()
    assert scores[0] == 1.0 and scores[1] == 1.0 and 0.0 < scores[2] <= 1.0
    assert list(out.non_tensor_batch["verdict"]) == ["correct", "correct", "correct"]
    assert list(out.non_tensor_batch["steps"]) == [1, 2, 2]
    assert out.meta_info["reward_extra_keys"] == ["score", "no_verdict", "ended", "verdict", "num_tokens", "steps"]
    # Each turn's exact token count reached the env; the model's tokens train, the env's observations do not.
    assert sum(out.non_tensor_batch["num_tokens"]) == sum(policy.generated)
    mask, tokens = out.batch["response_mask"], out.non_tensor_batch["num_tokens"]
    assert mask.sum(-1).tolist() == list(tokens)
    assert tokens[0] == out.batch["attention_mask"][0, 4096:].sum()  # one turn: every response token is the model's
    assert tokens[1] < out.batch["attention_mask"][1, 4096:].sum()  # FinQA: the tool result is in, not trained on
    assert torch.equal(out.batch["rollout_log_probs"] != 0, mask.bool())  # the server's logprobs, on its tokens only
    assert list(out.non_tensor_batch["__num_turns__"]) == [2, 4, 4]


def test_a_no_verdict_episode_fails_or_trains_nothing(model_dir, tmp_path):
    rows = gv.make_rows("QEDMath-v0", 2, problem_types=["proof"], judge=CLOSED_JUDGE)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(model_dir)
    with pytest.raises(gv.NoVerdictError, match="no verdict"):  # verl's v1 trainer drops a failed trajectory
        run_worker(verl_config(model_dir, tmp_path), ScriptedPolicy(tokenizer, lambda p, t: "A proof."), rows, tmp_path)
    out = run_worker(verl_config(model_dir, tmp_path, no_verdict="flag"),
                     ScriptedPolicy(tokenizer, lambda p, t: "A proof."), rows, tmp_path)
    assert out.batch["rm_scores"].abs().sum() == 0 and out.batch["response_mask"].sum() == 0
    assert list(out.non_tensor_batch["no_verdict"]) == [1.0, 1.0]


def test_an_episode_the_response_budget_cuts_is_unended_and_zero(model_dir, tmp_path):
    row = gv.make_rows("FinQA-v0", 1)[0]
    company = gold_of("FinQA-v0", row["extra_info"]["seed"])[1]["company"]
    arguments = json.dumps({"company_name": company})
    look = f'<tool_call>{{"name": "get_descriptions", "arguments": {arguments}}}</tool_call>'
    policy = ScriptedPolicy(PreTrainedTokenizerFast.from_pretrained(model_dir), lambda p, t: look)
    out = run_worker(verl_config(model_dir, tmp_path, response_length=256), policy, [row], tmp_path)
    assert out.non_tensor_batch["ended"][0] == 0.0 and out.batch["rm_scores"].sum() == 0.0
    assert out.batch["response_mask"].shape[1] == 256


def test_the_docs_block_runs(capsys):
    text = (pathlib.Path(__file__).parents[3] / "docs" / "trainers.md").read_text()
    section = text.split("\n## verl\n", 1)[1].split("\n## ", 1)[0]
    exec(re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1), {})  # noqa: S102 - the docs' own code
    assert capsys.readouterr().out.splitlines()[0] == "0.0 incorrect 0.0"
    gv.close_envs()
