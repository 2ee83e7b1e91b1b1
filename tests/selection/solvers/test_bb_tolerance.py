"""The bi-objective branch-and-bound within a tolerance, and its anytime certificate: every
point of the exact front (enumeration) lies within the certificate of the returned front."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from selection.problem import SelectionProblem
from selection.solvers.base import SweepOptions
from selection.solvers.bb import bb_front
from selection.solvers.bb.certificate import certified_gap, worst_corner
from selection.solvers.bb.front import bb_search
from selection.solvers.bb.planes import PLANES
from selection.solvers.bb.staircase import Proven, Staircase
from selection.solvers.exhaustive import exact_front
from selection.solvers.sweeps import sweep_eps
from selection.synthetic import FAMILIES

from helpers.cli import run_fedsel

OBJECTIVES = [("utility", "gap"), ("utility", "worst")]


def _problem(family: str, n: int, k: int, seed: int) -> SelectionProblem:
    return SelectionProblem.from_stats(FAMILIES[family](n, seed=seed), k)


def _g(points: np.ndarray, column: str) -> np.ndarray:
    """(U, second objective) rows -> (U, g) with g minimized (worst negated)."""
    return np.column_stack([points[:, 0], PLANES[column].sign * points[:, 1]])


def _distance(exact: np.ndarray, got: np.ndarray) -> float:
    """How far the farthest exact point (U, g) lies from ``got``: min over got of the larger
    of its shortfall in U and its excess in g (0 where one dominates it)."""
    d = [np.maximum(u - got[:, 0], got[:, 1] - g).clip(min=0).min() for u, g in exact]
    return float(max(d))


@pytest.mark.parametrize("family", [*FAMILIES, "float"])
@pytest.mark.parametrize("objectives", OBJECTIVES)
@pytest.mark.parametrize("tau,time_limit", [(0.3, None), (2.0, None), (0.3, 60.0)])
def test_a_tolerant_front_is_within_its_certificate(
    make_problem, family, objectives, tau, time_limit
):
    if family == "float":  # no value grid: within the float tolerance
        p = make_problem(22, 4, seed=3, kind="random")
    else:
        p = _problem(family, 22, 4, seed=3)
    col = objectives[1]
    exact = _g(exact_front(p, objectives)[list(objectives)].to_numpy(float), col)
    front = bb_front(p, objectives, tolerance=tau, time_limit=time_limit)
    got = _g(front[list(objectives)].to_numpy(float), col)
    c = front.attrs["certified"]
    assert front.attrs["complete"] and front.attrs["tolerance"] == tau
    assert 0 <= c <= tau + 1e-9
    assert _distance(exact, got) <= c + 1e-6
    # every returned point is a real selection: none beats the exact front
    for u, g in got:
        assert u <= exact[exact[:, 1] <= g + 1e-9, 0].max() + 1e-6
    np.testing.assert_allclose(front["bound"], front["utility"] + c)
    assert front.attrs["max_off"] == c == front.attrs["gap_slack"]
    assert set(front["status"]) == {"optimal" if c == 0 else "feasible"}


@pytest.mark.parametrize("objectives", OBJECTIVES)
def test_boxes_handed_to_a_tolerant_mip_stay_within_the_certificate(monkeypatch, objectives):
    """No LP budget: every box goes to its MIP (the ε route's CBC with the tolerance on the gap
    plane, C(30, 6) above the enumeration limit; HiGHS with an absolute gap on the worst)."""
    from selection.solvers.bb import search

    monkeypatch.setattr(search, "BOX_LPS", 0)
    p = _problem("cross-penalty", 30, 6, seed=1)
    col = objectives[1]
    exact = _g(exact_front(p, objectives)[list(objectives)].to_numpy(float), col)
    front = bb_front(p, objectives, tolerance=0.5)
    assert front.attrs["mips"] > 0 and front.attrs["complete"]
    assert front.attrs["certified"] <= 0.5 + 1e-9
    got = _g(front[list(objectives)].to_numpy(float), col)
    assert _distance(exact, got) <= front.attrs["certified"] + 1e-6


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("plane", PLANES)
@pytest.mark.parametrize("time_limit", [None, 60.0])
def test_the_certificate_holds_at_every_moment_and_never_grows(family, plane, time_limit):
    """Each snapshot the search hands on (the front then, its certificate then) is valid
    against enumeration, and the certificates only shrink, down to 0 at the exact front; in
    both orders of the boxes (a time limit takes the anytime order)."""
    p = _problem(family, 26, 5, seed=2)
    objectives = ("utility", PLANES[plane].column)
    exact = _g(exact_front(p, objectives)[list(objectives)].to_numpy(float), plane) * p.k
    snaps = []
    out = bb_search(p, plane, time_limit=time_limit, on_certificate=snaps.append)
    assert len(snaps) >= 3 and out.complete and out.certified == 0
    certs = [s.certified for s in snaps]
    assert certs == sorted(certs, reverse=True) and certs[-1] == 0 and certs[0] > 0
    for s in snaps:
        got = np.array([(u, g) for g, u in s.points])
        assert _distance(exact, got) <= s.certified + 1e-6
    seconds = [h[0] for h in out.history]
    assert seconds == sorted(seconds) and [h[2] for h in out.history] == certs


@pytest.mark.parametrize("objectives", OBJECTIVES)
def test_a_stopped_search_keeps_a_valid_certificate(objectives):
    p = _problem("near-tied", 26, 5, seed=4)
    front = bb_front(p, objectives, time_limit=1e-9)  # stops at once
    c = front.attrs["certified"]
    assert not front.attrs["complete"] and 0 < c < math.inf
    col = objectives[1]
    exact = _g(exact_front(p, objectives)[list(objectives)].to_numpy(float), col)
    got = _g(front[list(objectives)].to_numpy(float), col)
    assert _distance(exact, got) <= c + 1e-6
    assert (front["status"] == "feasible").all() and "stopped" in front["message"].iloc[0]


def test_the_sweep_rows_state_their_bound_at_their_eps():
    """sweep_eps(complete, backend="bb", tolerance): at each row's ε the exact front's max U
    is at most the row's bound, and the progress line says the certificate."""
    p = _problem("cross-penalty", 24, 4, seed=1)
    exact = exact_front(p)
    said = []
    front = sweep_eps(
        p,
        complete=True,
        options=SweepOptions(backend="bb", tolerance=0.5, progress=lambda *a: said.append(a)),
    )
    assert front.attrs["certified"] <= 0.5 and (front["backend"] == "bb").all()
    for param, bound in zip(front["param"], front["bound"], strict=True):
        eps = float(param.split("=")[1])
        assert exact.loc[exact["gap"] <= eps + 1e-9, "utility"].max() <= bound + 1e-6
    assert said and said[-1][2].startswith("bb front: within ")
    stopped = sweep_eps(
        p, complete=True, options=SweepOptions(backend="bb", tolerance=0.5, time_limit=1e-9)
    )
    assert not stopped.attrs["complete"]


