"""TRL's real GRPOTrainer, 2 steps on CPU with a tiny local model: our reward function and our tool environment."""

from __future__ import annotations

import json
import os
import re
from typing import Callable

import pytest

if os.environ.get("GYM_INTEGRITY_REQUIRE_EXTRAS") == "1":
    import trl  # noqa: F401  (the [trl] extra is installed: a missing TRL must fail, not skip)
else:
    trl = pytest.importorskip("trl")

import torch  # noqa: E402  (TRL's own dependencies: present whenever TRL is)
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402
from trl.chat_template_utils import qwen3_chat_template  # noqa: E402

import gym_integrity  # noqa: E402
from gym_integrity.integrations.trl import environment_factory, make_dataset, reward_function  # noqa: E402
from gym_integrity.openai_stub.judge_server import JudgeServer  # noqa: E402

#: The chat template's markers, added whole like Qwen's: ``<|...|>`` ones special (dropped by
#: ``skip_special_tokens``), the tag ones not (they stay in decoded text, as the response parser needs).
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
TAG_TOKENS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")
PAD, EOS = "<|endoftext|>", "<|im_end|>"
#: Generations per prompt; per_device_train_batch_size 4 makes each step 2 prompts x 2 completions.
GROUP = 2
BATCH = 4
STEPS = 2


