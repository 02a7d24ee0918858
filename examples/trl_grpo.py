"""Train a model with TRL's GRPOTrainer on a gym-integrity env: reward_function for answers, environment_factory for tools.

    # CPU-only machine: PyTorch's CPU build first (the torch pip picks by default is the multi-GB CUDA build)
    pip install torch --index-url https://download.pytorch.org/whl/cpu
    pip install -e ".[trl]"
    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B --env ReasoningGym-v0 --env-kwargs '{"dataset": "leg_counting"}'
    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B --env FinQA-v0            # tools: one method per tool
    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B --env QEDMath-v0 \
        --env-kwargs '{"problem_types": ["proof"], "judge": {"base_url": "http://127.0.0.1:8001/v1", "model": "judge"}}'

``--model`` is any model id TRL can load (a hub id or a local directory).
Tool envs train through ``environment_factory`` (the env's ``get_reward()`` is
the reward); the others through ``reward_function``, whose ``None`` for a
no-verdict TRL leaves out of the group's baseline.

The same command runs on a GPU and on a CPU-only machine: ``--precision auto``
(the default) trains in bf16 where the GPU supports it, fp16 on an older GPU,
and fp32 on the CPU (transformers refuses bf16 without a GPU: "Your setup
doesn't support bf16/gpu"); ``--precision bf16|fp16|fp32`` forces one.
tests/integrations/trl/test_grpo.py trains the same way in CI with a tiny local model.
"""

from __future__ import annotations

import argparse
import json

from gym_integrity.integrations.trl import environment_factory, make_dataset, reward_function


def precision_args(precision: str = "auto") -> dict:
    """``GRPOConfig`` keywords for this machine: bf16 only where supported, the CPU when there is no GPU."""
    import torch

    cuda = torch.cuda.is_available()
    if precision == "auto":
        precision = ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if cuda else "fp32"
    return {"bf16": precision == "bf16", "fp16": precision == "fp16", "use_cpu": not cuda}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model id or local path TRL can load")
    parser.add_argument("--env", default="ReasoningGym-v0", help="a registered id (default: ReasoningGym-v0)")
    parser.add_argument("--env-kwargs", default="{}", help="JSON: anything gym_integrity.make takes")
    parser.add_argument("--num-problems", type=int, default=256)
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8, help="completions per device and step (a multiple of "
                                                                   "--num-generations; default 8)")
    parser.add_argument("--max-completion-length", type=int, default=1024)
    parser.add_argument("--precision", choices=("auto", "bf16", "fp16", "fp32"), default="auto",
                        help="auto (default): bf16 on a GPU that supports it, fp16 on another GPU, fp32 on CPU")
    parser.add_argument("--output-dir", default="runs/grpo")
    args = parser.parse_args(argv)
    env_kwargs = json.loads(args.env_kwargs)

    from trl import GRPOConfig, GRPOTrainer  # the [trl] extra

    dataset = make_dataset(args.env, num_problems=args.num_problems, **env_kwargs)
    config = GRPOConfig(output_dir=args.output_dir, max_steps=args.max_steps, num_generations=args.num_generations,
                        per_device_train_batch_size=args.batch_size,
                        max_completion_length=args.max_completion_length, logging_steps=1,
                        **precision_args(args.precision))
    try:
        tools = environment_factory(args.env, **env_kwargs)
    except ValueError:  # no tools: the completion is the answer
        tools = None
    reward = None if tools is not None else reward_function(args.env, **env_kwargs)
    trainer = GRPOTrainer(model=args.model, args=config, train_dataset=dataset,
                          reward_funcs=[reward] if reward is not None else None, environment_factory=tools)
    try:
        trainer.train()
    finally:
        if reward is not None:
            reward.close()


if __name__ == "__main__":
    main()
