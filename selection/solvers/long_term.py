"""``eps-lt:E[,V]``: the ε-constraint held over the run, by virtual queues (drift-plus-penalty).

The myopic ``eps:E`` asks every round for a small gap, so a round whose strong domain could
gain most is never spent on it (the committed studies: ε entries starve MNIST). Here the
fairness constraint binds the *time average* instead. For every domain d the round's shortfall
of that domain below the domain mean is

    g_d(S) = Ū(S) − U_d(S) − ε,    Ū(S) = (1/D) Σ_d U_d(S),

and the long-term constraint is  lim sup (1/T) Σ_t g_d(S_t) <= 0  for every d: on average over
the rounds, no domain's utility lies more than ε points below the domain mean. Neely's
drift-plus-penalty (Stochastic Network Optimization, 2010, §3) keeps a virtual queue per domain,

    Q_d(t+1) = max(Q_d(t) + g_d(S_t), 0),    Q_d(1) = 0,

and each round solves

    max_{|S| = K}  V·U(S) − Σ_d Q_d(t)·g_d(S),

which under a ``linear`` surrogate is linear in the selection: the K largest per-client
scores a_i = V·U_i + Σ_d Q_d(t)·(U_{i,d} − Ū_i), exactly (ties to the lower index). Under a
``linear-fractional`` surrogate (``weighted``: U_d(S) = Σ_S w_i v_i / Σ_S w_i) the objective is
the ratio Σ_S w_i a_i / Σ_S w_i, maximized exactly by Dinkelbach's iteration with the top-K
of w_i (a_i − λ) as its inner step (finite for 0-1 problems). Black-box surrogates are refused.

**The guarantee** (deterministic, any sequence of rounds; ``test_long_term.py`` checks both
inequalities on random runs). Let L(t) = ½ Σ_d Q_d(t)², G a bound on |g_d|, B = ½·D·G², and
R the range of U. Since max(q + g, 0)² <= (q + g)², L(t+1) − L(t) <= B + Σ_d Q_d(t) g_d(S_t).
The round's choice maximizes V·U − Σ Q_d g_d, so for any S'_t with g_d(S'_t) <= 0 for all d
(a round where the per-round constraint is feasible):

    L(t+1) − L(t) − V·U(S_t) <= B + Σ_d Q_d(t) g_d(S'_t) − V·U(S'_t) <= B − V·U(S'_t).

Summed over T rounds (L(1) = 0, L(T+1) >= 0), if every round is feasible:

1. (1/T) Σ_t U(S_t) >= (1/T) Σ_t U(S'_t) − B/V: the average utility is within B/V of the
   myopic per-round optimum's (take S'_t the ``eps`` optimum of round t, the best a
   per-round constraint allows);
2. ½‖Q(T+1)‖² <= T·(B + V·R), and (1/T) Σ_t g_d(S_t) <= Q_d(T+1)/T <= sqrt(2(B + V·R)/T):
   the time-averaged constraint is met up to O(1/sqrt T).

V trades the two: larger V, utility closer to the per-round optimum, slower convergence of the
average constraint. The state (the D queues) lives in the solver, which a selector keeps for
the run (``stateful``); :meth:`state` gives the columns the history records after each round
(``lt_Q_<domain>``, the queues carried into the next round) and :meth:`load_state` resumes
from them exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from selection.errors import SelectionError
from selection.problem import SelectionProblem
from selection.solvers.base import Solver
from selection.solvers.params import check_nonneg, fmt_param
from selection.solvers.registry import register
from selection.solvers.result import RawResult, Status
from selection.surrogates.base import Structure

__all__ = ["LongTermEpsSolver", "LongTermFisherSolver", "QUEUE_PREFIX", "top_k_ratio"]

#: the history's column prefix of a queue (``lt_Q_mnist``)
QUEUE_PREFIX = "lt_Q_"
DEFAULT_V = 10.0


def _top_k(score: np.ndarray, k: int) -> np.ndarray:
    """Indices of the K largest scores, ties to the lower index (sorted)."""
    order = np.lexsort((np.arange(len(score)), -score))
    return np.sort(order[:k])


def top_k_ratio(a: np.ndarray, w: np.ndarray, k: int, max_iter: int = 100) -> np.ndarray:
    """argmax over |S| = K of Σ_S w_i a_i / Σ_S w_i (w > 0), by Dinkelbach's iteration.

    Each step picks the top-K of w_i (a_i − λ) for the current ratio λ; the ratio never
    decreases and the selections are finitely many, so it stops at the optimum (the inner
    step is exact: a selection with Σ w_i (a_i − λ) > 0 exists iff λ is below the optimum).
    """
    a = np.asarray(a, dtype=float)
    w = np.asarray(w, dtype=float)
    sel = _top_k(a, k)
    lam = float((w[sel] * a[sel]).sum() / w[sel].sum())
    for _ in range(max_iter):
        nxt = _top_k(w * (a - lam), k)
        value = float((w[nxt] * (a[nxt] - lam)).sum())
        if value <= 1e-12 * max(1.0, abs(lam)) * float(w[nxt].sum()):
            return sel
        sel = nxt
        lam = float((w[sel] * a[sel]).sum() / w[sel].sum())
    return sel


@register
class LongTermEpsSolver(Solver):
    """max V·U(S) − Σ_d Q_d g_d(S) with the queues of the long-term ε (module docstring).

    Args:
        eps: the long-term bound on a domain's shortfall below the domain mean, points, >= 0.
        V: the weight of the average utility against the queues, > 0 (default 10).
        queues: the starting queues by domain name (default all 0): a resumed run's.
    """

    name = "eps-lt"
    summary = (
        "long-term ε (drift-plus-penalty): each domain at most ε below the domain mean on "
        "average over the rounds; V·U(S) + queue-weighted domains each round"
    )
    param = "eps"
    default_grid = (0.0, 2.0, 5.0, 10.0)
    spec_form = "eps-lt:E[,V]"
    arg_defaults = (None, format(DEFAULT_V, "g"))
    surrogate_structures = ("linear", "linear-fractional")
    order = 45
    in_compare = False  # one round has no past: its front is the queues' starting point
    #: one instance serves a whole run (its queues are the run's state)
    stateful = True

    @classmethod
    def spec_kwargs(cls, arg: str | None) -> dict:
        if arg is None:
            raise ValueError(
                f"{cls.name} needs a value, e.g. {cls.name}:5 or {cls.name}:5,10 (ε, V)"
            )
        parts = [p.strip() for p in arg.split(",")]
        if len(parts) > 2:
            raise ValueError(f"{cls.name} takes ε and optionally V ({arg!r})")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"{arg!r} is not a number or two numbers") from None
        return {"eps": values[0], **({"V": values[1]} if len(values) == 2 else {})}

    def __init__(
        self,
        *,
        eps: float = 5.0,
        V: float = DEFAULT_V,  # noqa: N803 - the method's own symbol
        queues: Mapping[str, float] | None = None,
    ) -> None:
        self.eps = check_nonneg("eps", eps, allow_none=False)
        if not math.isfinite(self.eps):
            raise ValueError(f"{self.name}: eps must be finite, got {eps!r}")
        V = float(V)  # noqa: N806
        if not math.isfinite(V) or V <= 0:
            raise ValueError(f"{self.name}: V must be a positive number, got {V!r}")
        self.V = V
        self.queues: dict[str, float] = {}
        if queues is not None:
            self.load_state({f"{QUEUE_PREFIX}{d}": q for d, q in queues.items()})

    def with_param(self, value) -> LongTermEpsSolver:
        return type(self)(eps=float(value), V=self.V, queues=self.queues)

    # the run's state -------------------------------------------------------------------
    def state(self) -> dict[str, float]:
        """The queues carried into the next round, as history columns (``lt_Q_<domain>``)."""
        return {f"{QUEUE_PREFIX}{d}": float(q) for d, q in self.queues.items()}

    def load_state(self, columns: Mapping[str, float]) -> None:
        """Resume from a history row's queue columns (other columns are ignored)."""
        queues = {}
        for key, value in columns.items():
            if not str(key).startswith(QUEUE_PREFIX):
                continue
            q = float(value)
            if not math.isfinite(q) or q < 0:
                raise SelectionError(f"{self.name}: queue {key} is {value!r}; a queue is >= 0")
            queues[str(key)[len(QUEUE_PREFIX) :]] = q
        self.queues = queues

    # one round ---------------------------------------------------------------------------
    def penalty_values(self, problem: SelectionProblem, U: np.ndarray) -> np.ndarray:  # noqa: N803
        """The per-client values of the objective V weighs: the utility U_i."""
        return U

    def _solve(self, problem: SelectionProblem) -> RawResult:
        surrogate = problem.surrogate_model
        if surrogate.structure == Structure.BLACK_BOX:
            raise SelectionError(
                f"{self.name}: the {problem.surrogate} surrogate is black-box; the long-term "
                "objective needs a linear or linear-fractional one (mean, weighted, softvote)"
            )
        U, Ud = surrogate.client_values(problem)  # noqa: N806
        w = surrogate.client_weights(problem)
        q = np.array([self.queues.get(d, 0.0) for d in problem.domains])
        shortfall = Ud.mean(axis=1, keepdims=True) - Ud  # Ū_i − U_{i,d}, (N, D)
        a = self.V * self.penalty_values(problem, np.asarray(U, dtype=float)) - shortfall @ q
        sel = _top_k(a, problem.k) if np.allclose(w, w[0]) else top_k_ratio(a, w, problem.k)
        # Q_d ← max(Q_d + Ū(S) − U_d(S) − ε, 0) for the chosen S, as the surrogate judges it
        ud = (w[sel, None] * Ud[sel]).sum(axis=0) / w[sel].sum()
        for d, gd in zip(problem.domains, ud.mean() - ud - self.eps, strict=True):
            self.queues[d] = max(self.queues.get(d, 0.0) + float(gd), 0.0)
        return RawResult(
            tuple(int(i) for i in sel),
            Status.OPTIMAL,
            backend="top-k",
            param=fmt_param("eps", self.eps),
        )


@register
class LongTermFisherSolver(LongTermEpsSolver):
    """max V·F_z(S) − Σ_d Q_d g_d(S): the long-term ε with Fisher as the objective.

    ``fisher-fair``'s idea held over the run: the objective is the problem statement's Σ F_z (the clients
    the model fits worst, the signal of the strongest baseline, ``fisher-topk``), averaged over
    the selection with the surrogate's weights (F_z(S) = Σ_S w_i F_z,i / Σ_S w_i), and the
    fairness constraint is the same long-term one as ``eps-lt``'s, by the same queues. The
    guarantee of the module docstring holds with U replaced by F_z (R its range).

    Args:
        eps, V, queues: as :class:`LongTermEpsSolver`.
    """

    name = "fisher-lt"
    summary = (
        "long-term ε with Fisher as the objective: V·F_z(S) + queue-weighted domains each "
        "round (fisher-fair's floor held on average over the rounds)"
    )
    spec_form = "fisher-lt:E[,V]"
    order = 46

    def penalty_values(self, problem: SelectionProblem, U: np.ndarray) -> np.ndarray:  # noqa: N803
        return np.asarray(problem.F_z, dtype=float)
