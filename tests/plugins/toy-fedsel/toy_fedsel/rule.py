"""A baseline rule from outside fedsel: the K clients whose labels diverge least.

The package's entry point in the ``fedsel.baselines`` group names the class itself; fedsel
registers it when it reads its registry.
"""

import numpy as np

from selection.baselines import Baseline


class LowestDivergence(Baseline):
    """The K clients whose labels diverge least from the federation's (smallest B)."""

    name = "toy-lowest-b"
    summary = "the K smallest label divergences B (a plugin)"
    arg = "m"  # a tie-break margin on U
    arg_example = "0"
    study_entry = "toy-lowest-b:0"
    order = 95

    def pick(self, problem, rng):
        return np.argsort(problem.B + self.value * problem.U, kind="stable")[: problem.k]
