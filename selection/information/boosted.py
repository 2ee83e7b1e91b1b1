"""``boosted``: ``predicted``'s features and training rows, gradient-boosted trees instead of the GP.

The same per-(client, domain) features as :mod:`.predicted` (the probe's first-order
prediction and raw x_{i,d}, the own-domain flag, the client's last report and its age, the probe
loss, log F) plus the domain and the round, and the same target U_{i,d} − acc_d(w_t) on the
clients that trained in the last ``WINDOW`` rounds; the regressor is scikit-learn's
histogram gradient boosting (absolute-error loss: the bench scores MAE), which handles the
interactions between a report's age and the probe features that the GP's one length scale per
feature does not. Until two rounds of pairs exist it answers like ``probe``. Cost:
``probe``'s (a probe batch per client, K trainings); the server evaluates each committed
client's update, as ``predicted``.
"""

from __future__ import annotations

import numpy as np

from selection.information.base import RoundInputs, register
from selection.information.predicted import Predicted

#: the trees' settings: few, shallow, shrunk (a round has tens of training rows per domain)
TREES = dict(
    loss="absolute_error", max_iter=150, learning_rate=0.08, max_depth=3, min_samples_leaf=8
)


@register
class Boosted(Predicted):
    name = "boosted"
    summary = (
        "gradient-boosted trees of U_d on stale reports, age and the probe pass, refitted on "
        "the K that trained"
    )
    order = 55

    def view(self, inputs: RoundInputs):
        feats = self.features(inputs)
        self._features = feats
        if len(self.train_rows) < 2:
            return self.table(inputs, feats)
        import pandas as pd
        from sklearn.ensemble import HistGradientBoostingRegressor

        data = pd.concat(list(self.train_rows), ignore_index=True)
        model = HistGradientBoostingRegressor(random_state=self.seed, **TREES)
        model.fit(self._design(data, inputs.domains), data["y"].to_numpy(dtype=float))
        yhat = model.predict(self._design(feats, inputs.domains))
        return self.table(inputs, feats.assign(yhat=np.asarray(yhat, dtype=float)))
