"""The bi-objective branch-and-bound route (``--backend bb``): a whole complete front in one
search with one incumbent front, instead of one ε-MILP per point.

* :mod:`.planes` — the (U, gap) and (U, worst) planes and their Lagrangian bounds;
* :mod:`.relax` — the LP relaxation in HiGHS (one warm-started model);
* :mod:`.staircase` — the incumbent front, its open boxes and the proven ones;
* :mod:`.search` — the search (boxes in objective space, clients in variable space);
* :mod:`.front` — :func:`bb_front`, the front table.

Covers linear surrogates (``mean`` and those with a linear view); no f_min / b_max rows.
"""

from selection.solvers.bb.front import BB_REASON, bb_front, bb_search

__all__ = ["BB_REASON", "bb_front", "bb_search"]
