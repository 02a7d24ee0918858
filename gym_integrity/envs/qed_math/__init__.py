"""QEDMath-v0: olympiad math (proofs, boxed answers, multi-attempt problems) behind the integrity stack."""

from gym_integrity.envs.qed_math.config import QEDMathConfig
from gym_integrity.envs.qed_math.env import QEDMathEnv

__all__ = ["QEDMathEnv", "QEDMathConfig"]
