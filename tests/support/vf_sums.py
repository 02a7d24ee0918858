"""A verifiers v1 taskset in the layout `vf init` writes (Data, Task with @vf.reward, Config, Taskset): addition
questions whose reward pays any reply that contains the answer (``strict=False``, the default) or only an
``<answer>`` tag equal to it. tests/audit/test_adapters_verifiers.py loads it by module name, as vf-eval does."""

from __future__ import annotations

import verifiers.v1 as vf

import reward_toys

__all__ = ["SumsTaskset"]


class SumsData(vf.TaskData):
    answer: str


class SumsTask(vf.Task[SumsData]):
    @vf.reward(weight=1.0)
    async def correct(self, trace: vf.Trace) -> float:
        reply = trace.last_reply
        if self.config.strict:
            return 1.0 if reward_toys.tagged(reply) == self.data.answer else 0.0
        return 1.0 if self.data.answer in reply else 0.0


class SumsTaskConfig(vf.TaskConfig):
    strict: bool = False


class SumsConfig(vf.TasksetConfig):
    num_tasks: int = 24
    task: SumsTaskConfig = SumsTaskConfig()


class SumsTaskset(vf.Taskset[SumsTask, SumsConfig]):
    def load(self) -> list[SumsTask]:
        return [SumsTask(SumsData(prompt=row["prompt"], answer=row["answer"]), self.config.task)
                for row in reward_toys.rows(self.config.num_tasks)]
