"""A compared selector as the drivers hold it: the text a study or the demo names it by, its
spec parsed once, and the name of its run folder."""

from __future__ import annotations

import re
from dataclasses import dataclass

from selection.specs import Spec

__all__ = ["Entry", "entry_slug"]


def entry_slug(entry: str) -> str:
    """A folder name for an entry: ``eps:5@stale`` -> ``eps_5@stale``."""
    return re.sub(r"[^A-Za-z0-9.@-]+", "_", entry)


@dataclass(frozen=True)
class Entry:
    """A study's entry or a demo's selector, built once from its text: the text (as the study
    names it in its TOML, its runs and its reports), its parsed spec (what the runs, the cost
    table and the figures read) and its run folder's name.

    Examples:
        >>> from fl_oracle.experiments.study.settings import StudySettings
        >>> s = StudySettings(selectors=("proportional", "maxmin:2@pool:10.0"))
        >>> entry = s.entries[1]
        >>> entry.text, entry.slug, entry.spec.information, s.entry("maxmin:2@pool:10.0") is entry
        ('maxmin:2@pool:10.0', 'maxmin_2@pool_10.0', 'pool:10', True)
    """

    text: str
    spec: Spec

    @property
    def slug(self) -> str:
        """The entry's folder under ``runs/``."""
        return entry_slug(self.text)

    def __str__(self) -> str:
        return self.text
