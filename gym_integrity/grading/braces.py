r"""A LaTeX group read the one way every reader of an answer reads it: braces matched, escaped braces inert.

The reader finds boxes with it, and the spelling pass braces a command's arguments with it.
"""

from __future__ import annotations

__all__ = ["braced_group"]


def braced_group(text: str, i: int) -> tuple[str | None, int]:
    r"""The content of the ``{...}`` group at ``text[i]`` (after spaces), braces matched, and the index after it.

    ``(None, i)`` when no ``{`` stands there; ``(None, len(text))`` when the group
    never closes. Escaped braces (``\{``, ``\}``) neither open nor close.

    >>> braced_group(r"\boxed {a{b}\}c}!", 6)
    ('a{b}\\}c', 16)
    """
    while i < len(text) and text[i] in " \t":
        i += 1
    if i >= len(text) or text[i] != "{":
        return None, i
    depth, j = 0, i
    while j < len(text):
        ch = text[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j], j + 1
        j += 1
    return None, len(text)
