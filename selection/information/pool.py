"""``pool:P``: P candidates, drawn as FedAvg draws (∝ n_samples, without replacement), train
at w_t; the selector chooses K of them and their updates are committed without training again.

P trainings per round for K committed (P/K times FedAvg's compute). The draw is seeded by
(run seed, round), so every selector of a study sees the same pools.
"""

from __future__ import annotations

import numpy as np

from selection.errors import SelectionError
from selection.information.base import InformationModel, RoundInputs, register


@register
class Pool(InformationModel):
    name = "pool"
    summary = "P candidates drawn ∝ samples train; K of their updates committed (P trainings)"
    arg = "P"
    arg_example = "10"
    logits = True
    order = 40
    chooses_among_trained = True
    server_evaluates = "each pool candidate's update, at the server"

    def check_k(self, n: int, k: int) -> None:
        if not k <= int(self.value) <= n:
            raise SelectionError(f"pool:{self.value} needs k={k} <= P <= {n} (the clients)")

    def trains_before(self, t, clients, k):
        n = clients["n_samples"].to_numpy(dtype=float)
        self.check_k(len(n), k)
        rng = np.random.default_rng([self.seed, int(t), 0x706F6F6C])
        pick = rng.choice(len(n), int(self.value), replace=False, p=n / n.sum())
        ids = clients["client_id"].to_numpy(dtype=str)
        return [str(c) for c in ids[np.sort(pick)]]

    def view(self, inputs: RoundInputs):
        if inputs.measured is None:
            raise ValueError("pool: the driver measured no candidate before the selection")
        return inputs.measured.assign(measured_round=int(inputs.t), predicted=False)