@pytest.fixture(autouse=True)
def _offline_and_quiet(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing here may reach the hub: model and tokenizer are built locally
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL


# ------------------------------------------------------------------ a local tokenizer and a tiny model


def _corpus() -> list[str]:
    """Text like what the runs tokenize: chat template, prompts, tool calls (a byte-level BPE encodes anything)."""
    texts = [qwen3_chat_template,
             '<tool_call>\n{"name": "submit_answer", "arguments": {"answer": "2024: 5.1%"}}\n</tool_call>',
             "</think>The answer is \\boxed{84}."]
    for env_id, kwargs in (("FinQA-v0", {}), ("QEDMath-v0", {"problem_types": ["answer"]})):
        texts += [row[0]["content"] for row in make_dataset(env_id, num_problems=4, **kwargs)["prompt"]]
    return texts


@pytest.fixture(scope="module")
def tokenizer_json() -> str:
    """A byte-level BPE trained here (no hub), with the chat markers as single tokens, serialized."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=list(SPECIAL_TOKENS), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(_corpus(), trainer)
    tokenizer.add_tokens([AddedToken(tag, special=False, normalized=False) for tag in TAG_TOKENS])
    return tokenizer.to_str()


def make_tokenizer(tokenizer_json: str) -> PreTrainedTokenizerFast:
    """A fresh tokenizer per run: GRPOTrainer sets a response parser on the one it is given."""
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(tokenizer_json), eos_token=EOS,
                                        pad_token=PAD, clean_up_tokenization_spaces=False)
    # Qwen3's template, byte for byte as TRL ships it: TRL's add_response_schema recognises it (so tool calls in
    # the output are parsed) and swaps in its prefix-preserving training variant for multi-turn rollouts.
    tokenizer.chat_template = qwen3_chat_template
    return tokenizer


@pytest.mark.trl
def test_the_local_tokenizer_round_trips_and_parses_tool_calls(tokenizer_json):
    from trl.chat_template_utils import add_response_schema, parse_response, supports_tool_calling

    tokenizer = make_tokenizer(tokenizer_json)
    for marker in SPECIAL_TOKENS + TAG_TOKENS:
        assert len(tokenizer(marker, add_special_tokens=False)["input_ids"]) == 1, marker
    text = ('<think>\nCheck.\n</think>\n\n<tool_call>\n{"name": "submit_answer", "arguments": '
            '{"answer": "2024: -1,204 (é ∑ 中)"}}\n</tool_call><|im_end|>')
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text
    assert supports_tool_calling(tokenizer)
    add_response_schema(tokenizer)
    prefix = tokenizer.apply_chat_template([{"role": "user", "content": "q"}], add_generation_prompt=True,
                                           tokenize=True, return_dict=False)
    parsed = parse_response(tokenizer, ids, prefix=prefix)
    assert parsed["tool_calls"] == [{"type": "function", "function": {
        "name": "submit_answer", "arguments": {"answer": "2024: -1,204 (é ∑ 中)"}}}]


#: ``reply(row, text)``: the assistant text (ending in EOS) for row ``row`` of a generate batch whose decoded
#: input (prompt, and any earlier turns and tool results) is ``text``.
Reply = Callable[[int, str], str]


def tiny_model(tokenizer: PreTrainedTokenizerFast, reply: Reply | None = None) -> Qwen3ForCausalLM:
    """A 2-layer, 32-wide Qwen3 from a config, float32 on CPU; ``reply`` scripts ``generate`` (only that)."""
    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=8192,
                         bos_token_id=None, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         tie_word_embeddings=True)
    torch.manual_seed(0)
    model = (Qwen3ForCausalLM if reply is None else _scripted(tokenizer, reply))(config).float()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def _scripted(tokenizer: PreTrainedTokenizerFast, reply: Reply) -> type[Qwen3ForCausalLM]:
    class ScriptedQwen3(Qwen3ForCausalLM):
        """The prompt ids followed by the ids of the scripted reply, right-padded, as ``generate`` returns them."""

        #: The decoded inputs of each generate call (one list per call).
        calls: list[list[str]] = []

        def generate(self, input_ids=None, attention_mask=None, generation_config=None, **kwargs):
            texts = [tokenizer.decode(ids[mask.bool()]) for ids, mask in zip(input_ids, attention_mask)]
            type(self).calls.append(texts)
            replies = [tokenizer(reply(row, text), add_special_tokens=False)["input_ids"]
                       for row, text in enumerate(texts)]
            budget = (generation_config or self.generation_config).max_new_tokens
            assert all(len(ids) <= budget for ids in replies), "a scripted reply longer than max_new_tokens"
            tail = torch.full((len(replies), max(map(len, replies))), tokenizer.pad_token_id, dtype=input_ids.dtype)
            for row, ids in enumerate(replies):
                tail[row, :len(ids)] = torch.tensor(ids, dtype=input_ids.dtype)
            return torch.cat([input_ids, tail.to(input_ids.device)], dim=1)

    ScriptedQwen3.calls = []
    return ScriptedQwen3


def grpo_args(tmp_path, max_completion_length: int) -> GRPOConfig:
    return GRPOConfig(output_dir=str(tmp_path), max_steps=STEPS, per_device_train_batch_size=BATCH,
                      num_generations=GROUP, max_completion_length=max_completion_length, learning_rate=1e-3,
                      logging_steps=1, report_to="none", save_strategy="no", use_cpu=True, bf16=False, fp16=False,
                      seed=0, dataloader_num_workers=0, disable_tqdm=True)


def step_logs(trainer: GRPOTrainer) -> list[dict]:
    """TRL's per-step log entries (not the final train summary), one per optimizer step."""
    logs = [entry for entry in trainer.state.log_history if "train_runtime" not in entry]
    assert [entry["step"] for entry in logs] == list(range(1, STEPS + 1))
    return logs


def gold_by_question(env_id: str, dataset, **env_kwargs) -> dict[str, str]:
    """Each row's question (first line) -> its first gold answer: what the scripted policy 'knows'."""
    env = gym_integrity.make(env_id, **env_kwargs)
    try:
        golds = {}
        for row in dataset:
            env.reset(seed=row["seed"])
            golds[row["prompt"][0]["content"].splitlines()[0]] = env.unwrapped.gold_answers()[0]
        return golds
    finally:
        env.close()


def gold_in(golds: dict[str, str], text: str) -> str:
    [gold] = {gold for question, gold in golds.items() if question in text}
    return gold


def judge_cfg(server: JudgeServer) -> dict:
    return {"base_url": server.url, "model": "test-judge", "timeout_s": 5.0, "max_retries": 0, "backoff_s": 0.01}


# ------------------------------------------------------------------ reward_funcs=[reward_function(...)]


@pytest.mark.trl
def test_reward_function_trains_and_logs_verdict_counts(tmp_path, tokenizer_json):
    """Answer problems: in each group one completion boxes the gold answer, the other a wrong one."""
    tokenizer = make_tokenizer(tokenizer_json)
    dataset = make_dataset("QEDMath-v0", num_problems=4, seed=0, problem_types=["answer"])
    golds = gold_by_question("QEDMath-v0", dataset, problem_types=["answer"])
    assert "-1" not in golds.values()

    def reply(row: int, text: str) -> str:
        answer = gold_in(golds, text) if row % 2 == 0 else "-1"
        return f"</think>The answer is \\boxed{{{answer}}}.{EOS}"

    with JudgeServer("score:7") as judge:
        reward = reward_function("QEDMath-v0", problem_types=["answer"], judge=judge_cfg(judge))
        try:
            assert reward.__name__ == "qedmath_reward"
            model = tiny_model(tokenizer, reply)
            trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=grpo_args(tmp_path, 32),
                                  train_dataset=dataset, processing_class=tokenizer)
            trainer.train()
        finally:
            reward.close()
        assert list(judge.requests) == []  # answers are graded by the verifier, never the judge

    assert len(type(model).calls) == STEPS and all(len(call) == BATCH for call in type(model).calls)
    for log in step_logs(trainer):
        assert log["rewards/qedmath_reward/mean"] == pytest.approx(0.5)
        assert log["rewards/qedmath_reward/std"] == pytest.approx((1 / 3) ** 0.5, rel=1e-4)  # std of [1, 0, 1, 0], unbiased
        assert log["reward"] == pytest.approx(0.5) and log["frac_reward_zero_std"] == 0.0
        # our per-batch verdict counts, through TRL's log_metric hook (one batch per step here)
        ours = {key: value for key, value in log.items() if key.startswith("gym_integrity/") and value}
        assert ours == {"gym_integrity/correct": 2.0, "gym_integrity/incorrect": 2.0}
        assert log["gym_integrity/no_verdict"] == 0.0 and log["gym_integrity/timeout"] == 0.0  # zeros logged too
        assert log["completions/clipped_ratio"] == 0.0  # every scripted reply ended with EOS
        assert log["grad_norm"] > 0.0  # the reward spread reached the policy's gradient


