"""Extending fedsel from one file: a toy linear surrogate and a toy MILP backend, each checked
against enumeration through the public solvers, the complete ε sweep and the CLI.

The code between the ``--8<--`` markers is what the how-to pages ("add a surrogate", "add a
MILP backend") include (pymdownx.snippets sections ``toy-surrogate`` and ``toy-backend``), so
each toy carries its own imports. Each registers itself when this module is imported; the
registration is taken back at once and made again, per test, by a fixture.
"""

# ruff: noqa: E402  (the how-to snippets below carry their own imports)

# --8<-- [start:toy-surrogate]
from selection.surrogates import Surrogate, register


@register
class ShrunkSurrogate(Surrogate):
    """A toy ``linear`` surrogate: single-client utilities shrunk toward the round's mean.

    One round's measurement of a small client is noisy, so it is trusted less:
    v_{i,d} = m_d + λ_i (U_{i,d} − m_d), with m_d the mean over the round's clients and
    λ_i = n_i / (n_i + n_0). U_d(S) = mean_{i∈S} v_{i,d} (and U(S) alike) is linear in x at
    fixed K: the exact routes read v from :meth:`client_values`, enumeration calls
    :meth:`block`.
    """

    name = "shrunk"
    structure = "linear"
    summary = "mean of U_{i,d} shrunk toward the round's mean, small clients most (linear)"
    prior_samples = 200.0  # n_0: a client of this size keeps half its distance to the mean

    def client_values(self, problem):
        lam = problem.n_samples / (problem.n_samples + self.prior_samples)
        U = problem.U.mean() + lam * (problem.U - problem.U.mean())
        Ud = problem.Ud.mean(axis=0) + lam[:, None] * (problem.Ud - problem.Ud.mean(axis=0))
        return U, Ud

    def block(self, problem, idx, *, need_ud=True):
        U, Ud = self.client_values(problem)  # idx: (M, K) client indices, one row a selection
        return U[idx].mean(axis=1), (Ud[idx].mean(axis=1) if need_ud else None)


# --8<-- [end:toy-surrogate]

# --8<-- [start:toy-backend]
from scipy.optimize import Bounds, LinearConstraint, milp

from selection.solvers.milp.model import LexBackend, register_backend


@register_backend("scipy")
class ScipyBackend(LexBackend):
    """A toy MILP backend on ``scipy.optimize.milp`` (the HiGHS build SciPy ships).

    ``milp`` takes the whole model on every call, so the persistent model is the spec's arrays
    with the current row bounds. HiGHS stops each stage at the relative gap ``mip_gap`` (0
    unless the solver asks for one) and its default absolute gap, 1e-6 in model units; SciPy
    takes no warm start (``hint``), seed or thread count, and no absolute gap (a stage's
    ``stop_gap`` or a ``tolerance`` is not used: each stage is solved to optimality).
    """

    def _build(self):
        spec = self.spec
        self._lo, self._up = spec.row_lo.copy(), spec.row_up.copy()
        self._box = Bounds(spec.col_lo, spec.col_up)

    def _set_row_bounds(self, row, lo, up):
        self._lo[row], self._up[row] = lo, up

    def _optimize(self, c, time_limit, hint):
        options = {"mip_rel_gap": self.mip_gap}
        if time_limit is not None:
            options["time_limit"] = max(time_limit, 0.0)
        rows = LinearConstraint(self.spec.A, self._lo, self._up)
        res = milp(
            -c, integrality=self.spec.integer, bounds=self._box, constraints=rows, options=options
        )
        if res.mip_dual_bound is not None:  # milp minimizes -c·v: minus its bound bounds c·v
            self.last_bound = -res.mip_dual_bound
        value = float("nan") if res.fun is None else -res.fun
        # every column is bounded, so HiGHS's "unbounded or infeasible" means infeasible
        if res.status == 2 or "unbounded or infeasible" in res.message:
            return "infeasible", None, value
        kind = {0: "optimal", 1: "limit"}.get(res.status, f"error:{res.message}")
        return kind, res.x, value


# --8<-- [end:toy-backend]

import json
import math

import numpy as np
import pytest

from selection.objectives import evaluate
from selection.problem import SelectionProblem
from selection.solvers.base import SweepOptions
from selection.solvers.exhaustive import enumerate_table, exact_front
from selection.solvers.milp.registry import _REGISTRY
from selection.solvers.registry import make_solver
from selection.solvers.sweeps import sweep_eps
from selection.surrogates.base import _INSTANCES, SURROGATES
from selection.synthetic import synthetic_stats

