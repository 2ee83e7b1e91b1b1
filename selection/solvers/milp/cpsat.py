"""OR-Tools CP-SAT backend with integer-scaled coefficients.

CP-SAT needs integers. Every coefficient on a selection column becomes ``round(a·scale)``;
each continuous auxiliary column v becomes the integer ``scale·v`` (its coefficients, ±1, stay);
row bounds are scaled and rounded inward (``ceil`` of a lower, ``floor`` of an upper bound).
The formulations hand this backend data already rounded to multiples of ``1/scale``
(see :func:`round_data`), so the scaled model is *exactly* the rounded problem and CP-SAT
solves it to proven optimality (``relative_gap_limit = 0``, ``absolute_gap_limit = 0``).
The objectives reported for a selection are always recomputed on the true floats; each
mean-based value (U, U_d, worst) then differs from the rounded model's by at most
``0.5/scale`` (gap by at most ``1/scale``), i.e. 5e-4 % and 1e-3 points at ``scale = 1000``.

``num_workers`` (default 1: a seeded single worker is deterministic) and ``random_seed``
come from the solver's options. OR-Tools is used for CP-SAT only (never its HiGHS wrapper).
"""

from __future__ import annotations

import math

import numpy as np

from selection.errors import SelectionError
from selection.solvers.milp.answer import Answer
from selection.solvers.milp.model import LexBackend
from selection.solvers.milp.registry import register_backend
from selection.solvers.milp.spec import MilpSpec
from selection.solvers.options import DEFAULT_SCALE
from selection.solvers.result import Status

__all__ = ["CpSatBackend", "round_data", "exact_at", "DEFAULT_SCALE"]

# The scaled coefficients and bounds are computed in float64 and rounded to integers: beyond
# 2^53 they are no longer the exact products (a Dinkelbach row D0·num − N0·den at 1e6 samples a
# client lost its optimum: "stage 2 infeasible"), so the model would not be the problem.
INT_LIMIT = 2.0**53
# CP-SAT's own test of a linear expression: Σ |a_j| · max |v_j| must fit a signed 64-bit integer
SUM_LIMIT = 2.0**63


def round_data(a: np.ndarray, scale: int) -> np.ndarray:
    """``a`` rounded to multiples of ``1/scale`` (the data CP-SAT solves exactly)."""
    return np.round(np.asarray(a, dtype=float) * scale) / scale


def exact_at(a: np.ndarray, scale: int) -> bool:
    """Whether every value of ``a`` is a multiple of ``1/scale`` (to float precision): then the
    scaled model is the true problem, and CP-SAT's answer and bound are the true ones."""
    v = np.asarray(a, dtype=float) * scale
    return bool(np.all(np.abs(v - np.round(v)) <= 1e-6 * np.maximum(1.0, np.abs(v))))


