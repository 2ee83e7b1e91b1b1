"""The settings a ``fedsel study`` command runs, from its TOML and its options: the work of
the command's body in functions a test can call (:func:`study_settings`, :func:`judged_entries`).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["judged_entries", "study_settings"]


def judged_entries(selectors: str | None, surrogate: str | None) -> tuple | None:
    """``--selectors`` as entries (None: the settings'), each formulation judged by
    ``--surrogate`` as ``SPEC@NAME`` would judge it (baseline rules and ``all`` read no
    surrogate: they stay as written; the judged ones are parsed specs, not their text).

    Examples:
        >>> from fl_oracle.experiments.study.setup import judged_entries
        >>> [str(getattr(e, "canonical", e)) for e in judged_entries("random,eps:5", "weighted")]
        ['random', 'eps:5@weighted']
        >>> judged_entries(None, None) is None
        True
    """
    from selection.selectors import parse_spec, split_specs

    entries = None if selectors is None else tuple(split_specs(selectors))
    if surrogate is None:
        return entries
    if entries is None:
        raise ValueError("--surrogate applies to the entries of --selectors; give them")
    specs = [parse_spec(e) for e in entries]
    return tuple(
        e if s.is_rule else s.with_surrogate(surrogate) for e, s in zip(entries, specs, strict=True)
    )


def study_settings(
    text: str,
    *,
    dataset: str | None,
    federation: dict[str, Any],
    add: str | None,
    overrides: dict[str, Any],
) -> tuple[Any, list[str] | None]:
    r"""The settings ``fedsel study`` runs: the TOML ``text`` (a stored study's, a config's,
    or "" for the defaults) with the command's ``overrides``, grown by ``--add``'s entries
    (returned second, None without ``--add``), the federation's options merged into
    ``[oracle]`` and its domains and sizes read from ``dataset``'s folder.

    Examples:
        >>> from fl_oracle.experiments.study.setup import study_settings
        >>> settings, added = study_settings(
        ...     'seeds = 2\nselectors = ["proportional", "eps:5"]\n', dataset=None,
        ...     federation={"lr": 0.1}, add="maxmin:2", overrides={"rounds": 3})
        >>> settings.seeds, settings.rounds, settings.selectors, added, settings.oracle["lr"]
        (2, 3, ('proportional', 'eps:5', 'maxmin:2'), ['maxmin:2'], 0.1)
    """
    from dataclasses import replace

    from fl_oracle.experiments.study.runs import grown
    from fl_oracle.experiments.study.settings import StudySettings, dataset_oracle
    from selection.selectors import split_specs

    settings = StudySettings.from_toml(text, dataset=dataset, **overrides)
    added = None
    if add is not None:
        already = [e for e in dict.fromkeys(split_specs(add)) if e in settings.selectors]
        if already:
            print(
                f"fedsel: note: already in the study: {', '.join(already)} (never run twice: "
                "only their unfinished runs run now)",
                file=sys.stderr,
            )
        bigger = grown(settings, split_specs(add))
        added = list(bigger.selectors[len(settings.selectors) :])
        settings = bigger
    if federation or dataset is not None:
        oracle = {**settings.oracle, **federation}
        if dataset is not None:  # the folder's domains and sizes, fixed in study.toml
            if "val_per_domain" not in text:  # the Digits-4 default need not fit the folder
                oracle.pop("val_per_domain", None)
            oracle = dataset_oracle(oracle, dataset)
        settings = replace(settings, oracle=oracle)  # checked again as it is built
    return settings, added
