"""Evaluate a model served behind any OpenAI-compatible URL with gym-integrity's Python eval API, and print the summary.

    python examples/eval_local_server.py --base-url http://127.0.0.1:8000/v1 --model my-model
    python examples/eval_local_server.py --base-url $URL --model m --env QEDMath-v0 \\
        --env-kwargs '{"problem_types": ["answer"]}' -n 50 --samples 4 --out qed.jsonl
    python examples/eval_local_server.py --demo        # no model: the bundled TEST server plays a scripted policy

The URL is anything that speaks the OpenAI chat API: ``vllm serve <model>
--port 8000`` (add ``--enable-auto-tool-choice --tool-call-parser ...`` for
native tool calls on FinQA-v0; without them tool calls go as text), SGLang, or
a hosted API (``--api-key`` or ``$OPENAI_API_KEY``). ``gym-integrity eval``
is the same run from the shell; this script shows the API under it:
``EvalConfig`` (one field per CLI flag), ``run_eval`` (synchronous; in a
notebook or any running event loop, ``await evaluate(config)`` instead) and
the ``EvalSummary`` it returns. Accuracy is the mean reward over graded
episodes: no-verdicts and policy errors are counted, never scored as 0.

``--demo`` starts ``gym_integrity.openai_stub.judge_server`` on a free port of
127.0.0.1 playing a *scripted test policy*, not a model: it answers every other
problem with the gold answer and says "I don't know." to the rest, so the
printed accuracy must be 0.5 (more when two seeds draw the same problem: the
demo prints what to expect). To script it, the demo reads the gold answers
through the auditor's privileged hook ``env.unwrapped.gold_answers()``, a test
fixture that no policy and no trainer ever sees.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile

import gym_integrity
from gym_integrity.eval import EvalConfig, EvalSummary, run_eval

DEMO_PROBLEMS = 20


def demo_reply(env_id: str, gold: str):
    """The scripted test policy's right answer, in the form each env reads."""
    if env_id == "FinQA-v0":
        return {"tool": "submit_answer", "arguments": {"answer": gold}}  # a native tool call (text if refused)
    if env_id == "QEDMath-v0":
        return f"</think>The answer is \\boxed{{{gold}}}."
    return f"<answer>{gold}</answer>"


def write_demo_policy(path: str, env_id: str, env_kwargs: dict, num_problems: int, seed: int) -> float:
    """Script the test policy: every other problem the eval will play gets its right answer; returns the
    accuracy to expect (two seeds may draw the same problem, so it can be above 0.5)."""
    from gym_integrity.openai_stub.judge_server import write_policy

    env = gym_integrity.make(env_id, **env_kwargs)
    try:
        prompts, mapping = [], {}
        for k in range(num_problems):
            prompt, _ = env.reset(seed=seed + k)  # the eval plays problem k with seed seed + k
            prompts.append(prompt)
            golds = env.unwrapped.gold_answers()  # TEST FIXTURE ONLY: the auditor's privileged hook
            if k % 2 == 0 and golds:
                mapping[prompt] = demo_reply(env_id, golds[0])  # key: the first user message
    finally:
        env.close()
    write_policy(path, mapping)  # any other prompt gets the server's default reply, "I don't know."
    return sum(p in mapping for p in prompts) / num_problems


def print_summary(summary: EvalSummary, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary.to_dict(), indent=2))
        return
    from rich.console import Console

    from gym_integrity.eval.report import summary_table

    Console().print(summary_table(summary))  # the table `gym-integrity eval` prints


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="the model's OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--model", help="the model name the endpoint serves")
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY"), help="default: $OPENAI_API_KEY")
    parser.add_argument("--env", default="ReasoningGym-v0", help="a registered id (default: ReasoningGym-v0)")
    parser.add_argument("--env-kwargs", default="{}", help="JSON: anything gym_integrity.make takes")
    parser.add_argument("-n", "--num-problems", type=int, default=None,
                        help=f"problems (default: the env's item count, at most 100; {DEMO_PROBLEMS} with --demo)")
    parser.add_argument("--samples", type=int, default=1, help="episodes per problem, for pass@k (default 1)")
    parser.add_argument("--concurrency", type=int, default=8, help="episodes in flight (default 8)")
    parser.add_argument("--temperature", type=float, default=None)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0, help="the first problem's seed (default 0)")
    parser.add_argument("--out", default=None, help="results JSONL, one line per episode")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    parser.add_argument("--demo", action="store_true",
                        help="no model: start the bundled test server playing a scripted test policy")
    args = parser.parse_args(argv)
    if not args.demo and not (args.base_url and args.model):
        parser.error("give --base-url and --model (a served model), or --demo")
    env_kwargs = json.loads(args.env_kwargs)

    with contextlib.ExitStack() as stack:
        base_url, model, api_key, num_problems = args.base_url, args.model, args.api_key, args.num_problems
        if args.demo:
            from gym_integrity.openai_stub.judge_server import JudgeServer

            num_problems = num_problems or DEMO_PROBLEMS
            policy_file = os.path.join(stack.enter_context(tempfile.TemporaryDirectory()), "policy.json")
            expected = write_demo_policy(policy_file, args.env, env_kwargs, num_problems, args.seed)
            server = stack.enter_context(JudgeServer("policy", policy_file=policy_file))  # port 0: a free one
            base_url, model, api_key = server.url, "scripted-test-policy", None  # never send a real key to it
            print(f"demo: TEST SERVER at {base_url} playing a scripted test policy, not a model "
                  f"(every other problem right: expect accuracy {expected:.3f})", flush=True)
        config = EvalConfig(env_id=args.env, base_url=base_url, model=model, api_key=api_key,
                            num_problems=num_problems, samples=args.samples, concurrency=args.concurrency,
                            temperature=args.temperature, max_tokens=args.max_tokens, env_kwargs=env_kwargs,
                            seed=args.seed, out=args.out)
        summary, records = run_eval(config)  # records: one dict per episode (what --out holds)
    print_summary(summary, args.json)


if __name__ == "__main__":
    main()
