"""Exact where it says optimal: rounds whose sample counts spread log-uniformly over 1 to
2^40 under the weighted surrogate (its weights p_i from 1e-12 to ~1). The float MILP routes'
tolerances cannot resolve them (CBC and HiGHS answered "optimal" with selections that broke
the ε row or missed the optimum); such rounds are now answered by enumeration, saying so,
and refused with the reason where C(N, K) is beyond enumeration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from selection.errors import SelectionError
from selection.problem import SelectionProblem
from selection.solvers.milp.portfolio import MAX_WEIGHT_SPREAD, ill_conditioned, weight_spread
from selection.solvers.registry import solvers

DOMAINS = ("mnist", "usps", "svhn", "syn")
CASES = [("eps", {"eps": e}) for e in (15.0, 30.0, 45.0)] + [
    ("maxmin", {"delta": d}) for d in (2.0, 5.0)
]


def _round(seed: int, max_log2: float, n: int = 12) -> SelectionProblem:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        d = DOMAINS[i % 4]
        u = {f"U_{x}": float(rng.uniform(5, 95)) for x in DOMAINS}
        rows.append({"round": 0, "client_id": f"{d}-{i}", "domain": d,
                     "n_samples": int(2 ** rng.uniform(0, max_log2)), "U": float(np.mean(list(u.values()))),
                     "F": 1.0, "B": 0.1, "cos_g": 0.5, **u})  # fmt: skip
    return SelectionProblem.from_stats(pd.DataFrame(rows), 3, surrogate="weighted")


# seeds where CBC or HiGHS answered wrongly before (found by comparing with enumeration)
EXTREME = (87, 88, 113, 119, 146, 174)


@pytest.mark.parametrize("seed", EXTREME)
def test_extreme_sizes_are_answered_exactly_by_every_route(seed):
    p = _round(seed, 40)
    assert ill_conditioned(p) and weight_spread(p) > MAX_WEIGHT_SPREAD
    for method, kw in CASES:
        exact = solvers()[method](backend="enum", **kw).solve(p)
        for backend in ("auto", "cbc", "highs"):
            got = solvers()[method](backend=backend, **kw).solve(p)
            assert got.backend == "enum" and "enumeration" in got.route_reason
            assert (str(got.status), got.selected) == (str(exact.status), exact.selected)


def test_extreme_sizes_beyond_enumeration_are_refused_with_the_reason():
    p = _round(3, 40, n=60)  # C(60, 3) = 34,220: within enumeration; K = 8 is not
    big = SelectionProblem.from_stats(p.table, 8, surrogate="weighted")
    with pytest.raises(SelectionError, match="weights span .* beyond enumeration"):
        solvers()["eps"](backend="highs", eps=30.0).solve(big)


@pytest.mark.parametrize("seed", range(6))
def test_sizes_within_the_spread_stay_on_the_milp_routes_and_agree(seed):
    p = _round(seed, 19.9)  # spread below 2^19.9 < 1e6
    assert not ill_conditioned(p)
    for method, kw in CASES:
        exact = solvers()[method](backend="enum", **kw).solve(p)
        for backend in ("cbc", "highs"):
            r = solvers()[method](backend=backend, **kw).solve(p)
            assert r.backend == backend and str(r.status) == str(exact.status)
            key = "utility" if method == "eps" else "worst"
            if r.selected:
                assert r.objectives[key] == pytest.approx(exact.objectives[key], abs=1e-6)
