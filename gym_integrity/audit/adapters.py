r"""How the auditor talks to an env: wrapping an answer into an action, a harmless non-answer, and where gold answers come from.

Text envs take an answer in ``<answer>...</answer>`` or ``\boxed{}``; tool envs
take a ``submit_answer`` tool call. The auditor never asks an env which it is,
and knows no env by name; it looks for the hooks of
:class:`~gym_integrity.envs.base.AuditHooks` on the unwrapped env, then at
what the env exposes:

1. ``audit_answer_action(answer) -> action`` (and ``audit_non_answer_action()
   -> action``): used first;
2. an env whose tool schemas (``tool_schemas``, ``tools``, ...) name
   ``submit_answer`` gets ``<tool_call>{"name": "submit_answer", ...}</tool_call>``;
3. anything else gets ``<answer>a</answer>`` followed by ``\boxed{a}`` (plain
   ``a`` if its config says ``answer_format="raw"``).

Gold answers come from the **privileged auditor hook** ``gold_answers()``
(our raw envs define it; it is not an agent channel), else from what the env
reveals on its own: answer-like keys of the final ``info`` or a "the correct
answer is ..." sentence in the final observation.

Example:
    >>> import gymnasium as gym
    >>> env = gym.Env()  # no hooks, no tools: a plain text env as far as the auditor can tell
    >>> answer_action(env, "42")
    '<answer>42</answer>\n\\boxed{42}'
    >>> revealed_answers({"verdict": "incorrect", "debug": {"ground_truth": 7}}, "Wrong. The correct answer is 7.")
    ['7']
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import gymnasium as gym

from gym_integrity.envs.base import AuditHooks

__all__ = [
    "SUBMIT_TOOL",
    "tool_names",
    "answer_action",
    "answer_wrappings",
    "non_answer_action",
    "tool_call_action",
    "privileged_gold",
    "right_answer_check",
    "revealed_answers",
    "ANSWER_KEYS",
    "GOLD_HINT",
    "EMPTY_GOLD_HINT",
    "INSTANCES_HINT",
    "ANSWER_HINT",
    "no_gold_reason",
    "no_gold_hint",
]

SUBMIT_TOOL = "submit_answer"
_TOOL_ATTRS = ("tool_schemas", "tools", "TOOLS", "tool_specs", "functions")
#: Tools that only read: what the auditor calls when it must act without answering.
_HARMLESS_TOOLS = ("list_tools", "get_descriptions", "describe_tables")

#: Keys under which envs commonly reveal the answer in ``info`` (matched case-insensitively, at any depth).
ANSWER_KEYS = frozenset(
    {
        "answer",
        "gold",
        "gold_answer",
        "gold_answers",
        "ground_truth",
        "correct_answer",
        "expected",
        "expected_answer",
        "target",
        "solution",
        "reference",
        "reference_answer",
        "reference_solution",
        "label",
        "truth",
    }
)
_REVEAL_SENTENCE = re.compile(
    r"(?:correct|right|expected|gold|true|reference)\s+(?:answer|solution)\s*(?:is|was|:|=)\s*:?\s*(.+?)\s*(?:\.\s|\.?$|\n)",
    re.IGNORECASE,
)


def _schema_names(value: Any) -> list[str]:
    names: list[str] = []
    if isinstance(value, Mapping):
        if isinstance(value.get("name"), str):
            return [value["name"]]
        if isinstance(value.get("function"), Mapping) and isinstance(value["function"].get("name"), str):
            return [value["function"]["name"]]
        # {name: schema}
        return [k for k in value if isinstance(k, str)]
    if isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, str):
                names.append(item)
            else:
                names.extend(_schema_names(item))
    return names


def _tool_listings(env: gym.Env) -> Iterator[Any]:
    """What each of the env's tool attributes holds (called if callable), skipping any that fails."""
    unwrapped = env.unwrapped
    for attr in _TOOL_ATTRS:
        try:
            value = getattr(unwrapped, attr, None)
            if callable(value):
                value = value()
        except Exception:  # a property that fails is not a tool list
            continue
        if value is not None:
            yield value


def tool_names(env: gym.Env) -> list[str]:
    """The tool names an env exposes through its schemas (empty for a plain text env)."""
    for value in _tool_listings(env):
        names = _schema_names(value)
        if names:
            return names
    return []


