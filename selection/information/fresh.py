"""``fresh``: every client trains at w_t and is measured — the oracle's upper bound.

U, U_<domain> and the validation logits of a client exist only after it has trained at w_t,
so a round costs N local trainings for K committed updates (the committed ones are reused,
not trained again). No deployment affords this; every output labels it as the upper bound.
"""

from __future__ import annotations

from selection.information.base import InformationModel, RoundInputs, register


@register
class Fresh(InformationModel):
    name = "fresh"
    summary = "every client trains at w_t every round (N trainings for K committed)"
    upper_bound = True
    probes = True  # F and loss of the table come from the probe pass
    logits = True
    order = 10
    server_evaluates = "every candidate's update, at the server"

    def trains_before(self, t, clients, k):
        return [str(c) for c in clients["client_id"]]

    def view(self, inputs: RoundInputs):
        if inputs.measured is None:
            raise ValueError("fresh: the driver measured no client before the selection")
        return inputs.measured.assign(measured_round=int(inputs.t), predicted=False)
