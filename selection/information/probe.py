"""``probe``: every client computes at w_t, without training, what a probe batch gives.

Per client and round (a forward and backward pass on its probe batch): the loss, the Fisher
trace F, the label histogram (for B) and the first-order per-domain utilities: the server
holds the per-domain validation gradients g_d = grad L_d(w_t) (one pass over its own
validation data) and the client returns <grad L_i(w_t), g_d> for every d — D numbers; F's
backward pass has already computed grad L_i. The driver scales them to
x_{i,d} = lr · steps_i · <grad L_i, g_d>, the first-order decrease of L_d that client i's
local steps would bring (nats).

The server maps them to predicted utilities, calibrated on the clients that did train (their
true U_{i,d} is measured from the updates they return), over the last ``WINDOW`` rounds:

    U_{i,d} − acc_d(w_t)  ≈  c_d + b_d · x_{i,d} + e_d · [domain(i) = d]

(ridge least squares per domain d, acc_d(w_t) the server's own validation accuracy). Before
any client has trained (round 0) the prediction is acc_d(w_t) plus the within-round z-score
of x_{i,d}, in points. Only the K committed clients train: FedAvg's compute plus one probe
batch per client.
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pandas as pd

from selection.information.base import InformationModel, RoundInputs, register

WINDOW = 5  # rounds of calibration pairs kept
# ridge weight per calibration pair (keeps the 3-parameter fits well posed). It acts in x's
# units (nats), unstandardized: a slope is shrunk by about var(x) / (var(x) + RIDGE), so when
# the clients' x spread less than ~0.03 nats (late in training) the fit leans on the domain
# intercepts and the own-domain term. The committed study (results/study-costs) ran with it.
RIDGE = 1e-3


def ridge_fit(X: np.ndarray, y: np.ndarray, lam: float = RIDGE) -> np.ndarray:
    """Coefficients of y ≈ X @ beta with an unpenalized first column (the intercept).

    Args:
        X: (n, p) design, first column the intercept's ones.
        y: (n,) targets.
        lam: ridge weight per row on the other coefficients.
    """
    n, p = X.shape
    reg = lam * max(n, 1) * np.eye(p)
    reg[0, 0] = 0.0
    return np.linalg.solve(X.T @ X + reg, X.T @ y)


class Calibrated(InformationModel):
    """The probe pass mapped to predicted U_{i,d}: shared by ``probe`` and ``predicted``."""

    probes = True
    reads_probe = True

    def __init__(self, value=None, *, seed=0):
        super().__init__(value, seed=seed)
        self.pairs: deque[pd.DataFrame] = deque(maxlen=WINDOW)
        #: calibrate on the committed clients' measured U_{i,d} (False under secure
        #: aggregation, where no single client's update is evaluated: the first-order
        #: prediction of round 0 is then served every round)
        self.calibrate = True

    def down_messages(self, n_probed, n_trained, n_domains):
        """w_t and the D per-domain validation gradients to every probed client, then w_t
        again with each commit (as Flower's probe and commit messages carry them)."""
        return int(n_probed) * (1 + int(n_domains)) + int(n_trained)

    def probe_floats(self, n_classes, n_domains):
        """Loss, F, the label histogram and the D first-order utilities."""
        return 2 + int(n_classes) + int(n_domains)

    # ------------------------------------------------------------------ calibration data
    @staticmethod
    def _long(inputs: RoundInputs) -> pd.DataFrame:
        """One row per (client, domain): ``client_id, d, x, own`` from the probe pass."""
        p = _need_probe(inputs)
        rows = []
        for d in inputs.domains:
            rows.append(
                pd.DataFrame(
                    {
                        "client_id": p["client_id"].astype(str).to_numpy(),
                        "d": d,
                        "x": p[f"x_{d}"].to_numpy(dtype=float),
                        "own": (p["domain"].astype(str) == d).to_numpy(dtype=float),
                    }
                )
            )
        return pd.concat(rows, ignore_index=True)

    def observe(self, t, trained, inputs=None):
        super().observe(t, trained, inputs)
        if not self.calibrate or inputs is None or inputs.probe is None:
            return
        if inputs.base_acc is None:
            return
        long = self._long(inputs)
        ids = set(trained["client_id"].astype(str))
        long = long[long["client_id"].isin(ids)].copy()
        by_id = trained.set_index(trained["client_id"].astype(str))
        long["y"] = [
            float(by_id.at[c, f"U_{d}"]) - float(inputs.base_acc[d])
            for c, d in zip(long["client_id"], long["d"], strict=True)
        ]
        long["t"] = int(t)
        self.pairs.append(long)

    def first_order(self, inputs: RoundInputs) -> pd.DataFrame:
        """Predicted U_{i,d} − acc_d(w_t) per (client, domain) from the calibration (``yhat``)."""
        long = self._long(inputs)
        data = pd.concat(list(self.pairs), ignore_index=True) if self.pairs else None
        yhat = np.zeros(len(long))
        for d in inputs.domains:
            at = (long["d"] == d).to_numpy()
            x, own = long.loc[at, "x"].to_numpy(), long.loc[at, "own"].to_numpy()
            fit = None if data is None else data[data["d"] == d]
            if fit is None or len(fit) < 3:
                sd = x.std()
                yhat[at] = (x - x.mean()) / sd if sd > 0 else 0.0
                continue
            X = np.column_stack([np.ones(len(fit)), fit["x"], fit["own"]])
            beta = ridge_fit(X, fit["y"].to_numpy(dtype=float))
            yhat[at] = beta[0] + beta[1] * x + beta[2] * own
        return long.assign(yhat=yhat)

    # ------------------------------------------------------------------ the table
    def table(self, inputs: RoundInputs, long: pd.DataFrame) -> pd.DataFrame:
        """The contract table from the probe pass and per-(client, domain) ``yhat``."""
        p = _need_probe(inputs)
        base, sizes = inputs.base_acc, inputs.val_sizes or {}
        wide = long.pivot(index="client_id", columns="d", values="yhat")
        ids = p["client_id"].astype(str).to_numpy()
        out = pd.DataFrame(
            {
                "round": int(inputs.t),
                "client_id": ids,
                "domain": p["domain"].astype(str).to_numpy(),
                "n_samples": p["n_samples"].to_numpy(dtype=np.int64),
            }
        )
        ud = np.column_stack(
            [np.clip(base[d] + wide.loc[ids, d].to_numpy(), 0.0, 100.0) for d in inputs.domains]
        )
        w = np.array([float(sizes.get(d, 1)) for d in inputs.domains])
        out["U"] = ud @ (w / w.sum())
        for j, d in enumerate(inputs.domains):
            out[f"U_{d}"] = ud[:, j]
        own = [inputs.domains.index(d) for d in out["domain"]]
        out["U_own"] = ud[np.arange(len(ids)), own]
        pooled = float(np.dot([base[d] for d in inputs.domains], w / w.sum()))
        out["dU"] = out["U"] - pooled
        for c in ("F", "B", "cos_g", "loss", "steps"):
            if c in p.columns:
                out[c] = p[c].to_numpy()
        out["measured_round"] = int(inputs.t)
        out["predicted"] = True
        return out


def _need_probe(inputs: RoundInputs) -> pd.DataFrame:
    if inputs.probe is None or inputs.base_acc is None:
        raise ValueError("the probe information model needs the driver's probe pass")
    return inputs.probe


@register
class Probe(Calibrated):
    name = "probe"
    summary = (
        "every client's probe batch at w_t (loss, F, labels, first-order U_d); "
        "only the K committed train"
    )
    order = 30

    def view(self, inputs: RoundInputs):
        return self.table(inputs, self.first_order(inputs))
