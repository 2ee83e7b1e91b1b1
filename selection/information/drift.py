"""``drift``: a client's own last report, drifting towards the probe's prediction with its age.

Per (client, domain), with y = U_{i,d} − acc_d(w_t) as in :mod:`.predicted`:

    ŷ = γ^age · y_last + (1 − γ^age) · ŷ_probe,

y_last the client's last reported y (at the round it last trained), age the rounds since, and
ŷ_probe the probe pass's calibrated first-order prediction (:mod:`.probe`). A client that never
reported gets ŷ_probe. γ ∈ [0, 1] — how long a report stays informative — is refitted every
round on the clients that trained in the last ``WINDOW`` rounds (their reports and ages as they
stood *before* they trained: out of sample), by the grid value of least mean absolute error.
One parameter, no regressor: the per-client effect the issue names, with the probe as the drift.
Cost: ``probe``'s (a probe batch per client, K trainings).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from selection.information.base import RoundInputs, register
from selection.information.predicted import MAX_AGE, Predicted

GRID = np.linspace(0.0, 1.0, 21)


def blend(stale: np.ndarray, yhat: np.ndarray, age: np.ndarray, gamma: float) -> np.ndarray:
    """γ^age · stale + (1 − γ^age) · yhat; a never-reported row (age >= MAX_AGE) is yhat."""
    w = np.where(age >= MAX_AGE, 0.0, np.power(gamma, age))
    return w * stale + (1.0 - w) * yhat


@register
class Drift(Predicted):
    name = "drift"
    summary = (
        "each client's last report drifting towards the probe's prediction with its age "
        "(one decay refitted on the K that trained)"
    )
    order = 57

    def __init__(self, value=None, *, seed=0):
        super().__init__(value, seed=seed)
        self.gamma = 0.0

    def view(self, inputs: RoundInputs):
        feats = self.features(inputs)
        self._features = feats
        if self.train_rows:
            data = pd.concat(list(self.train_rows), ignore_index=True)
            s, yh, age = (data[c].to_numpy(dtype=float) for c in ("stale_y", "yhat", "age"))
            y = data["y"].to_numpy(dtype=float)
            err = [np.abs(blend(s, yh, age, g) - y).mean() for g in GRID]
            self.gamma = float(GRID[int(np.argmin(err))])
        yhat = blend(
            feats["stale_y"].to_numpy(dtype=float),
            feats["yhat"].to_numpy(dtype=float),
            feats["age"].to_numpy(dtype=float),
            self.gamma,
        )
        return self.table(inputs, feats.assign(yhat=yhat))
