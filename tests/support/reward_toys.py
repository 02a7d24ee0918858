"""Reward functions in the shapes trainers call them (TRL's reward_funcs, verl's compute_score), lenient and strict,
and a small arithmetic dataset: what tests/audit/test_adapters_reward.py audits."""

from __future__ import annotations

import json
import pathlib
import random


def rows(n: int = 24, seed: int = 0) -> list[dict]:
    """Addition questions with two-digit operands; the gold in ``answer`` and in verl's ``reward_model``."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.randint(10, 99), rng.randint(10, 99)
        out.append({"prompt": f"Add {a} and {b}. Give the sum in <answer></answer> tags.", "answer": str(a + b),
                    "data_source": "toy_sums", "reward_model": {"style": "rule", "ground_truth": str(a + b)},
                    "extra_info": {"operands": [a, b]}})
    return out


def write_jsonl(path: pathlib.Path, items: list[dict]) -> pathlib.Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def tagged(text: str) -> str | None:
    """The text of the last ``<answer>`` tag, by search (no regex: linear on a megabyte of unclosed tags)."""
    start = text.rfind("<answer>")
    end = text.find("</answer>", start)
    return text[start + len("<answer>"):end].strip() if start >= 0 and end >= 0 else None


def lenient(prompts, completions, answer, **columns):
    """Pays any completion that contains the gold: the leniency the audit must find."""
    return [1.0 if str(gold) in text else 0.0 for text, gold in zip(completions, answer)]


def strict(prompts, completions, answer, **columns):
    """Pays only a tagged answer equal to the gold."""
    return [1.0 if tagged(text) == str(gold) else 0.0 for text, gold in zip(completions, answer)]


def strict_chat(prompts, completions, answer, **columns):
    """TRL's conversational shape: each completion is a list of messages."""
    return strict(prompts, [c[-1]["content"] for c in completions], answer)


def abstaining(prompts, completions, **columns):
    """TRL's None: the function does not apply to this sample."""
    return [None for _ in completions]


def verl_lenient(data_source, solution_str, ground_truth, extra_info=None):
    return 1.0 if str(ground_truth) in solution_str else 0.0


def verl_strict(data_source, solution_str, ground_truth, extra_info=None):
    return {"score": 1.0 if tagged(solution_str) == str(ground_truth) else 0.0, "source": data_source}


def chat_only(completions, answer, **kwargs):
    """TRL's accuracy_reward shape: reads ``completion[0]["content"]``, so it needs conversational completions."""
    return [1.0 if tagged(completion[0]["content"]) == gold else 0.0 for completion, gold in zip(completions, answer)]


def verl_two_arguments(solution_str, ground_truth, method="strict"):
    """verl's gsm8k.compute_score shape: no data_source, no extra_info."""
    return 1.0 if tagged(solution_str) == str(ground_truth) else 0.0