from helpers.cli import run_fedsel

# Importing this module registered both toys; the fixtures below register them per test
# (other test modules see the built-in registries only).
SURROGATES.pop(ShrunkSurrogate.name)
_REGISTRY.pop(ScipyBackend.name)


@pytest.fixture
def shrunk():
    register(ShrunkSurrogate)
    yield ShrunkSurrogate.name
    SURROGATES.pop(ShrunkSurrogate.name)
    _INSTANCES.pop(ShrunkSurrogate.name, None)


@pytest.fixture
def scipy_backend():
    register_backend("scipy")(ScipyBackend)
    yield "scipy"
    _REGISTRY.pop("scipy")


def _problem(seed: int, k: int, surrogate: str = "mean") -> SelectionProblem:
    return SelectionProblem.from_stats(synthetic_stats(12, seed=seed), k, surrogate=surrogate)


def _eps_grid(p: SelectionProblem) -> list[float | None]:
    """None (no gap bound), five ε each midway between two neighbouring gaps of selections (so
    no answer hangs on a tolerance) from the smallest to the largest, and one ε below every
    gap (infeasible)."""
    gaps = np.unique(np.round(enumerate_table(p)["gap"], 9))
    mids = (gaps[1:] + gaps[:-1]) / 2
    return [None, *mids[np.linspace(0, len(mids) - 1, 5).astype(int)].tolist(), float(gaps[0]) / 2]


def _agree(results, keys) -> None:
    """Every result has the first one's status and objective values (ties may pick other
    selections)."""
    ref = results[0]
    for r in results[1:]:
        assert r.status == ref.status, (r.backend, r.param, r.status, ref.status)
        for key in keys:
            got, want = r.objectives.get(key), ref.objectives.get(key)
            assert got == pytest.approx(want, abs=1e-6), (r.backend, r.param, key)


def _same_front(front, exact) -> None:
    front = front[front["status"] == "optimal"].sort_values("utility", ascending=False)
    assert front.attrs["exact"]
    np.testing.assert_allclose(front["utility"], exact["utility"], atol=1e-6)
    np.testing.assert_allclose(front["gap"], exact["gap"], atol=1e-6)


# -- the toy surrogate ------------------------------------------------------------------


def test_fedsel_methods_lists_the_toy_surrogate(shrunk, capsys):
    code, out, err = run_fedsel(["methods"], capsys)
    assert code == 0, err
    line = next(s for s in out.splitlines() if s.split()[:1] == [shrunk])
    assert line.split()[1] == "linear" and ShrunkSurrogate.summary in line


def test_toy_surrogate_values_by_hand(shrunk):
    p = _problem(1, 3, shrunk)
    sel = [0, 1, 5]
    lam = p.n_samples / (p.n_samples + ShrunkSurrogate.prior_samples)
    m = p.Ud.mean(axis=0)
    want = (m + lam[:, None] * (p.Ud - m))[sel].mean(axis=0)
    got = evaluate(p, sel)
    assert [got[f"U_{d}"] for d in p.domains] == pytest.approx(want, abs=1e-12)
    assert got["gap"] == pytest.approx(np.ptp(want), abs=1e-12)
    # another max-U selection than the mean's: the small usps-0 (client 1) loses its place
    top = make_solver("eps", backend="enum").solve(p).selected
    assert 1 in make_solver("eps", backend="enum").solve(_problem(1, 3)).selected
    assert 1 not in top


@pytest.mark.parametrize(("seed", "k"), [(2, 3), (3, 4)])
def test_toy_surrogate_eps_and_maxmin_every_route_equals_enumeration(shrunk, seed, k):
    p = _problem(seed, k, shrunk)
    routes = ("enum", "highs", "cbc")
    for eps in _eps_grid(p):
        _agree(
            [make_solver("eps", eps=eps, backend=b).solve(p) for b in routes], ("utility", "gap")
        )
    for delta in (0.0, 1.0, 4.0, math.inf):
        rows = [make_solver("maxmin", delta=delta, backend=b).solve(p) for b in routes]
        _agree(rows, ("worst", "utility"))


def test_toy_surrogate_complete_sweep_equals_the_exact_front(shrunk):
    p = _problem(2, 4, shrunk)
    exact = exact_front(p, ("utility", "gap"))
    for route in ("highs", "cbc", "bb"):  # bb: the one tree reads the same linear view
        _same_front(sweep_eps(p, complete=True, options=SweepOptions(backend=route)), exact)