def _hook(env: gym.Env, method: Callable[..., Any]) -> Callable[..., Any] | None:
    """The env's own version of an :class:`AuditHooks` method (looked up on ``env.unwrapped``), or None."""
    hook = getattr(env.unwrapped, method.__name__, None)
    return hook if callable(hook) else None


def _tool_call(name: str, arguments: Mapping[str, Any]) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': dict(arguments)})}</tool_call>"


def answer_action(env: gym.Env, answer: str) -> Any:
    """The action that submits ``answer`` to ``env`` (see the module docstring for the rules)."""
    hook = _hook(env, AuditHooks.audit_answer_action)
    if hook is not None:
        return hook(answer)
    if SUBMIT_TOOL in tool_names(env):
        return _tool_call(SUBMIT_TOOL, {"answer": answer})
    config = getattr(env.unwrapped, "config", None)
    if getattr(config, "answer_format", None) == "raw":
        return answer
    return f"<answer>{answer}</answer>\n\\boxed{{{answer}}}"


def answer_wrappings(env: gym.Env, answer: str, answer_fn: AnswerFn | None = None) -> list[tuple[str, Any]]:
    r"""Every way the adapter can submit ``answer``: ``(label, action)``, the adapter's own choice first.

    An env with its own hook or a submit tool, or an audit given a custom
    ``answer_fn``, has one way. A plain text env also gets the answer in
    ``<answer>`` alone, in ``\boxed{}`` alone and bare (its extractor may take
    any of them), so that a grader is tried on every path text can reach it by.

    >>> import gymnasium as gym
    >>> [label for label, _ in answer_wrappings(gym.Env(), "42")]
    ['adapter', 'answer tag', 'boxed', 'bare']
    """
    first = (answer_fn or answer_action)(env, answer)
    out: list[tuple[str, Any]] = [("adapter", first)]
    custom = answer_fn is not None and answer_fn is not answer_action
    if custom or _hook(env, AuditHooks.audit_answer_action) is not None or SUBMIT_TOOL in tool_names(env):
        return out
    for label, action in (
        ("answer tag", f"<answer>{answer}</answer>"),
        ("boxed", f"\\boxed{{{answer}}}"),
        ("bare", answer),
    ):
        if all(action != seen for _, seen in out):
            out.append((label, action))
    return out


def _tool_signatures(env: gym.Env) -> list[tuple[str, list[str]]]:
    """``(name, required arguments)`` of each tool in the env's OpenAI-style schemas."""
    for value in _tool_listings(env):
        out = []
        for item in value if isinstance(value, (list, tuple)) else ():
            schema = item.get("function", item) if isinstance(item, Mapping) else None
            if isinstance(schema, Mapping) and isinstance(schema.get("name"), str):
                parameters = schema.get("parameters")
                required = parameters.get("required", []) if isinstance(parameters, Mapping) else []
                out.append((schema["name"], [r for r in required if isinstance(r, str)]))
        if out:
            return out
    return []


def tool_call_action(env: gym.Env, values: Sequence[Any] = ("x",)) -> str:
    """A call of the env's own tool that would do the most work, its required arguments taken from ``values`` in turn.

    Of the tools the env's schemas list (the submission aside), the one with
    the most required arguments: what the auditor sends after the end to see
    that no tool runs, and with ill-typed ``values`` as garbage. An env
    without schemas gets a made-up tool: text a model could write all the same.

    >>> import gymnasium as gym
    >>> tool_call_action(gym.Env())
    '<tool_call>{"name": "lookup", "arguments": {"query": "x"}}</tool_call>'
    """
    tools = [(name, required) for name, required in _tool_signatures(env) if name != SUBMIT_TOOL]
    name, required = max(tools, key=lambda tool: len(tool[1])) if tools else ("lookup", ["query"])
    return _tool_call(name, {argument: values[i % len(values)] for i, argument in enumerate(required)})


def non_answer_action(env: gym.Env) -> Any:
    """An action that does not answer: a read-only tool call for tool envs, thinking text otherwise."""
    hook = _hook(env, AuditHooks.audit_non_answer_action)
    if hook is not None:
        return hook()
    names = tool_names(env)
    if names:
        for name in _HARMLESS_TOOLS:
            if name in names:
                return _tool_call(name, {})
        others = [n for n in names if n != SUBMIT_TOOL]
        if others:
            return _tool_call(others[0], {})
    return "Let me think about this step by step. I have not reached an answer yet."


