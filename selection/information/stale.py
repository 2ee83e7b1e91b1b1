"""``stale``: the last values each client reported, with their age.

Only the K committed clients train (FedAvg's cost); their statistics, measured from the
updates they return, replace their old rows. The selector sees every client's last report,
``measured_round`` (and ``age`` = t − measured_round) telling how old it is. Round 0 has no
reports yet: every client trains once there (N trainings, charged); a client first heard
from later (a node joining a Flower run, or one whose first report failed) trains once then.
"""

from __future__ import annotations

from selection.information.base import InformationModel, RoundInputs, latest, register


@register
class Stale(InformationModel):
    name = "stale"
    summary = "each client's last report and its age; only the K committed train"
    logits = True
    remembers = True
    order = 20
    server_evaluates = "each committed client's update, for its report"

    def trains_before(self, t, clients, k):
        ids = [str(c) for c in clients["client_id"]]
        missing = [c for c in ids if c not in self.memory]
        return missing or None

    def view(self, inputs: RoundInputs):
        t = int(inputs.t)
        if inputs.measured is not None:
            self.observe(t, inputs.measured, inputs)
        # a client never heard from (its report failed) has no row to show
        ids = [str(c) for c in inputs.clients["client_id"] if str(c) in self.memory]
        table = latest(self.memory, ids)
        table["round"] = t
        table["age"] = t - table["measured_round"].astype(int)
        return table.assign(predicted=False)
