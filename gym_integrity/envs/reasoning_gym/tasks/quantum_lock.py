"""quantum_lock: buttons pressed while a light toggles; a button acts only in its colour of the light.

The task asks for the shortest sequence. Its scorer pays 0.5 for a longer one
that reaches the target, which random presses do; its simulation skips a
press in the wrong light, and it reads A-C out of any text. Strict scoring
pays an answer of buttons only (``SHAPE``), each press active
(:func:`presses_all_act`), at full credit; :func:`shortest_presses` is the
task's rule for a right answer (for the audit's chance).

>>> item = {"metadata": {"initial_value": 0, "initial_state": "red", "target_value": 4, "solution_path": ["B", "B"],
...     "buttons": [{"name": "B", "type": "add", "value": 2, "active_state": "any"}]}}
>>> presses_all_act("B → B", item), shortest_presses("B → B", item), shortest_presses("B", item)
(True, True, False)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SHAPE", "presses_all_act", "shortest_presses"]

#: An answer of buttons only: ``A → B → C`` (or ``->``, commas, spaces).
SHAPE = re.compile(r"[A-Ca-c](?:\s*(?:→|->|,)?\s*[A-Ca-c])*")

_OPERATIONS = {
    "add": lambda value, by: value + by,
    "subtract": lambda value, by: value - by,
    "multiply": lambda value, by: value * by,
}


def _pressed(answer: str, metadata: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The buttons the answer presses, in order; None if one does not exist or is pressed in a colour of the light
    it is inactive in (the light toggles on every press)."""
    buttons = {button["name"]: button for button in metadata["buttons"]}
    colour = metadata["initial_state"]
    pressed = []
    for name in re.findall(r"[A-Za-z]", answer):
        button = buttons.get(name.upper())
        if button is None or button["active_state"] not in (colour, "any"):
            return None
        pressed.append(button)
        colour = "green" if colour == "red" else "red"
    return pressed


def presses_all_act(answer: str, item: Mapping[str, Any]) -> bool:
    """Every button pressed exists and is active in the light's current colour (the requirement)."""
    return _pressed(answer, item["metadata"]) is not None


def shortest_presses(answer: str, item: Mapping[str, Any]) -> bool:
    """Whether the answer reaches the target in as few presses as the item's solution, each press active: the
    task's rule, simulated here."""
    metadata = item["metadata"]
    pressed = _pressed(answer, metadata)
    if pressed is None or any(button["type"] not in _OPERATIONS for button in pressed):
        return False
    value = metadata["initial_value"]
    for button in pressed:
        value = _OPERATIONS[button["type"]](value, button["value"])
    return value == metadata["target_value"] and len(pressed) == len(metadata["solution_path"])
