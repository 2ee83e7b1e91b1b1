"""``oort:eps``: Oort's guided participant selection (Lai et al., OSDI '21, Algorithm 1).

The statistical utility of a client is what it reported when it last trained,
U_i = |B_i| · sqrt(mean_{k∈B_i} loss_k²) (the paper's eq. 1, |B_i| its samples). Each round R
(from 1) the rule, as the authors' training selector (``oort/oort.py``, ``getTopK``) does it:

1. decays the exploration fraction, ε ← max(ε · 0.98, 0.2) (ε starts at ``eps``, the paper's
   0.9);
2. scores every explored client (one that trained before) by its utility, clipped at the 95th
   percentile and min-max normalized, plus the temporal uncertainty sqrt(0.1 · ln R / L_i),
   L_i the round it last took part;
3. exploits: ⌊(1 − ε)K⌋ clients drawn without replacement ∝ score among the explored clients
   whose score is at least c = 0.95 of the cut-off (the score right after the top ⌊(1 − ε)K⌋);
4. explores: the remaining slots from the never-picked clients, drawn ∝ their size among the
   5× as many largest ("prioritize with some rewards, i.e. size");
5. fills any slot left uniformly, and records the picks' utilities and round.

What fedsel changes, having no system heterogeneity: no duration term, pacer or blacklist (every
client is as fast as every other). The utility uses the mean loss of the client's probe batch
at w_t, the number the picks report (charged as their probe pass, as ``qffl``'s): |B_i| times
the mean loss, not the root mean square of the per-sample losses (a lower bound by Jensen's
inequality; fedsel's probe reports the mean). The rule reads only its own picks' losses, after
it picked them: what a deployment's server learns from the clients it trained.

Aggregation as the authors run it (FedScale, ``fedscale/cloud/aggregation/aggregator.py``,
``aggregate_client_weights``: the picks' weights are summed and divided by the number of
participants, "Importance of each update is 1/#_of_participants"): 1/K each.
``oort:0.9@agg=samples`` runs it with sample weights (an ablation).
"""

from __future__ import annotations

import math

import numpy as np

from selection.baselines.base import Baseline, register
from selection.baselines.reads import Reads
from selection.errors import SelectionError

DECAY = 0.98  # ε per round
EPS_MIN = 0.2  # the floor of ε
CUT_OFF = 0.95  # c: exploitation candidates within this share of the cut-off score
CLIP = 0.95  # utilities clipped at this quantile
WINDOW = 5.0  # exploration draws among this many times the slots, the largest clients


@register
class Oort(Baseline):
    name = "oort"
    summary = "Oort: past picks' loss utility + staleness bonus, exploring ε of K (decays to 0.2)"
    arg = "eps"
    arg_example = "0.9"
    minimum = 0.0
    order = 70
    reads = Reads.PROBE_PICKS
    aggregation = "uniform"

    def __init__(self, spec: str, value: float | None = None) -> None:
        super().__init__(spec, value)
        if value is None or not 0.0 <= float(value) <= 1.0:
            raise SelectionError(f"{spec}: eps={value!r} must lie in [0, 1]")
        self.eps = float(value)
        self.eps_min = EPS_MIN
        self.round = 0
        self.utility: dict[str, float] = {}  # client id -> U_i when it last trained
        self.last: dict[str, int] = {}  # client id -> the round it last took part (from 1)

    def scores(self, ids) -> dict[str, float]:
        """Exploitation scores of the explored clients among ``ids`` at the current round."""
        explored = [c for c in ids if c in self.utility]
        if not explored:
            return {}
        r = np.sort([self.utility[c] for c in explored])
        clip = float(r[min(int(len(r) * CLIP), len(r) - 1)])
        lo = float(r.min()) * 0.999
        span = max(float(r.max()) - lo, 1e-4)
        log_r = math.log(self.round)
        return {
            c: (min(self.utility[c], clip) - lo) / span + math.sqrt(0.1 * log_r / self.last[c])
            for c in explored
        }

    def pick(self, problem, rng):
        k = problem.k
        ids = [str(c) for c in problem.ids]
        pos = {c: i for i, c in enumerate(ids)}
        self.round += 1
        score = self.scores(ids)
        self.eps = max(self.eps * DECAY, self.eps_min)
        exploit = min(int(k * (1.0 - self.eps)), len(score))
        ranked = sorted(score, key=lambda c: (-score[c], pos[c]))
        picked: list[str] = []
        if exploit:
            cut = score[ranked[exploit]] * CUT_OFF if exploit < len(ranked) else -math.inf
            lake = [c for c in ranked if score[c] >= cut]
            w = np.array([score[c] for c in lake])
            picked = [lake[j] for j in rng.choice(len(lake), exploit, replace=False, p=w / w.sum())]
        fresh = [c for c in ids if c not in self.utility]
        if fresh:
            size = problem.n_samples
            slots = min(len(fresh), k - len(picked))
            window = sorted(fresh, key=lambda c: (-size[pos[c]], pos[c]))
            window = window[: max(slots, min(int(WINDOW * slots), len(window)))]
            w = np.array([float(size[pos[c]]) for c in window])
            picked += [
                window[j] for j in rng.choice(len(window), slots, replace=False, p=w / w.sum())
            ]
        else:  # nothing left to explore
            self.eps = self.eps_min = 0.0
        rest = [c for c in ids if c not in set(picked)]
        if len(picked) < k:
            picked += [rest[j] for j in rng.choice(len(rest), k - len(picked), replace=False)]
        self._observe(problem, picked, pos)
        return np.array(sorted(pos[c] for c in picked), dtype=np.int64)

    def _observe(self, problem, picked: list[str], pos: dict[str, int]) -> None:
        """The picks train and report their loss: their utility and round are kept."""
        loss = self.losses(problem, [pos[c] for c in picked], minimum=0.0)
        for c in picked:
            i = pos[c]
            self.utility[c] = float(problem.n_samples[i]) * float(loss[i])
            self.last[c] = self.round
