"""Client sizes written as text: ``--samples-per-client`` and a study grid's sizes axis."""

from __future__ import annotations

__all__ = ["sizes_from_text"]


def sizes_from_text(text: str) -> int | dict[str, int]:
    """One integer for every domain, or ``domain=n`` pairs (``mnist=600,usps=72``).

    Raises:
        ValueError: neither, or a domain given twice (one line naming the text).
    """
    text = text.strip()
    if text.isdigit():
        return int(text)
    out: dict[str, int] = {}
    for part in text.split(","):
        name, eq, value = part.partition("=")
        if not eq or not name.strip() or not value.strip().isdigit():
            raise ValueError(f"{text!r} is neither a number nor domain=n pairs")
        if name.strip() in out:
            raise ValueError(f"{text!r} gives domain {name.strip()!r} twice")
        out[name.strip()] = int(value)
    return out