def test_auto_takes_bb_for_a_tolerant_complete_sweep_from_its_n(monkeypatch):
    from selection.solvers import sweeps

    p = _problem("cross-penalty", 24, 4, seed=1)
    assert p.n < sweeps.BB_TOLERANCE_MIN_N  # below it: the ε loop
    assert (
        sweep_eps(p, complete=True, options=SweepOptions(tolerance=0.5))["backend"] != "bb"
    ).all()
    monkeypatch.setattr(sweeps, "BB_TOLERANCE_MIN_N", 20)
    got = sweep_eps(p, complete=True, options=SweepOptions(tolerance=0.5))
    assert (got["backend"] == "bb").all() and got.attrs["certified"] <= 0.5
    assert got["route_reason"].iloc[0].startswith("auto: a complete front within --tolerance")
    # not without a tolerance, nor with rows bb does not take
    assert (sweep_eps(p, complete=True)["backend"] != "bb").all()
    assert (
        sweep_eps(p, complete=True, options=SweepOptions(tolerance=0.5, f_min=0.0))["backend"]
        != "bb"
    ).all()


def test_certified_gap_by_hand():
    """Two incumbents (g, U) = (2, 5), (6, 9) on a grid of 1, no selection has g < 0."""
    s = Staircase(0.5, 0.5, 0.99, 0.99)
    s.insert(2.0, 5.0, (0,))
    s.insert(6.0, 9.0, (1,))
    pr = Proven()
    # nothing proven: a selection may sit at (0, 9): 4 from (2, 5), 6 from (6, 9)
    assert certified_gap(s, pr, g_floor=0.0) == pytest.approx(4.0)
    assert worst_corner(s, pr, g_floor=0.0) == pytest.approx((4.0, 0.0, 9.0))
    pr.add(5.01, 7.99)  # none with g <= 5 and U >= 8: the worst is (0, 7), 2 from (2, 5)
    assert certified_gap(s, pr, g_floor=0.0) == pytest.approx(2.0)
    pr.add(1.01, -math.inf)  # none with g <= 1: (2, 7) is still 2 from (2, 5)
    assert worst_corner(s, pr, g_floor=0.0) == pytest.approx((2.0, 2.0, 7.0))
    pr.add(5.01, 5.99)  # none with g <= 5 and U >= 6: the incumbents are the front
    assert certified_gap(s, pr, g_floor=0.0) == 0.0


def test_cli_sweep_complete_backend_bb_tolerance(tmp_path, capsys):
    stats = tmp_path / "stats.csv"
    FAMILIES["near-tied"](30, seed=2).to_csv(stats, index=False)
    out = tmp_path / "f"
    base = ["sweep", "-s", stats, "-k", 3, "-m", "eps", "-o", out, "--complete", "--backend", "bb"]
    code, _, err = run_fedsel([*base, "--tolerance", 0.5, "--no-progress"], capsys)
    assert code == 0, err
    front = pd.read_csv(out / "front.csv")
    c = float((front["bound"] - front["utility"]).max())
    assert 0 <= c <= 0.5 and (front["backend"] == "bb").all()
    assert f"U >= U* - {c:.4g} pp and gap <= gap* + {c:.4g} pp" in err
    assert "stopped" not in err
    code, _, err = run_fedsel([*base, "--time-limit", 1e-9, "--no-progress", "--overwrite"], capsys)
    assert code == 0, err
    assert "every exact front point (U*, gap*)" in err and "stopped at --time-limit" in err