@pytest.mark.trl
def test_no_verdict_rewards_are_none_and_left_out_by_trl(tmp_path, tokenizer_json):
    """Proof problems with a judge that answers HTTP 500: every reward is a no-verdict (None -> NaN in TRL).

    The policy is the tiny model sampling for real (nothing scripted): whatever it writes goes to the judge.
    """
    tokenizer = make_tokenizer(tokenizer_json)
    with JudgeServer("500") as judge:
        dataset = make_dataset("QEDMath-v0", num_problems=4, seed=0, problem_types=["proof"], judge=judge_cfg(judge))
        reward = reward_function("QEDMath-v0", problem_types=["proof"], judge=judge_cfg(judge))
        try:
            trainer = GRPOTrainer(model=tiny_model(tokenizer), reward_funcs=[reward], args=grpo_args(tmp_path, 24),
                                  train_dataset=dataset, processing_class=tokenizer)
            trainer.train()
        finally:
            reward.close()
        assert len(judge.requests) == STEPS * BATCH  # one request per completion (max_retries=0)
        assert {request.behaviour for request in judge.requests} == {"500"}

    for log in step_logs(trainer):
        # TRL averages each metric over the non-NaN values and logs None when none is left.
        assert log["rewards/qedmath_reward/mean"] is None and log["rewards/qedmath_reward/std"] is None
        assert log["reward"] is None and log["reward_std"] is None
        ours = {key: value for key, value in log.items() if key.startswith("gym_integrity/") and value}
        assert ours == {"gym_integrity/grader_error": float(BATCH), "gym_integrity/no_verdict": float(BATCH)}
        assert log["loss"] == 0.0 and log["grad_norm"] == 0.0  # unscorable rows get zero advantage