def privileged_gold(env: gym.Env) -> list[str] | None:
    """The current episode's gold answers from ``env.unwrapped.gold_answers()``, or None if the env has no hook."""
    hook = _hook(env, AuditHooks.gold_answers)
    if hook is None:
        return None
    golds = hook()
    if golds is None:
        return None
    if isinstance(golds, str):
        golds = [golds]
    return [str(g) for g in golds if str(g).strip()]


def right_answer_check(env: gym.Env) -> Callable[[str], bool] | None:
    """The env's optional ``is_right_answer(answer) -> bool`` hook (tasks with many right answers), or None; the
    probes ask it through :class:`~gym_integrity.audit.right_answers.RightAnswers`, which checks it first."""
    hook = getattr(env.unwrapped, "is_right_answer", None)
    return hook if callable(hook) else None


def _answer_values(value: Any, depth: int = 0) -> list[str]:
    out: list[str] = []
    if depth > 8:
        return out
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and key.casefold() in ANSWER_KEYS:
                if isinstance(item, (str, int, float)) and not isinstance(item, bool):
                    out.append(str(item))
                elif isinstance(item, (list, tuple)):
                    out.extend(str(i) for i in item if isinstance(i, (str, int, float)) and not isinstance(i, bool))
            out.extend(_answer_values(item, depth + 1))
    elif isinstance(value, (list, tuple)):
        for item in value[:100]:
            out.extend(_answer_values(item, depth + 1))
    return out


def revealed_answers(info: Mapping[str, Any] | None, obs: Any = None) -> list[str]:
    """Answers an env shows on its own at the end: answer-like info keys, or a sentence in the observation."""
    found = [a.strip() for a in _answer_values(info or {}) if a.strip()]
    if isinstance(obs, str):
        found.extend(m.group(1).strip() for m in _REVEAL_SENTENCE.finditer(obs[:100_000]) if m.group(1).strip())
    unique: list[str] = []
    for answer in found:
        if answer not in unique:
            unique.append(answer)
    return unique


# What a "not run" row tells the user to provide: the audit's verdict is inconclusive until these are given.
#: Probes that answer with the gold (or search for it) need one per episode.
GOLD_HINT = (
    "give the env's unwrapped class a gold_answers() -> list[str] method returning an answer the grader "
    "accepts for the current episode (the privileged auditor hook: never shown to the agent), or pass "
    "gold_answers_fn=(env -> list[str]) to check_integrity"
)
#: The hook is there but gave nothing (items with no single answer): it must give one accepted answer.
EMPTY_GOLD_HINT = (
    "make the env's gold_answers() return, for every episode, at least one answer its grader accepts "
    "(any one, for a task with many right answers), or pass gold_answers_fn=(env -> list[str]) to "
    "check_integrity"
)
#: Probes that compare instances need a way to build more than one.
INSTANCES_HINT = (
    "audit a factory (check_integrity(lambda: MyEnv())) or a registered id instead of one env "
    "instance: the probe builds instances of its own"
)
#: Probes that compare against a graded wrong answer need answers in the env's format.
ANSWER_HINT = (
    "if the env takes answers in another format, define audit_answer_action(answer) -> action on its "
    "unwrapped class, or pass answer_action_fn=(env, answer -> action) to check_integrity"
)


def no_gold_reason(source: str) -> str:
    """Why there was no gold answer, from where the auditor looked (a Session's gold source)."""
    if source.startswith("privileged"):
        return "no gold answer (gold_answers() returned none for the audited episodes)"
    return "no gold answer (no gold_answers() hook or gold_answers_fn, and the env revealed none at the end)"


GoldFn = Callable[[gym.Env], "list[str] | None"]
AnswerFn = Callable[[gym.Env, str], Any]


def no_gold_hint(source: str) -> str:
    """What would give the auditor a gold answer, from where it looked: a hook to add, or one that must answer."""
    return EMPTY_GOLD_HINT if source.startswith("privileged") else GOLD_HINT
