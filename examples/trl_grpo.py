"""Train a model with TRL's GRPOTrainer on a gym-integrity env: reward_function for answers, environment_factory for tools.

    pip install -e ".[trl]"
    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B --env ReasoningGym-v0 --env-kwargs '{"dataset": "leg_counting"}'
    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B --env FinQA-v0            # tools: one method per tool
    python examples/trl_grpo.py --model Qwen/Qwen3-0.6B --env QEDMath-v0 \
        --env-kwargs '{"problem_types": ["proof"], "judge": {"base_url": "http://127.0.0.1:8000/v1", "model": "judge"}}'

``--model`` is any model id TRL can load (a hub id or a local directory); this
script is documented, not run in CI (tests/integrations/trl/test_grpo.py trains the same
way with a tiny local model). Tool envs train through ``environment_factory``
(the env's ``get_reward()`` is the reward); the others through
``reward_function``, whose ``None`` for a no-verdict TRL leaves out of the
group's baseline.
"""

from __future__ import annotations

import argparse
import json

from gym_integrity.integrations.trl import environment_factory, make_dataset, reward_function


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a model id or local path TRL can load")
    parser.add_argument("--env", default="ReasoningGym-v0", help="a registered id (default: ReasoningGym-v0)")
    parser.add_argument("--env-kwargs", default="{}", help="JSON: anything gym_integrity.make takes")
    parser.add_argument("--num-problems", type=int, default=256)
    parser.add_argument("--max-steps", type=int, default=100)
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--max-completion-length", type=int, default=1024)
    parser.add_argument("--output-dir", default="runs/grpo")
    args = parser.parse_args()
    env_kwargs = json.loads(args.env_kwargs)

    from trl import GRPOConfig, GRPOTrainer  # the [trl] extra

    dataset = make_dataset(args.env, num_problems=args.num_problems, **env_kwargs)
    config = GRPOConfig(output_dir=args.output_dir, max_steps=args.max_steps, num_generations=args.num_generations,
                        max_completion_length=args.max_completion_length, logging_steps=1)
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
