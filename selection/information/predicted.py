"""``predicted``: U_{i,d} regressed on stale reports, their age and the probe pass.

A Gaussian process (the anchor is FedCor's GP over clients, Tang et al. 2022) refitted every
round on the clients that trained in the last ``WINDOW`` rounds: target U_{i,d} − acc_d(w_t),
features per (client, domain) the probe's first-order prediction (:mod:`.probe`), its raw
feature x_{i,d}, the own-domain flag, the client's last reported U_{i,d} − acc_d at that round
(the first-order prediction where it never reported), its age in rounds (capped at
``MAX_AGE``), the probe loss and log F. Until two rounds of pairs exist it answers like
``probe``. Cost: ``probe``'s (a probe batch per client, K trainings).
"""

from __future__ import annotations

import warnings
from collections import deque

import numpy as np
import pandas as pd

from selection.information.base import RoundInputs, register
from selection.information.probe import Calibrated

WINDOW = 10  # rounds of training pairs kept
MAX_AGE = 20  # rounds; "never reported" counts as this old
FEATURES = ("yhat", "x", "own", "stale_y", "age", "loss", "logF")


@register
class Predicted(Calibrated):
    name = "predicted"
    summary = (
        "a Gaussian process of U_d on stale reports, age and the probe pass, refitted on the "
        "K that trained"
    )
    order = 50
    server_evaluates = (
        "each committed client's update, for the measured U_d its regression trains on"
    )

    def __init__(self, value=None, *, seed=0):
        super().__init__(value, seed=seed)
        self.train_rows: deque[pd.DataFrame] = deque(maxlen=WINDOW)
        self.reported: dict[tuple[str, str], tuple[float, int]] = {}  # (id, d) -> (y, round)
        self._features: pd.DataFrame | None = None

    def features(self, inputs: RoundInputs) -> pd.DataFrame:
        long = self.first_order(inputs)
        p = inputs.probe.set_index(inputs.probe["client_id"].astype(str))
        t = int(inputs.t)
        stale, age = [], []
        for c, d, yh in zip(long["client_id"], long["d"], long["yhat"], strict=True):
            y, r = self.reported.get((c, d), (yh, t - MAX_AGE))
            stale.append(y)
            age.append(min(t - r, MAX_AGE))
        loss = p.loc[long["client_id"], "loss"].to_numpy(dtype=float)
        F = p.loc[long["client_id"], "F"].to_numpy(dtype=float)
        return long.assign(stale_y=stale, age=np.array(age, dtype=float), loss=loss, logF=np.log(F))

    def _design(self, frame: pd.DataFrame, domains) -> np.ndarray:
        onehot = np.column_stack([(frame["d"] == d).to_numpy(dtype=float) for d in domains])
        return np.column_stack([frame[list(FEATURES)].to_numpy(dtype=float), onehot])

    def view(self, inputs: RoundInputs):
        feats = self.features(inputs)
        self._features = feats
        if len(self.train_rows) < 2:
            return self.table(inputs, feats)
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

        data = pd.concat(list(self.train_rows), ignore_index=True)
        X = self._design(data, inputs.domains)
        mu, sd = X.mean(0), X.std(0)
        sd[sd == 0] = 1.0
        kernel = ConstantKernel(1.0) * RBF(np.ones(X.shape[1]), (1e-2, 1e3)) + WhiteKernel(1.0)
        gp = GaussianProcessRegressor(kernel, normalize_y=True, random_state=self.seed)
        with warnings.catch_warnings():  # bounds reached on a length scale: not an error
            warnings.simplefilter("ignore")
            gp.fit((X - mu) / sd, data["y"].to_numpy(dtype=float))
        yhat = gp.predict((self._design(feats, inputs.domains) - mu) / sd)
        return self.table(inputs, feats.assign(yhat=yhat))

    def observe(self, t, trained, inputs=None):
        super().observe(t, trained, inputs)
        if inputs is None or inputs.base_acc is None or self._features is None:
            return
        ids = set(trained["client_id"].astype(str))
        by_id = trained.set_index(trained["client_id"].astype(str))
        rows = self._features[self._features["client_id"].isin(ids)].copy()
        rows["y"] = [
            float(by_id.at[c, f"U_{d}"]) - float(inputs.base_acc[d])
            for c, d in zip(rows["client_id"], rows["d"], strict=True)
        ]
        self.train_rows.append(rows)
        for c, d, y in zip(rows["client_id"], rows["d"], rows["y"], strict=True):
            self.reported[(c, d)] = (float(y), int(t))
        self._features = None
