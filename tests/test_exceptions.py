"""The package's own exceptions share one base and live in gym_integrity/exceptions.py, re-exported where used."""

import ast
import pickle
from pathlib import Path

import gym_integrity
from gym_integrity import GymIntegrityError, exceptions
from gym_integrity.audit import TwinMismatchError
from gym_integrity.rollout.endpoint import PolicyError, ToolsUnsupported
from gym_integrity.services.judge import JudgeRateLimited
from gym_integrity.services.judge.errors import JudgeError, NoScoreTag

PACKAGE = Path(gym_integrity.__file__).parent


def test_every_exception_of_ours_derives_from_the_one_base_and_is_the_same_class_where_re_exported():
    for name in exceptions.__all__:
        assert issubclass(getattr(exceptions, name), GymIntegrityError), name
    assert (JudgeError, NoScoreTag, JudgeRateLimited) == (exceptions.JudgeError, exceptions.NoScoreTag,
                                                          exceptions.JudgeRateLimited)
    assert (PolicyError, ToolsUnsupported, TwinMismatchError) == (exceptions.PolicyError, exceptions.ToolsUnsupported,
                                                                  exceptions.TwinMismatchError)
    assert issubclass(TwinMismatchError, ValueError) and issubclass(NoScoreTag, ValueError)  # as before the move
    err = pickle.loads(pickle.dumps(JudgeRateLimited(429, retry_after=2.0, body="b")))
    assert (type(err), err.retry_after, err.body, str(err)) == (JudgeRateLimited, 2.0, "b", "HTTP 429 (rate limited)")


def test_no_public_exception_class_is_defined_outside_the_exceptions_module():
    """Internal control-flow signals (a leading underscore) and data-load problems (datacheck.py) stay local."""
    stray = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "exceptions.py" or path.name == "datacheck.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                if bases & {"Exception", "ValueError", "TypeError", "RuntimeError", "BaseException"}:
                    stray.append(f"{path.relative_to(PACKAGE)}: {node.name}")
    assert stray == []
