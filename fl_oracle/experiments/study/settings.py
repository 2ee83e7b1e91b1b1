"""A study's settings: what it runs, recorded in ``study.toml``, each entry parsed once.

:class:`StudySettings` holds the seeds, rounds, K, the entries (selector specs as written, each
parsed into a typed :class:`~selection.selectors.Spec`: :meth:`StudySettings.spec`), the
reference, the statistics' settings and the oracle's; it reads and writes its TOML and refuses
a bad value in one line naming it. The default entries: every registered baseline rule's and
the swept formulations (:data:`DEFAULT_SELECTORS`).
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Collection
from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from typing import Any

from fl_oracle.experiments.entry import Entry, entry_slug
from fl_oracle.experiments.oracle_defaults import DEMO_ORACLE
from selection.baselines import baselines
from selection.errors import SelectionError
from selection.selectors import Spec, parse_spec
from selection.toml_text import toml_value

__all__ = [
    "BASELINES",
    "DEFAULT_SELECTORS",
    "STUDY_ORACLE",
    "Entry",
    "SettingError",
    "StudySettings",
    "dataset_oracle",
    "entry_slug",
    "is_baseline",
]

BASELINES: tuple[str, ...] = tuple(  # the registered rules' study entries, in their order
    b.study_entry for b in baselines().values() if b.study_entry
)
#: the default reference entries, in order of preference (the first the study runs)
REFERENCES: tuple[str, ...] = ("fedavg", "proportional")
DEFAULT_SELECTORS: tuple[str, ...] = (
    *BASELINES,
    "eps:2",
    "eps:5",
    "eps:10",
    "eps:20",
    "eps-rel:0.25",
    "eps-rel:0.5",
    "eps-rel:0.75",
    "maxmin:0",
    "maxmin:2",
    "maxmin:5",
    "maxmin:10",
    "weighted:1,0",
    "weighted:0.5,0.5",
    "weighted:0,1",
    "eps:5@stale",
    "eps-rel:0.5@stale",
    "maxmin:2@stale",
)
# Oracle settings of the study's embedded default: the demo's (20 clients, local step 0.1 for
# two epochs, small evaluation sets, 32 Fisher probes, one torch thread per run process).
STUDY_ORACLE: dict[str, Any] = dict(DEMO_ORACLE)


class SettingError(ValueError):
    """One study setting refused: its ``key`` (``section`` ``"oracle"`` for an ``[oracle]``
    key), the ``value`` given and ``why``, so that ``fedsel study`` can name it as the user
    typed it (``--k 30``, ``k = 30 in my.toml``) instead of as the settings hold it."""

    def __init__(self, message: str, *, key: str, value: Any, why: str, section: str = ""):
        super().__init__(message)
        self.key, self.value, self.why, self.section = key, value, why, section


def _refused(key: str, value: Any, why: str, *, eq: str = "=", section: str = "") -> SettingError:
    """``study: key=value: why`` (``[oracle] key`` in its section) as a :class:`SettingError`."""
    where = f"[{section}] {key}" if section else key
    sep = " " if why.startswith(("must", "is ", "outside")) else ": "
    return SettingError(f"study: {where}{eq}{value!r}{sep}{why}", key=key, value=value, why=why,
                        section=section)  # fmt: skip


def _parse_entry(entry: str | Spec) -> tuple[str, Spec]:
    """A study entry's text and its parsed spec (ValueError naming the entry if bad); a
    :class:`~selection.selectors.Spec` is written in its canonical form."""
    if isinstance(entry, Spec):
        return entry.canonical, entry
    try:
        return entry, parse_spec(str(entry))
    except SelectionError as exc:
        raise ValueError(f"study entry {entry!r}: {exc}") from None


def is_baseline(spec: Spec) -> bool:
    """A baseline rule (any parameter, fresh or stale), not a formulation; ``all`` is neither:
    it is the full-participation reference, and ``divfl:fresh`` is DivFL's upper bound (every
    client trains every round)."""
    rule = baselines().get(spec.name)
    return rule is not None and rule.counts_as_baseline(spec.arg)


@dataclass(frozen=True, kw_only=True)
class StudySettings:
    """What a study runs (all of it recorded in ``study.toml``).

    Attributes:
        seeds: number of seeds, first_seed .. first_seed + seeds - 1 (each its own federation
            and initial model).
        first_seed: the first of them (default 0; another start gives held-out seeds for a
            confirmation study).
        rounds: training rounds per run.
        k: clients selected per round (``all`` takes every client); the runs' K, checked
            here against the federation's clients (the oracle's configuration holds none).
        selectors: study entries, ``SPEC`` or ``SPEC@INFORMATION`` (``eps:5@probe``); a
            :class:`~selection.selectors.Spec` given here is kept as its canonical text.
        reference: the entry every other is compared with (paired differences); default
            ``fedavg`` (FedAvg as McMahan et al. run it) where the entries hold it, else
            ``proportional``.
        target_worst: worst-domain test accuracy (%) whose first reach is timed.
        front_rounds: rounds of the reference run (seed 0) whose exact predicted front is
            drawn; empty = five rounds spread over the run.
        bootstrap: bootstrap resamples of the paired intervals.
        records: the simulator's own records the runs compute besides what the verdict and
            the report read (:data:`fl_oracle.experiments.plan.RECORDS`: ``global``, the
            global loss and B-dissimilarity of every new model; ``predictions``, the probe
            model's prediction of a baseline rule's choice); default none.
        dp_epsilon: the privacy mode of the clients' reported statistics: the ε each run
            spends over its rounds (``inf``: off; :mod:`fl_oracle.experiments.privacy`).
        dp_delta: its δ.
        secure_aggregation: the server sees only the sum of the committed updates: entries
            on ``fresh``, ``pool``, ``stale`` or ``predicted`` statistics are refused.
        race: spend seeds by racing (:mod:`.racing`): ``seeds`` is then the budget, seeds
            are added in looks and an entry shown worse than the best on every raced metric
            stops running.
        race_delta: the race's resolution (accuracy points): entries within it of the best
            are tied.
        race_first: seeds of the race's first look.
        race_batch: seeds added per later look.
        race_alpha: the race's family-wise error over every look, metric and entry.
        oracle: :class:`fl_oracle.sim.config.OracleConfig` fields besides ``seed`` and ``k``.
    """

    seeds: int = 10
    first_seed: int = 0
    rounds: int = 40
    k: int = 5
    selectors: tuple[str, ...] = DEFAULT_SELECTORS
    reference: str = ""
    target_worst: float = 60.0
    front_rounds: tuple[int, ...] = ()
    bootstrap: int = 10_000
    records: tuple[str, ...] = ()
    dp_epsilon: float = math.inf
    dp_delta: float = 1e-5
    secure_aggregation: bool = False
    race: bool = False
    race_delta: float = 1.0
    race_first: int = 10
    race_batch: int = 5
    race_alpha: float = 0.05
    oracle: dict[str, Any] = field(default_factory=lambda: dict(STUDY_ORACLE))

    def __post_init__(self) -> None:
        for name in ("seeds", "rounds", "k", "bootstrap"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise _refused(name, v, "must be an integer >= 1")
        v = self.first_seed
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise _refused("first_seed", v, "must be an integer >= 0")
        for name, kind in (("selectors", (str, Spec)), ("front_rounds", int), ("records", str)):
            v = getattr(self, name)
            if isinstance(v, (str, bytes)) or not isinstance(v, (list, tuple)):
                raise ValueError(f"study: {name} = {v!r} must be a list")
            if any(isinstance(x, bool) or not isinstance(x, kind) for x in v):
                what = "int" if name == "front_rounds" else "str"
                raise ValueError(f"study: {name} = {v!r} must list {what}s")
        if not isinstance(self.race, bool):
            raise _refused("race", self.race, "must be true or false", eq=" = ")
        for name in ("race_first", "race_batch"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 2:
                raise _refused(name, v, "must be an integer >= 2")
        for name, lo, hi in (("race_delta", 0.0, 100.0), ("race_alpha", 0.0, 1.0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo < v < hi:
                raise _refused(name, v, f"must be a number in ({lo:g}, {hi:g})", eq=" = ")
        t = self.target_worst
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t <= 100:
            raise _refused("target_worst", t, "must be a number in [0, 100] (%)", eq=" = ")
        if not isinstance(self.reference, str):
            raise _refused("reference", self.reference, "must be an entry's spec", eq=" = ")
        if not isinstance(self.oracle, dict):
            raise ValueError("study: oracle must be a table of oracle settings")
        from fl_oracle.errors import ConfigError, hinted_why
        from fl_oracle.sim.config import OracleConfig

        try:  # every oracle value checked now, not after the runs
            config = OracleConfig(seed=0, k=self.k, **self.oracle)
        except TypeError as exc:
            raise ValueError(f"study: [oracle]: {exc}") from None
        except ConfigError as exc:
            if exc.field == "k":  # the study's own k (--k, or k in study.toml)
                raise _refused("k", self.k, exc.why) from None
            if not exc.field:
                raise ValueError(f"study: [oracle]: {exc}") from None
            raise _refused(exc.field, exc.value, hinted_why(exc), section="oracle") from None
        except ValueError as exc:
            raise ValueError(f"study: [oracle]: {exc}") from None
        parsed = [(e.text, e.spec) for e in self.entries]  # each entry parsed once, here
        object.__setattr__(self, "selectors", tuple(text for text, _ in parsed))
        for text, spec in parsed:  # its information model against N and K, before any run
            try:
                spec.run_information(n=config.n_clients, k=self.k)
            except SelectionError as exc:
                raise ValueError(f"study entry {text!r}: {exc}") from None
        specs = dict(parsed)
        object.__setattr__(self, "front_rounds", tuple(int(r) for r in self.front_rounds))
        from fl_oracle.experiments.plan import RECORDS

        unknown = [r for r in self.records if r not in RECORDS]
        if unknown:
            raise ValueError(
                f"study: records {unknown[0]!r} is not one of {', '.join(RECORDS)} "
                "(the simulator's own records; the verdict needs none)"
            )
        # one order whatever the TOML's (a continued study compares them)
        object.__setattr__(self, "records", tuple(r for r in RECORDS if r in self.records))
        if not isinstance(self.secure_aggregation, bool):
            raise ValueError(
                f"study: secure_aggregation = {self.secure_aggregation!r} must be true or false"
            )
        if not self.selectors or len(specs) != len(self.selectors):
            raise SettingError(
                "study: selectors must be a non-empty list without repeats", key="selectors",
                value=list(self.selectors), why="must be a non-empty list without repeats",
            )  # fmt: skip
        seen: dict[str, str] = {}
        for entry in self.selectors:
            canon = specs[entry].canonical
            if canon in seen:
                raise ValueError(
                    f"study: entries {seen[canon]!r} and {entry!r} are the same selector ({canon})"
                )
            seen[canon] = entry
        if not self.reference:  # FedAvg where the study runs it, else the earlier default
            found = [r for r in REFERENCES if r in self.selectors]
            if not found:
                raise ValueError(
                    f"study: no reference entry: the entries hold none of {', '.join(REFERENCES)}; "
                    "add one or name the reference (reference = ENTRY, --reference)"
                )
            object.__setattr__(self, "reference", found[0])
        if self.reference not in self.selectors:
            raise _refused("reference", self.reference, "is not among the selectors", eq=" ")
        bad = [r for r in self.front_rounds if not 0 <= r < self.rounds]
        if bad:
            raise _refused("front_rounds", bad, f"outside 0..{self.rounds - 1}", eq=" ")
        privacy = self.privacy  # the values checked now
        if privacy is not None:
            for text, spec in parsed:  # every entry before any run (a rule's vectors too)
                try:
                    privacy.check_spec(spec)
                except ValueError as exc:
                    raise ValueError(f"study entry {text!r}: {exc}") from None

    @property
    def privacy(self):
        """The runs' :class:`~fl_oracle.experiments.privacy.StatsPrivacy` (None: off, and no
        secure aggregation)."""
        from fl_oracle.experiments.privacy import StatsPrivacy

        try:
            p = StatsPrivacy(
                epsilon=self.dp_epsilon,
                delta=self.dp_delta,
                rounds=self.rounds,
                secure_aggregation=self.secure_aggregation,
            )
        except ValueError as exc:
            said = re.match(r"privacy: (epsilon|delta)=\S+ (.*)", str(exc))
            if said:  # the study's dp_epsilon or dp_delta
                key = "dp_" + said[1]
                raise SettingError(f"study: {exc}", key=key, value=getattr(self, key),
                                   why=said[2]) from None  # fmt: skip
            raise ValueError(f"study: {exc}") from None
        return p if p.on or p.secure_aggregation else None

    @cached_property
    def entries(self) -> tuple[Entry, ...]:
        """The entries, in the study's order, each parsed once (by the constructor, which
        writes ``selectors`` as their texts)."""
        return tuple(Entry(text, spec) for text, spec in map(_parse_entry, self.selectors))

    @cached_property
    def _by_text(self) -> dict[str, Entry]:
        return {e.text: e for e in self.entries}

    def entry(self, text: str) -> Entry:
        """The entry named ``text`` (KeyError if the study has none)."""
        return self._by_text[text]

    def spec(self, entry: str) -> Spec:
        """The parsed spec of one of the entries (its information model the run's)."""
        return self._by_text[entry].spec

    @property
    def seed_list(self) -> range:
        """The study's seeds."""
        return range(self.first_seed, self.first_seed + self.seeds)

    @property
    def fronts_at(self) -> tuple[int, ...]:
        """Rounds whose predicted front is drawn."""
        if self.front_rounds:
            return self.front_rounds
        r = self.rounds
        return tuple(sorted({0, r // 4, r // 2, (3 * r) // 4, r - 1}))

    @classmethod
    def from_toml(cls, text: str, *, dataset: str | None = None, **overrides: Any) -> StudySettings:
        """Settings from a TOML text (unknown keys are an error), then non-None overrides.

        ``dataset``: an image-folder dataset the ``[oracle]`` table describes (its domains and
        sizes are the folder's, :func:`fl_oracle.sim.config.dataset_fields`), so that settings
        naming the folder's domains are read against them, not the Digits-4 default."""
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"study config is not valid TOML: {exc}") from None
        return cls.from_table(raw, dataset=dataset, **overrides)

    @classmethod
    def from_table(
        cls, raw: dict[str, Any], *, dataset: str | None = None, **overrides: Any
    ) -> StudySettings:
        """:meth:`from_toml` on an already parsed table (a grid's, its own keys taken out)."""
        known = {f.name for f in fields(cls)}
        for key in sorted(set(raw) - known):
            raise ValueError(f"study config: unknown key {key!r}{_did_you_mean(key, known)}")
        if "oracle" in raw and not isinstance(raw["oracle"], dict):
            raise ValueError("study config: [oracle] must be a table")
        oracle_known = _oracle_keys()
        for key in sorted(set(raw.get("oracle", {})) - oracle_known):
            why = (
                "is set per run by the study (seeds, k)"
                if key in ("seed", "k")
                else f"is not an oracle setting{_did_you_mean(key, oracle_known)}"
            )
            raise ValueError(f"study config: [oracle] key {key!r} {why}")
        merged = {**raw, **{k: v for k, v in overrides.items() if v is not None}}
        if "oracle" in merged:
            merged["oracle"] = {**STUDY_ORACLE, **merged["oracle"]}
        if dataset is not None:
            oracle = dict(merged.get("oracle", STUDY_ORACLE))
            if "val_per_domain" not in raw.get("oracle", {}):  # the Digits-4 default's
                oracle.pop("val_per_domain", None)
            merged["oracle"] = dataset_oracle(oracle, dataset)
        return cls(**merged)

    @property
    def racing(self):
        """The race (:class:`~.racing.Race`: ``seeds`` its budget), or None without one."""
        if not self.race:
            return None
        from fl_oracle.experiments.study.racing import Race

        return Race(
            delta=float(self.race_delta), first=self.race_first, batch=self.race_batch,
            alpha=float(self.race_alpha), budget=self.seeds,
        )  # fmt: skip

    def to_toml(self, *, omit: Collection[str] = ()) -> str:
        """The settings as TOML (read back by :meth:`from_toml` to equal settings), without
        the ``[oracle]`` keys in ``omit``."""
        d = asdict(self)
        oracle = {k: v for k, v in d.pop("oracle").items() if k not in omit}
        lines = [f"{k} = {_toml_value(v)}" for k, v in d.items()]
        lines += ["", "[oracle]"] + [f"{k} = {_toml_value(v)}" for k, v in sorted(oracle.items())]
        return "\n".join(lines) + "\n"


def dataset_oracle(oracle: dict[str, Any], dataset: str) -> dict[str, Any]:
    """An ``[oracle]`` table with the domains and sizes of the image folder ``dataset``
    (:func:`fl_oracle.sim.config.dataset_fields`)."""
    from fl_oracle.sim.config import dataset_fields

    oracle.pop("dataset", None)  # a stored study's: read again from the folder given
    return dataset_fields(str(dataset), **oracle)


def _did_you_mean(key: str, known) -> str:
    from selection.errors import did_you_mean

    return did_you_mean(key, sorted(known)) or f"; known: {', '.join(sorted(known))}"


def _oracle_keys() -> set[str]:
    from fl_oracle.sim.config import OracleConfig

    return {f.name for f in fields(OracleConfig) if not f.name.startswith("_")} - {"seed", "k"}


def _toml_value(v: Any) -> str:
    return toml_value(v)
