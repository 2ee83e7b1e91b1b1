"""Counted nouns in fedsel's messages and reports: ``1 round``, ``3 rounds``, ``1 entry``."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1 (``-y`` after a consonant: ``-ies``).

    Examples:
        >>> from selection.words import counted
        >>> counted(1, "round"), counted(3, "round"), counted(1, "entry"), counted(2, "entry")
        ('1 round', '3 rounds', '1 entry', '2 entries')
        >>> counted(0, "measured round"), counted(1, "measured round")
        ('0 measured rounds', '1 measured round')
    """
    if n == 1:
        return f"{n} {noun}"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return f"{n} {noun[:-1]}ies"
    return f"{n} {noun}s"