# -- the toy backend --------------------------------------------------------------------


@pytest.mark.parametrize(("seed", "k"), [(2, 3), (3, 4)])
def test_toy_backend_equals_highs_and_enumeration(scipy_backend, seed, k):
    p = _problem(seed, k)
    routes = ("enum", "highs", scipy_backend)
    for eps in _eps_grid(p):
        _agree(
            [make_solver("eps", eps=eps, backend=b).solve(p) for b in routes], ("utility", "gap")
        )
    for delta in (0.0, 1.0, 4.0, math.inf):
        rows = [make_solver("maxmin", delta=delta, backend=b).solve(p) for b in routes]
        _agree(rows, ("worst", "utility"))
        rows = [make_solver("fisher-fair", delta=delta, backend=b).solve(p) for b in routes]
        _agree(rows, ("sum_Fz", "utility"))
    r = make_solver("eps", eps=5.0, backend=scipy_backend).solve(p)
    assert r.backend == "scipy" and r.route_reason == "given by --backend"


def test_toy_backend_complete_sweep_equals_highs_and_the_exact_front(scipy_backend):
    p = _problem(2, 4)
    exact = exact_front(p, ("utility", "gap"))
    for route in ("highs", scipy_backend):
        _same_front(sweep_eps(p, complete=True, options=SweepOptions(backend=route)), exact)


def test_toy_backend_honours_the_time_limit(scipy_backend):
    p = SelectionProblem.from_stats(synthetic_stats(1000, seed=0), 100)  # a hard ε point
    r = make_solver("eps", eps=3.0, backend=scipy_backend, time_limit=0.5).solve(p)
    assert r.status in ("time_limit", "optimal") and r.seconds < 5.0
    if r.selected:  # the incumbent, and the HiGHS bound on its U where one was reported
        assert len(r.selected) == 100 and not r.bound < r.objectives["utility"] - 1e-9


# -- both toys, through the CLI ---------------------------------------------------------


def test_both_toys_through_fedsel_solve(shrunk, scipy_backend, tmp_path, capsys):
    stats = tmp_path / "stats.csv"
    synthetic_stats(12, seed=4).to_csv(stats, index=False)
    p = SelectionProblem.from_stats(stats, 3, surrogate=shrunk)
    eps = _eps_grid(p)[3]
    want = make_solver("eps", eps=eps, backend="enum").solve(p).objectives
    argv = ["solve", "-s", stats, "-k", 3, "-m", "eps", "--eps", eps, "--json"]
    code, out, err = run_fedsel([*argv, "--surrogate", shrunk, "--backend", scipy_backend], capsys)
    assert code == 0, err
    res = json.loads(out)
    assert (res["surrogate"], res["backend"], res["status"]) == (shrunk, "scipy", "optimal")
    assert res["objectives"]["utility"] == pytest.approx(want["utility"], abs=1e-6)
    assert res["objectives"]["gap"] == pytest.approx(want["gap"], abs=1e-6)


def test_a_linear_surrogate_takes_the_linear_routes_by_its_structure(shrunk):
    """No route compares the surrogate's name: a linear one is solved as the mean problem over
    its per-client values (persistent models, value grid, the portfolio), never by the
    fractional stages, with the surrogate's own objectives reported."""
    p = _problem(3, 4, "shrunk")
    view = p.linear_view()
    assert view is p.linear_view() and view.surrogate == "mean" and view.linear_view() is view
    U, Ud = SURROGATES["shrunk"]().client_values(p)
    assert np.allclose(view.U, U) and np.allclose(view.Ud, Ud)
    mean = _problem(3, 4)
    assert mean.linear_view() is mean  # its values are its own
    for backend in ("highs", "cbc"):
        r = make_solver("maxmin", delta=1.0, backend=backend).solve(p)
        ref = make_solver("maxmin", delta=1.0, backend=backend).solve(view)
        assert r.selected == ref.selected and "fractional" not in r.route_reason
        assert r.objectives["worst"] == pytest.approx(ref.objectives["worst"], abs=1e-9)
    auto = make_solver("eps", eps=5.0, backend="auto", enum_limit=0).solve(p)
    assert "fractional" not in auto.route_reason and auto.backend == "cbc"


def test_fedsel_methods_lists_the_toy_backend(scipy_backend, capsys):
    code, out, _ = run_fedsel(["methods"], capsys)
    assert code == 0
    listed = out.split("MILP backends")[1]
    assert "scipy" in listed and "highs" in listed and "float data" in listed
