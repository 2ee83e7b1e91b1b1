"""``boosted``: ``predicted``'s features and training rows, gradient-boosted trees instead of the GP,
with conformal predictive intervals.

The same per-(client, domain) features as :mod:`.predicted` (the probe's first-order
prediction and raw x_{i,d}, the own-domain flag, the client's last report and its age, the probe
loss, log F, the domain) and the same target y = U_{i,d} − acc_d(w_t) on the clients that
trained in the last ``WINDOW`` rounds; the regressor is scikit-learn's histogram gradient
boosting (absolute-error loss: the bench scores MAE), which fits the interactions between a
report's age and the probe features that the GP's one length scale per feature does not. Until
two rounds of pairs exist it answers like ``probe``. Cost: ``probe``'s (a probe batch per
client, K trainings); the server evaluates each committed client's update, as ``predicted``.

**Intervals** (conformalized quantile regression, Romano et al., NeurIPS '19, run forward in
time): two more boosted regressors of the ``LOWER`` and ``UPPER`` quantiles of y; each round
the clients that trained give conformity scores from the quantiles predicted for them
*before* they trained (s = q_lo − y and y − q_hi), and the next rounds' bounds are corrected
by the scores' empirical quantiles over the last ``WINDOW`` rounds, so that y >= lo with
probability about 1 − LOWER and y <= hi about UPPER (exchangeability across rounds is the
assumption, which drift breaks: the bench reports the coverage attained). The table carries
them as ``lo_<domain>`` and ``hi_<domain>`` (accuracy %, clipped to [0, 100]).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from selection.errors import SelectionError
from selection.information.base import RoundInputs, register
from selection.information.predicted import WINDOW, Predicted

#: the trees' settings: few, shallow, shrunk (a round has tens of training rows per domain)
TREES = dict(max_iter=150, learning_rate=0.08, max_depth=3, min_samples_leaf=8)
LOWER, UPPER = 0.1, 0.9  # the interval's quantiles: 80 % two-sided


def conformal_shift(scores: np.ndarray, level: float) -> float:
    """The ⌈(n + 1)·level⌉-th smallest score (split conformal's finite-sample quantile); 0
    without scores, the largest where n is too small for the level."""
    s = np.sort(np.asarray(scores, dtype=float))
    if len(s) == 0:
        return 0.0
    j = min(int(np.ceil((len(s) + 1) * level)), len(s)) - 1
    return float(s[max(j, 0)])


@register
class Boosted(Predicted):
    name = "boosted"
    summary = (
        "gradient-boosted trees of U_d on stale reports, age and the probe pass, refitted on "
        "the K that trained; conformal 80 % intervals (lo_<d>, hi_<d>)"
    )
    order = 55
    lower, upper = LOWER, UPPER

    def __init__(self, value=None, *, seed=0):
        super().__init__(value, seed=seed)
        self.scores: deque[pd.DataFrame] = deque(maxlen=WINDOW)  # s_lo, s_hi per trained row
        self._bounds: pd.DataFrame | None = None  # this round's q_lo, q_hi per (client, d)

    def _fit(self, data: pd.DataFrame, domains, **loss):
        from sklearn.ensemble import HistGradientBoostingRegressor

        model = HistGradientBoostingRegressor(random_state=self.seed, **TREES, **loss)
        return model.fit(self._design(data, domains), data["y"].to_numpy(dtype=float))

    def predictions(self, inputs: RoundInputs) -> pd.DataFrame:
        """Per (client, domain): the point ``yhat`` and the corrected bounds ``lo``, ``hi``
        (both NaN until two rounds of pairs exist), in y's units."""
        feats = self.features(inputs)
        self._features = feats
        self._bounds = None
        if len(self.train_rows) < 2:
            return feats.assign(lo=np.nan, hi=np.nan)
        data = pd.concat(list(self.train_rows), ignore_index=True)
        X = self._design(feats, inputs.domains)  # noqa: N806
        # hundreds of rows: OpenMP threads only wait on each other (and on a busy machine)
        with threadpool_limits(1, user_api="openmp"):
            yhat = self._fit(data, inputs.domains, loss="absolute_error").predict(X)
            q_lo = self._fit(data, inputs.domains, loss="quantile", quantile=self.lower).predict(X)
            q_hi = self._fit(data, inputs.domains, loss="quantile", quantile=self.upper).predict(X)
        self._bounds = feats[["client_id", "d"]].assign(q_lo=q_lo, q_hi=q_hi)
        past = pd.concat(list(self.scores), ignore_index=True) if self.scores else None
        shift_lo = 0.0 if past is None else conformal_shift(past["s_lo"], 1.0 - self.lower)
        shift_hi = 0.0 if past is None else conformal_shift(past["s_hi"], self.upper)
        return feats.assign(yhat=yhat, lo=q_lo - shift_lo, hi=q_hi + shift_hi)

    def serve(self, pred: pd.DataFrame) -> pd.DataFrame:
        """What the selector's U_d are made of (``yhat``): the point prediction."""
        return pred

    def view(self, inputs: RoundInputs):
        pred = self.predictions(inputs)
        table = self.table(inputs, self.serve(pred))
        wide = {
            side: pred.pivot(index="client_id", columns="d", values=side) for side in ("lo", "hi")
        }
        ids = table["client_id"].astype(str)
        for d in inputs.domains:
            base = float(inputs.base_acc[d])
            for side in ("lo", "hi"):
                v = wide[side].loc[ids, d].to_numpy(dtype=float)
                table[f"{side}_{d}"] = np.clip(base + v, 0.0, 100.0)
        return table

    def observe(self, t, trained, inputs=None):
        """``predicted``'s training rows, and from their targets the conformity scores of the
        bounds predicted for those clients before they trained."""
        bounds, self._bounds = self._bounds, None
        before = self.train_rows[-1] if self.train_rows else None
        super().observe(t, trained, inputs)
        if bounds is None or not self.train_rows or self.train_rows[-1] is before:
            return
        rows = self.train_rows[-1]  # the round's trained (client, domain) rows, with y
        b, y = bounds.loc[rows.index], rows["y"].to_numpy(dtype=float)
        self.scores.append(
            pd.DataFrame({"s_lo": b["q_lo"].to_numpy() - y, "s_hi": y - b["q_hi"].to_numpy()})
        )


@register
class BoostedLowerBound(Boosted):
    """``boosted-lcb:A``: ``boosted`` serving its conformal lower bound at A % as U_d."""

    name = "boosted-lcb"
    summary = (
        "boosted, serving the conformal lower bound at A % as U_d (formulations optimize a "
        "lower confidence bound)"
    )
    arg = "A"
    arg_example = "20"
    order = 56

    @classmethod
    def check_value(cls, value):
        super().check_value(value)
        if not 1 <= int(value) <= 49:
            raise SelectionError(f"information model boosted-lcb:{value}: A is a percent in 1..49")

    def __init__(self, value=None, *, seed=0):
        super().__init__(value, seed=seed)
        self.check_value(value)
        self.lower = int(value) / 100.0

    def serve(self, pred: pd.DataFrame) -> pd.DataFrame:
        """The lower bound where one exists (the point prediction before)."""
        lo = pred["lo"].to_numpy(dtype=float)
        return pred.assign(yhat=np.where(np.isfinite(lo), lo, pred["yhat"].to_numpy()))