# ------------------------------------------------------------------ environment_factory=environment_factory(...)


@pytest.mark.trl
def test_environment_factory_trains_with_tool_calls(tmp_path, tokenizer_json):
    """FinQA: the scripted policy lists the tables, submits an answer (gold in one rollout of each group), stops."""
    tokenizer = make_tokenizer(tokenizer_json)
    dataset = make_dataset("FinQA-v0", num_problems=4)
    golds = gold_by_question("FinQA-v0", dataset)
    assert "42" not in golds.values()

    def tool_call(name: str, **arguments) -> str:
        return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>{EOS}"

    def reply(row: int, text: str) -> str:
        turn = text.count("<tool_response>")
        if turn == 0:
            return tool_call("get_descriptions", company_name=re.search(r"Company: (\w+)", text).group(1))
        if turn == 1:
            return tool_call("submit_answer", answer=gold_in(golds, text) if row % 2 == 0 else "42")
        return f"Done.{EOS}"

    model = tiny_model(tokenizer, reply)
    factory = environment_factory("FinQA-v0")
    trainer = GRPOTrainer(model=model, reward_funcs=None, args=grpo_args(tmp_path, 512), train_dataset=dataset,
                          processing_class=tokenizer, environment_factory=factory)
    assert "FinQAEnvironment" in trainer.reward_func_names  # get_reward became a reward column named after the class
    trainer.train()

    # Three generate calls per step: the first turn, after get_descriptions, after submit_answer.
    calls = type(model).calls
    assert len(calls) == 3 * STEPS and all(len(call) == BATCH for call in calls)
    for step in range(STEPS):
        first, second, third = calls[3 * step: 3 * step + 3]
        # TRL rendered our tool schemas into the prompt, and the question once (reset() returned None)
        assert all('"name": "sql_query"' in text and text.count("Company: ") == 1 for text in first)
        # the tool really ran: its JSON list of table names came back as the tool response
        assert all(re.search(r"<tool_response>\n\[\"\w+", text) for text in second)
        assert all("Graded: " in text for text in third)
    verdicts = [environment.verdict for environment in trainer.environments]
    assert verdicts == ["correct", "incorrect"] * (BATCH // 2)
    for log in step_logs(trainer):
        assert log["tools/call_frequency"] == 2.0 and log["tools/failure_frequency"] == 0.0
        assert log["rewards/FinQAEnvironment/mean"] == pytest.approx(0.5)
        assert log["reward"] == pytest.approx(0.5) and log["frac_reward_zero_std"] == 0.0
        assert log["completions/clipped_ratio"] == 0.0
        assert log["grad_norm"] > 0.0


@pytest.mark.trl
def test_transformers_reads_each_tool_method_back_as_the_envs_own_schema():
    """TRL builds the tool list with transformers' get_json_schema: it must give back exactly what the env declares."""
    from transformers.utils import get_json_schema

    environment = environment_factory("FinQA-v0")()
    schemas = gym_integrity.make("FinQA-v0").unwrapped.tools
    for schema in schemas:
        declared = schema["function"]
        read = get_json_schema(getattr(environment, declared["name"]))["function"]
        assert read["name"] == declared["name"] and read["description"] == " ".join(declared["description"].split())
        assert read["parameters"]["required"] == declared["parameters"]["required"]
        assert {arg: (spec["type"], spec["description"]) for arg, spec in read["parameters"]["properties"].items()} \
            == {arg: (spec["type"], spec["description"]) for arg, spec in declared["parameters"]["properties"].items()}
