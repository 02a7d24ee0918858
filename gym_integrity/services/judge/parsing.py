"""Reading the judge's answer: the API's JSON body to text and token counts, the text to a strict score, the score to a verdict."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gym_integrity.protocol import Grade, Verdict
from gym_integrity.services.judge.config import MAX_POINTS
from gym_integrity.services.judge.errors import InvalidScore, JudgeEmptyAnswer, JudgeMalformed, NoScoreTag

__all__ = ["Answer", "answer_from_responses", "answer_from_chat", "parse_score", "points_grade"]


@dataclass(frozen=True)
class Answer:
    """The judge's text and the token usage the endpoint reported (0 when it reported none)."""

    text: str
    input_tokens: float = 0.0
    output_tokens: float = 0.0


def answer_from_responses(body: str) -> Answer:
    """The output text of a Responses API body.

    Raises:
        JudgeMalformed: not a JSON object, or ``output`` / ``content`` not lists.
        JudgeEmptyAnswer: no output text.

    >>> answer_from_responses('{"output": [{"type": "message", "content": [{"type": "output_text", "text": "ok"}]}]}')
    Answer(text='ok', input_tokens=0.0, output_tokens=0.0)
    """
    data = _json_object(body)
    texts = []
    for item in _list(data.get("output"), body):
        if isinstance(item, dict) and item.get("type") == "message":
            for part in _list(item.get("content"), body):
                if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str):
                    texts.append(part["text"])
    usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
    return Answer(
        _nonempty("".join(texts), body), _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
    )


def answer_from_chat(body: str) -> Answer:
    """The first choice's message of a Chat Completions body (string content or content parts).

    Raises:
        JudgeMalformed: not a JSON object, or ``choices`` not a list.
        JudgeEmptyAnswer: no choices, or no text.
    """
    data = _json_object(body)
    choices = _list(data.get("choices"), body)
    if not choices:
        raise JudgeEmptyAnswer("the judge returned no choices", body=body)
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):  # some servers send content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    usage: dict[str, Any] = data["usage"] if isinstance(data.get("usage"), dict) else {}
    return Answer(_nonempty(content, body), _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")))


def _json_object(body: str) -> dict[str, Any]:
    try:
        data = json.loads(body)
    except ValueError:
        raise JudgeMalformed("malformed response (not JSON)", body=body) from None
    if not isinstance(data, dict):
        raise JudgeMalformed("malformed response (not a JSON object)", body=body)
    return data


def _list(value: Any, body: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise JudgeMalformed("malformed response (unexpected shape)", body=body)
    return value


def _nonempty(text: Any, body: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise JudgeEmptyAnswer("the judge returned an empty answer", body=body)
    return text


def _count(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else 0.0


_SCORE_RE = re.compile(r"<score>(.*?)</score>", re.IGNORECASE | re.DOTALL)


def parse_score(text: str, *, allowed: Iterable[int]) -> int:
    """The last ``<score>N</score>`` of the judge's text, strictly.

    N must be a plain integer (surrounding whitespace allowed) in ``allowed``.

    Raises:
        NoScoreTag: no score tag at all.
        InvalidScore: the last tag does not hold an allowed integer.

    >>> parse_score("<assessment>ok</assessment><score>5</score>", allowed=range(8))
    5
    """
    # Security (I4): this text is the reward's only input, and the judge read a proof the agent wrote, so
    # the parse guesses nothing. The *last* tag counts because the judge states its verdict after its
    # reasoning, where it may quote the proof; the tag must hold a plain allowed integer, so "7/7",
    # "seven", "3.5", "8" or "6" with a "7" nearby are failures (retried, then a no-verdict), never
    # read as points a lenient parse would hand to whoever planted them. (Tags inside the proof are
    # also escaped before the judge sees it: prompts.neutralise_tags.)
    matches = _SCORE_RE.findall(text)
    if not matches:
        raise NoScoreTag("the judge's answer has no <score>N</score> tag", body=text)
    raw = matches[-1].strip()
    allowed_set = set(allowed)
    if not re.fullmatch(r"[0-9]{1,2}", raw) or int(raw) not in allowed_set:
        # The message names no judge text: causes can reach the agent's feedback.
        raise InvalidScore(f"the judge's last score tag is not one of {sorted(allowed_set)}", body=text)
    return int(raw)


def points_grade(points: int, success_threshold: int) -> Grade:
    """``correct`` at or above the threshold, ``partial`` from 1 point, ``incorrect`` at 0; score = points / 7.

    >>> points_grade(6, 7).verdict.value, points_grade(6, 6).verdict.value, points_grade(0, 7).score
    ('partial', 'correct', 0.0)
    """
    score = points / MAX_POINTS
    if points >= success_threshold:
        return Grade(Verdict.CORRECT, score)
    return Grade(Verdict.PARTIAL if points > 0 else Verdict.INCORRECT, score)
