"""The settings a ``fedsel study`` command runs, from its TOML and its options: the work of
the command's body in functions a test can call (:class:`StudyFlags`: which settings the
command line gives and which text it runs; :func:`study_settings`, :func:`judged_entries`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["StudyFlags", "as_typed", "judged_entries", "study_settings"]

#: a study setting -> the ``fedsel study`` flag that sets it
STUDY_FLAGS: dict[str, str] = {
    "seeds": "--seeds", "first_seed": "--first-seed", "rounds": "--rounds", "k": "--k",
    "selectors": "--selectors", "reference": "--reference", "dp_epsilon": "--dp-epsilon",
    "dp_delta": "--dp-delta", "secure_aggregation": "--secure-aggregation",
}  # fmt: skip


@dataclass(frozen=True)
class StudyFlags:
    r"""What a ``fedsel study`` command line says of the study's settings (None: not given).

    Its :meth:`text` is the settings the command runs: ``--config``'s, else the study stored in
    the folder when no setting is given (the same command continues it), else the defaults;
    :meth:`overrides` the settings the flags set on top.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from fl_oracle.experiments.study.setup import StudyFlags
        >>> out = Path(tempfile.mkdtemp())
        >>> (out / "study.toml").write_text("seeds = 2\n")
        10
        >>> StudyFlags().text(out), StudyFlags(rounds=3).given, StudyFlags(rounds=3).text(out)
        ('seeds = 2\n', ['--rounds'], '')
        >>> StudyFlags(seeds=4, add="eps:5").text(out)
        Traceback (most recent call last):
        ...
        ValueError: --add keeps the stored settings; drop --seeds
    """

    config: Path | None = None
    seeds: int | None = None
    first_seed: int | None = None
    rounds: int | None = None
    k: int | None = None
    selectors: str | None = None
    surrogate: str | None = None
    reference: str | None = None
    dp_epsilon: float | None = None
    dp_delta: float | None = None
    secure_aggregation: bool = False
    add: str | None = None

    @property
    def given(self) -> list[str]:
        """The flags given that set the study's settings (``--add`` refuses them)."""
        flags = (
            ("--config", self.config), ("--seeds", self.seeds),
            ("--first-seed", self.first_seed), ("--rounds", self.rounds), ("--k", self.k),
            ("--selectors", self.selectors), ("--reference", self.reference),
            ("--dp-epsilon", self.dp_epsilon), ("--dp-delta", self.dp_delta),
            ("--secure-aggregation", self.secure_aggregation or None),
        )  # fmt: skip
        return [name for name, value in flags if value is not None]

    def overrides(self) -> dict[str, Any]:
        """The settings the flags set over the text's (None: the text's own)."""
        return dict(
            seeds=self.seeds, first_seed=self.first_seed, rounds=self.rounds, k=self.k,
            selectors=judged_entries(self.selectors, self.surrogate), reference=self.reference,
            dp_epsilon=self.dp_epsilon, dp_delta=self.dp_delta,
            secure_aggregation=self.secure_aggregation or None,
        )  # fmt: skip

    def text(self, out: Path) -> str:
        """The settings text the command runs in the folder ``out`` (ValueError in one line
        for a missing ``--config`` file or an ``--add`` that cannot keep stored settings)."""
        text = ""
        if self.config is not None:
            if not self.config.is_file():
                raise ValueError(f"--config {self.config}: no such file")
            text = self.config.read_text(encoding="utf-8")
        stored = Path(out) / "study.toml"
        if self.add is not None:
            if self.given:
                raise ValueError(f"--add keeps the stored settings; drop {', '.join(self.given)}")
            if not stored.is_file():
                raise ValueError(f"--add: {out} holds no study (no study.toml)")
        if not self.given and stored.is_file():  # continue (or re-report) the stored study
            text = stored.read_text(encoding="utf-8")
        return text


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


def as_typed(
    exc: ValueError,
    flags: StudyFlags,
    out: Path,
    *,
    federation: dict[str, Any],
    flag_of: dict[str, str],
) -> ValueError:
    """A refused study setting named as the user typed it: the flag given (``--k 30: exceeds
    the 20 clients``), else the key of the ``--config`` file or the stored ``study.toml`` that
    holds it (``k = 30 in my.toml: ...``); any other error as it is.

    ``federation``: the ``[oracle]`` settings the command's flags gave; ``flag_of``: an
    ``[oracle]`` setting -> its flag.

    Examples:
        >>> from pathlib import Path
        >>> from fl_oracle.experiments.study.settings import StudySettings
        >>> from fl_oracle.experiments.study.setup import StudyFlags, as_typed
        >>> try:
        ...     StudySettings(k=30)
        ... except ValueError as exc:
        ...     str(exc), str(as_typed(exc, StudyFlags(k=30), Path("out"), federation={}, flag_of={}))
        ('study: k=30: exceeds the 20 clients', '--k 30: exceeds the 20 clients')
    """
    import tomllib

    from fl_oracle.experiments.study.settings import SettingError
    from selection.toml_text import toml_value

    if not isinstance(exc, SettingError):
        return exc
    key, why = exc.key, exc.why
    if exc.section == "oracle":
        if key in federation and key in flag_of:
            return ValueError(f"{flag_of[key]} {federation[key]}: {why}")
    elif key in STUDY_FLAGS and getattr(flags, key, None) not in (None, False):
        given = getattr(flags, key)
        shown = "" if given is True else f" {given}"
        return ValueError(f"{STUDY_FLAGS[key]}{shown}: {why}")
    files = [flags.config] if flags.config is not None else []
    if not flags.given:
        files.append(Path(out) / "study.toml")  # the stored study the command continues
    for path in files:
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            continue
        if exc.section:
            table = table.get(exc.section, {}) if isinstance(table.get(exc.section), dict) else {}
        if key in table:
            where = f"[{exc.section}] {key}" if exc.section else key
            return ValueError(f"{where} = {toml_value(table[key])} in {path}: {why}")
    return exc
