"""``noisy:R``: fresh truth degraded to a chosen quality — how well must a formulation see?

Every client trains at w_t as under ``fresh`` (so this is an upper bound: it reads fresh
truth), then the selector sees U and every U_<domain> with Gaussian noise added, per round and
per column, calibrated so that the noisy values' rank correlation with the true ones within the
round is about ρ = R/100 (``noisy:70``: ρ ≈ 0.70). The calibration: for a column with
within-round standard deviation s across clients, noise of standard deviation
σ = s·sqrt(1/r² − 1) gives Pearson correlation r with the truth; for jointly normal values
Spearman's ρ = (6/π)·arcsin(r/2), so r = 2·sin(πρ/6). Values are clipped to [0, 100] (the
contract's range). The achieved quality is measured every round — the mean over columns of
Spearman's ρ between noisy and true values, and their mean absolute error (points) — and
written to the history as ``info_rho`` and ``info_mae``. The noise is seeded by (run seed,
round), so every entry of a study sees the same degradation of the same truth.

The utilities of a round are not jointly normal (they cluster by domain), so the achieved ρ
falls short of the nominal, more at high R: on the value-of-information race's runs (Digits-4,
N = 20) 0.478, 0.567, 0.663, 0.749, 0.845 at R = 50, 60, 70, 80, 90
(``benchmarks/studies/crossover.py``, ``rho_levels``). Claims are therefore stated in the
achieved ρ, which every history records.
"""

from __future__ import annotations

import math

import numpy as np

from selection.errors import SelectionError
from selection.information.base import InformationModel, RoundInputs, register


def noise_scale(sd: float, rho: float) -> float:
    """σ of the noise that brings a column of standard deviation ``sd`` to Spearman ``rho``
    with its truth (0 at ρ = 1).

    Examples:
        >>> round(noise_scale(10.0, 0.5), 3), noise_scale(10.0, 1.0)
        (16.529, 0.0)
    """
    if rho >= 1.0:
        return 0.0  # the truth itself (2 sin(π/6) is 1 only up to rounding)
    r = 2.0 * math.sin(math.pi * rho / 6.0)
    return float(sd) * math.sqrt(1.0 / r**2 - 1.0)


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
            noisy = np.clip(x + rng.normal(0.0, noise_scale(x.std(), self.rho), len(x)), 0, 100)
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
