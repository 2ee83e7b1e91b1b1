"""The long-term ε (``eps-lt``): its round is the exact optimum of the drift-plus-penalty
objective, its queues obey the drift-plus-penalty guarantee, its state resumes exactly."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from selection.errors import SelectionError
from selection.problem import SelectionProblem
from selection.selectors import make_selector
from selection.solvers.long_term import (
    QUEUE_PREFIX,
    LongTermEpsSolver,
    LongTermFisherSolver,
    top_k_ratio,
)
from selection.surrogates import get_surrogate
from selection.synthetic import synthetic_stats


def _problem(seed: int, surrogate: str = "mean", n: int = 9, k: int = 3) -> SelectionProblem:
    return SelectionProblem.from_stats(synthetic_stats(n, seed=seed), k, surrogate=surrogate)


def _values(problem: SelectionProblem, sel) -> tuple[float, np.ndarray]:
    """(U(S), U_d(S)) of a selection as the surrogate judges it, by hand."""
    s = get_surrogate(problem.surrogate)
    U, Ud = s.client_values(problem)  # noqa: N806
    w = s.client_weights(problem)[list(sel)]
    return float((w * U[list(sel)]).sum() / w.sum()), (w[:, None] * Ud[list(sel)]).sum(0) / w.sum()


def _subsets(problem):
    return itertools.combinations(range(problem.n), problem.k)


@pytest.mark.parametrize("seed", range(6))
def test_top_k_ratio_is_the_enumerated_optimum(seed):
    rng = np.random.default_rng(seed)
    a, w = rng.normal(size=10), rng.uniform(0.1, 5.0, size=10)
    got = top_k_ratio(a, w, 4)
    best = max(
        (float((w[list(s)] * a[list(s)]).sum() / w[list(s)].sum()), s)
        for s in itertools.combinations(range(10), 4)
    )
    value = float((w[got] * a[got]).sum() / w[got].sum())
    assert value == pytest.approx(best[0], abs=1e-12)


@pytest.mark.parametrize("fisher", [False, True], ids=["eps-lt", "fisher-lt"])
@pytest.mark.parametrize("surrogate", ["mean", "weighted"])
@pytest.mark.parametrize("seed", range(4))
def test_a_round_maximizes_the_drift_plus_penalty_objective(seed, surrogate, fisher):
    """With queues given, the choice is the argmax over every K-subset of
    V·U(S) − Σ_d Q_d (Ū(S) − U_d(S) − ε) (``fisher-lt``: V·F_z(S), F_z averaged with the
    surrogate's weights), computed here from the selection's own values."""
    problem = _problem(seed, surrogate)
    queues = dict(zip(problem.domains, [0.0, 3.0, 11.0, 1.5], strict=True))
    cls = LongTermFisherSolver if fisher else LongTermEpsSolver
    solver = cls(eps=2.0, V=4.0, queues=queues)
    q = np.array([queues[d] for d in problem.domains])
    weights = get_surrogate(surrogate).client_weights(problem)

    def objective(sel):
        u, ud = _values(problem, sel)
        if fisher:
            w = weights[list(sel)]
            u = float((w * problem.F_z[list(sel)]).sum() / w.sum())
        return 4.0 * u - float(q @ (ud.mean() - ud - 2.0))

    best = max(objective(s) for s in _subsets(problem))
    result = solver.solve(problem)
    assert result.ok and len(result.selected) == problem.k
    assert objective(result.selected) == pytest.approx(best, abs=1e-9)
    # the queues moved by the chosen selection's shortfalls, floored at 0
    _, ud = _values(problem, result.selected)
    for d, qd, gd in zip(problem.domains, q, ud.mean() - ud - 2.0, strict=True):
        assert solver.queues[d] == pytest.approx(max(qd + gd, 0.0), abs=1e-12)


def _run(eps: float, V: float, rounds: int, n: int = 8, k: int = 3):  # noqa: N803
    """Rounds of independent synthetic statistics; per round: the choice's U and g, the best
    U among the selections meeting the constraint that round (None if none does), and the
    round's bounds G on |g_d| and R on U's range."""
    solver = LongTermEpsSolver(eps=eps, V=V)
    out = []
    for t in range(rounds):
        problem = _problem(1000 + t, n=n, k=k)
        values = [_values(problem, s) for s in _subsets(problem)]
        g_all = np.array([ud.mean() - ud - eps for _, ud in values])
        u_all = np.array([u for u, _ in values])
        feasible = (g_all <= 1e-12).all(axis=1)
        result = solver.solve(problem)
        u, ud = _values(problem, result.selected)
        out.append(
            dict(
                u=u,
                g=ud.mean() - ud - eps,
                best=float(u_all[feasible].max()) if feasible.any() else None,
                G=float(np.abs(g_all).max()),
                R=float(u_all.max() - u_all.min()),
            )
        )
    return solver, out


@pytest.mark.parametrize("V", [1.0, 10.0, 100.0])
def test_the_drift_plus_penalty_guarantee_holds(V):  # noqa: N803
    """The module docstring's two inequalities, on a run where every round is feasible:
    average U within B/V of the per-round constrained optimum's, and every domain's
    time-averaged shortfall at most Q_d(T+1)/T <= sqrt(2(B + V·R)/T)."""
    # the smallest ε every round can meet: each round's best max_d shortfall, the largest
    eps = max(
        min(float((ud.mean() - ud).max()) for _, ud in (_values(p, s) for s in _subsets(p)))
        for p in (_problem(1000 + t, n=8, k=3) for t in range(60))
    )
    solver, rounds = _run(eps, V, 60)
    T = len(rounds)  # noqa: N806
    assert all(r["best"] is not None for r in rounds)
    D = 4  # noqa: N806
    B = 0.5 * D * max(r["G"] for r in rounds) ** 2  # noqa: N806
    R = max(r["R"] for r in rounds)  # noqa: N806
    avg_u = np.mean([r["u"] for r in rounds])
    assert avg_u >= np.mean([r["best"] for r in rounds]) - B / V - 1e-9
    avg_g = np.mean([r["g"] for r in rounds], axis=0)
    q = np.array(list(solver.queues.values()))
    assert (avg_g <= q / T + 1e-9).all()
    assert (q / T <= math.sqrt(2 * (B + V * R) / T) + 1e-9).all()


def test_the_long_term_constraint_is_met_where_the_myopic_one_costs_utility():
    """Measured on one run: the queues keep every domain's average shortfall near ε while the
    average utility stays at least the per-round constrained optimum's (the myopic ε)."""
    eps = 6.0
    solver, rounds = _run(eps, 5.0, 200)
    avg_g = np.mean([r["g"] for r in rounds], axis=0)
    assert avg_g.max() <= 0.5  # within half a point of the bound after 200 rounds
    feasible = [r for r in rounds if r["best"] is not None]
    assert len(feasible) < len(rounds)  # some rounds could not meet ε on their own
    assert np.mean([r["u"] for r in feasible]) >= np.mean([r["best"] for r in feasible])


def test_state_resumes_exactly_from_history_columns():
    problems = [_problem(50 + t, "weighted") for t in range(12)]
    whole = make_selector("eps-lt:3,7@weighted")
    picks = [whole.choose(p) for p in problems]
    first = make_selector("eps-lt:3,7@weighted")
    for p in problems[:5]:
        first.choose(p)
    row = {"round": 4, "acc_avg": 50.0, **first.state()}  # what the history keeps
    assert set(first.state()) == {f"{QUEUE_PREFIX}{d}" for d in problems[0].domains}
    resumed = make_selector("eps-lt:3,7@weighted")
    resumed.load_state(row)
    assert [resumed.choose(p) for p in problems[5:]] == picks[5:]
    assert resumed.state() == whole.state()


def test_spec_forms_and_refusals():
    solver = make_selector("eps-lt:5,100")._solver
    assert (solver.eps, solver.V) == (5.0, 100.0)
    assert make_selector("eps-lt:5")._solver.V == 10.0
    assert isinstance(make_selector("fisher-lt:3,50")._solver, LongTermFisherSolver)
    with pytest.raises(SelectionError, match="bad selector spec"):
        make_selector("fisher-lt")
    for bad in ("eps-lt", "eps-lt:-1", "eps-lt:5,0", "eps-lt:5,1,2", "eps-lt:x", "eps-lt:inf"):
        with pytest.raises(SelectionError, match="bad selector spec"):
            make_selector(bad)
    with pytest.raises(SelectionError, match="black-box"):
        LongTermEpsSolver(eps=1.0).solve(_ensemble())
    with pytest.raises(SelectionError, match="queue"):
        LongTermEpsSolver(eps=1.0).load_state({f"{QUEUE_PREFIX}mnist": -1.0})


def _ensemble():
    """A problem judged by the black-box ensemble surrogate (synthetic logits)."""
    from selection.synthetic_logits import synthetic_logits

    table, logits = synthetic_logits(6, seed=0, samples_per_domain=20)
    return SelectionProblem.from_stats(table, 2, surrogate="ensemble", logits=logits)


def test_history_records_the_queues_each_round():
    from fl_oracle.experiments.loop import run_training
    from fl_oracle.experiments.plan import plan_run

    from helpers.fake_oracle import FakeOracle

    result = run_training(
        FakeOracle(0, clients_per_domain=3),
        plan_run(
            make_selector("eps-lt:2"), rounds=4, k=3, name="eps-lt:2@stale", stats_mode="stale"
        ),
    )
    h = result.history
    cols = [c for c in h.columns if c.startswith(QUEUE_PREFIX)]
    assert cols == [f"{QUEUE_PREFIX}{d}" for d in ("mnist", "usps", "svhn", "syn")]
    assert (h[cols].to_numpy() >= 0).all() and h[cols].to_numpy().sum() > 0
