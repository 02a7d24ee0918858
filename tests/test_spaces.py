"""UnicodeText: membership, reproducible sampling, vector-env batching, the shared-memory refusal."""

import gymnasium as gym
import numpy as np
import pytest

from gym_integrity.spaces import UnicodeText


@pytest.mark.parametrize("text", ["Let $x \\in \\mathbb{R}$", "line one\nline two\ttab", "数学证明", "emoji 🙂🚀", "{{}"])
def test_contains_any_model_text(text):
    assert UnicodeText(max_length=64).contains(text)
    assert not gym.spaces.Text(max_length=64).contains(text)  # why this space exists


def test_length_bounds_and_types():
    space = UnicodeText(max_length=4, min_length=2)
    assert not space.contains("a")
    assert space.contains("ab") and space.contains("abcd")
    assert not space.contains("abcde")
    assert not space.contains(b"ab") and not space.contains(None) and not space.contains(12)
    assert UnicodeText(max_length=4, min_length=0).contains("")
    assert not UnicodeText(max_length=4).contains("")


@pytest.mark.parametrize("kwargs, exc", [({"max_length": "10"}, TypeError), ({"max_length": 0}, ValueError),
                                         ({"max_length": 5, "min_length": -1}, ValueError),
                                         ({"max_length": 3, "min_length": 4}, ValueError)])
def test_bad_arguments_name_the_problem(kwargs, exc):
    with pytest.raises(exc, match=r"^UnicodeText\.(max|min)_length"):
        UnicodeText(**kwargs)


def test_sampling_is_reproducible_and_in_space():
    a, b = UnicodeText(max_length=200, seed=7), UnicodeText(max_length=200, seed=7)
    samples = [a.sample() for _ in range(50)]
    assert samples == [b.sample() for _ in range(50)]
    assert all(a.contains(s) for s in samples)
    assert len(set(samples)) > 40
    assert UnicodeText(max_length=200, seed=8).sample() != samples[0]
    assert any(ord(ch) > 127 for s in samples for ch in s)


def test_repr_and_equality():
    assert repr(UnicodeText(max_length=10, min_length=0)) == "UnicodeText(0, 10)"
    assert UnicodeText(max_length=10) == UnicodeText(max_length=10)
    assert UnicodeText(max_length=10) != UnicodeText(max_length=11)


class EchoEnv(gym.Env):
    observation_space = UnicodeText(max_length=100)
    action_space = UnicodeText(max_length=100)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "héllo 数学\n🙂", {}

    def step(self, action):
        return action + " ✅", 1.0, True, False, {}


def test_sync_and_async_vector_envs_carry_unicode():
    actions = ("α\nβ", "∑ 🙂")
    for vec in (gym.vector.SyncVectorEnv([EchoEnv, EchoEnv]),
                gym.vector.AsyncVectorEnv([EchoEnv, EchoEnv], shared_memory=False)):
        obs, _ = vec.reset(seed=0)
        assert tuple(obs) == ("héllo 数学\n🙂",) * 2
        obs, reward, *_ = vec.step(actions)
        assert tuple(obs) == ("α\nβ ✅", "∑ 🙂 ✅")
        assert np.allclose(reward, 1.0)
        vec.close()


def test_shared_memory_is_refused_with_a_clear_message():
    with pytest.raises(Exception, match="shared_memory': False"):
        gym.vector.AsyncVectorEnv([EchoEnv, EchoEnv], shared_memory=True)
