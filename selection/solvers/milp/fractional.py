"""The exact routes on a linear-fractional surrogate (``weighted``: U_d(S) = Σ n_i x_i U_id / Σ n_i x_i).

Every value of the weighted surrogate is a ratio with the one positive denominator
T(x) = Σ n_i x_i. So

* a **threshold** on a ratio is linear after multiplying by T: U_w(S) >= θ becomes
  Σ n_i (U_i − θ) x_i >= 0, gap_w(S) <= ε becomes hi − lo − ε·T(x) <= 0 with
  lo <= Σ n_i U_id x_i <= hi, worst_w(S) >= θ becomes Σ n_i (U_id − θ) x_i >= 0 for every d;
* a **ratio objective** max N(v)/T(x) (N linear in the columns) is solved by Dinkelbach's
  iterations: λ_0 = N/T of a first feasible answer, then x_{t+1} = argmax N − λ_t T and
  λ_{t+1} = N(x_{t+1})/T(x_{t+1}) until max N − λ T is 0 (no better ratio exists). Each
  iteration is one MILP of the route's backend; λ is computed exactly from the selection.

CP-SAT solves these stages with :data:`CPSAT_FRACTIONAL_WORKERS` workers by default (see there).

Lexicographic stages work as in :mod:`.model`: the optimum of stage j becomes a threshold row
of stage j+1 (minus a tolerance of 1e-7 % on HiGHS/CBC; 0 on CP-SAT, whose rows are scaled by
the exact rational N/T so every coefficient stays an integer). The rows' coefficients depend on
ε, δ and the stage optima, so each stage builds a fresh model (milliseconds) instead of reusing
the persistent one of the linear routes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from selection.problem import SelectionProblem
from selection.solvers.milp.answer import Answer
from selection.solvers.milp.formulations import model_data
from selection.solvers.milp.registry import integer_data, make_backend
from selection.solvers.milp.spec import INF, MilpSpec
from selection.solvers.result import RawResult, Status

__all__ = ["FracStage", "lex_fractional", "weighted_data", "ratio_star"]

_TOL = 1e-7  # percentage points a later stage may lose on an earlier one (HiGHS/CBC)
# CP-SAT workers of a fractional stage unless ``threads`` says otherwise. One worker (the
# deterministic default of the linear routes) can stall on the Dinkelbach steps of the
# weighted max-min stage; two workers run two different searches, so one that stalls does
# not hold the stage. The optimum's key is exact either way; among tied selections parallel
# workers may pick another one from run to run (threads=1 restores the deterministic single
# worker).
CPSAT_FRACTIONAL_WORKERS = 2
_MAX_ITER = 60
# The largest client weight (n_samples) the float routes' rows carry as it is: the rows' absolute
# tolerances (1e-7 on a gap row; the backends' own 1e-7 to 1e-9) were set for counts of
# Digits-4's size (72-732 a client), and a weighted complete sweep keeps its points at them;
# larger counts are scaled into this range (weighted_data)
WEIGHT_MAX = 2.0**13


def weighted_data(problem: SelectionProblem, route: str, scale: int) -> dict[str, np.ndarray]:
    """Weighted data of the problem's linear-fractional surrogate (its ``client_weights`` n
    and ``client_values`` U, U_d): nU (N,), nUd (N, D), n (N,), F_z, B (CP-SAT: U rounded to
    1/scale)."""

    data = model_data(problem, route, scale)
    n = np.asarray(problem.surrogate_model.client_weights(problem), dtype=float)
    top = float(n.max()) if n.size else 0.0
    if not integer_data(route) and top > WEIGHT_MAX:
        # every row and stage is homogeneous in n (a ratio is the same for n and c·n): the
        # float routes solve on counts scaled by a power of two (exact) to at most
        # WEIGHT_MAX, however large the counts (at ~1e5 HiGHS lost the feasible point of a
        # Dinkelbach step); CP-SAT's integer rows keep the counts, their range is checked
        n = n * 2.0 ** -math.ceil(math.log2(top / WEIGHT_MAX))
    return {
        "nU": n * data["U"],
        "nUd": n[:, None] * data["Ud"],
        "n": n,
        "F_z": data["F_z"],
        "B": data["B"],
    }


@dataclass(frozen=True)
class FracStage:
    """One lexicographic stage: maximize num·v (/ den·v when ``den`` is given).

    ``value(x)`` gives the exact (numerator, denominator) the selection x reaches (the best
    over the auxiliary columns); ``den`` None means a linear stage (denominator 1).
    """

    num: np.ndarray
    den: np.ndarray | None
    value: Callable[[np.ndarray], tuple[float, float]]


class _Limit(Exception):
    def __init__(self, v, msg):
        super().__init__(msg)
        self.v, self.msg = v, msg


def lex_fractional(
    route: str,
    n_x: int,
    k: int,
    aux_bounds: list[tuple[float, float]],
    rows: list[tuple[str, np.ndarray, float, float]],
    stages: list[FracStage],
    *,
    seed: int = 0,
    threads: int | None = None,
    scale: int = 1000,
    time_limit: float | None = None,
    groups: np.ndarray | None = None,
) -> tuple[tuple[int, ...], Status, str, list[float]]:
    """Maximize the stages lexicographically; returns (selection, status, message, optima).

    ``optima`` holds each finished stage's optimal ratio (or linear value). ``groups`` adds
    the per-domain count columns of :meth:`.spec.MilpSpec.build` to every stage's model.
    """
    t0 = time.perf_counter()
    exact = integer_data(route)
    if exact and threads is None:
        threads = CPSAT_FRACTIONAL_WORKERS
    rows = list(rows)
    best_v: np.ndarray | None = None
    optima: list[float] = []

    def left() -> float | None:
        return None if time_limit is None else time_limit - (time.perf_counter() - t0)

    def solve(c: np.ndarray, hint):
        rem = left()
        if rem is not None and rem <= 0:
            raise _Limit(hint, "time limit reached")
        spec = MilpSpec.build(n_x, k, aux_bounds, rows, [c], groups=groups)
        opts = {"scale": scale} if exact else {}
        be = make_backend(route, spec, seed=seed, threads=threads, **opts)
        out = Answer.of(be._optimize(spec.objectives[0], left(), None))
        if out.status == Status.TIME_LIMIT:
            raise _Limit(out.values if out.values is not None else hint, "time limit in a stage")
        if out.status == Status.ERROR:
            raise RuntimeError(out.message)
        return out.status, out.values

    def sel_of(v) -> np.ndarray:
        x = np.zeros(n_x)
        x[np.flatnonzero(np.asarray(v[:n_x]) > 0.5)] = 1.0
        return x

    try:
        for j, st in enumerate(stages):
            status, v = solve(st.num, best_v)  # a first feasible answer (stage value for a ratio)
            if status == Status.INFEASIBLE:
                if j == 0:
                    return (), Status.INFEASIBLE, "no selection satisfies the constraints", []
                return _sel(best_v, n_x), Status.TIME_LIMIT, f"stage {j + 1} infeasible", optima
            N0, D0 = st.value(sel_of(v))
            if st.den is not None:  # Dinkelbach: improve λ = N0/D0 until max N − λT is 0
                for _ in range(_MAX_ITER):
                    c = D0 * st.num - N0 * st.den if exact else st.num - (N0 / D0) * st.den
                    status, w = solve(c, v)
                    if w is None:  # v is feasible for this step: the backend lost it
                        raise RuntimeError(
                            f"the {route} backend answered {status} on a Dinkelbach step whose "
                            "current selection is feasible (numerical trouble); try another "
                            "--backend"
                        )
                    n1, d1 = st.value(sel_of(w))
                    if n1 * D0 <= N0 * d1 + (0.0 if exact else 1e-12 * abs(N0 * d1)):
                        break  # no selection has a better ratio
                    v, N0, D0 = w, n1, d1
            best_v = v
            optima.append(N0 / D0)
            if j < len(stages) - 1:  # the next stages keep this optimum (less the tolerance)
                if st.den is None:
                    rows.append((f"stage{j}", st.num, N0 - (0.0 if exact else _TOL), INF))
                elif exact:
                    rows.append((f"stage{j}", D0 * st.num - N0 * st.den, 0.0, INF))
                else:
                    rows.append((f"stage{j}", st.num - (N0 / D0 - _TOL) * st.den, 0.0, INF))
    except _Limit as lim:
        sel = _sel(lim.v, n_x)
        msg = lim.msg + ("; returned the incumbent" if sel else "; no incumbent")
        return sel, Status.TIME_LIMIT, msg, optima
    except RuntimeError as exc:
        return (), Status.ERROR, str(exc), optima
    return _sel(best_v, n_x), Status.OPTIMAL, "", optima


def _sel(v, n_x: int) -> tuple[int, ...]:
    if v is None:
        return ()
    return tuple(int(i) for i in np.flatnonzero(np.asarray(v[:n_x]) > 0.5))


def ratio_star(
    route: str, data: dict[str, np.ndarray], k: int, key: str, **kw
) -> tuple[float, float] | None:
    """(N*, T*) of max Σ n_i a_i x_i / Σ n_i x_i over |S| = K (``key`` ``nU``); None if none."""
    n = data["n"]
    a = data[key]
    card = [("card", np.ones(len(n)), float(k), float(k))]
    sel, status, _, _ = lex_fractional(
        route,
        len(n),
        k,
        [],
        card,
        [FracStage(a, n, lambda x: (float(x @ a), float(x @ n)))],
        **kw,
    )
    if status != Status.OPTIMAL or not sel:
        return None
    x = np.zeros(len(n))
    x[list(sel)] = 1.0
    return float(x @ a), float(x @ n)


def threshold_row(
    name: str, a: np.ndarray, den: np.ndarray, ratio: tuple[float, float], delta: float, exact: bool
) -> tuple[str, np.ndarray, float, float]:
    """The row ``a·v / den·v >= N/T − δ`` made linear (CP-SAT: scaled by T, integers)."""
    N0, D0 = ratio
    if exact:
        return (name, D0 * a - (N0 - delta * D0) * den, 0.0, INF)
    return (name, a - (N0 / D0 - delta) * den, -1e-7, INF)


def raw_of(sel, status, message, route, param) -> RawResult:
    """The solver's answer from a :func:`lex_fractional` outcome."""
    if status == Status.OPTIMAL and not sel:
        status = Status.ERROR
    return RawResult(tuple(sel), status, route, message, param)