@register_backend("cpsat")
class CpSatBackend(LexBackend):
    """The lexicographic MILP in CP-SAT."""

    order = 30

    exact_tol = True
    integer_data = True

    def __init__(self, spec: MilpSpec, *, scale: int = DEFAULT_SCALE, **options) -> None:
        """``options``: :class:`~.model.LexBackend`'s (seed, threads, mip_gap, abs_gap)."""
        self.scale = int(scale)
        super().__init__(spec, **options)

    def _col_factor(self) -> np.ndarray:
        # integer columns (binaries, counts) keep their values and take scaled coefficients;
        # continuous aux columns become integers already scaled (coefficients unchanged)
        return np.where(self.spec.integer, float(self.scale), 1.0)

    def _build(self) -> None:
        from ortools.sat.python import cp_model

        self._cp = cp_model
        spec, s = self.spec, self.scale
        self._factor = self._col_factor()
        self._check_range(s)
        m = cp_model.CpModel()
        xs = [m.new_bool_var(f"x{i}") for i in range(spec.n_x)]
        aux = []
        for j in range(spec.n_x, spec.n_col):
            lo, up = float(spec.col_lo[j]), float(spec.col_up[j])
            f = 1 if spec.integer[j] else s
            aux.append(
                m.new_int_var(
                    math.floor(lo * f) if not math.isinf(lo) else -(2**50),
                    math.ceil(up * f) if not math.isinf(up) else 2**50,
                    f"a{j}",
                )
            )
        self._vars = xs + aux
        counts = [self._vars[j] for j in spec.count_cols]
        if counts:  # the count columns first (CP-SAT's fixed search; a hint elsewhere)
            m.add_decision_strategy(counts, cp_model.CHOOSE_FIRST, cp_model.SELECT_MAX_VALUE)
        A = spec.A
        self._cons = []
        for r in range(A.shape[0]):
            cols = A.indices[A.indptr[r] : A.indptr[r + 1]]
            vals = A.data[A.indptr[r] : A.indptr[r + 1]] * self._factor[cols]
            expr = cp_model.LinearExpr.weighted_sum(
                [self._vars[c] for c in cols], [int(v) for v in np.rint(vals)]
            )
            con = m.add(expr >= cp_model.INT_MIN + 1)
            self._cons.append(con)
            self._set_row_bounds(r, float(spec.row_lo[r]), float(spec.row_up[r]))
        self._m = m

    def _check_range(self, s: int) -> None:
        """CP-SAT takes 64-bit integers: refuse data whose scaled coefficients, bounds or row
        sums (Σ |a_j|·max|v_j|, which CP-SAT itself requires to fit) would not fit, naming the
        backends that take it."""
        spec = self.spec
        A = spec.A
        self._reach = self._column_reach(s)
        coef = np.abs(A.data * self._factor[A.indices]) if A.nnz else np.zeros(1)
        sums = np.zeros(1)
        if A.nnz:
            terms = A.copy()
            terms.data = np.abs(A.data * self._factor[A.indices]) * self._reach[A.indices]
            sums = np.asarray(terms.sum(axis=1)).ravel()
        bounds = np.abs(np.concatenate([spec.row_lo, spec.row_up]) * s)
        self._refuse_beyond(np.concatenate([coef, bounds, self._reach]))
        self._refuse_beyond(sums, limit=SUM_LIMIT)

    def _column_reach(self, s: int) -> np.ndarray:
        """The largest |value| each CP-SAT variable can take (binaries 1; an auxiliary column
        its scaled bound, 2^50 where unbounded, as :meth:`_build` declares it)."""
        spec = self.spec
        reach = np.ones(spec.n_col)
        for j in range(spec.n_x, spec.n_col):
            f = 1 if spec.integer[j] else s
            lo, up = float(spec.col_lo[j]), float(spec.col_up[j])
            reach[j] = max(
                2.0**50 if math.isinf(lo) else abs(lo * f),
                2.0**50 if math.isinf(up) else abs(up * f),
            )
        return reach

    def _refuse_beyond(self, values, limit: float = INT_LIMIT) -> None:
        """SelectionError when any of ``values`` (scaled integers the model would hold, or a
        row's reach) reaches ``limit``; a pybind cast error or an invalid model otherwise."""
        vals = np.abs(np.asarray(values, dtype=float))
        vals = vals[np.isfinite(vals)]
        worst = float(vals.max()) if vals.size else 0.0
        what = (
            "that CP-SAT's 64-bit sums hold"
            if limit == SUM_LIMIT
            else "up to which its integers are exact in the floats they are computed in"
        )
        if worst >= limit:
            raise SelectionError(
                f"cpsat: the model's coefficients or bounds reach {worst:.3g} after scaling by "
                f"{self.scale}, beyond the {limit:.3g} {what} (e.g. the weighted surrogate's "
                "n_samples); use --backend highs, cbc or scip"
            )

    def _set_row_bounds(self, row: int, lo: float, up: float) -> None:
        cp, s = self._cp, self.scale
        self._refuse_beyond([lo * s, up * s])  # a stage's optimum or an ε row, set later
        ilo = cp.INT_MIN if math.isinf(lo) else math.ceil(lo * s - 1e-6)
        iup = cp.INT_MAX if math.isinf(up) else math.floor(up * s + 1e-6)
        dom = self._cons[row].proto.linear.domain
        dom.clear()
        dom.extend([int(ilo), int(iup)])

    def _optimize(self, c, time_limit, hint) -> Answer:
        cp = self._cp
        m = self._m
        coefs = np.rint(np.asarray(c, dtype=float) * self._factor)
        # the objective's coefficients and its reach (a Dinkelbach stage's are products of
        # the data: D0·num − N0·den), checked as the rows are
        self._refuse_beyond(coefs)
        self._refuse_beyond([float(np.abs(coefs) @ self._reach)], limit=SUM_LIMIT)
        nz = np.flatnonzero(coefs)
        m.clear_objective()
        m.maximize(
            cp.LinearExpr.weighted_sum([self._vars[i] for i in nz], [int(coefs[i]) for i in nz])
        )
        m.clear_hints()
        if hint is not None:
            hv = np.rint(np.asarray(hint) * np.where(self._factor == 1.0, self.scale, 1.0))
            for var, val in zip(self._vars, hv, strict=True):
                m.add_hint(var, int(val))
        solver = cp.CpSolver()
        p = solver.parameters
        p.num_workers = int(self.threads or 1)
        p.random_seed = self.seed % 2147483647
        p.relative_gap_limit = self.mip_gap
        p.absolute_gap_limit = float(self.abs_gap) * self.scale  # scaled units
        if time_limit is not None:
            p.max_time_in_seconds = max(float(time_limit), 1e-3)
        st = solver.solve(m)
        values = None
        if st in (cp.OPTIMAL, cp.FEASIBLE):
            raw = np.array([solver.value(v) for v in self._vars], dtype=float)
            values = raw / np.where(self._factor == 1.0, self.scale, 1.0)
        obj = solver.objective_value / self.scale if values is not None else float("nan")
        if st in (cp.OPTIMAL, cp.FEASIBLE):
            self.last_bound = float(solver.best_objective_bound) / self.scale
        if st == cp.MODEL_INVALID:  # a range CP-SAT checks beyond ours: a refusal, not "none"
            raise SelectionError(
                f"cpsat: CP-SAT refuses the model ({m.validate().strip() or 'invalid'}); use "
                "--backend highs, cbc or scip"
            )
        if st == cp.OPTIMAL:
            return Answer(Status.OPTIMAL, values, obj)
        if st == cp.INFEASIBLE:
            return Answer(Status.INFEASIBLE, None, obj)
        if st == cp.FEASIBLE or (st == cp.UNKNOWN and time_limit is not None):
            return Answer(Status.TIME_LIMIT, values, obj)
        return Answer(Status.ERROR, None, obj, f"CP-SAT status {solver.status_name(st)}")
