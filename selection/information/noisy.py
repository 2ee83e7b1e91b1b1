"""``noisy:R``: fresh truth degraded to a chosen quality — how well must a formulation see?

Every client trains at w_t as under ``fresh`` (so this is an upper bound: it reads fresh
truth), then the selector sees U and every U_<domain> with Gaussian noise added, per round and
per column, calibrated so that the noisy values' rank correlation with the true ones within the
round is ρ = R/100 in expectation (``noisy:70``: ρ ≈ 0.70).

The calibration is solved on each column's own values (:func:`calibrated_scale`): σ is the
noise standard deviation at which the expected Spearman correlation between the column and
its noisy, clipped copy equals ρ, the expectation taken over a fixed set of standard normal
draws (common random numbers, so the expectation is a smooth, decreasing function of σ that a
root finder solves). A closed form would assume jointly normal values — σ = s·sqrt(1/r² − 1)
with r = 2·sin(πρ/6) (:func:`noise_scale`) — but a round's utilities cluster by domain, and on
the value-of-information race's first runs (Digits-4, N = 20) that form achieved only 0.478,
0.567, 0.663, 0.749, 0.845 at R = 50 … 90. The closed form is the root finder's first guess.

Values are clipped to [0, 100] (the contract's range). The achieved quality is measured every
round — the mean over columns of Spearman's ρ between noisy and true values, and their mean
absolute error (points) — and written to the history as ``info_rho`` and ``info_mae``. The
noise is seeded by (run seed, round), so every entry of a study sees the same degradation of
the same truth.
"""

from __future__ import annotations

import math

import numpy as np

from selection.errors import SelectionError
from selection.information.base import InformationModel, RoundInputs, register


def noise_scale(sd: float, rho: float) -> float:
    """σ of the noise that brings a normal column of standard deviation ``sd`` to Spearman
    ``rho`` with its truth (0 at ρ = 1): the calibration's first guess.

    Examples:
        >>> round(noise_scale(10.0, 0.5), 3), noise_scale(10.0, 1.0)
        (16.529, 0.0)
    """
    if rho >= 1.0:
        return 0.0  # the truth itself (2 sin(π/6) is 1 only up to rounding)
    r = 2.0 * math.sin(math.pi * rho / 6.0)
    return float(sd) * math.sqrt(1.0 / r**2 - 1.0)


#: standard normal draws over which the calibration takes its expectation
CALIBRATION_DRAWS = 200


def _rank_rows(a: np.ndarray) -> np.ndarray:
    from scipy import stats as sps  # here: the CLI starts without scipy.stats

    return sps.rankdata(a, axis=-1)


def expected_spearman(x: np.ndarray, sigma: float, z: np.ndarray, lo=0.0, hi=100.0) -> float:
    """Mean Spearman correlation between ``x`` and ``clip(x + sigma·z_m, lo, hi)`` over the
    rows ``z_m`` of ``z`` (ties take average ranks; a constant noisy row counts 0).

    Examples:
        >>> import numpy as np
        >>> z = np.random.default_rng(0).standard_normal((400, 20))
        >>> expected_spearman(np.arange(20.0), 0.0, z)
        1.0
    """
    x = np.asarray(x, dtype=float)
    rx = _rank_rows(x)
    rx = rx - rx.mean()
    ry = _rank_rows(np.clip(x + sigma * z, lo, hi))
    ry = ry - ry.mean(axis=1, keepdims=True)
    den = np.sqrt((rx**2).sum() * (ry**2).sum(axis=1))
    num = ry @ rx
    r = np.divide(num, den, out=np.zeros_like(num), where=den > 0)
    return float(r.mean())


def calibrated_scale(x: np.ndarray, rho: float, *, draws: int = CALIBRATION_DRAWS) -> float:
    """σ of the noise at which the expected Spearman correlation between the column ``x`` and
    its noisy copy clipped to [0, 100] is ``rho`` (0 at ρ = 1 and for a constant column).

    The expectation is over ``draws`` fixed standard normal rows (seeded by the column's
    length), so the same column always gets the same σ.

    Examples:
        >>> import numpy as np
        >>> x = np.r_[np.full(5, 90.0), np.full(15, 20.0)] + np.arange(20) * 0.1
        >>> s = calibrated_scale(x, 0.7)
        >>> z = np.random.default_rng(20).standard_normal((200, 20))
        >>> round(expected_spearman(x, s, z), 3)
        0.7
    """
    x = np.asarray(x, dtype=float)
    if rho >= 1.0 or np.ptp(x) == 0:
        return 0.0
    from scipy.optimize import brentq

    z = np.random.default_rng(len(x)).standard_normal((draws, len(x)))
    gap = lambda log_s: expected_spearman(x, math.exp(log_s), z) - rho  # noqa: E731
    guess = math.log(max(noise_scale(x.std(), rho), 1e-9))
    lo, hi = guess - 1.0, guess + 1.0
    g_lo, g_hi = gap(lo), gap(hi)
    while g_lo < 0 and lo > guess - 40:
        lo -= 2.0
        g_lo = gap(lo)
    while g_hi > 0 and hi < guess + 40:
        hi += 2.0
        g_hi = gap(hi)
    if g_lo < 0 or g_hi > 0:  # ρ out of reach (a column of heavy ties): the closed form
        return math.exp(guess)
    return math.exp(brentq(gap, lo, hi, xtol=1e-3))


@register
class Noisy(InformationModel):
    name = "noisy"
    summary = (
        "every client trains at w_t; U, U_d served with noise calibrated to rank correlation "
        "R/100 with the truth (an upper bound)"
    )
    arg = "R"
    arg_example = "70"
    upper_bound = True
    probes = True  # F and loss of the table come from the probe pass, as fresh
    order = 15
    server_evaluates = "every candidate's update, at the server"

    def __init__(self, value: int | None = None, *, seed: int = 0) -> None:
        super().__init__(value, seed=seed)
        #: the last view's achieved quality (history columns)
        self.last: dict[str, float] = {}

    @classmethod
    def check_value(cls, value: int | None) -> None:
        super().check_value(value)
        if not 1 <= int(value) <= 100:
            raise SelectionError(f"noisy:{value}: R is a rank correlation in percent, 1..100")

    @property
    def rho(self) -> float:
        return int(self.value) / 100.0

    def trains_before(self, t, clients, k):
        return [str(c) for c in clients["client_id"]]

    def view(self, inputs: RoundInputs):
        if inputs.measured is None:
            raise ValueError("noisy: the driver measured no client before the selection")
        table = inputs.measured.copy()
        cols = [c for c in ("U", *(f"U_{d}" for d in inputs.domains)) if c in table.columns]
        from scipy import stats as sps  # here: the CLI starts without scipy.stats

        rng = np.random.default_rng([self.seed, int(inputs.t), 0x6E6F6973])
        rhos, errors = [], []
        for c in cols:
            x = table[c].to_numpy(dtype=float)
            sigma = calibrated_scale(x, self.rho)
            noisy = np.clip(x + rng.normal(0.0, sigma, len(x)), 0, 100)
            table[c] = noisy
            errors.append(float(np.mean(np.abs(noisy - x))))
            if np.ptp(x) > 0 and np.ptp(noisy) > 0:
                rhos.append(float(sps.spearmanr(x, noisy).statistic))
        self.last = {
            "info_rho": float(np.mean(rhos)) if rhos else math.nan,
            "info_mae": float(np.mean(errors)) if errors else math.nan,
        }
        return table.assign(measured_round=int(inputs.t), predicted=True)

    def quality(self) -> dict[str, float]:
        return dict(self.last)
