"""A verifiers v1 taskset whose reward needs a runtime (like verifiers' bundled gsm8k, whose reward runs a script
in the rollout's runtime): the reply is written into the runtime and compared there by a ``python3`` process.
tests/audit/test_adapters_verifiers.py loads it by module name, as vf-eval does."""

from __future__ import annotations

import reward_toys
import verifiers.v1 as vf

__all__ = ["RuntimeSumsTaskset"]

_CHECK = "import sys; reply = open('reply.txt').read(); print(1.0 if reply.strip() == sys.argv[1] else 0.0)"


class RuntimeSumsData(vf.TaskData):
    answer: str


class RuntimeSumsTask(vf.Task[RuntimeSumsData]):
    @vf.reward(weight=1.0)
    async def checked_in_runtime(self, trace: vf.Trace, runtime: vf.Runtime) -> float:
        await runtime.write("reply.txt", (trace.last_reply or "").encode())
        result = await runtime.run(["python3", "-c", _CHECK, self.data.answer], {})
        return float(result.stdout.strip().splitlines()[-1])


class RuntimeSumsConfig(vf.TasksetConfig):
    num_tasks: int = 8


class RuntimeSumsTaskset(vf.Taskset[RuntimeSumsTask, RuntimeSumsConfig]):
    def load(self) -> list[RuntimeSumsTask]:
        return [RuntimeSumsTask(RuntimeSumsData(prompt=row["prompt"], answer=row["answer"]), self.config.task)
                for row in reward_toys.rows(self.config.num_tasks)]
