"""Private statistics: what a client reports, clipped and noised, with the run's (ε, δ) tracked.

A deployment that adopts fedsel sends more than FedAvg does: the ``probe`` and ``predicted``
models have every client report its probe loss, Fisher trace F, label divergence B, gradient
cosine and the D first-order utilities x_d each round; ``fisher-topk`` reports F,
``power-of-choice`` and ``qffl`` the loss. Each is a signal about the client's data.

The privacy mode (:class:`StatsPrivacy`) is the Gaussian mechanism on each client's report,
per round, with client-level neighbours (one client's data changed arbitrarily):

1. **Clip.** Every reported field is clipped to a fixed box (:data:`FIELDS`; F on the log
   scale), then scaled to unit width: the report is a point of [0, 1]^m, so one client's
   report moves by at most Δ = √m in L2 (its L2 sensitivity), whatever its data.
2. **Noise.** Each coordinate gets N(0, (z·Δ)²): the Gaussian mechanism with noise multiplier
   z, then the report is scaled back and clipped to its box again (post-processing, free).
3. **Account.** z is calibrated so that the run's R rounds compose to the asked (ε, δ)
   (Rényi-DP accounting of R Gaussian mechanisms at sampling rate 1, Opacus'
   :class:`~opacus.accountants.RDPAccountant`, :func:`~opacus.accountants.utils.get_noise_multiplier`):
   a client that reports every round spends the whole budget, one that reports less spends
   less. Every history row records the ε spent so far (``dp_epsilon``) and z (``dp_z``).

What it protects: the statistics. The model updates the committed clients send are FedAvg's
and are not noised here (Flower's differential-privacy wrappers do that for the update);
under **secure aggregation** (``secure_aggregation``) the server sees only their sum, so the
information models that evaluate one client's update at the server — ``fresh`` and ``pool``
(every candidate's), ``stale`` and ``predicted`` (each committed client's, for its report or
its regression) — are refused with that reason, and ``probe`` runs uncalibrated (its
calibration reads each committed client's measured U_{i,d}).

ε = ∞ is the mode off: nothing is clipped or noised.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from selection.words import counted

__all__ = ["FIELDS", "StatsPrivacy", "RunAccountant", "reported_fields"]

#: reported field -> (low, high) box it is clipped to, in its own units (log F for F)
FIELDS: dict[str, tuple[float, float]] = {
    "loss": (0.01, 10.0),  # nats (ln 10 ≈ 2.3 at chance on 10 classes; > 0: q-FFL weighs by it)
    "F": (-10.0, 10.0),  # log of the Fisher trace
    "B": (0.0, math.log(2.0)),  # nats: the Jensen-Shannon divergence's range
    "cos_g": (-1.0, 1.0),
    "x": (-1.0, 1.0),  # nats: each first-order utility x_d
    "h": (0.0, 1.0),  # each class fraction h_c of a label histogram (a Flower node's report)
}
#: fields reported as a family of columns ``<name>_<j>``
_FAMILIES = ("x", "h")


def reported_fields(table: pd.DataFrame, fields: tuple[str, ...]) -> list[str]:
    """The columns of ``table`` a client reports among ``fields`` (``x`` = every ``x_<d>``,
    ``h`` every ``h_<c>``).

    Examples:
        >>> import pandas as pd
        >>> from fl_oracle.experiments.privacy import reported_fields
        >>> table = pd.DataFrame(columns=["client_id", "U", "loss", "F", "x_mnist", "x_usps"])
        >>> reported_fields(table, ("loss", "x", "B"))  # no B column: nothing to report
        ['loss', 'x_mnist', 'x_usps']
    """
    cols = []
    for f in fields:
        if f in _FAMILIES:
            cols += [c for c in table.columns if c.startswith(f"{f}_")]
        elif f in table.columns:
            cols.append(f)
    return cols


def _box(col: str) -> tuple[float, float]:
    family = col.partition("_")[0]
    return FIELDS[family] if family in _FAMILIES and col != family else FIELDS[col]


@dataclass(frozen=True)
class StatsPrivacy:
    """The privacy mode of a run's reported statistics (module docstring).

    Attributes:
        epsilon: the run's ε over its rounds (``inf``: off).
        delta: the run's δ, in (0, 1).
        rounds: the rounds the budget covers (the run's R).
        secure_aggregation: the server sees only the sum of the committed updates.

    Examples:
        A budget of ε = 1 over 3 rounds calibrates the noise multiplier z; a loose ε = 50
        leaves little noise, so the clipping shows (a loss of 40 nats is reported as at most
        10, the top of its box):

        >>> import numpy as np
        >>> import pandas as pd
        >>> from fl_oracle.experiments.privacy import StatsPrivacy
        >>> strict = StatsPrivacy(epsilon=1.0, rounds=3)
        >>> strict.on, round(strict.z, 2)
        (True, 7.01)
        >>> loose = StatsPrivacy(epsilon=50.0)
        >>> table = pd.DataFrame({"client_id": ["a", "b", "c"], "loss": [0.5, 2.3, 40.0],
        ...                       "U": [60.0, 70.0, 65.0]})
        >>> out = loose.privatize(table, ("loss",), np.random.default_rng(0))
        >>> out["loss"].round(2).tolist(), out["U"].tolist()  # U is not a reported field
        ([0.7, 2.09, 10.0], [60.0, 70.0, 65.0])
        >>> off = StatsPrivacy()  # epsilon = inf
        >>> off.on, off.z, off.privatize(table, ("loss",), np.random.default_rng(0)) is table
        (False, 0.0, True)
    """

    epsilon: float = math.inf
    delta: float = 1e-5
    rounds: int = 1
    secure_aggregation: bool = False

    def __post_init__(self) -> None:
        e, d = self.epsilon, self.delta
        if isinstance(e, bool) or not isinstance(e, (int, float)) or math.isnan(e) or e <= 0:
            raise ValueError(f"privacy: epsilon={e!r} must be a number > 0 (inf = off)")
        if isinstance(d, bool) or not isinstance(d, (int, float)) or not 0 < d < 1:
            raise ValueError(f"privacy: delta={d!r} must be a number in (0, 1)")
        r = self.rounds
        if isinstance(r, bool) or not isinstance(r, int) or r < 1:
            raise ValueError(f"privacy: rounds={r!r} must be an integer >= 1")
        _ = self.z  # calibrated now: a budget no noise can meet is refused here

    @property
    def on(self) -> bool:
        """Reports are noised (a finite ε)."""
        return math.isfinite(self.epsilon)

    @cached_property
    def z(self) -> float:
        """The noise multiplier: R Gaussian mechanisms of z compose to (ε, δ) (0 when off)."""
        if not self.on:
            return 0.0
        from opacus.accountants.utils import get_noise_multiplier

        try:
            with warnings.catch_warnings():  # the largest order bounds it: not the user's
                warnings.simplefilter("ignore", UserWarning)
                z = get_noise_multiplier(
                    target_epsilon=float(self.epsilon),
                    target_delta=float(self.delta),
                    sample_rate=1.0,
                    steps=int(self.rounds),
                    accountant="rdp",
                    # 0.001 absolute, relative 1e-6 beyond ε = 1000: the accountant's search
                    # stops on every finite ε (at 0.001 it never reached ε = 1e50 or 1e308)
                    epsilon_tolerance=max(0.001, 1e-6 * float(self.epsilon)),
                )
            return float(z)
        except ValueError:
            raise ValueError(
                f"privacy: epsilon={self.epsilon!r} over {counted(self.rounds, 'round')} at delta="
                f"{self.delta!r} is too small for the accountant's largest noise"
            ) from None

    def check_spec(self, spec, served: str | None = None) -> None:
        """Refuse, before any data, a selector this privacy mode cannot serve: a baseline rule
        that reads individual clients' update vectors (``divfl``, ``clustered:2``: each
        client's update or probe gradient at the server), which secure aggregation makes
        impossible and private statistics do not cover, and an information model secure
        aggregation rules out (:meth:`check_information`): ``served``, the model the driver
        serves (Flower serves a rule ``fresh``, or its probe pass under secure aggregation),
        else the spec's own."""
        from selection.baselines.reads import VECTOR_READS

        if spec.is_rule:
            from selection.selectors import make_selector

            reads = make_selector(spec).reads
            if reads in VECTOR_READS and self.secure_aggregation:
                raise ValueError(
                    f"selector {spec.canonical} reads each client's update vector ({reads}) at "
                    "the server, impossible under secure aggregation (the server sees only "
                    "their sum)"
                )
            if reads in VECTOR_READS and self.on:
                raise ValueError(
                    f"selector {spec.canonical} reads the clients' update vectors, which private "
                    "statistics do not cover (--dp-epsilon): run it without them"
                )
        self.check_information(spec.information if served is None else served)

    def check_information(self, name: str) -> None:
        """Refuse an information model that secure aggregation makes impossible: one that
        evaluates a single client's update at the server (its ``server_evaluates``); a
        baseline rule's ``rule`` reads what clients report and passes."""
        from selection.information import driver_information

        if self.secure_aggregation:
            self._refuse(driver_information(name).model)

    def _refuse(self, model) -> None:
        """The refusal of a model class (or instance) secure aggregation rules out."""
        if self.secure_aggregation and model.server_evaluates:
            raise ValueError(
                f"information model {model.name} is impossible under secure aggregation: it "
                f"evaluates {model.server_evaluates}, and the server sees only the sum of "
                "the updates"
            )

    def prepare(self, model) -> None:
        """Fit one run's information model to the mode, in every driver: refused where
        secure aggregation makes it impossible; a calibrated model (``probe``) left
        uncalibrated under it (no single client's update is evaluated at the server)."""
        self._refuse(model)
        if self.secure_aggregation and hasattr(model, "calibrate"):
            model.calibrate = False

    def privatize(
        self, table: pd.DataFrame, fields: tuple[str, ...], rng: np.random.Generator
    ) -> pd.DataFrame:
        """``table`` with the columns of ``fields`` as the clients report them: clipped to
        their boxes, noised (N(0, (zΔ)²) per unit-width coordinate, Δ = √m for m reported
        columns), clipped again. F is noised on the log scale. Off: ``table`` unchanged."""
        if not self.on:
            return table
        cols = reported_fields(table, fields)
        if not cols:
            return table
        out = table.copy()
        sigma = self.z * math.sqrt(len(cols))  # in unit widths
        for c in cols:
            lo, hi = _box(c)
            v = out[c].to_numpy(dtype=float)
            if c == "F":
                v = np.log(np.maximum(v, 1e-300))
            u = (np.clip(v, lo, hi) - lo) / (hi - lo)
            u = np.clip(u + rng.normal(0.0, sigma, size=len(u)), 0.0, 1.0)
            v = lo + u * (hi - lo)
            out[c] = np.exp(v) if c == "F" else v
        return out

    def to_toml(self) -> str:
        """The mode as the TOML table ``[privacy]`` every private run records, in every
        driver's ``config.toml``: ε, δ, the noise multiplier z and secure aggregation.

        Examples:
            >>> from fl_oracle.experiments.privacy import StatsPrivacy
            >>> print(StatsPrivacy(secure_aggregation=True).to_toml(), end="")
            [privacy]
            dp_epsilon = inf
            dp_delta = 1e-05
            dp_z = 0.0
            secure_aggregation = true
        """
        from selection.toml_text import toml_value

        fields = {
            "dp_epsilon": float(self.epsilon),
            "dp_delta": float(self.delta),
            "dp_z": float(self.z),
            "secure_aggregation": bool(self.secure_aggregation),
        }
        return "[privacy]\n" + "\n".join(f"{k} = {toml_value(v)}" for k, v in fields.items()) + "\n"

    def sigma_units(self, m: int) -> float:
        """The noise's standard deviation in unit widths for a report of ``m`` fields."""
        return self.z * math.sqrt(m)


class RunAccountant:
    """The run's spent (ε, δ): one Gaussian mechanism of z per round a client reported in
    (the worst client: the one that reports every round).

    Examples:
        The ε spent grows each round and reaches the budget after the rounds it covers:

        >>> from fl_oracle.experiments.privacy import RunAccountant, StatsPrivacy
        >>> accountant = RunAccountant(StatsPrivacy(epsilon=1.0, rounds=3))
        >>> [round(accountant.step(), 2) for _ in range(3)]
        [0.55, 0.8, 1.0]
        >>> RunAccountant(StatsPrivacy()).step()  # the mode off
        inf
    """

    def __init__(self, privacy: StatsPrivacy) -> None:
        from opacus.accountants import RDPAccountant

        self.privacy = privacy
        self._acc = RDPAccountant()

    def step(self) -> float:
        """One more round of reports; the ε spent so far at the run's δ (inf when off)."""
        if not self.privacy.on:
            return math.inf
        self._acc.step(noise_multiplier=self.privacy.z, sample_rate=1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return float(self._acc.get_epsilon(self.privacy.delta))
