"""QEDMath-v0's MCP tools: the tool set of OpenEnv's qed_math_env, declared here for the serve layer to expose.

``gym-integrity serve`` finds this module through the env class's package
(``<package>.mcp_tools``, attribute ``MCP_TOOLS``): each tool is a plain
function whose first parameter is the session and whose other parameters are
the tool's arguments (their annotations make its input schema). The session
gives ``first`` (the reset's public observation: ``text``, ``problem_id``,
``details``) and ``step_text(text)`` (one step of the integrity-stacked env,
its public observation back). Nothing here sees more than the wire does: the
tools return the prompt the agent is shown, never a reference solution, and a
submission is one step of the stack (frozen after the end).

The result keys are within the upstream client's ``ProblemObservation`` and
``ProofSubmissionObservation`` fields, which forbid any other key; what is
ours goes under ``metadata``. ``MCP_RESET`` shapes the reset observation the same way.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MCP_RESET", "MCP_TOOLS", "PROOF_SCALE", "get_problem", "submit_proof", "get_grading_guidelines"]

#: The upstream QED Math env reports proof scores on the olympiad 0-7 scale; our grades are in [0, 1].
PROOF_SCALE = 7


def _started(session: Any) -> Any:
    if session.first is None:
        raise RuntimeError("call reset() before using the tools")
    return session.first


def _problem_facts(first: Any) -> dict[str, Any]:
    details = first.details
    return {
        "problem_type": str(details.get("problem_type") or "proof"),
        "max_attempts": int(details.get("max_attempts") or 1),
    }


def get_problem(session: Any) -> dict:
    """The current problem: the prompt the agent is shown, its id, source, type and attempts (never a solution)."""
    first = _started(session)
    return {
        "problem": first.text,
        "problem_id": first.problem_id or "",
        "dataset_source": str(first.details.get("dataset_source") or ""),
        "grading_guidelines": str(first.details.get("grading_guidelines") or ""),
        **_problem_facts(first),
    }


def get_grading_guidelines(session: Any) -> dict:
    """The grading guidelines of the current problem when the env shows them in the prompt, else empty."""
    first = _started(session)
    return {
        "problem_id": first.problem_id or "",
        "grading_guidelines": str(first.details.get("grading_guidelines") or ""),
        "scale": f"0-{PROOF_SCALE}",
    }


def submit_proof(session: Any, proof: str) -> dict:
    """Submit a proof (or a final answer) for grading; returns score (0-7), feedback, reward, done, is_correct."""
    if not isinstance(proof, str):
        raise TypeError(f"submit_proof: proof must be a string, got {type(proof).__name__}")
    first = _started(session)
    obs = session.step_text(proof)
    details = obs.details
    remaining = details.get("attempts_remaining")
    attempt = details.get("attempt")
    return {
        "score": round(PROOF_SCALE * (obs.score or 0.0)),
        "feedback": obs.text,
        "reward": obs.reward,
        "done": obs.done,
        "problem_type": _problem_facts(first)["problem_type"],
        "attempt_number": int(attempt) if isinstance(attempt, int) and not isinstance(attempt, bool) else 1,
        "attempts_remaining": int(remaining) if isinstance(remaining, int) and not isinstance(remaining, bool) else 0,
        # The env's own success rule (the score threshold), and never true for a frozen or ungraded step.
        "is_correct": bool(details.get("success")) and not obs.no_verdict and not obs.integrity.get("frozen"),
        "metadata": {
            "problem_id": obs.problem_id,
            "verdict": obs.verdict,
            "no_verdict": obs.no_verdict,
            "frozen": bool(obs.integrity.get("frozen")),
            "attempts_remaining": remaining,
        },
    }


MCP_TOOLS = (get_problem, submit_proof, get_grading_guidelines)
#: What a reset observation holds for this tool set's client: get_problem's fields, as upstream's server resets
#: with the same ``ProblemObservation`` (which forbids any other key; the serve layer nests ours in its metadata).
MCP_RESET = get_problem
