"""Counted nouns and signed numbers in fedsel's messages and reports: ``1 round``, ``3 rounds``,
``1 entry``; ``+1.25``, ``0.00`` (never ``-0.00``)."""

from __future__ import annotations

__all__ = ["counted", "signed"]


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


def signed(v: float, digits: int = 2) -> str:
    """``v`` with its sign and ``digits`` decimals, ``0.00`` where it rounds to zero (float
    noise such as ``-1.4e-14`` or ``-0.001`` printed no ``-0.00``); NaN as ``nan``.

    Examples:
        >>> from selection.words import signed
        >>> signed(1.254), signed(-10.349), signed(-1.4e-14), signed(-0.004), signed(0.04, 1)
        ('+1.25', '-10.35', '0.00', '0.00', '0.0')
    """
    text = f"{float(v):+.{digits}f}"
    return text[1:] if float(text) == 0 else text
